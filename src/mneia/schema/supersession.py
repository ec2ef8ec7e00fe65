"""Replacing an item: the input, and the two outcomes (applied, or waiting for a human)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from mneia.schema.item import AssertItemInput, Item
from mneia.schema.proposal import Proposal


@strawberry.input(description="A replacement for an item: the target, the new item and why.")
class SupersedeInput:
    target_id: strawberry.ID = strawberry.field(description="The item to replace; it must be ACTIVE.")
    replacement: AssertItemInput = strawberry.field(description="The new item, asserted as assertItem would.")
    reason: str = strawberry.field(
        description="Why the target is replaced; kept on the replacement (supersessionReason)."
    )


@strawberry.type(description="The replacement was written and the previous item marked SUPERSEDED.")
class Superseded:
    previous: Item = strawberry.field(description="The item replaced, now SUPERSEDED.")
    replacement: Item = strawberry.field(description="The new item.")


@strawberry.type(
    description="The target is human-confirmed: nothing was written to the chain;"
    " a human decides the proposal."
)
class PendingConfirmation:
    proposal: Proposal = strawberry.field(description="The SUPERSESSION proposal for a human to decide.")


SupersedeResult = Annotated[
    Superseded | PendingConfirmation,
    strawberry.union(
        "SupersedeResult",
        description="What supersedeItem did: Superseded when the replacement was written,"
        " PendingConfirmation when it waits for a human.",
    ),
]


@strawberry.type(
    description="A replacement made recently: what was ruled out (previous), by what, why and when, so that"
    " a fresh agent does not propose it again."
)
class SupersessionNote:
    previous: Item = strawberry.field(description="The item that was ruled out.")
    replacement: Item = strawberry.field(description="The item that replaced it.")
    reason: str | None = strawberry.field(
        description="Why it was replaced; ids you cannot see read [hidden]."
    )
    at: datetime = strawberry.field(description="When the previous item became SUPERSEDED.")
