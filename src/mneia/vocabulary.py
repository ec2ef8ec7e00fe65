"""The domain's words, once: actor kinds, item kinds, statuses, scopes, authorities.

Storage records carry these values, the GraphQL enums are made from these
classes (schema/enums.py), and the database's CHECK constraints list the same
values (storage/sql/tables.sql; tests/test_declared.py holds them equal).
This module imports nothing of the project, so every layer may use it.
"""

from __future__ import annotations

from enum import StrEnum


class ActorKind(StrEnum):
    HUMAN = "HUMAN"
    AGENT = "AGENT"


class ItemKind(StrEnum):
    CONSTRAINT = "CONSTRAINT"
    DECISION = "DECISION"
    FACT = "FACT"
    PREFERENCE = "PREFERENCE"
    QUESTION = "QUESTION"
    TASK = "TASK"


class ItemStatus(StrEnum):
    ACTIVE = "ACTIVE"
    SUPERSEDED = "SUPERSEDED"
    DISPUTED = "DISPUTED"
    RETIRED = "RETIRED"

    @property
    def final(self) -> bool:
        """SUPERSEDED and RETIRED never change again (the database refuses it too)."""
        return self in (ItemStatus.SUPERSEDED, ItemStatus.RETIRED)


class ItemEventKind(StrEnum):
    """What one event of an item's log records (R6); the trigger in storage/sql/events.sql writes them."""

    ASSERTED = "ASSERTED"
    STATUS_CHANGED = "STATUS_CHANGED"
    NOTED = "NOTED"
    CONFIRMED = "CONFIRMED"
    LOAD_BEARING_SET = "LOAD_BEARING_SET"
    LOAD_BEARING_CLEARED = "LOAD_BEARING_CLEARED"
    LOAD_BEARING_SUGGESTED = "LOAD_BEARING_SUGGESTED"
    LOAD_BEARING_DECLINED = "LOAD_BEARING_DECLINED"
    VERIFIED = "VERIFIED"
    REDACTED = "REDACTED"
    HELD = "HELD"
    RELEASED = "RELEASED"


class Authority(StrEnum):
    HUMAN_CONFIRMED = "HUMAN_CONFIRMED"
    AGENT_ASSERTED = "AGENT_ASSERTED"
    DISPUTED = "DISPUTED"


class ItemOrder(StrEnum):
    """How a page of items is ordered (``items(orderBy:)``); each order ends with the id, so it is total."""

    NEWEST = "NEWEST"
    SUGGESTED_THEN_CONFIDENCE = "SUGGESTED_THEN_CONFIDENCE"
    LONGEST_UNCHECKED = "LONGEST_UNCHECKED"


class Scope(StrEnum):
    """Who sees an item, from the individual outward (R2)."""

    PRIVATE = "PRIVATE"
    PROJECT = "PROJECT"
    TEAM = "TEAM"
    WORKSPACE = "WORKSPACE"
    GRANTS = "GRANTS"


# The scopes that nest: each includes everyone the narrower ones include.
NESTED_SCOPES = (Scope.PROJECT, Scope.TEAM, Scope.WORKSPACE)


class InclusionReason(StrEnum):
    GUARANTEED = "GUARANTEED"
    SCORED = "SCORED"
    RECENT_SUPERSESSION = "RECENT_SUPERSESSION"
    FILL = "FILL"


class OmissionReason(StrEnum):
    """Why a candidate the slice considered is not an entry."""

    BUDGET = "BUDGET"
    QUOTA = "QUOTA"
    NO_MATCH = "NO_MATCH"


class DisputeStatus(StrEnum):
    OPEN = "OPEN"
    RESOLVED = "RESOLVED"


class ProposalKind(StrEnum):
    SUPERSESSION = "SUPERSESSION"
    LOAD_BEARING = "LOAD_BEARING"


class ProposalStatus(StrEnum):
    PENDING = "PENDING"
    ACCEPTED = "ACCEPTED"
    REJECTED = "REJECTED"


# What a reader sees in a text in place of the id of an item or a dispute it cannot see.
HIDDEN_ID = "[hidden]"
