"""Many assertions in one statement: ``create_many``, the write behind ``assertItems`` and every
other path that asserts items (a single ``assertItem`` is a batch of one).

One ``INSERT … SELECT FROM unnest(…) RETURNING``: every column travels as one
array parameter, so a thousand items are one round trip and one plan. It is
not COPY, which PostgreSQL refuses into a table with row-level security. The
statement is the caller's, as ``mneia_app`` in the request's transaction, so
everything that guards a single INSERT guards each row here: the policies
(item_assert), the authority guard (items_guard, per row), the event log
(items_asserted_log, one statement-level trigger writing each row's ASSERTED
event and first state) and the counters. Who asserts is the transaction's
actor and when is the database's ``now()``, never a value of the caller's.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    DateTime,
    Float,
    Interval,
    Text,
    bindparam,
    case,
    cast,
    func,
    literal_column,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage.database import Driven, Tx
from mneia.storage.ids import new_ids
from mneia.storage.item import ItemRecord, NewItem, columns_at, contradicting, record_of
from mneia.storage.tables import items
from mneia.vocabulary import ItemStatus

_ID = UUID(as_uuid=True)
_AT = DateTime(timezone=True)
_COMMA: ColumnElement[str] = literal_column("','")

_GIVEN: tuple[tuple[str, Any], ...] = (
    ("id", _ID),
    ("project_id", _ID),
    ("kind", Text),
    ("statement", Text),
    ("details", Text),
    ("basis", Text),
    ("confidence", Float),
    ("status", Text),
    ("status_reason", Text),
    ("scope", Text),
    ("grants", Text),
    ("session_id", _ID),
    ("valid_from", _AT),
    ("valid_to", _AT),
    ("decay_after", Interval),
    ("said_at", _AT),
    ("redacted", Text),
    ("confirmed", Boolean),
)
"""One array parameter per column the caller states. A row's lists (grants, redacted kinds) travel
as comma-separated text: arrays of arrays must be rectangular. Neither an id nor a kind holds a comma."""
_NAMES = frozenset(name for name, _ in _GIVEN)


def _statement(rows: bool) -> Driven:
    """The INSERT of many rows (``rows``: each column an array, unnest'ed) or of one (each column a
    value, ``INSERT … VALUES``): the same columns, computed the same way from what is given."""
    if rows:
        arrays = (bindparam(name, type_=ARRAY(kind)) for name, kind in _GIVEN)
        given: Any = (
            func.unnest(*arrays).table_valued(*(name for name, _ in _GIVEN)).render_derived(name="given")
        )
        column = given.c
    else:
        column = SimpleNamespace(**{name: bindparam(name, type_=kind) for name, kind in _GIVEN})
    actor = bindparam("actor", type_=_ID)
    now = func.now()
    values = {
        "workspace_id": bindparam("workspace", type_=_ID),
        "id": column.id,
        "project_id": column.project_id,
        "kind": column.kind,
        "statement": column.statement,
        "details": column.details,
        "basis": column.basis,
        "confidence": column.confidence,
        "status": column.status,
        "status_reason": column.status_reason,
        "scope": column.scope,
        "grant_actor_ids": cast(func.string_to_array(column.grants, _COMMA), ARRAY(_ID)),
        "asserted_by": actor,
        "asserted_at": now,
        "session_id": column.session_id,
        "valid_from": column.valid_from,
        "valid_to": column.valid_to,
        "decay_after": column.decay_after,
        "said_at": column.said_at,
        "redacted": func.string_to_array(column.redacted, _COMMA),
        "confirmed_by": case((column.confirmed, actor)),
        "confirmed_at": case((column.confirmed, now)),
    }
    _, returned = columns_at(items, None)
    if rows:
        insert = pg_insert(items).from_select(list(values), select(*values.values()).select_from(given))
    else:
        insert = pg_insert(items).values(values)
    return Driven(insert.returning(*returned.values()))


_INSERT = _statement(rows=True)
_INSERT_ONE = _statement(rows=False)
"""A batch of one: the same row by ``INSERT … VALUES``. On Citus an INSERT whose rows come from a
SELECT (unnest) is planned as a distributed INSERT … SELECT, its rows gathered and then sent to
their shard, which cost an assertion about 3.5 ms more than plain PostgreSQL
(benchmarks/scale_out.py); one row of values goes straight to its shard. On one server the two
cost the same (docs/performance.md)."""


async def create_many(
    tx: Tx,
    news: Sequence[NewItem],
    *,
    confirmed: Sequence[bool],
    contradicts: Sequence[Sequence[uuid.UUID]] | None = None,
) -> list[ItemRecord]:
    """Assert ``news`` as the caller, now, in one statement; their records in the same order.

    ``confirmed[i]``: a human states item i in its own words (``authority.confirms``), so it is
    human-confirmed from its assertion. ``contradicts[i]``: the items item i contradicts; it is
    then DISPUTED (the caller opens the disputes, R8).
    """
    assert tx.workspace_id and tx.actor_id
    assert len(confirmed) == len(news), "one confirmation flag per item"
    against = contradicts if contradicts is not None else [()] * len(news)
    if not news:
        return []
    ids = new_ids(len(news))
    params: dict[str, Any] = {
        "workspace": tx.workspace_id,
        "actor": tx.actor_id,
        "id": ids,
        "project_id": [new.project_id for new in news],
        "kind": [str(new.kind) for new in news],
        "statement": [new.statement for new in news],
        "details": [new.details for new in news],
        "basis": [new.basis for new in news],
        "confidence": [new.confidence for new in news],
        "status": [str(ItemStatus.DISPUTED if other else ItemStatus.ACTIVE) for other in against],
        "status_reason": [contradicting(other) if other else None for other in against],
        "scope": [str(new.scope) for new in news],
        "grants": [",".join(str(grant) for grant in new.grant_actor_ids) for new in news],
        "session_id": [new.session_id for new in news],
        "valid_from": [new.valid_from for new in news],
        "valid_to": [new.valid_to for new in news],
        "decay_after": [new.decay_after for new in news],
        "said_at": [new.said_at for new in news],
        "redacted": [",".join(new.redacted) for new in news],
        "confirmed": list(confirmed),
    }
    if len(news) == 1:
        one = {name: value[0] if name in _NAMES else value for name, value in params.items()}
        return [record_of(row) for row in await tx.fetch(_INSERT_ONE, one)]
    found = {record.id: record for record in map(record_of, await tx.fetch(_INSERT, params))}
    return [found[key] for key in ids]
