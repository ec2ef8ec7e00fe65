"""Proposal: a change by an agent that waits for a human's decision (R5, R7).

Read at a moment (through an item read ``asOf``), a proposal decided later is
still PENDING, and its items are as they stood then (schema.reading).
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from mneia.schema.actor import Actor
from mneia.schema.enums import ProposalKind, ProposalStatus
from mneia.schema.item import Item
from mneia.schema.reading import View
from mneia.storage.proposal import ProposalRecord


@strawberry.type(
    description="A change an agent asked for that only a human may make: a supersession or a load-bearing"
    " flag (R5, R7)."
)
class Proposal:
    id: strawberry.ID = strawberry.field(description="The proposal's id.")
    kind: ProposalKind = strawberry.field(description="What it proposes.")
    status: ProposalStatus = strawberry.field(description="Whether a human has decided it, and how.")
    proposed_at: datetime = strawberry.field(description="When it was made.")
    decided_at: datetime | None = strawberry.field(
        description="When a human decided it; null while it is pending."
    )
    record: strawberry.Private[ProposalRecord]
    view: strawberry.Private[View]

    @strawberry.field(description="Why it was proposed; ids you cannot see read [hidden].")
    def reason(self) -> str | None:
        return self.view.redact(self.record.reason)

    @strawberry.field(description="What the human who decided it said; ids you cannot see read [hidden].")
    def decision_note(self) -> str | None:
        return self.view.redact(self.record.decision_note)

    @strawberry.field(description="The item it would change.")
    async def target(self) -> Item:
        return Item.of(await self.view.loaders.item.load(self.record.target_id), self.view)

    @strawberry.field(description="The actor who proposed it.")
    async def proposed_by(self) -> Actor:
        return Actor.of(await self.view.loaders.actor.load(self.record.proposed_by))

    @strawberry.field(description="SUPERSESSION: the proposed replacement's statement.")
    def replacement_statement(self) -> str | None:
        replacement = self.record.replacement_item
        return replacement.statement if replacement else None

    @strawberry.field(description="The item written once ACCEPTED.")
    async def result(self) -> Item | None:
        if self.record.result_id is None:
            return None
        record = await self.view.loaders.item.load(self.record.result_id)
        return Item.of(record, self.view) if record else None

    @strawberry.field(description="The human who decided it; null while it is pending.")
    async def decided_by(self) -> Actor | None:
        if self.record.decided_by is None:
            return None
        return Actor.of(await self.view.loaders.actor.load(self.record.decided_by))

    @classmethod
    def of(cls, record: ProposalRecord, view: View) -> Proposal:
        return cls(
            id=strawberry.ID(str(record.id)),
            kind=ProposalKind(record.kind),
            status=ProposalStatus(record.status),
            proposed_at=record.proposed_at,
            decided_at=record.decided_at,
            record=record,
            view=view,
        )
