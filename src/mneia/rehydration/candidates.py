"""A task's candidates, chosen in SQL with indexes under the caller's row-level security (R11.9).

Three statements to begin with (four with the probe), whatever the project's size; the project is
never loaded whole:

- ``guaranteed``: every ACTIVE load-bearing CONSTRAINT of the project
  (``items_guaranteed``), each with its rank against the task. It comes
  first, so that the pools below can be sized on the budget it leaves
  (rehydration.slice);
- ``items``: one UNION ALL of
  - per kind, among the newest ``scans[kind]`` items still believed (ACTIVE or
    DISPUTED) that share a word with the task, the ``pool`` best ranked:
    PostgreSQL full-text search of the statement and details (the generated
    ``items.search``), the task's words OR'ed, ranked by ``ts_rank``. Each
    kind's newest items are walked in ``items_live_<kind>`` (the match checked
    on each row), stopping when it has enough, and only what the walk left
    wanting is read from the kind's own text index (``items_search_<kind>``).
    How far to walk is chosen here, not by the planner: a ``probe`` statement
    first counts the task's matches among the project's newest ``PROBE`` items,
    and a word that common is walked for, one rarer read from the index
    (``walk_length``); any length gives the same answer. As of a moment, the
    planner chooses between ``items_search`` and a walk;
  - the same for the items sharing every word of the task, whatever their
    kind, so that a strong old match is not lost behind many newer weak ones;
  each with its rank against the task;
- ``replacements``: of the newest replacements asserted since ``since``
  (``items_replacements``), the most relevant to the task, each with the item
  it replaced, the instant that item became SUPERSEDED, and their rank: the
  better of both texts together and of any other item of the chain (walked
  back through what the replaced item replaced, and on through what replaced
  the replacement, ``CHAIN_DEPTH`` steps at most, by primary key and
  ``items_one_successor``);

and, only when the slice asks for more after packing (rehydration.slice):
the same ``items`` or ``replacements`` with larger pools, or

- ``fillers``: per kind, the newest items still believed that share no word
  with the task, walking ``items_live_<kind>`` newest first (most rows qualify, so
  the walk stops almost at once).

Every statement joins items under the caller's policies, so an item the caller
cannot see is never a candidate, and a replacement is listed only when the
caller sees both sides. As of a moment, every item is read as it stood then
(storage.item's states) and an item recorded later is absent.

A text-search condition uses an index under row-level security only when it
is LEAKPROOF (migration 0005); either way the answer is the same. Every
statement is planned with the task's words and the tenant in hand
(storage.database.PLANNED_WITH_VALUES): a plan cached for other words or another
tenant could walk a whole project for rare words or sort every match of common ones.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    DateTime,
    Integer,
    Select,
    Text,
    and_,
    bindparam,
    case,
    cast,
    func,
    literal_column,
    select,
    union_all,
)
from sqlalchemy.dialects.postgresql import REAL, TSQUERY

from mneia.storage import item, search
from mneia.storage.database import SORTS, WALKS, Driven, Tx, stated, walking
from mneia.storage.item import ItemRecord
from mneia.storage.tables import items
from mneia.vocabulary import ItemKind, ItemStatus

ENGLISH: Any = literal_column("'english'::regconfig")
RANK_NORMALIZATION = 1
"""``ts_rank``'s normalization: divided by 1 + log(length), so a long text does not win by length alone."""

_TASK = bindparam("task", type_=Text)
_EVERY_WORD = func.plainto_tsquery(ENGLISH, _TASK)
# The same lexemes, OR'ed: plainto_tsquery's canonical text quotes every lexeme, and
# its operators stand between spaces, so replacing them is exact.
_ANY_WORD = cast(
    func.replace(
        func.replace(cast(_EVERY_WORD, Text), literal_column("' & '"), literal_column("' | '")),
        literal_column("' <-> '"),
        literal_column("' | '"),
    ),
    TSQUERY,
)
_MOMENT = bindparam("moment", type_=DateTime(timezone=True))
# Constants written into the statements, so that the partial indexes' predicates are proved.
_ACTIVE: Any = literal_column("'ACTIVE'")
_DISPUTED: Any = literal_column("'DISPUTED'")
_SUPERSEDED: Any = literal_column("'SUPERSEDED'")
_CONSTRAINT: Any = literal_column("'CONSTRAINT'")
EVERY_WORD_BRANCH = "EVERY_WORD"


