"""Dispute: an assertion contradicting another item, open until a human resolves it (R8)."""

from __future__ import annotations

from datetime import datetime

import strawberry

from mneia.schema.actor import Actor
from mneia.schema.enums import DisputeStatus
from mneia.schema.item import Item
from mneia.schema.reading import Info
from mneia.storage.dispute import DisputeRecord


@strawberry.type
class Dispute:
    id: strawberry.ID
    status: DisputeStatus
    raised_at: datetime
    resolved_at: datetime | None
    record: strawberry.Private[DisputeRecord]

    @strawberry.field
    def reason(self, info: Info) -> str | None:
        return info.context.redact(self.record.reason)

    @strawberry.field
    def resolution_note(self, info: Info) -> str | None:
        return info.context.redact(self.record.resolution_note)

    @strawberry.field(description="The assertion that contradicts.")
    async def item(self, info: Info) -> Item:
        return Item.of(await info.context.loaders.item.load(self.record.item_id))

    @strawberry.field(description="The item it contradicts.")
    async def contested(self, info: Info) -> Item:
        return Item.of(await info.context.loaders.item.load(self.record.contested_id))

    @strawberry.field
    async def raised_by(self, info: Info) -> Actor:
        return Actor.of(await info.context.loaders.actor.load(self.record.raised_by))

    @strawberry.field
    async def resolved_by(self, info: Info) -> Actor | None:
        if self.record.resolved_by is None:
            return None
        return Actor.of(await info.context.loaders.actor.load(self.record.resolved_by))

    @strawberry.field
    async def kept_item(self, info: Info) -> Item | None:
        if self.record.kept_item_id is None:
            return None
        return Item.of(await info.context.loaders.item.load(self.record.kept_item_id))

    @classmethod
    def of(cls, record: DisputeRecord) -> Dispute:
        return cls(
            id=strawberry.ID(str(record.id)),
            status=DisputeStatus(record.status),
            raised_at=record.raised_at,
            resolved_at=record.resolved_at,
            record=record,
        )
