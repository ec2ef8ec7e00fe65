"""The contract's enums. Values are the names, as stored in the database."""

from __future__ import annotations

from enum import Enum

import strawberry


@strawberry.enum
class ActorKind(Enum):
    HUMAN = "HUMAN"
    AGENT = "AGENT"


@strawberry.enum
class ItemKind(Enum):
    CONSTRAINT = "CONSTRAINT"
    DECISION = "DECISION"
    FACT = "FACT"
    PREFERENCE = "PREFERENCE"
    QUESTION = "QUESTION"
    TASK = "TASK"


@strawberry.enum
class ItemStatus(Enum):
    ACTIVE = "ACTIVE"
    SUPERSEDED = "SUPERSEDED"
    DISPUTED = "DISPUTED"
    RETIRED = "RETIRED"


@strawberry.enum
class Authority(Enum):
    HUMAN_CONFIRMED = "HUMAN_CONFIRMED"
    AGENT_ASSERTED = "AGENT_ASSERTED"
    DISPUTED = "DISPUTED"


@strawberry.enum
class Scope(Enum):
    PRIVATE = "PRIVATE"
    PROJECT = "PROJECT"
    TEAM = "TEAM"
    WORKSPACE = "WORKSPACE"
    GRANTS = "GRANTS"


@strawberry.enum
class InclusionReason(Enum):
    GUARANTEED = "GUARANTEED"
    SCORED = "SCORED"
    RECENT_SUPERSESSION = "RECENT_SUPERSESSION"


@strawberry.enum
class DisputeStatus(Enum):
    OPEN = "OPEN"
    RESOLVED = "RESOLVED"


@strawberry.enum
class ProposalKind(Enum):
    SUPERSESSION = "SUPERSESSION"
    LOAD_BEARING = "LOAD_BEARING"


@strawberry.enum
class ProposalStatus(Enum):
    PENDING = "PENDING"
    ACCEPTED = "ACCEPTED"
    REJECTED = "REJECTED"