def _rank(search: Any) -> Any:
    return func.ts_rank(search, _ANY_WORD, RANK_NORMALIZATION)


def _scan(moment: Any, query: Any, kind: ItemKind | None, limit: str, matching: bool = True) -> Any:
    """The newest ``limit`` items still believed (of ``kind``) that ``query`` matches (or, not
    ``matching``, that it does not): ids and ranks only.

    Now, a walk of ``items_live_<kind>`` newest first, checking the match on each row
    (the index cannot hold a long item's search vector), or the kind's matches
    from ``items_search_<kind>`` when the words are rarer; as of a moment,
    ``items_search``, and each item's state then decides whether it was live.
    """
    scanned = items.alias("scanned")
    source, columns = item.columns_at(scanned, moment)
    search: Any = literal_column("scanned.search")
    conditions = [
        stated(scanned),
        scanned.c.project_id == bindparam("project"),
        columns["status"].in_([_ACTIVE, _DISPUTED]),
        search.op("@@")(query) if matching else ~search.op("@@")(query),
    ]
    if kind is not None:
        conditions.append(scanned.c.kind == literal_column(f"'{kind.value}'"))  # proves items_search_<kind>
    if moment is not None:
        conditions.append(scanned.c.asserted_at <= moment)  # implied by the state join; bounds the walk
    rank = _rank(search) if matching else cast(literal_column("0"), REAL)
    return (
        select(scanned.c.id.label("id"), rank.label("rank"))
        .select_from(source)
        .where(*conditions)
        .order_by(scanned.c.id.desc())
        .limit(bindparam(limit, type_=Integer))
        .subquery()
    )


def _walked_scan(query: Any, kind: ItemKind | None, name: str) -> Any:
    """Now: the newest ``scan_<name>`` items still believed (of ``kind``) that ``query`` matches,
    found by walking the newest ``walk_<name>`` of them, then, only if the walk used them all up
    first, from the text index among the older ones: ids and search vectors.

    The walk is storage.search's (``walk``): numbered, keeping its matches and its ``walk``-th
    row, which says it went that far, and stopping at the ``scan``-th match. The
    older matches are read in a fenced subquery (planned without the order, so from the text
    index, never as another walk), and only as many as the walk left wanting: LIMIT 0, which
    PostgreSQL does not even start, when it found them all. So the path is chosen by
    ``walk`` (``walk_length``), not by the planner's guess at how many items a word matches,
    which misses by 30 times beside other tenants' rows; a walk of 1 asks the index alone.
    """
    walk, scan = bindparam(f"walk_{name}", type_=Integer), bindparam(f"scan_{name}", type_=Integer)

    def chosen(table: Any) -> list[Any]:
        conditions = [
            stated(table),
            table.c.project_id == bindparam("project"),
            table.c.status.in_([_ACTIVE, _DISPUTED]),
        ]
        if kind is not None:  # proves items_live_<kind> and items_search_<kind>
            conditions.append(table.c.kind == literal_column(f"'{kind.value}'"))
        return conditions

    walked_items = items.alias(f"walked_{name.lower()}")
    window = (
        search.walk([walked_items.c.id.label("id")], chosen(walked_items), query, walk, walked_items)
        .limit(scan)
        .cte(f"window_{name.lower()}")
    )
    hits = select(func.count()).where(window.c.hit).scalar_subquery()
    used_up = select(func.max(window.c.walked)).scalar_subquery() == walk
    wanting = case((used_up, func.greatest(scan - hits, 0)), else_=0)
    older_items = items.alias(f"older_{name.lower()}")
    older = (
        select(older_items.c.id, literal_column(f"{older_items.name}.search").label("vector"))
        .where(
            *chosen(older_items),
            literal_column(f"{older_items.name}.search").op("@@")(query),
            older_items.c.id < select(window.c.id).order_by(window.c.id).limit(1).scalar_subquery(),
        )
        .offset(0)
        .subquery()
    )
    return union_all(
        select(window.c.id, window.c.vector).where(window.c.hit),
        select(older.c.id, older.c.vector).order_by(older.c.id.desc()).limit(wanting),
    ).subquery(f"scan_{name.lower()}")


