"""The contract's enums: the vocabulary's own classes, registered with Strawberry.

The GraphQL values are the vocabulary's names, which are also what the
database stores; the resolvers and the storage records use the same classes.
"""

from __future__ import annotations

import strawberry

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

for _vocabulary in (
    ActorKind,
    ItemKind,
    ItemStatus,
    ItemEventKind,
    ItemOrder,
    Authority,
    Scope,
    InclusionReason,
    OmissionReason,
    DisputeStatus,
    ProposalKind,
    ProposalStatus,
):
    strawberry.enum(_vocabulary)

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
