"""ItemEvent: one change of an item, as the database's trigger logged it (R6).

An item's ``events`` are its audit trail, oldest first: who, when (the
transaction's time; events of one instant in the order they happened), the
status before and after, the load-bearing flag and confirmation after, and
why. Read at a moment (``asOf``), the trail ends at that moment.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from mneia.schema.actor import Actor
from mneia.schema.enums import ItemEventKind, ItemStatus
from mneia.schema.loading import now_or_later
from mneia.schema.reading import View
from mneia.storage.event import EventRecord
from mneia.vocabulary import HIDDEN_ID

if TYPE_CHECKING:
    from mneia.schema.item import Item


@strawberry.type(
    description="One change of an item, written by the database when it happened, never by a client."
)
class ItemEvent:
    id: strawberry.ID = strawberry.field(description="The event's id.")
    kind: ItemEventKind = strawberry.field(description="What the event records.")
    at: datetime = strawberry.field(
        description="The database's time of the change (its transaction's); events of one instant are listed "
        "in the order they happened."
    )
    from_status: ItemStatus | None = strawberry.field(description="Null for the assertion.")
    to_status: ItemStatus = strawberry.field(description="The item's status after this change.")
    load_bearing: bool = strawberry.field(description="Whether the item was load-bearing after this change.")
    confirmed: bool = strawberry.field(
        description="Whether a human had confirmed the item after this change."
    )
    record: strawberry.Private[EventRecord]
    view: strawberry.Private[View]

    @strawberry.field(description="Who made the change.")
    def actor(self) -> Actor:
        return now_or_later(self.view.loaders.actor.load(self.record.actor_id), Actor.of)

    @strawberry.field(description=f"Why, when a reason was given; ids you cannot see read {HIDDEN_ID}.")
    def reason(self) -> str | None:
        return self.view.redact(self.record.reason)

    @strawberry.field(description="The item that changed, as it reads in this read (now, or at asOf).")
    async def item(self) -> Annotated[Item, strawberry.lazy("mneia.schema.item")]:
        from mneia.schema.item import Item

        record = await self.view.loaders.item.load(self.record.item_id)
        assert record is not None, "an event is seen only with its item (policy item_event_read)"
        return Item.of(record, self.view)

    @classmethod
    def of(cls, record: EventRecord, view: View) -> ItemEvent:
        return cls(
            id=strawberry.ID(str(record.id)),
            kind=ItemEventKind(record.event),
            at=record.at,
            from_status=ItemStatus(record.from_status) if record.from_status is not None else None,
            to_status=ItemStatus(record.to_status),
            load_bearing=record.load_bearing,
            confirmed=record.confirmed,
            record=record,
            view=view,
        )