def _items_statement(moment: Any) -> Any:
    source, columns = item.columns_at(items, moment)

    def best(scan: Any, limit: str, branch: str) -> Select[Any]:
        """The best-ranked ``limit`` of a scan: ids, ranks and the branch's name."""
        return (
            select(scan.c.id, scan.c.rank, literal_column(f"'{branch}'").label("branch"))
            .order_by(scan.c.rank.desc(), scan.c.id)
            .limit(bindparam(limit, type_=Integer))
        )

    def ranked(scan: Any) -> Any:
        """A present scan's ids with their ranks, computed for the scan's few rows alone."""
        return select(scan.c.id, _rank(scan.c.vector).label("rank")).subquery()

    def scanned(query: Any, kind: ItemKind | None, name: str) -> Any:
        if moment is None:
            return ranked(_walked_scan(query, kind, name))
        return _scan(moment, query, kind, f"scan_{name}")

    tops = union_all(
        *(best(scanned(_ANY_WORD, kind, kind.value), f"pool_{kind.value}", kind.value) for kind in ItemKind),
        best(scanned(_EVERY_WORD, None, "every_word"), "every_word", EVERY_WORD_BRANCH),
    ).subquery("tops")
    return _read_whole(source, columns, tops)


def _read_whole(source: Any, columns: dict[str, Any], tops: Any) -> Select[Any]:
    """Each chosen item read whole, with its rank and branch: once, for every branch together, as
    each reference to items costs its policies.

    By its key alone: the scans chose it in the project already. Said again here, the project
    let the planner read the chosen items by scanning the project's: for a tenant of 1,000 items
    among a million other rows it expected 58, and compared each of 992 with each of 143 chosen
    ids (141,713 comparisons, 18 to 31 ms of a rehydrate's statement; under 10 ms by key)."""
    return (
        select(*item.selected(columns), tops.c.rank, tops.c.branch)
        .select_from(source.join(tops, items.c.id == tops.c.id))
        .where(stated(items))
    )


def _fillers_statement(moment: Any) -> Any:
    """Per kind, the newest ``filler_<kind>`` items still believed that share no word with the task:
    a walk of each ``items_live_<kind>`` newest first, which stops as soon as it has enough (most items share
    no word with a task)."""
    source, columns = item.columns_at(items, moment)
    tops = union_all(
        *(
            select(scan.c.id, scan.c.rank, literal_column(f"'{kind.value}'").label("branch")).select_from(
                scan
            )
            for kind in ItemKind
            for scan in [_scan(moment, _ANY_WORD, kind, f"filler_{kind.value}", matching=False)]
        )
    ).subquery("tops")
    return _read_whole(source, columns, tops)


def _guaranteed_statement(moment: Any) -> Select[Any]:
    source, columns = item.columns_at(items, moment)
    return (
        select(*item.selected(columns), _rank(literal_column("items.search")).label("rank"))
        .select_from(source)
        .where(
            stated(items),
            items.c.project_id == bindparam("project"),
            items.c.kind == _CONSTRAINT,
            columns["status"] == _ACTIVE,
            columns["load_bearing"],
        )
    )


CHAIN_DEPTH = 32
"""How far a replacement's chain is walked each way for its words (a chain is rarely longer than 3)."""


