"""Replacing an item: the input, and the two outcomes (applied, or waiting for a human)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from mneia.schema.item import AssertItemInput, Item
from mneia.schema.proposal import Proposal


@strawberry.input
class SupersedeInput:
    target_id: strawberry.ID
    replacement: AssertItemInput
    reason: str


@strawberry.type(description="The replacement was written and the previous item marked SUPERSEDED.")
class Superseded:
    previous: Item
    replacement: Item


@strawberry.type(
    description="The target is human-confirmed: nothing was written to the chain;"
    " a human decides the proposal."
)
class PendingConfirmation:
    proposal: Proposal


SupersedeResult = Annotated[Superseded | PendingConfirmation, strawberry.union("SupersedeResult")]


@strawberry.type(
    description="A replacement made recently: what was ruled out (previous), by what, why and when, so that"
    " a fresh agent does not propose it again."
)
class SupersessionNote:
    previous: Item
    replacement: Item
    reason: str | None = strawberry.field(
        description="Why it was replaced; ids you cannot see read [hidden]."
    )
    at: datetime = strawberry.field(description="When the previous item became SUPERSEDED.")
