"""Context items: the unit of project memory, with provenance and authority.

Items are never deleted and their content never changes. What an item says
is a ``NewItem``; who says it and when is the server's (the requesting actor,
the database's now()). Every later change is one of the named updates below
(confirm, retire, mark_superseded, verify, …), an UPDATE of the few columns
the server's role may update; the database checks who may make it
(storage/sql/authority.sql) and a trigger appends the event (R6).
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Select,
    Text,
    and_,
    bindparam,
    case,
    exists,
    false,
    func,
    literal,
    literal_column,
    not_,
    or_,
    select,
    text,
    true,
    tuple_,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.sql.dml import ReturningInsert

from mneia.freshness import freshness_at
from mneia.storage import count, search
from mneia.storage.count import Count
from mneia.storage.database import Driven, Tx, from_row, one_of, stated
from mneia.storage.ids import new_id
from mneia.storage.tables import item_states, items
from mneia.vocabulary import Authority, ItemKind, ItemOrder, ItemStatus, Scope


def authority_of(status: ItemStatus, confirmed: bool) -> Authority:
    """R4: an item's authority, from its status and whether a human confirmed it. The one rule:
    ``authority_condition`` asks the database the same question, derived from this function."""
    if status == ItemStatus.DISPUTED:
        return Authority.DISPUTED
    return Authority.HUMAN_CONFIRMED if confirmed else Authority.AGENT_ASSERTED


def constant(value: str) -> Any:
    """A vocabulary value written into the statement (never a caller's text), so that the
    partial indexes' predicates are proved whatever plan a prepared statement gets."""
    return literal(str(value), Text, literal_execute=True)


def authority_condition(wanted: Sequence[Authority], status: Any, is_confirmed: Any) -> ColumnElement[bool]:
    """Whether an item's authority is among ``wanted``, as SQL over its status and whether it is
    confirmed (``is_confirmed``: ``confirmed_by IS NOT NULL`` on items, ``confirmed`` on the counters).

    Derived from ``authority_of`` over every status, confirmed or not, so that
    the two cannot disagree (tests/test_filters.py checks every combination in
    the database too). Written as plain comparisons, not as a CASE, so that an
    index on status and confirmation (items_unconfirmed) can serve it.
    """
    either, confirmed, unconfirmed = [], [], []
    for value in ItemStatus:
        yes, no = authority_of(value, True) in wanted, authority_of(value, False) in wanted
        if yes and no:
            either.append(constant(value))
        elif yes:
            confirmed.append(constant(value))
        elif no:
            unconfirmed.append(constant(value))
    parts: list[ColumnElement[bool]] = []
    if either:
        parts.append(status.in_(either))
    if confirmed:
        parts.append(and_(status.in_(confirmed), is_confirmed))
    if unconfirmed:
        parts.append(and_(status.in_(unconfirmed), not_(is_confirmed)))
    return or_(*parts) if parts else false()


def last_checked(columns: dict[str, Any]) -> Any:
    """When an item was last checked: its last verification, else its assertion (R10)."""
    return func.coalesce(columns["last_verified_at"], columns["asserted_at"])


def stale_condition(columns: dict[str, Any], moment: Any) -> ColumnElement[bool]:
    """R10 as SQL, the comparison ``ItemRecord.stale_at`` makes: the age since the last check against
    decayAfter (an age, never a moment, so no stored decay overflows)."""
    decay = columns["decay_after"]
    return and_(decay.is_not(None), moment - last_checked(columns) > decay)


@dataclass(frozen=True, slots=True)
class NewItem:
    """What an assertion states. Who states it, and when, is the server's to record."""

    project_id: uuid.UUID
    kind: ItemKind
    statement: str
    details: str | None = None
    basis: str | None = None
    confidence: float | None = None
    scope: Scope = Scope.PROJECT
    grant_actor_ids: tuple[uuid.UUID, ...] = ()
    session_id: uuid.UUID | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    decay_after: timedelta | None = None
    said_at: datetime | None = None
    """When the source said it (an import's transcript turn or ADR date); the source's word."""
    redacted: tuple[str, ...] = ()
    """The kinds of credential removed from its text before it reached the server (mneia.secrets)."""


@dataclass(frozen=True, slots=True)
class ItemRecord:
    id: uuid.UUID
    project_id: uuid.UUID
    kind: ItemKind
    statement: str
    details: str | None
    basis: str | None
    confidence: float | None
    status: ItemStatus
    status_reason: str | None
    scope: Scope
    grant_actor_ids: list[uuid.UUID]
    asserted_by: uuid.UUID
    asserted_at: datetime
    session_id: uuid.UUID | None
    valid_from: datetime | None
    valid_to: datetime | None
    decay_after: timedelta | None
    last_verified_at: datetime | None
    load_bearing: bool
    load_bearing_suggested: bool
    confirmed_by: uuid.UUID | None
    confirmed_at: datetime | None
    supersedes_id: uuid.UUID | None
    supersession_reason: str | None
    said_at: datetime | None
    redacted: list[str]
    redacted_at: datetime | None
    redaction_reason: str | None

    @property
    def authority(self) -> Authority:
        return authority_of(self.status, self.confirmed_by is not None)

    @property
    def shown_statement(self) -> str:
        """The statement as every reader sees it: a redacted item's says only that, how and when (R16)."""
        if self.redacted_at is None:
            return self.statement
        return f"[redacted by {self.redaction_reason} on {self.redacted_at:%Y-%m-%d}]"

    @property
    def ruled(self) -> bool:
        """A human confirmed it or made it load-bearing: only a human changes its status or replaces it."""
        return self.confirmed_by is not None or self.load_bearing

    def stale_at(self, now: datetime) -> bool:
        """R10: past (last verification, else assertion) + decayAfter.

        Computed as an age, never as a moment: any two datetimes are less than
        timedelta's range apart, so no stored decay can overflow (F4); a decay
        past year 9999 is simply never reached.
        """
        if self.decay_after is None:
            return False
        return now - (self.last_verified_at or self.asserted_at) > self.decay_after

    def freshness_at(self, now: datetime) -> float:
        """1 down towards 0 as it ages past decayAfter; 1/2 when it goes stale (mneia.freshness)."""
        return freshness_at(now, self.decay_after, self.last_verified_at, self.asserted_at)


_COLUMNS = tuple(items.c[field.name] for field in dataclasses.fields(ItemRecord))
_MOMENTS = tuple(field.name for field in dataclasses.fields(ItemRecord) if "datetime" in str(field.type))


def _record(row: Any) -> ItemRecord:
    record = from_row(ItemRecord, row[: len(_COLUMNS)])
    # asyncpg reads PostgreSQL's ±infinity as a naive datetime.max/min; every other moment is UTC.
    naive = {
        name: moment.replace(tzinfo=UTC)
        for name in _MOMENTS
        if (moment := getattr(record, name)) is not None and moment.tzinfo is None
    }
    return dataclasses.replace(record, **naive) if naive else record


@dataclass(frozen=True, slots=True)
class ItemFilter:
    kinds: Sequence[ItemKind] | None = None
    statuses: Sequence[ItemStatus] | None = None
    load_bearing: bool | None = None
    text: str | None = None
    authorities: Sequence[Authority] | None = None
    stale: bool | None = None
    """Judged at the read's moment: ``page``'s ``as_of``, else its ``now``."""
    load_bearing_suggested: bool | None = None


@dataclass(frozen=True, slots=True)
class ItemPage:
    records: list[ItemRecord]
    has_next: bool
    count: Callable[[], Awaitable[Count]]
    """The filter's total, counted only when asked for, and at most once (storage.count)."""


STATE_FIELDS = frozenset(
    ("status", "status_reason", "load_bearing", "load_bearing_suggested")
    + ("confirmed_by", "confirmed_at", "last_verified_at")
)
"""The columns an item's later changes touch: as of a moment they are read from its state then."""

_MOMENT = bindparam("moment", type_=DateTime(timezone=True))


def _source(table: Any, moment: Any) -> tuple[Any, dict[str, Any]]:
    """``table`` (items or an alias of it) and the columns of an ``ItemRecord``, now or as of ``moment``.

    As of a moment each item is joined to its state then (R9): the written
    state whose [since, until) holds the moment, or, for an item with no
    history written (storage/sql/events.sql: its row implies it), the row
    itself from its assertion on. An item recorded after the moment has
    neither, so it is simply absent. ``moment`` None means now: the row as it
    stands. The columns come by field name, in the record's order.
    """
    fields = [field.name for field in dataclasses.fields(ItemRecord)]
    if moment is None:
        return table, {name: table.c[name] for name in fields}
    state = _state_at(table, moment)
    joined = table.join(state, true())
    return joined, {name: (state if name in STATE_FIELDS else table).c[name] for name in fields}


def _state_at(table: Any, moment: Any) -> Any:
    """The one state of ``table``'s item that holds ``moment``: a LATERAL subquery of one row or none.
    Whether the item has a state written is planned apart, given the item's workspace as a parameter
    of its own: so it also states the workspace, the parameter ``workspace`` (storage.database.stated).

    The written state states the workspace too, not only by its correlation to ``table``: without
    it Citus could not route the statement to one shard, and refused the union's branch with no
    FROM ("Subqueries without a FROM clause are not supported with union operator"), so every read
    as of a moment failed on a cluster. (Reading the item's row again as that branch's FROM also
    passed, but made a slice as of a moment a third slower on one server.)
    """
    written, other = item_states.alias("written"), item_states.alias("other")
    kept = sorted(STATE_FIELDS)
    held = select(*(written.c[name] for name in kept)).where(
        stated(written),
        written.c.workspace_id == table.c.workspace_id,
        written.c.item_id == table.c.id,
        written.c.since <= moment,
        written.c.until > moment,
    )
    implied = (
        select(*(table.c[name] for name in kept))
        .where(
            table.c.asserted_at <= moment,
            ~exists()
            .where(stated(other), other.c.workspace_id == table.c.workspace_id, other.c.item_id == table.c.id)
            .correlate_except(other),
        )
        .correlate(table)
    )
    return union_all(held, implied).lateral()


def _selected(columns: dict[str, Any], prefix: str = "") -> list[Any]:
    return [column.label(prefix + name) for name, column in columns.items()]


def columns_at(table: Any, moment: Any) -> tuple[Any, dict[str, Any]]:
    """For queries elsewhere (rehydration's candidates): ``table`` (items or an alias) joined to
    its state at ``moment`` (a bind parameter or None for now), and the record's columns by field."""
    return _source(table, moment)


def selected(columns: dict[str, Any], prefix: str = "") -> list[Any]:
    """The columns of ``columns_at`` labelled, in the record's field order (``prefix`` keeps two apart)."""
    return _selected(columns, prefix)


RECORD_WIDTH = len(_COLUMNS)
"""How many columns of a row ``record_of`` reads."""


def record_of(row: Any) -> ItemRecord:
    """The record of a row whose first columns are ``selected(...)`` (a slice of a longer row too)."""
    return _record(row)


async def page(
    tx: Tx,
    project_id: uuid.UUID,
    wanted: ItemFilter,
    *,
    first: int,
    after: uuid.UUID | None,
    as_of: datetime | None = None,
    valid_at: datetime | None = None,
    now: datetime | None = None,
    order: ItemOrder = ItemOrder.NEWEST,
) -> ItemPage:
    """One page of a project's visible items, in ``order`` (newest first by default), and a way to
    count them all.

    As of a moment: the items recorded by then, each as it stood then (R9),
    chosen by what they were then. Staleness is judged at ``as_of``, else at
    ``now`` (the request's clock, which the items' ``stale`` field uses too).
    Another order than NEWEST is for the present only (the resolver refuses it with asOf).
    """
    source, columns = _source(items, as_of)
    conditions: list[ColumnElement[bool]] = [stated(items, tx), items.c.project_id == project_id]
    if as_of is not None:
        # Implied by the state join (nothing is recorded before it is said); it bounds the index scan.
        conditions.append(items.c.asserted_at <= as_of)
    conditions += _counted_conditions(
        wanted, items.c.kind, columns["status"], columns["confirmed_by"].is_not(None), columns["load_bearing"]
    )
    if wanted.load_bearing_suggested is not None:
        conditions.append(columns["load_bearing_suggested"].is_(wanted.load_bearing_suggested))
    if wanted.stale is not None:
        moment = as_of if as_of is not None else now
        assert moment is not None, "staleness is judged at a moment"
        stale = stale_condition(columns, bindparam("judged_at", moment, type_=DateTime(timezone=True)))
        conditions.append(stale if wanted.stale else ~stale)
    if valid_at is not None:
        conditions.append(or_(items.c.valid_from.is_(None), items.c.valid_from <= valid_at))
        conditions.append(or_(items.c.valid_to.is_(None), items.c.valid_to > valid_at))
    if wanted.text:
        query = search.prefix_query(wanted.text)
        if as_of is None and order == ItemOrder.NEWEST:  # the common search: its path chosen in search
            return await _newest_matches(tx, conditions, query, first, after)
        conditions.append(search.matching(query))

    if as_of is None and order == ItemOrder.NEWEST and len(conditions) == 2:
        # The commonest page of all (no filter, newest first): a statement built once.
        listed = {"workspace": tx.workspace, "project": project_id, "limit": first + 1}
        if after is None:
            whole = await tx.fetch(_NEWEST, listed)
        else:
            whole = await tx.fetch(_NEWEST_AFTER, {**listed, "after": after})
        return _page(whole, first, _counter(tx, project_id, wanted, source, conditions, as_of, valid_at))
    listing = select(*_selected(columns)).select_from(source).where(*conditions)
    if order != ItemOrder.NEWEST:
        assert as_of is None, "orders other than NEWEST are for the present"
        keys = _order_keys(order, columns)
        if after is not None:
            cursor = items.alias("cursor")
            held = _order_keys(order, _source(cursor, None)[1])
            at_cursor = [
                select(key).where(stated(cursor, tx), cursor.c.id == after).scalar_subquery() for key in held
            ]
            listing = listing.where(tuple_(*keys) > tuple_(*at_cursor))
        rows = (await tx.execute(listing.order_by(*keys).limit(first + 1))).all()
        return _page(rows, first, _counter(tx, project_id, wanted, source, conditions, as_of, valid_at))
    # Newest first: by id now; as of a moment by when each was said, so that the index
    # items_asserted starts at the moment instead of walking past everything said since.
    if as_of is None:
        newest = [items.c.id.desc()]
        if after is not None:
            listing = listing.where(items.c.id < after)
    else:
        newest = [items.c.asserted_at.desc(), items.c.id.desc()]
        if after is not None:
            cursor = items.alias("cursor")
            said = (
                select(cursor.c.asserted_at).where(stated(cursor, tx), cursor.c.id == after).scalar_subquery()
            )
            listing = listing.where(tuple_(items.c.asserted_at, items.c.id) < tuple_(said, literal(after)))
    rows = (await tx.execute(listing.order_by(*newest).limit(first + 1), {"workspace": tx.workspace})).all()
    return _page(rows, first, _counter(tx, project_id, wanted, source, conditions, as_of, valid_at))


async def _newest_matches(
    tx: Tx, chosen: list[ColumnElement[bool]], query: Any, first: int, after: uuid.UUID | None
) -> ItemPage:
    """A text search's page, newest first, and its bounded count, as storage.search finds them."""
    past = [*chosen, items.c.id < after] if after is not None else chosen
    found = await search.newest(tx, _selected(_NOW_COLUMNS), past, query, first + 1)
    whole = after is None
    return _page(found.rows, first, count.once(lambda: search.counted(tx, chosen, query, found, whole=whole)))


def _order_keys(order: ItemOrder, columns: dict[str, Any]) -> list[Any]:
    """The sort keys of ``order``, each ascending, so that a row comparison continues after a cursor.

    The indexes items_unconfirmed and items_decaying hold the same expressions,
    so that the Unconfirmed and Stale tabs of the inbox read their first page
    from an index in order.
    """
    if order == ItemOrder.SUGGESTED_THEN_CONFIDENCE:
        # Suggested first (false sorts first), then highest confidence (none last), then oldest.
        return [
            not_(columns["load_bearing_suggested"]),
            func.coalesce(-columns["confidence"], literal_column("1")),
            columns["asserted_at"],
            columns["id"],
        ]
    return [last_checked(columns), columns["id"]]


def _counted_conditions(
    wanted: ItemFilter, kind: Any, status: Any, confirmed: Any, load_bearing: Any
) -> list[ColumnElement[bool]]:
    """The part of a filter the counters can answer (kinds, statuses, authorities, load-bearing),
    over the items' columns for a page or the counters' for its total: one rule for both."""
    chosen: list[ColumnElement[bool]] = []
    if wanted.kinds:
        chosen.append(kind.in_([constant(value) for value in wanted.kinds]))
    if wanted.statuses:
        chosen.append(status.in_([constant(value) for value in wanted.statuses]))
    if wanted.authorities:
        chosen.append(authority_condition(wanted.authorities, status, confirmed))
    if wanted.load_bearing is not None:
        chosen.append(load_bearing.is_(wanted.load_bearing))
    return chosen


def from_counters(wanted: ItemFilter, as_of: datetime | None, valid_at: datetime | None) -> bool:
    """Whether the counters answer this filter's total: the items as they are now, chosen by
    status, kind, load-bearing and authority only (docs/counting.md). Else the count is bounded."""
    return (
        as_of is None
        and valid_at is None
        and not wanted.text
        and wanted.stale is None
        and wanted.load_bearing_suggested is None
    )


def _counter(
    tx: Tx,
    project_id: uuid.UUID,
    wanted: ItemFilter,
    source: Any,
    conditions: list[ColumnElement[bool]],
    as_of: datetime | None,
    valid_at: datetime | None,
) -> Callable[[], Awaitable[Count]]:
    if not from_counters(wanted, as_of, valid_at):
        return count.once(lambda: count.bounded(tx, source, conditions))

    def chosen(c: Any) -> list[ColumnElement[bool]]:
        return _counted_conditions(wanted, c.kind, c.status, c.confirmed, c.load_bearing)

    return count.once(lambda: count.counted(tx, project_id, chosen))


def _page(rows: Sequence[Any], first: int, counter: Callable[[], Awaitable[Count]]) -> ItemPage:
    return ItemPage([_record(row) for row in rows[:first]], has_next=len(rows) > first, count=counter)


_NOW_SOURCE, _NOW_COLUMNS = _source(items, None)
_THEN_SOURCE, _THEN_COLUMNS = _source(items, _MOMENT)
_BY_IDS = Driven(select(*_selected(_NOW_COLUMNS)).where(stated(items), one_of(items.c.id)))  # item loaders'


def _newest(*after: ColumnElement[bool]) -> Driven:
    """A project's items newest first, with no filter: what ``page`` builds for that case."""
    return Driven(
        select(*_selected(_NOW_COLUMNS))
        .where(stated(items), items.c.project_id == bindparam("project"), *after)
        .order_by(items.c.id.desc())
        .limit(bindparam("limit"))
    )


_NEWEST = _newest()
_NEWEST_AFTER = _newest(items.c.id < bindparam("after"))
_BY_IDS_THEN = (
    select(*_selected(_THEN_COLUMNS)).select_from(_THEN_SOURCE).where(stated(items), one_of(items.c.id))
)


async def by_ids(
    tx: Tx, ids: Sequence[uuid.UUID], as_of: datetime | None = None
) -> dict[uuid.UUID, ItemRecord]:
    """The visible items among ``ids``; as of a moment, those recorded by then, as they stood then."""
    given = {"workspace": tx.workspace, "ids": list(ids)}
    if as_of is None:
        records = [_record(row) for row in await tx.fetch(_BY_IDS, given)]
    else:
        rows = await tx.execute(_BY_IDS_THEN, {**given, "moment": as_of})
        records = [_record(row) for row in rows]
    return {record.id: record for record in records}


async def get(tx: Tx, item_id: uuid.UUID, as_of: datetime | None = None) -> ItemRecord | None:
    return (await by_ids(tx, [item_id], as_of)).get(item_id)


_OF_SESSION = (
    select(*_selected(_NOW_COLUMNS))
    .where(stated(items), items.c.session_id == bindparam("session"))
    .order_by(items.c.id)
)


async def of_session(tx: Tx, session_id: uuid.UUID) -> list[ItemRecord]:
    """The visible items asserted in a session, oldest first (index items_session)."""
    rows = await tx.execute(_OF_SESSION, {"workspace": tx.workspace, "session": session_id})
    return [_record(row) for row in rows]


def first_written(table: Any, status: ItemStatus) -> Any:
    """When ``table``'s item first took ``status`` by its written states (NULL if none says). The
    status is written into the SQL (a vocabulary value), so statements built once can hold it.

    The sub-select states the workspace itself (the statement's ``workspace`` parameter), not only
    by its correlation to ``table``: on Citus a correlated sub-select that does not keeps the
    statement from being routed to one shard, and with a recursive CTE beside it (the
    replacements' chains, rehydration.candidates) Citus then refuses the statement ("recursive
    CTEs are only supported when they contain a filter on the distribution column")."""
    return (
        select(func.min(item_states.c.since))
        .where(
            stated(item_states),
            item_states.c.workspace_id == table.c.workspace_id,
            item_states.c.item_id == table.c.id,
            item_states.c.status == literal_column(f"'{status.value}'", Text),
        )
        .scalar_subquery()
    )


def became(table: Any, status: ItemStatus) -> Any:
    """When ``table``'s item first took ``status`` (NULL if it never did): from its written
    states, or, for an item with none (its row implies its history), its assertion."""
    implied = case((table.c.status == literal_column(f"'{status.value}'", Text), table.c.asserted_at))
    return func.coalesce(first_written(table, status), implied)


_SUPERSEDED_AT = select(items.c.id.label("item_id"), became(items, ItemStatus.SUPERSEDED).label("at")).where(
    stated(items), one_of(items.c.id)
)


async def superseded_at(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, datetime]:
    """When each of the visible items among ``ids`` became SUPERSEDED (those that did)."""
    if not ids:
        return {}
    rows = await tx.execute(_SUPERSEDED_AT, {"workspace": tx.workspace, "ids": list(ids)})
    return {row.item_id: row.at for row in rows if row.at is not None}


_SUCCESSORS = select(*_selected(_NOW_COLUMNS)).where(stated(items), one_of(items.c.supersedes_id))
_SUCCESSORS_THEN = (
    select(*_selected(_THEN_COLUMNS))
    .select_from(_THEN_SOURCE)
    .where(stated(items), one_of(items.c.supersedes_id))
)


async def successors(
    tx: Tx, ids: Sequence[uuid.UUID], as_of: datetime | None = None
) -> dict[uuid.UUID, ItemRecord]:
    """The visible replacement of each given item, keyed by the item it replaced; as of a
    moment, only a replacement recorded by then."""
    given = {"workspace": tx.workspace, "ids": list(ids)}
    if as_of is None:
        rows = await tx.execute(_SUCCESSORS, given)
    else:
        rows = await tx.execute(_SUCCESSORS_THEN, {**given, "moment": as_of})
    return {row.supersedes_id: _record(row) for row in rows}


def _chains_statement(moment: Any) -> Select[Any]:
    """The recursive walk behind ``chains``, built once: the ids (and moment) are bound at execution.

    Each walk carries its origin and a depth (negative backwards, positive
    forwards), and joins on (workspace_id, …) so that each step is one probe
    of the primary key or of the unique successor index; each step states the
    workspace too, which a recursive step does not inherit from its seed. As
    of a moment every step joins its item's state then, so the walk forwards
    ends where the chain ended at that moment.
    """
    seed_source, seed_columns = _source(items, moment)
    seed = (
        select(
            *_selected(seed_columns),
            items.c.id.label("origin"),
            literal_column("0").label("depth"),
            items.c.workspace_id,
        )
        .select_from(seed_source)
        .where(stated(items), items.c.id.in_(bindparam("ids", expanding=True)))
    )
    back = seed.cte("back", recursive=True)
    older = items.alias("older")
    older_source, older_columns = _source(older, moment)
    back = back.union_all(
        select(*_selected(older_columns), back.c.origin, back.c.depth - 1, older.c.workspace_id)
        .select_from(older_source)
        .where(stated(older), older.c.workspace_id == back.c.workspace_id, older.c.id == back.c.supersedes_id)
    )
    forward = seed.cte("forward", recursive=True)
    newer = items.alias("newer")
    newer_source, newer_columns = _source(newer, moment)
    forward = forward.union_all(
        select(*_selected(newer_columns), forward.c.origin, forward.c.depth + 1, newer.c.workspace_id)
        .select_from(newer_source)
        .where(
            stated(newer),
            newer.c.workspace_id == forward.c.workspace_id,
            newer.c.supersedes_id == forward.c.id,
        )
    )
    walked = select(back).union_all(select(forward).where(forward.c.depth > 0)).subquery()
    return select(walked).order_by(walked.c.origin, walked.c.depth)


_CHAINS = _chains_statement(None)
_CHAINS_THEN = _chains_statement(_MOMENT)


async def chains(
    tx: Tx, ids: Sequence[uuid.UUID], as_of: datetime | None = None
) -> dict[uuid.UUID, list[ItemRecord]]:
    """The whole supersede chain through each item, oldest first, all in one recursive query (R7);
    as of a moment, the chain as it stood then."""
    if not ids:
        return {}
    found: dict[uuid.UUID, list[ItemRecord]] = {}
    given = {"workspace": tx.workspace, "ids": list(ids)}
    if as_of is None:
        rows = await tx.execute(_CHAINS, given)
    else:
        rows = await tx.execute(_CHAINS_THEN, {**given, "moment": as_of})
    for row in rows:
        found.setdefault(row.origin, []).append(_record(row))
    return found


async def chain(tx: Tx, item_id: uuid.UUID) -> list[ItemRecord]:
    return (await chains(tx, [item_id])).get(item_id, [])


def _content(new: NewItem) -> dict[str, Any]:
    values = {field.name: getattr(new, field.name) for field in dataclasses.fields(NewItem)}
    values["grant_actor_ids"] = list(new.grant_actor_ids)
    values["redacted"] = list(new.redacted)
    return values


_NOW = func.now()
"""A recorded time is the database's clock, never the server's: INSERTs bind it into the statement."""


@functools.cache
def _insert_statement(now_columns: frozenset[str]) -> ReturningInsert[Any]:
    """The INSERT with ``now()`` in the given columns; every other value is a parameter.

    Built once per set of clock columns, so an assertion does not pay for
    building and keying a statement (the compiled form is cached per
    parameter names by SQLAlchemy).
    """
    return pg_insert(items).values({name: _NOW for name in now_columns}).returning(*_COLUMNS)


@functools.cache
def _driven_insert(now_columns: frozenset[str], names: tuple[str, ...]) -> Driven:
    """The INSERT for these clock columns and parameters, sent by the driver (on every write's path)."""
    return Driven(_insert_statement(now_columns), names)


async def _insert(tx: Tx, new: NewItem, **recorded: Any) -> ItemRecord:
    assert tx.workspace_id and tx.actor_id
    values = {"asserted_by": tx.actor_id, **_content(new), **recorded}
    clock = frozenset(name for name, value in values.items() if value is _NOW)
    params = {name: value for name, value in values.items() if value is not _NOW}
    params.update(workspace_id=tx.workspace_id, id=new_id())
    (row,) = await tx.fetch(_driven_insert(clock, tuple(params)), params)
    return _record(row)


def _confirmation(tx: Tx, confirmed: bool) -> dict[str, Any]:
    return {"confirmed_by": tx.actor_id, "confirmed_at": _NOW} if confirmed else {}


def _load_bearing(tx: Tx, load_bearing: bool) -> dict[str, Any]:
    if not load_bearing:
        return {}
    return {"load_bearing": True, "load_bearing_set_by": tx.actor_id, "load_bearing_set_at": _NOW}


# An assertion is storage.bulk's create_many (one statement for any number of items);
# the writes below are a replacement's, one at a time.


def contradicting(ids: Sequence[uuid.UUID]) -> str:
    """Why an item that contradicts others is DISPUTED (R8)."""
    return "contradicts " + ", ".join(str(item_id) for item_id in ids)


async def create_replacement(
    tx: Tx, new: NewItem, target: ItemRecord, reason: str, *, confirmed: bool, load_bearing: bool
) -> ItemRecord:
    """The caller's replacement of ``target`` (which the caller then marks SUPERSEDED)."""
    return await _insert(
        tx,
        new,
        supersedes_id=target.id,
        supersession_reason=reason,
        **_confirmation(tx, confirmed),
        **_load_bearing(tx, load_bearing),
    )


async def accept_replacement(
    tx: Tx,
    new: NewItem,
    target: ItemRecord,
    reason: str | None,
    *,
    proposed_by: uuid.UUID,
    proposed_at: datetime,
    load_bearing: bool,
) -> ItemRecord:
    """A human accepts an agent's proposed replacement: the agent's words, when it proposed them,
    confirmed by the human. The database checks that it is exactly what was proposed."""
    return await _insert(
        tx,
        new,
        asserted_by=proposed_by,
        asserted_at=proposed_at,
        supersedes_id=target.id,
        supersession_reason=reason,
        **_confirmation(tx, True),
        **_load_bearing(tx, load_bearing),
    )


async def _update(tx: Tx, item_id: uuid.UUID, **values: Any) -> ItemRecord | None:
    row = (
        await tx.execute(
            update(items)
            .where(stated(items, tx), items.c.id == item_id)
            .values(**values)
            .returning(*_COLUMNS)
        )
    ).first()
    return _record(row) if row else None


# The named updates. Each answers None when the caller may not change the item
# (not a member of its project); the database refuses what the caller may not do.


async def confirm(tx: Tx, item_id: uuid.UUID) -> ItemRecord | None:
    return await _update(tx, item_id, **_confirmation(tx, True))


async def set_load_bearing(tx: Tx, item_id: uuid.UUID, load_bearing: bool) -> ItemRecord | None:
    """A human settles it either way; any pending suggestion is settled with it."""
    return await _update(
        tx,
        item_id,
        load_bearing=load_bearing,
        load_bearing_set_by=tx.actor_id,
        load_bearing_set_at=_NOW,
        load_bearing_suggested=False,
    )


async def clear_suggestion(tx: Tx, item_id: uuid.UUID) -> ItemRecord | None:
    return await _update(tx, item_id, load_bearing_suggested=False)


async def mark_suggested(tx: Tx, item_id: uuid.UUID) -> ItemRecord | None:
    return await _update(tx, item_id, load_bearing_suggested=True)


async def retire(tx: Tx, item_id: uuid.UUID, reason: str) -> ItemRecord | None:
    return await _update(tx, item_id, status=ItemStatus.RETIRED, status_reason=reason)


async def mark_superseded(tx: Tx, item_id: uuid.UUID, reason: str) -> ItemRecord | None:
    return await _update(tx, item_id, status=ItemStatus.SUPERSEDED, status_reason=reason)


async def mark_disputed(tx: Tx, item_id: uuid.UUID, contested: uuid.UUID, why: str) -> ItemRecord | None:
    return await _update(
        tx, item_id, status=ItemStatus.DISPUTED, status_reason=f"{contradicting([contested])}: {why}"
    )


async def keep(
    tx: Tx, item_id: uuid.UUID, note: str, *, reactivate: bool, confirm: bool
) -> ItemRecord | None:
    """A human keeps an item by resolving a dispute: noted, ACTIVE again when nothing else
    contests it, and confirmed (keeping it is a ruling)."""
    values: dict[str, Any] = {"status_reason": note, **_confirmation(tx, confirm)}
    if reactivate:
        values["status"] = ItemStatus.ACTIVE
    return await _update(tx, item_id, **values)


async def verify(tx: Tx, item_id: uuid.UUID) -> ItemRecord | None:
    return await _update(tx, item_id, last_verified_at=_NOW)


_STILL_CONTESTING = text("SELECT mneia_open_disputes(CAST(:workspace AS uuid), CAST(:item AS uuid))")


async def still_contesting(tx: Tx, item_id: uuid.UUID) -> bool:
    """Whether the item still contradicts something (an open dispute it raised), seen or not (R8)."""
    found = await tx.execute(_STILL_CONTESTING, {"workspace": tx.workspace, "item": item_id})
    return bool(found.scalar())


async def lock(tx: Tx, item_id: uuid.UUID) -> ItemRecord | None:
    """The item, row-locked until the transaction ends; None if the caller cannot change it.

    Concurrent supersessions of one item queue here; each sees the status the
    previous one committed (R7), and the unique successor index is the backstop.
    """
    locked = select(*_COLUMNS).where(stated(items, tx), items.c.id == item_id).with_for_update()
    row = (await tx.execute(locked)).first()
    return _record(row) if row else None


async def head(tx: Tx, item_id: uuid.UUID) -> ItemRecord:
    """The newest item of the chain through ``item_id`` (itself when nothing replaced it)."""
    return (await chain(tx, item_id))[-1]