def _chain_ranks(scanned: Any, moment: Any) -> Any:
    """Per scanned replacement, the best rank against the task of the other items of its chain: what
    its replaced item replaced, and so on back, and what replaced the replacement, and so on on.

    Both walks join items under the caller's policies, so an item the caller cannot see neither
    counts nor leads further; as of a moment, an item recorded later is not in the chain."""

    def walk(name: str, first_link: Any, next_link: Any) -> Any:
        found = items.alias("chain_item")
        first = [stated(found), found.c.workspace_id == scanned.c.workspace_id, first_link(found)]
        if moment is not None:
            first.append(found.c.asserted_at <= moment)
        anchor = (
            select(
                scanned.c.id.label("start"),
                found.c.workspace_id,
                found.c.id,
                found.c.supersedes_id,
                literal_column("1").label("depth"),
                _rank(literal_column("chain_item.search")).label("rank"),
            )
            .select_from(scanned.join(found, and_(*first)))
            .cte(name, recursive=True)
        )
        further = items.alias("chain_item")
        conditions = [
            stated(further),  # a recursive step does not inherit its seed's workspace
            further.c.workspace_id == anchor.c.workspace_id,
            next_link(further, anchor),
            anchor.c.depth < CHAIN_DEPTH,
        ]
        if moment is not None:
            conditions.append(further.c.asserted_at <= moment)
        return anchor.union_all(
            select(
                anchor.c.start,
                further.c.workspace_id,
                further.c.id,
                further.c.supersedes_id,
                anchor.c.depth + 1,
                _rank(literal_column("chain_item.search")),
            ).select_from(anchor.join(further, and_(*conditions)))
        )

    back = walk(
        "chain_back",
        lambda found: found.c.id == scanned.c.earlier_id,
        lambda further, walked: further.c.id == walked.c.supersedes_id,
    )
    on = walk(
        "chain_on",
        lambda found: found.c.supersedes_id == scanned.c.id,
        lambda further, walked: further.c.supersedes_id == walked.c.id,
    )
    both = union_all(select(back.c.start, back.c.rank), select(on.c.start, on.c.rank)).subquery()
    return select(both.c.start, func.max(both.c.rank).label("rank")).group_by(both.c.start).subquery("chain")


def _replacements_statement(moment: Any) -> Select[Any]:
    """The ``replacements`` most relevant of the newest ``replacements_scan`` replacements asserted
    since ``since`` whose both sides the caller sees, each read whole with what it replaced."""
    scan_new, scan_old = items.alias("scan_new"), items.alias("scan_old")
    new_source, new_columns = item.columns_at(scan_new, moment)
    old_source, old_columns = item.columns_at(scan_old, moment)
    conditions = [
        stated(scan_new),
        scan_new.c.project_id == bindparam("project"),
        scan_new.c.supersedes_id.is_not(None),
        scan_new.c.asserted_at >= bindparam("since", type_=DateTime(timezone=True)),
        # Only a finished supersession: a successor whose item is not SUPERSEDED (a row written
        # past the guards) ruled nothing out, and gives no instant to name.
        old_columns["status"] == _SUPERSEDED,
    ]
    if moment is not None:
        conditions.append(scan_new.c.asserted_at <= moment)
    both = literal_column("scan_old.search").op("||")(literal_column("scan_new.search"))
    scanned = (
        select(
            scan_new.c.id.label("id"),
            scan_new.c.workspace_id.label("workspace_id"),
            scan_old.c.supersedes_id.label("earlier_id"),
            scan_new.c.asserted_at.label("said"),
            _rank(both).label("rank"),
            _rank(literal_column("scan_new.search")).label("replacement_rank"),
        )
        .select_from(
            new_source.join(
                old_source,
                and_(
                    scan_old.c.workspace_id == scan_new.c.workspace_id,
                    scan_old.c.id == scan_new.c.supersedes_id,
                ),
            )
        )
        .where(*conditions)
        .order_by(scan_new.c.asserted_at.desc(), scan_new.c.id.desc())
        .limit(bindparam("replacements_scan", type_=Integer))
        .cte("scanned")
    )
    chain = _chain_ranks(scanned, moment)
    relevance = func.greatest(scanned.c.rank, func.coalesce(chain.c.rank, 0))
    top = (
        select(scanned.c.id, scanned.c.said, relevance.label("rank"), scanned.c.replacement_rank)
        .select_from(scanned.outerjoin(chain, chain.c.start == scanned.c.id))
        .order_by(relevance.desc(), scanned.c.said.desc(), scanned.c.id.desc())
        .limit(bindparam("replacements", type_=Integer))
        .subquery()
    )
    replacement, previous = items.alias("replacement"), items.alias("previous")
    replacement_source, replacement_columns = item.columns_at(replacement, moment)
    previous_source, previous_columns = item.columns_at(previous, moment)
    became_superseded = item.first_written(previous, ItemStatus.SUPERSEDED)
    joined = replacement_source.join(top, replacement.c.id == top.c.id).join(
        previous_source,
        and_(
            previous.c.workspace_id == replacement.c.workspace_id,
            previous.c.id == replacement.c.supersedes_id,
        ),
    )
    return (
        select(
            *item.selected(previous_columns, "previous_"),
            *item.selected(replacement_columns, "replacement_"),
            became_superseded.label("at"),
            top.c.rank,
            top.c.replacement_rank,
        )
        .select_from(joined)
        .where(stated(replacement))
        .order_by(top.c.rank.desc(), top.c.said.desc(), top.c.id.desc())
    )


