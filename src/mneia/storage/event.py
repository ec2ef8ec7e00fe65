"""An item's log: every change, oldest first, as the trigger wrote it (R6).

The application never writes an event; the trigger in storage/sql/events.sql
does, for every change of an item. An event's instant is the transaction's
time, and ``seq`` orders the events of one instant.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Text, and_, literal, select, tuple_

from mneia.storage import count
from mneia.storage.count import Count
from mneia.storage.database import Tx, from_row, one_of
from mneia.storage.tables import item_events, items
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


@dataclass(frozen=True, slots=True)
class EventPage:
    records: list[EventRecord]
    has_next: bool
    count: Callable[[], Awaitable[Count]]
    """The total of the project's matching events, counted only when asked for."""


async def of_project(
    tx: Tx, project_id: uuid.UUID, kinds: Sequence[ItemEventKind], *, first: int, after: uuid.UUID | None
) -> EventPage:
    """One page of the log of a project's visible items, newest first (``at``, then ``seq``).

    An event is seen with its item (the policy item_event_read), so a reader
    sees exactly the events of the items they can see (R2). With ``kinds``,
    the index item_events_kind finds the project's events of those kinds
    without reading the rest of its log; the kinds are written into the
    statement (vocabulary values), so the plan knows them.
    """
    joined = item_events.join(
        items, and_(items.c.workspace_id == item_events.c.workspace_id, items.c.id == item_events.c.item_id)
    )
    conditions = [items.c.project_id == project_id]
    if kinds:
        conditions.append(
            item_events.c.event.in_([literal(kind.value, Text, literal_execute=True) for kind in kinds])
        )
    listing = select(*_COLUMNS).select_from(joined).where(*conditions)
    if after is not None:
        cursor = item_events.alias("cursor")
        at_cursor = [
            select(column).where(cursor.c.id == after).scalar_subquery()
            for column in (cursor.c.at, cursor.c.seq)
        ]
        listing = listing.where(tuple_(item_events.c.at, item_events.c.seq) < tuple_(*at_cursor))
    ordered = listing.order_by(item_events.c.at.desc(), item_events.c.seq.desc()).limit(first + 1)
    rows = (await tx.execute(ordered)).all()

    records = [from_row(EventRecord, row) for row in rows[:first]]
    counter = count.once(lambda: count.bounded(tx, joined, conditions))
    return EventPage(records, has_next=len(rows) > first, count=counter)
