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


@strawberry.type(
    description="An assertion that contradicts another item, open until a human keeps one of the two (R8)."
)
class Dispute:
    id: strawberry.ID = strawberry.field(description="The dispute's id.")
    status: DisputeStatus = strawberry.field(description="Whether it is still open.")
    raised_at: datetime = strawberry.field(description="When it was opened.")
    resolved_at: datetime | None = strawberry.field(
        description="When a human resolved it; null while it is open."
    )
    record: strawberry.Private[DisputeRecord]
    view: strawberry.Private[View]

    @strawberry.field(description="Why the item contradicts the other; ids you cannot see read [hidden].")
    def reason(self) -> str | None:
        return self.view.redact(self.record.reason)

    @strawberry.field(description="What the human who resolved it said; ids you cannot see read [hidden].")
    def resolution_note(self) -> str | None:
        return self.view.redact(self.record.resolution_note)

    @strawberry.field(description="The assertion that contradicts.")
    async def item(self) -> Item:
        return Item.of(await self.view.loaders.item.load(self.record.item_id), self.view)

    @strawberry.field(description="The item it contradicts.")
    async def contested(self) -> Item:
        return Item.of(await self.view.loaders.item.load(self.record.contested_id), self.view)

    @strawberry.field(description="The actor who opened it.")
    async def raised_by(self) -> Actor:
        return Actor.of(await self.view.loaders.actor.load(self.record.raised_by))

    @strawberry.field(description="The human who resolved it; null while it is open.")
    async def resolved_by(self) -> Actor | None:
        if self.record.resolved_by is None:
            return None
        return Actor.of(await self.view.loaders.actor.load(self.record.resolved_by))

    @strawberry.field(
        description="The item the human kept ACTIVE (the other was retired); null while it is open."
    )
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
