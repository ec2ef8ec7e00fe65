"""The contract's enums: the vocabulary's own classes, registered with Strawberry.

The GraphQL values are the vocabulary's names, which are also what the
database stores; the resolvers and the storage records use the same classes.
Their descriptions live here, beside the registration: the classes in
mneia.vocabulary keep their plain values, and each value's description is
set on the definition Strawberry made of it.
"""

from __future__ import annotations

from enum import StrEnum

import strawberry
from strawberry.types.enum import has_enum_definition

from mneia.vocabulary import (
    ActorKind,
    Authority,
    DisputeStatus,
    InclusionReason,
    ItemEventKind,
    ItemKind,
    ItemOrder,
    ItemStatus,
    OmissionReason,
    ProposalKind,
    ProposalStatus,
    Scope,
)

# Each enum: its description, then one for each of its values.
DESCRIPTIONS: dict[type[StrEnum], tuple[str, dict[str, str]]] = {
    ActorKind: (
        "What an actor is. Read from the actor's record, never from the caller (R3).",
        {
            "HUMAN": "A person. Only a human confirms items, settles load-bearing and decides disputes"
            " and proposals.",
            "AGENT": "Software acting for someone, such as a coding agent. Its assertions stay"
            " unconfirmed until a human confirms them.",
        },
    ),
    ItemKind: (
        "What an item is, which decides how rehydration treats it: each kind has its own quota and weight.",
        {
            "CONSTRAINT": "A rule the work must follow. An active load-bearing constraint is in every slice.",
            "DECISION": "A choice that was made, usually with its reasons.",
            "FACT": "Something true of the project, such as a dependency's version.",
            "PREFERENCE": "How someone likes the work done, where nothing requires it.",
            "QUESTION": "Something still open that somebody has to answer.",
            "TASK": "A piece of work to do.",
        },
    ),
    ItemStatus: (
        "Where an item stands. A status changes by appending an event; nothing is deleted (R6).",
        {
            "ACTIVE": "In force: it can be rehydrated, replaced, disputed or retired.",
            "SUPERSEDED": "Replaced by another item (supersededBy). Final: it never changes again.",
            "DISPUTED": "It contradicts another item, and a dispute waits for a human to resolve it (R8).",
            "RETIRED": "No longer in force, kept with its reason. Final: it never changes again.",
        },
    ),
    ItemEventKind: (
        "What one event of an item's log records (R6). The database writes events, never a client.",
        {
            "ASSERTED": "The item was asserted.",
            "STATUS_CHANGED": "Its status changed, from fromStatus to toStatus.",
            "NOTED": "Its status reason changed while its status stayed the same.",
            "CONFIRMED": "A human confirmed it.",
            "LOAD_BEARING_SET": "A human made it load-bearing.",
            "LOAD_BEARING_CLEARED": "A human made it no longer load-bearing.",
            "LOAD_BEARING_SUGGESTED": "An agent suggested that it is load-bearing.",
            "LOAD_BEARING_DECLINED": "A human settled the suggestion without making it load-bearing.",
            "VERIFIED": "Somebody checked that it still holds: lastVerifiedAt moved (R10).",
            "REDACTED": "Its text was blanked by retention or erasure (R16, R18); the reason says which.",
            "HELD": "A legal hold was placed on it or its project (R17).",
            "RELEASED": "A legal hold on it or its project was released (R17).",
        },
    ),
    ItemOrder: (
        "How a page of items is ordered. Every order ends with the id, so pages never overlap.",
        {
            "NEWEST": "The most recently asserted first.",
            "SUGGESTED_THEN_CONFIDENCE": "Load-bearing suggestions first, then by the extractor's"
            " confidence, highest first (none last), then the oldest first.",
            "LONGEST_UNCHECKED": "The longest since lastVerifiedAt (else assertedAt) first.",
        },
    ),
    Authority: (
        "How much an item can be trusted, rendered wherever the item appears (R4).",
        {
            "HUMAN_CONFIRMED": "A person read it and said yes, or a person asserted it. It carries"
            " authority.",
            "AGENT_ASSERTED": "An agent asserted it and no human has confirmed it yet. Useful, and"
            " provisional.",
            "DISPUTED": "It contradicts another item; a human decides which one is kept.",
        },
    ),
    Scope: (
        "Who may see an item, from the individual outward (R2). An item you cannot see reads as NOT_FOUND.",
        {
            "PRIVATE": "Only the actor who asserted it.",
            "PROJECT": "The members of its project.",
            "TEAM": "The members of its project's team.",
            "WORKSPACE": "Every actor of the workspace.",
            "GRANTS": "The actor who asserted it and the actors listed in grantActorIds.",
        },
    ),
    InclusionReason: (
        "Why an item is an entry of a slice.",
        {
            "GUARANTEED": "An active load-bearing constraint: always included, whatever the budget.",
            "SCORED": "Taken by score per token within its kind's quota.",
            "RECENT_SUPERSESSION": "It recently replaced an item listed in the slice's supersessions.",
            "FILL": "Taken with what the quotas left: a candidate past its kind's share, or an item"
            " that shares no word with the task.",
        },
    ),
    OmissionReason: (
        "Why a candidate the slice considered is not an entry.",
        {
            "BUDGET": "It matched the task and did not fit in what was left of the budget.",
            "QUOTA": "It matched, but its kind was at its maxShare, and it no longer fitted once the quotas"
            " lifted.",
            "NO_MATCH": "It shares no word with the task and did not fit in what the matches left.",
        },
    ),
    DisputeStatus: (
        "Whether a dispute still waits for a human.",
        {
            "OPEN": "Nobody has resolved it yet; both items stay as they are.",
            "RESOLVED": "A human kept one item (ACTIVE) and retired the other.",
        },
    ),
    ProposalKind: (
        "What an agent proposes that only a human may decide.",
        {
            "SUPERSESSION": "Replacing a human-confirmed item with a new one (R7).",
            "LOAD_BEARING": "Making an item load-bearing (R5).",
        },
    ),
    ProposalStatus: (
        "Where a proposal stands.",
        {
            "PENDING": "Waiting for a human's decision.",
            "ACCEPTED": "A human accepted it, and the change was written (result).",
            "REJECTED": "A human rejected it; nothing was changed.",
        },
    ),
}

for _vocabulary, (_description, _values) in DESCRIPTIONS.items():
    strawberry.enum(_vocabulary, description=_description)
    assert has_enum_definition(_vocabulary)
    for _value in _vocabulary.__strawberry_definition__.values:
        _value.description = _values[_value.name]

__all__ = [
    "ActorKind",
    "Authority",
    "DisputeStatus",
    "InclusionReason",
    "ItemEventKind",
    "ItemKind",
    "ItemOrder",
    "ItemStatus",
    "OmissionReason",
    "ProposalKind",
    "ProposalStatus",
    "Scope",
]