PROBE = 500
"""How many of the project's newest items still believed show how common the task's words are."""
WALK_MARGIN = 2
"""A walk goes this many times as far as the probe's share says it needs to."""
WALK_MOST = 8_000
"""The longest walk: words rarer than this needs are read from the text index."""


def _probe_statement() -> Any:
    """Of the project's newest ``PROBE`` items still believed: how many, how many share a word
    with the task, how many share every word."""
    newest = (
        select(literal_column("items.search").label("vector"))
        .where(
            stated(items),
            items.c.project_id == bindparam("project"),
            items.c.status.in_([_ACTIVE, _DISPUTED]),
        )
        .order_by(items.c.id.desc())
        .limit(PROBE)
        .subquery()
    )
    return select(
        func.count(),
        func.count().filter(newest.c.vector.op("@@")(_ANY_WORD)),
        func.count().filter(newest.c.vector.op("@@")(_EVERY_WORD)),
    )


def walk_length(scan: int, probed: int, hits: int) -> int:
    """How far a present scan for ``scan`` matches walks newest first before it asks the text
    index: ``WALK_MARGIN`` times what the share of matches among the ``probed`` newest items
    says it takes, or 1 (the index alone) when that is more than ``WALK_MOST`` or the probe
    matched nothing. Any length gives the same answer (``_walked_scan``); this one chooses the
    cheaper path: a walk stops early for common words, the index reads few rows for rare ones."""
    if scan <= 0 or hits <= 0:
        return 1
    needed = math.ceil(WALK_MARGIN * scan * probed / hits)
    return needed if needed <= WALK_MOST else 1


# Sent by the driver: on the path of every slice (storage.database.Driven).
# Each read from the workspace's shards on Citus (Driven.on): planned once there, not twice.
_PROBE = Driven(_probe_statement(), shardable=True)
_GUARANTEED = Driven(_guaranteed_statement(None), shardable=True)
_GUARANTEED_THEN = Driven(_guaranteed_statement(_MOMENT), shardable=True)
_ITEMS = Driven(_items_statement(None), shardable=True)
_ITEMS_THEN = Driven(_items_statement(_MOMENT), shardable=True)
_REPLACEMENTS = Driven(_replacements_statement(None), shardable=True)
_REPLACEMENTS_THEN = Driven(_replacements_statement(_MOMENT), shardable=True)
_FILLERS = Driven(_fillers_statement(None), shardable=True)
_FILLERS_THEN = Driven(_fillers_statement(_MOMENT), shardable=True)
NAMED = (
    ("guaranteed", (_GUARANTEED, _GUARANTEED_THEN)),
    ("matches", (_ITEMS, _ITEMS_THEN)),
    ("replacements", (_REPLACEMENTS, _REPLACEMENTS_THEN)),
    ("fillers", (_FILLERS, _FILLERS_THEN)),
    ("probe", (_PROBE,)),
    ("plan mode", (WALKS, SORTS)),
)


