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


@strawberry.type
class Proposal:
    id: strawberry.ID
    kind: ProposalKind
    status: ProposalStatus
    proposed_at: datetime
    decided_at: datetime | None
    record: strawberry.Private[ProposalRecord]
    view: strawberry.Private[View]

    @strawberry.field
    def reason(self) -> str | None:
        return self.view.redact(self.record.reason)

    @strawberry.field
    def decision_note(self) -> str | None:
        return self.view.redact(self.record.decision_note)

    @strawberry.field
    async def target(self) -> Item:
        return Item.of(await self.view.loaders.item.load(self.record.target_id), self.view)

    @strawberry.field
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

    @strawberry.field
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
