"""An item's log: every change, oldest first, as the trigger wrote it (R6).

The application never writes an event; the trigger in storage/sql/events.sql
does, for every change of an item. An event's instant is the transaction's
time, and ``seq`` orders the events of one instant.

An item whose assertion is its whole story has no event written: its row
implies its ASSERTED event (the item's id, seq 0), until its first change
writes it (storage/sql/events.sql). Every read here is the written events and
the implied ones together, in one order: ``at``, then ``seq``, then ``id``.
"""

from __future__ import annotations

import dataclasses
import heapq
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    DateTime,
    Integer,
    Text,
    Uuid,
    and_,
    bindparam,
    exists,
    func,
    literal,
    null,
    select,
    tuple_,
    union_all,
)

from mneia.storage import count
from mneia.storage.count import Count
from mneia.storage.database import Tx, from_row, one_of, stated
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
_ASSERTED = literal(ItemEventKind.ASSERTED.value, Text, literal_execute=True)
_WRITTEN = exists().where(
    item_events.c.workspace_id == items.c.workspace_id, item_events.c.item_id == items.c.id
)
_IMPLIED_COLUMNS = {
    "id": items.c.id,
    "item_id": items.c.id,
    "seq": literal(0, Integer, literal_execute=True),
    "actor_id": items.c.asserted_by,
    "at": items.c.asserted_at,
    "event": _ASSERTED,
    "from_status": null(),
    "to_status": items.c.status,
    "load_bearing": items.c.load_bearing,
    "confirmed": items.c.confirmed_by.is_not(None),
    "reason": func.coalesce(items.c.supersession_reason, items.c.status_reason),
}
"""The ASSERTED event an item's row implies while it has no event written (its columns are as
asserted then), by the record's fields."""
_IMPLIED = select(*(column.label(name) for name, column in _IMPLIED_COLUMNS.items())).where(~_WRITTEN)

_OF_ITEMS = union_all(
    select(*_COLUMNS).where(stated(item_events), one_of(item_events.c.item_id)),
    _IMPLIED.where(stated(items), one_of(items.c.id)),
).order_by("item_id", "at", "seq", "id")


async def of_items(tx: Tx, item_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[EventRecord]]:
    """The log of each visible item, oldest first."""
    found: dict[uuid.UUID, list[EventRecord]] = {item_id: [] for item_id in item_ids}
    for row in await tx.execute(_OF_ITEMS, {"workspace": tx.workspace, "ids": list(item_ids)}):
        found[row.item_id].append(from_row(EventRecord, row))
    return found


@dataclass(frozen=True, slots=True)
class EventPage:
    records: list[EventRecord]
    has_next: bool
    count: Callable[[], Awaitable[Count]]
    """The total of the project's matching events, counted only when asked for."""


_CURSOR = union_all(
    select(item_events.c.at, item_events.c.seq).where(
        stated(item_events), item_events.c.id == bindparam("after")
    ),
    select(items.c.asserted_at, _IMPLIED_COLUMNS["seq"]).where(
        stated(items), items.c.id == bindparam("after")
    ),
).limit(1)
"""Where an event stands in the order (``at``, ``seq``): a written one, or the assertion an item's
row implies (which, once written, keeps that place)."""

_WRITTEN_SOURCE = item_events.join(
    items, and_(items.c.workspace_id == item_events.c.workspace_id, items.c.id == item_events.c.item_id)
)


async def of_project(
    tx: Tx, project_id: uuid.UUID, kinds: Sequence[ItemEventKind], *, first: int, after: uuid.UUID | None
) -> EventPage:
    """One page of the log of a project's visible items, newest first (``at``, ``seq``, ``id``).

    An event is seen with its item (the policy item_event_read), so a reader
    sees exactly the events of the items they can see (R2). The written events
    and the implied assertions are read apart, each newest first from an index
    (item_events_kind with ``kinds``; items_asserted for the assertions), and
    merged. The kinds are written into the statement (vocabulary values), so
    the plan knows them.
    """
    written = [stated(items, tx), items.c.project_id == project_id]
    if kinds:
        chosen = [literal(kind.value, Text, literal_execute=True) for kind in kinds]
        written.append(item_events.c.event.in_(chosen))
    implied = None
    if not kinds or ItemEventKind.ASSERTED in kinds:
        implied = [stated(items, tx), items.c.project_id == project_id, ~_WRITTEN]
    counter = count.once(lambda: _counted(tx, written, implied))

    written_listing = select(*_COLUMNS).select_from(_WRITTEN_SOURCE).where(*written)
    implied_listing = _IMPLIED.where(*implied) if implied is not None else None
    if after is not None:
        key: Any = (await tx.execute(_CURSOR, {"workspace": tx.workspace, "after": after})).first()
        if key is None:  # not an event the reader sees
            return EventPage([], has_next=False, count=counter)
        at = literal(key[0], DateTime(timezone=True))
        seq: int = key[1]
        cursor = literal(after, Uuid())
        past = tuple_(at, literal(seq, BigInteger), cursor)
        written_listing = written_listing.where(
            tuple_(item_events.c.at, item_events.c.seq, item_events.c.id) < past
        )
        if implied_listing is not None:
            # An implied assertion's seq is 0: it comes before a cursor of seq > 0 at the same instant.
            said = items.c.asserted_at
            before = said <= at if seq > 0 else tuple_(said, items.c.id) < tuple_(at, cursor)
            implied_listing = implied_listing.where(before)
    newest = [item_events.c.at.desc(), item_events.c.seq.desc(), item_events.c.id.desc()]
    rows = list((await tx.execute(written_listing.order_by(*newest).limit(first + 1))).all())
    if implied_listing is not None:
        ordered = implied_listing.order_by(items.c.asserted_at.desc(), items.c.id.desc()).limit(first + 1)
        found = (await tx.execute(ordered)).all()
        rows = list(heapq.merge(rows, found, key=lambda row: (row.at, row.seq, row.id), reverse=True))
    records = [from_row(EventRecord, row) for row in rows[:first]]
    return EventPage(records, has_next=len(rows) > first, count=counter)


async def _counted(
    tx: Tx, written: Sequence[ColumnElement[bool]], implied: Sequence[ColumnElement[bool]] | None
) -> Count:
    """The matching events, written and implied, counted up to ``count.LIMIT`` together."""
    total = await count.bounded(tx, _WRITTEN_SOURCE, written)
    if implied is None or not total.exact:
        return total
    more = await count.bounded(tx, items, implied)
    found = total.total + more.total
    return Count(min(found, count.LIMIT), exact=more.exact and found <= count.LIMIT)