def name_of(sql: str) -> str:
    """A candidate statement's name by its text as sent, on the tables or on shards ("other" for
    any other statement): for benchmarks that time them apart, tests that act between them."""
    return next((name for name, pair in NAMED for statement in pair if statement.sends(sql)), "other")


@dataclass(frozen=True, slots=True)
class Match:
    record: ItemRecord
    rank: float


@dataclass(frozen=True, slots=True)
class Replacement:
    previous: ItemRecord
    replacement: ItemRecord
    at: datetime
    """When ``previous`` became SUPERSEDED."""
    rank: float
    """Of both texts together, against the task."""
    replacement_rank: float


@dataclass(frozen=True, slots=True)
class Candidates:
    guaranteed: list[Match]
    """Every ACTIVE load-bearing CONSTRAINT the caller sees, by id."""
    matched: list[Match]
    """The items sharing a word with the task (no guaranteed one among them), by id."""
    replacements: list[Replacement]
    """Recent replacements, the most relevant to the task first, then the newest."""
    full: frozenset[ItemKind] = frozenset()
    """The kinds whose pool came back full: more of their matches may wait."""
    replacements_full: bool = False
    """Whether as many replacements came back as were asked for: more may wait."""

    @property
    def best_rank(self) -> float:
        return max((m.rank for m in (*self.guaranteed, *self.matched)), default=0.0)


@dataclass(frozen=True, slots=True)
class Request:
    project_id: uuid.UUID
    task: str
    pools: Mapping[ItemKind, int]
    """How many of each kind's best-ranked matches to return."""
    scans: Mapping[ItemKind, int]
    """How many of the newest matches of each kind are ranked (the bound on a request's work)."""
    every_word: int
    """How many items sharing every word of the task to return, besides the pools."""
    every_word_scan: int
    """Of how many of the newest such items."""
    replacements: int
    """How many recent supersessions to return: the most relevant to the task, then the newest."""
    replacements_scan: int
    """Of how many of the newest in the window."""
    since: datetime
    as_of: datetime | None = None
    fillers: Mapping[ItemKind, int] = field(default_factory=dict)
    """How many of each kind's newest items sharing no word with the task to return."""


def _moment(params: dict[str, Any], request: Request) -> dict[str, Any]:
    if request.as_of is not None:
        params["moment"] = request.as_of
    return params


async def guaranteed(tx: Tx, project_id: uuid.UUID, task: str, as_of: datetime | None) -> list[Match]:
    """Every ACTIVE load-bearing CONSTRAINT of the project the caller sees (now, or as of
    ``as_of``), by id, each with its rank against ``task``."""
    params: dict[str, Any] = {"workspace": tx.workspace, "project": project_id, "task": task}
    if as_of is not None:
        params["moment"] = as_of
    found = await tx.fetch(_GUARANTEED if as_of is None else _GUARANTEED_THEN, params)
    width = item.RECORD_WIDTH
    return sorted((Match(item.record_of(row), float(row[width])) for row in found), key=lambda m: m.record.id)


async def recent_replacements(tx: Tx, request: Request) -> list[Replacement]:
    """The recent replacements the request asks for, the most relevant first, then the newest."""
    params = _moment(
        {
            "workspace": tx.workspace,
            "project": request.project_id,
            "task": request.task,
            "since": request.since,
            "replacements": request.replacements,
            "replacements_scan": request.replacements_scan,
        },
        request,
    )
    width = item.RECORD_WIDTH
    replaced = await tx.fetch(_REPLACEMENTS if request.as_of is None else _REPLACEMENTS_THEN, params)
    # The replaced item's columns, the replacement's, then when, rank and the replacement's rank.
    found = []
    for row in replaced:
        replacement = item.record_of(row[width : 2 * width])
        # No state row saying when it became SUPERSEDED (a row changed past the guards): the
        # replacement's own instant stands in, rather than a slice that cannot be rendered.
        at = row[2 * width] or replacement.asserted_at
        found.append(
            Replacement(
                item.record_of(row[:width]),
                replacement,
                at,
                float(row[2 * width + 1]),
                float(row[2 * width + 2]),
            )
        )
    return found


