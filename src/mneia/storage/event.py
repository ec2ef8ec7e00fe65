"""An item's log: every change, oldest first, as the trigger wrote it (R6).

The application never writes an event; the trigger in storage/sql/events.sql
does, for every change of an item. An event's instant is the transaction's
time, and ``seq`` orders the events of one instant.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from mneia.storage.database import Tx, from_row, one_of
from mneia.storage.tables import item_events
from mneia.vocabulary import ItemEventKind, ItemStatus


@dataclass(frozen=True, slots=True)
class EventRecord:
    id: uuid.UUID
    item_id: uuid.UUID
    seq: int
    actor_id: uuid.UUID
    at: datetime
    event: ItemEventKind
    from_status: ItemStatus | None
    to_status: ItemStatus
    load_bearing: bool
    confirmed: bool
    reason: str | None


_COLUMNS = tuple(item_events.c[field.name] for field in dataclasses.fields(EventRecord))
_OF_ITEMS = (
    select(*_COLUMNS)
    .where(one_of(item_events.c.item_id))
    .order_by(item_events.c.item_id, item_events.c.at, item_events.c.seq)
)


async def of_items(tx: Tx, item_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[EventRecord]]:
    """The log of each visible item, oldest first."""
    found: dict[uuid.UUID, list[EventRecord]] = {item_id: [] for item_id in item_ids}
    for row in await tx.execute(_OF_ITEMS, {"ids": list(item_ids)}):
        found[row.item_id].append(from_row(EventRecord, row))
    return found
