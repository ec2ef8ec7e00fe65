"""Dispute: an assertion contradicting another item, open until a human resolves it (R8).

Read at a moment (through an item read ``asOf``), a dispute resolved later is
still OPEN, and its items are as they stood then (schema.reading).
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from mneia.schema.actor import Actor
from mneia.schema.enums import DisputeStatus
from mneia.schema.item import Item
from mneia.schema.reading import View
from mneia.storage.dispute import DisputeRecord


@strawberry.type
class Dispute:
    id: strawberry.ID
    status: DisputeStatus
    raised_at: datetime
    resolved_at: datetime | None
    record: strawberry.Private[DisputeRecord]
    view: strawberry.Private[View]

    @strawberry.field
    def reason(self) -> str | None:
        return self.view.redact(self.record.reason)

    @strawberry.field
    def resolution_note(self) -> str | None:
        return self.view.redact(self.record.resolution_note)

    @strawberry.field(description="The assertion that contradicts.")
    async def item(self) -> Item:
        return Item.of(await self.view.loaders.item.load(self.record.item_id), self.view)

    @strawberry.field(description="The item it contradicts.")
    async def contested(self) -> Item:
        return Item.of(await self.view.loaders.item.load(self.record.contested_id), self.view)

    @strawberry.field
    async def raised_by(self) -> Actor:
        return Actor.of(await self.view.loaders.actor.load(self.record.raised_by))

    @strawberry.field
    async def resolved_by(self) -> Actor | None:
        if self.record.resolved_by is None:
            return None
        return Actor.of(await self.view.loaders.actor.load(self.record.resolved_by))

    @strawberry.field
    async def kept_item(self) -> Item | None:
        if self.record.kept_item_id is None:
            return None
        return Item.of(await self.view.loaders.item.load(self.record.kept_item_id), self.view)

    @classmethod
    def of(cls, record: DisputeRecord, view: View) -> Dispute:
        return cls(
            id=strawberry.ID(str(record.id)),
            status=DisputeStatus(record.status),
            raised_at=record.raised_at,
            resolved_at=record.resolved_at,
            record=record,
            view=view,
        )