def _chosen(found: Sequence[Any], rules: Sequence[Match], asked: Mapping[ItemKind, int]) -> Chosen:
    """The rows of a branched statement as matches by id (the ``rules`` left out), and the kinds
    whose branch returned all it was asked for."""
    width = item.RECORD_WIDTH
    ruled = {m.record.id for m in rules}
    chosen: dict[uuid.UUID, Match] = {}
    returned: dict[str, int] = {}
    for row in found:  # the item's columns, then the rank and the branch
        branch = row[width + 1]
        returned[branch] = returned.get(branch, 0) + 1
        record = item.record_of(row)
        if record.id not in ruled:
            chosen[record.id] = Match(record, float(row[width]))
    full = frozenset(k for k in ItemKind if asked.get(k, 0) > 0 and returned.get(k.value, 0) >= asked[k])
    return [m for _, m in sorted(chosen.items())], full


Chosen = tuple[list[Match], frozenset[ItemKind]]
"""Matches by id, and the kinds whose branch came back full."""


async def matches(tx: Tx, request: Request, rules: Sequence[Match]) -> Chosen:
    """The items sharing a word with the task, as the request's pools size them (no rule among them,
    by id), and the kinds whose pool came back full."""
    params = _moment(
        {
            "workspace": tx.workspace,
            "project": request.project_id,
            "task": request.task,
            "every_word": request.every_word,
            "scan_every_word": request.every_word_scan,
            **{f"pool_{kind.value}": request.pools.get(kind, 0) for kind in ItemKind},
            **{f"scan_{kind.value}": request.scans.get(kind, 0) for kind in ItemKind},
        },
        request,
    )
    if request.as_of is None:
        async with walking(tx):  # the probe walks the newest items too
            params.update(await _walks(tx, request))
            found = await tx.fetch(_ITEMS, params)
    else:
        found = await tx.fetch(_ITEMS_THEN, params)
    return _chosen(found, rules, request.pools)


async def _walks(tx: Tx, request: Request) -> dict[str, int]:
    """Each present scan's walk length, from how common the task's words are among the newest items."""
    params = {"workspace": tx.workspace, "project": request.project_id, "task": request.task}
    probed, any_word, every_word = tuple((await tx.fetch(_PROBE, params))[0])
    walks = {
        f"walk_{kind.value}": walk_length(request.scans.get(kind, 0), probed, any_word) for kind in ItemKind
    }
    walks["walk_every_word"] = walk_length(request.every_word_scan, probed, every_word)
    return walks


async def fillers(tx: Tx, request: Request, rules: Sequence[Match]) -> Chosen:
    """Per kind, the newest items still believed sharing no word with the task, as many as
    ``request.fillers`` asks (no rule among them, by id; rank 0), and the kinds that came back full."""
    params = _moment(
        {
            "workspace": tx.workspace,
            "project": request.project_id,
            "task": request.task,
            **{f"filler_{kind.value}": request.fillers.get(kind, 0) for kind in ItemKind},
        },
        request,
    )
    found = await tx.fetch(_FILLERS if request.as_of is None else _FILLERS_THEN, params)
    return _chosen(found, rules, request.fillers)


async def gather(tx: Tx, request: Request, rules: list[Match]) -> Candidates:
    """The task's candidates beside the guaranteed ``rules``, as the caller sees them (now, or as
    of ``request.as_of``)."""
    replacements = await recent_replacements(tx, request)
    return candidates_of(request, rules, await matches(tx, request, rules), replacements)


def candidates_of(
    request: Request, rules: Sequence[Match], chosen: Chosen, replacements: list[Replacement]
) -> Candidates:
    """What ``request`` read, with which of its pools came back full."""
    matched, full = chosen
    return Candidates(
        guaranteed=list(rules),
        matched=matched,
        replacements=replacements,
        full=full,
        replacements_full=len(replacements) >= request.replacements > 0,
    )
