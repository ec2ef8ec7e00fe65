"""Scale benchmark: whether every read and write stays flat from 10,000 to 1,000,000 items (issue 24).

One fresh database grows step by step: project P of workspace ``scale`` to
10,000, 100,000 and 1,000,000 items, then 1,000 more workspaces of 1,000
items each. After each step (and VACUUM ANALYZE) one httpx client asks, over
HTTP and sequentially, in rounds: a 50-item page with its totalCount, the
same page without it, a 10-result text search with its count for a common
word, a rare word and a word no item holds, a 4,000-token rehydrate for
tasks of common, middling and rare words, an as-of page (a moment in the
middle of what is loaded) and an assertItem.
Each request is followed (or, every other round, preceded) by its SQL
ceiling: the statements the server sends for it, run directly through
asyncpg as ``mneia_app`` in one transaction bound by the same token
(``mneia_authenticate``), with no GraphQL, HTTP or Python in between. The
ceilings of the page, the count, the search, the as-of page and the
assertion are written out below, one function each, mirroring
storage/item.py and storage/count.py (a page's total from the kept
counters, a search's counted up to 10,001 rows, the search a prefix
match of the words); rehydrate's are the statements
``slice.assemble`` sends for the same task and reader, recorded once per
step and replayed. Readers alternate between a human and an agent.

Printed, as Markdown: per step, p50 and p95 of each operation beside its
ceiling and their ratio, the load average and the load rate; the database's
size (items, item_events and item_states with their indexes, and MB per
100,000 items); a growth table (p95 at each step over p95 at the first;
flat means within 1.5x); and issue 24's targets: a 10-result search with
its count within 50 ms (p95) at 1,000,000 items, a word that matches nothing
as fast as one that matches a lot, at most 120 MB per 100,000 items.

The text is drawn from a 5,000-word made-up vocabulary with Zipf
frequencies (every word six letters); with load-bearing constraints a human
set, replacements (the replaced item marked SUPERSEDED), retirements, items
that decay and items only some may see. ``--load`` chooses the bulk path
(``LOADERS``): by default, where the schema has it, assertItems over HTTP,
1,000 items a request, with Alice's rulings as supersedeItem, retireItem
and setLoadBearing (every item is then said during the run, and an agent's
item stays unconfirmed); else (``--load owner``) the owner role's INSERT
bound to each writer in turn (common.insert_items), every row checked by
the policies and triggers, each item said at its time in a two-year history.

    .venv/bin/python benchmarks/scale.py                                   # the issue's sizes
    .venv/bin/python benchmarks/scale.py --sizes 2000,20000 --tenants 20 --rounds 20   # smoke

The database server comes from ``--database-url`` (an admin URL), else
``DATABASE_URL``, else ``MNEIA_BENCH_DATABASE_URL``, else an embedded
PostgreSQL, as for the other benchmarks; ``--keep`` keeps the bench
database; ``--json FILE`` writes every figure for machines.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import asyncpg
import httpx
from common import (
    KINDS,
    BenchmarkBroken,
    Series,
    bind,
    ceiling_connection,
    gql,
    insert_items,
    on_fresh_database,
    owner_transaction,
    row_counts,
    running_server,
    timed,
    vacuum_analyze,
    weighted,
)
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import app_url
from mneia.rehydration import profile, slice
from mneia.resolvers.request.context import Context
from mneia.storage import database, workspace
from mneia.storage.database import Tx, create_engine
from mneia.storage.ids import new_id
from mneia.storage.item import STATE_FIELDS, ItemRecord
from mneia.storage.token import digest, workspace_of

FLAT = 1.5  # p95 at a step / p95 at the first step
SEARCH_TARGET_MS = 50.0  # p95 of a 10-result search with its count at 1,000,000 items
STORAGE_TARGET_MB = 120.0  # per 100,000 items, with their events and states
BUDGET = 4000  # rehydrate's token budget
HISTORY = timedelta(days=730)
CHUNK = 20_000  # items per loading transaction
MB = 1024 * 1024

# ---------------------------------------------------------------------------
# Words

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "pa", "qu", "be", "do", "fi", "gu"]
SYLLABLES += ["ha", "ji", "ke", "lu", "ma", "no", "pe", "ri", "so", "tu", "va", "we", "xi", "yo", "ze"]


@dataclass
class Words:
    """A made-up vocabulary, most frequent first (Zipf: the nth word is used ~1/n as often), and one
    word of the same make that no text holds."""

    words: list[str]
    absent: str
    cumulative: list[float] = field(init=False)

    def __post_init__(self) -> None:
        total, self.cumulative = 0.0, []
        for rank in range(len(self.words)):
            total += 1.0 / (rank + 1)
            self.cumulative.append(total)

    @classmethod
    def drawn(cls, rng: random.Random, size: int) -> Words:
        made: dict[str, None] = {}
        while len(made) < size + 1:
            made["".join(rng.choices(SYLLABLES, k=3))] = None
        *words, absent = made
        return cls(words, absent)

    def sentence(self, rng: random.Random, low: int, high: int) -> str:
        chosen = rng.choices(self.words, cum_weights=self.cumulative, k=rng.randint(low, high))
        return " ".join(chosen).capitalize() + "."

    @property
    def common(self) -> str:
        return self.words[0]

    @property
    def rare(self) -> str:
        return self.words[len(self.words) // 2]

    def tasks(self) -> list[str]:
        """Rehydration tasks whose words are common, middling and rare."""
        w = self.words
        return [
            f"{w[1]} {w[8]} {w[30]} and the {w[120]}",
            f"Fix the {w[60]} {w[400]} for {w[900]}",
            f"{w[1800]} {w[3000]} {w[4200]}",
        ]


# ---------------------------------------------------------------------------
# A workspace with one project to grow


@dataclass(frozen=True)
class Member:
    id: uuid.UUID
    token: str
    human: bool

    @property
    def digest(self) -> str:
        return digest(self.token)

    @property
    def workspace(self) -> uuid.UUID | None:
        return workspace_of(self.token)


@dataclass
class Space:
    """A workspace, its people and agents, and the one project whose history it holds.

    The history's ``total`` items are spread over two years before the run
    started: item n of it is said at ``moment(n)``, so a step that grows the
    project adds newer items, and an as-of moment names a point in it.
    """

    name: str
    workspace_id: uuid.UUID
    humans: list[Member]
    agents: list[Member]
    project: uuid.UUID
    sessions: dict[uuid.UUID, uuid.UUID]  # agent -> its session in the project
    total: int
    rules: int  # load-bearing constraints a human set: the first items of the history
    origin: datetime
    loaded: int = 0

    @property
    def alice(self) -> Member:
        return self.humans[0]

    @property
    def readers(self) -> list[Member]:
        return [self.alice, self.agents[0]]

    @property
    def everyone(self) -> list[Member]:
        return [*self.humans, *self.agents]

    def moment(self, n: float) -> datetime:
        return self.origin + HISTORY * (n / self.total)


CREATE_ACTOR = (
    "mutation($k: ActorKind!, $n: String!) { createActor(kind: $k, name: $n) { actor { id } token } }"
)
CREATE_PROJECT = "mutation($n: String!) { createProject(name: $n) { id } }"
ADD_MEMBER = "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }"
START_SESSION = "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }"


async def build_space(
    http: httpx.AsyncClient,
    admin: AsyncEngine,
    name: str,
    *,
    humans: Sequence[str],
    agents: Sequence[str],
    total: int,
    rules: int,
    origin: datetime,
) -> Space:
    """Through the API (the first human through the administrator's bootstrap, as ``mneia bootstrap``)."""
    made = await workspace.bootstrap(admin, name, humans[0])
    alice = Member(made.actor_id, made.token, True)

    async def actor(kind: str, actor_name: str) -> Member:
        created = (await gql(http, alice.token, CREATE_ACTOR, k=kind, n=actor_name))["createActor"]
        return Member(uuid.UUID(created["actor"]["id"]), created["token"], kind == "HUMAN")

    people = [alice, *[await actor("HUMAN", n) for n in humans[1:]]]
    bots = [await actor("AGENT", n) for n in agents]
    project = uuid.UUID((await gql(http, alice.token, CREATE_PROJECT, n=f"{name}-p"))["createProject"]["id"])
    sessions = {}
    for member in [*people[1:], *bots]:
        await gql(http, alice.token, ADD_MEMBER, p=str(project), a=str(member.id))
    for bot in bots:
        started = await gql(
            http,
            bot.token,
            START_SESSION,
            i={"projectId": str(project), "client": {"tool": "claude-code", "version": "1.0.98"}},
        )
        sessions[bot.id] = uuid.UUID(started["startSession"]["id"])
    return Space(name, made.workspace_id, people, bots, project, sessions, total, rules, origin)


# ---------------------------------------------------------------------------
# The history


@dataclass
class Chunk:
    """Rows to load in one transaction, and what happens to some of them afterwards."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    replaced: list[uuid.UUID] = field(default_factory=list)  # marked SUPERSEDED by their replacements
    retired: list[uuid.UUID] = field(default_factory=list)


def history(space: Space, rng: random.Random, words: Words, start: int, count: int) -> Chunk:
    """Items ``start`` to ``start + count`` of the space's history, in time order.

    Four in ten said by a human (confirmed as said), the rest by agents in
    their session, 15% of those confirmed by a human within two days; the
    first ``rules`` are constraints a human made load-bearing; 2% replace an
    earlier item of the chunk, 1% are retired, 15% decay, 10% are visible to
    fewer than the project (WORKSPACE is wider).
    """
    chunk = Chunk()
    active: list[dict[str, Any]] = []
    end = space.moment(space.total)
    for n in range(start, start + count):
        said = space.moment(n + rng.random())
        rule = n < space.rules
        human = rule or rng.random() < 0.4
        asserter = space.alice if rule else rng.choice(space.humans) if human else rng.choice(space.agents)
        confirmer = asserter if human else space.alice if rng.random() < 0.15 else None
        confirmed_at = None
        if confirmer is not None:
            confirmed_at = said if human else min(said + timedelta(hours=rng.uniform(1, 48)), end)
        roll = rng.random()
        scope = (
            "PROJECT"
            if roll < 0.90
            else "WORKSPACE"
            if roll < 0.95
            else "PRIVATE"
            if roll < 0.99
            else "GRANTS"
        )
        others = [m for m in space.everyone if m.id != asserter.id]
        decay = timedelta(days=rng.choice((30, 90, 180))) if rng.random() < 0.15 else None
        row: dict[str, Any] = {
            "id": new_id(),
            "project_id": space.project,
            "kind": "CONSTRAINT" if rule else weighted(rng, KINDS),
            "statement": words.sentence(rng, 6, 20),
            "details": words.sentence(rng, 10, 40) if rng.random() < 0.3 else None,
            "basis": words.sentence(rng, 4, 12) if rng.random() < 0.5 else None,
            "confidence": None if human else round(rng.uniform(0.5, 1.0), 2),
            "status": "ACTIVE",
            "status_reason": None,
            "scope": scope,
            "grants": str(rng.choice(others).id) if scope == "GRANTS" and others else "",
            "asserted_by": asserter.id,
            "asserted_at": said,
            "session_id": None if human else space.sessions[asserter.id],
            "decay_after": decay,
            "load_bearing": rule,
            "load_bearing_set_by": space.alice.id if rule else None,
            "load_bearing_set_at": confirmed_at if rule else None,
            "confirmed_by": confirmer.id if confirmer else None,
            "confirmed_at": confirmed_at,
            "last_verified_at": min(said + timedelta(days=20), end) if decay and rng.random() < 0.3 else None,
        }
        if row["scope"] == "GRANTS" and not row["grants"]:
            row["scope"] = "PROJECT"
        roll = rng.random()
        if not rule and roll < 0.02 and active:
            # A human replaces an earlier item of the same kind.
            target = active.pop(rng.randrange(len(active)))
            row.update(
                kind=target["kind"],
                supersedes_id=target["id"],
                supersession_reason="a newer finding",
                asserted_by=space.alice.id,
                confirmed_by=space.alice.id,
                confirmed_at=said,
                confidence=None,
                session_id=None,
                scope=target["scope"],  # a replacement stays visible to whoever saw the item
                grants="",
            )
            chunk.replaced.append(target["id"])
        elif rule or row["scope"] not in ("PROJECT", "WORKSPACE"):
            pass  # Alice replaces and retires only what everyone in the project sees
        elif roll < 0.03:
            chunk.retired.append(row["id"])
        else:
            active.append(row)
        chunk.rows.append(row)
    return chunk


_MARK = text(
    "UPDATE items SET status = CAST(:status AS text), status_reason = :reason"
    " WHERE workspace_id = CAST(:ws AS uuid) AND id = ANY (CAST(:ids AS uuid[]))"
)

Load = Callable[[Space, Chunk], Awaitable[None]]
"""The bulk path: the one place that writes a chunk of history (``--load``)."""

LOADERS = {
    "api": "assertItems over HTTP (1,000 items a request, per writer, two chunks at a time); the"
    " replacements, retirements and load-bearing rules as supersedeItem, retireItem and setLoadBearing,"
    " 50 to a request; every item said at the server's now()",
    "owner": "the owner role's INSERT ... SELECT FROM unnest (common.insert_items), 20,000 items a"
    " transaction, two at a time, each item said at its time in a two-year history",
}


def as_owner(admin: AsyncEngine) -> Load:
    async def load(space: Space, chunk: Chunk) -> None:
        """As the owner role bound to each writer in turn: the row-level security policies check
        every row, the authority triggers check who confirmed or settled what, the log trigger
        writes each item's events and states, and each item keeps the time its history gives it.
        Replacements go after the items they replace; the replaced and retired are then marked by
        Alice."""
        ws = str(space.workspace_id)
        async with owner_transaction(admin, space.workspace_id, space.alice.id) as tx:
            for replacing in (False, True):
                by_writer: dict[uuid.UUID, list[dict[str, Any]]] = {}
                for row in chunk.rows:
                    if (row.get("supersedes_id") is not None) == replacing:
                        by_writer.setdefault(row["confirmed_by"] or row["asserted_by"], []).append(row)
                for writer, rows in by_writer.items():
                    await bind(tx, space.workspace_id, writer)
                    await insert_items(tx, rows)
            await bind(tx, space.workspace_id, space.alice.id)
            for status, reason, ids in (
                ("SUPERSEDED", "replaced", chunk.replaced),
                ("RETIRED", "no longer true", chunk.retired),
            ):
                if ids:
                    params = {"ws": ws, "ids": [str(i) for i in ids], "status": status, "reason": reason}
                    await tx.execute(_MARK, params)

    return load


ASSERT_MANY = "mutation($i: [AssertItemInput!]!) { assertItems(input: $i) { id } }"
BATCH = 1000  # assertItems' most items a request
ALIASED = 50  # later changes to a request, each a field of one mutation


def assertion(row: dict[str, Any]) -> dict[str, Any]:
    """A history row as the AssertItemInput its asserter sends."""
    given: dict[str, Any] = {
        "projectId": str(row["project_id"]),
        "kind": row["kind"],
        "statement": row["statement"],
        "scope": row["scope"],
    }
    for name in ("details", "basis", "confidence"):
        if row[name] is not None:
            given[name] = row[name]
    if row["session_id"] is not None:
        given["sessionId"] = str(row["session_id"])
    if row["grants"]:
        given["grantActorIds"] = row["grants"].split(",")
    if row["decay_after"] is not None:
        given["decayAfter"] = f"P{row['decay_after'].days}D"
    return given


async def aliased(http: httpx.AsyncClient, token: str, calls: Sequence[tuple[str, str, Any]]) -> None:
    """``calls`` (a field with ``$v`` for its one variable, the variable's type, its value) sent
    ``ALIASED`` to a mutation: graphql runs a mutation's fields one after another, in one transaction."""
    for start in range(0, len(calls), ALIASED):
        part = calls[start : start + ALIASED]
        declared = ", ".join(f"$v{n}: {kind}" for n, (_, kind, _) in enumerate(part))
        fields = " ".join(f"c{n}: {call.replace('$v', f'$v{n}')}" for n, (call, _, _) in enumerate(part))
        await gql(
            http,
            token,
            f"mutation({declared}) {{ {fields} }}",
            **{f"v{n}": v for n, (_, _, v) in enumerate(part)},
        )


def over_api(http: httpx.AsyncClient) -> Load:
    async def load(space: Space, chunk: Chunk) -> None:
        """As the client would: each writer's items with assertItems, then Alice's rulings. Agents'
        items a human would confirm later stay unconfirmed (90,000 confirmItem calls a million)."""
        members = {member.id: member for member in space.everyone}
        ids: dict[uuid.UUID, str] = {}
        by_writer: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for row in chunk.rows:
            if row.get("supersedes_id") is None:
                by_writer.setdefault(row["asserted_by"], []).append(row)
        for writer, rows in by_writer.items():
            for start in range(0, len(rows), BATCH):
                part = rows[start : start + BATCH]
                made = await gql(http, members[writer].token, ASSERT_MANY, i=[assertion(r) for r in part])
                ids.update((r["id"], m["id"]) for r, m in zip(part, made["assertItems"], strict=True))
        rulings: list[tuple[str, str, Any]] = []
        for row in chunk.rows:
            if row["load_bearing"]:
                rulings.append(("setLoadBearing(id: $v, loadBearing: true) { id }", "ID!", ids[row["id"]]))
            elif row.get("supersedes_id") is not None:
                replaced = {
                    "targetId": ids[row["supersedes_id"]],
                    "replacement": assertion(row),
                    "reason": row["supersession_reason"],
                }
                rulings.append(("supersedeItem(input: $v) { __typename }", "SupersedeInput!", replaced))
        retired = [
            ('retireItem(id: $v, reason: "no longer true") { id }', "ID!", ids[i]) for i in chunk.retired
        ]
        await aliased(http, space.alice.token, rulings + retired)

    return load


async def grow(
    space: Space, rng: random.Random, words: Words, size: int, load: Load, writers: int = 2
) -> None:
    """The space's project up to ``size`` items of its history, ``writers`` chunks at a time (the
    database does most of the work: one core per writer)."""

    async def writer() -> None:
        while space.loaded < size:
            start = space.loaded
            count = min(CHUNK, size - start)
            space.loaded += count  # claimed before the first await: the other writer takes the next
            await load(space, history(space, rng, words, start, count))

    await asyncio.gather(*(writer() for _ in range(writers)))


MIDDLE = text(
    "SELECT asserted_at FROM items WHERE workspace_id = CAST(:ws AS uuid) AND project_id = CAST(:p AS uuid)"
    " ORDER BY asserted_at, id OFFSET :n LIMIT 1"
)


async def middle(admin: AsyncEngine, space: Space) -> datetime:
    """When the middle item of the project's history was said: the as-of page's moment."""
    async with admin.connect() as connection:
        found = await connection.execute(
            MIDDLE, {"ws": str(space.workspace_id), "p": str(space.project), "n": space.loaded // 2}
        )
        return cast(datetime, found.scalar_one())


# ---------------------------------------------------------------------------
# The operations, as a client sends them

NODE = "id kind statement status authority"
COUNT = "totalCount totalCountIsExact"
PAGE = (
    "query($p: ID!) { items(projectId: $p, first: 50) {"
    " %s pageInfo { hasNextPage endCursor } nodes { %s } } }"
)
SEARCH = (
    "query($p: ID!, $w: String!) { items(projectId: $p, first: 10, filter: {text: $w}) {"
    " %s pageInfo { hasNextPage endCursor } nodes { %s } } }"
)
AS_OF = (
    "query($p: ID!, $t: DateTime!) { items(projectId: $p, first: 50, asOf: $t) {"
    " pageInfo { hasNextPage endCursor } nodes { " + NODE + " } } }"
)
REHYDRATE = """query($i: RehydrateInput!) { rehydrate(input: $i) {
  tokensUsed overBudget encoding rendered
  entries { item { id status } reason score tokens }
  supersessions { previous { id } replacement { id } reason at }
  omitted { kind count } leftOut { kind reason count } supersessionsLeftOut } }"""
ASSERT = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id status authority } }"
FIELDS = "query($t: String!) { __type(name: $t) { fields { name } } }"


# ---------------------------------------------------------------------------
# The SQL ceilings: what the server sends for each operation, one function each.
# Each is a list of (statement, arguments) run after mneia_authenticate in one
# transaction; the columns are an item record's, as storage/item.py selects them.

Statement = tuple[str, tuple[Any, ...]]
Sent = Statement | Callable[[list[list[Any]]], Statement | None]
"""A statement, or one chosen by the answers so far (None: nothing to send)."""

RECORD = [f.name for f in dataclasses.fields(ItemRecord)]
COLUMNS = ", ".join(f"items.{name}" for name in RECORD)
STATE_COLUMNS = ", ".join(f"{{table}}.{name}" for name in sorted(STATE_FIELDS))
COLUMNS_THEN = ", ".join(f"{'s' if name in STATE_FIELDS else 'items'}.{name}" for name in RECORD)
AUTHENTICATE = "SELECT workspace_id, id, kind, name, created_at FROM mneia_authenticate($1, $2)"
PROJECTS = (
    "SELECT projects.id, projects.name, projects.team_id FROM projects"
    " WHERE projects.workspace_id = $1::uuid AND projects.id = ANY ($2::uuid[])"
)
ACTORS = (
    "SELECT actors.workspace_id, actors.id, actors.kind, actors.name, actors.created_at, actors.erased_at"
    " FROM actors WHERE actors.workspace_id = $1::uuid AND actors.id = ANY ($2::uuid[])"
)
SESSION_COLUMNS = (
    "sessions.id, sessions.project_id, sessions.actor_id, clients.tool, clients.version,"
    " sessions.external_id,"
    " sessions.deep_link, sessions.task, sessions.started_at, sessions.ended_at,"
    " sessions.transcript_started_at, sessions.transcript_ended_at"
    " FROM sessions LEFT OUTER JOIN clients"
    " ON clients.workspace_id = sessions.workspace_id AND clients.id = sessions.client_id"
)
SESSIONS = (
    f"SELECT {SESSION_COLUMNS} WHERE sessions.workspace_id = $1::uuid AND sessions.id = ANY ($2::uuid[])"
)
LEXEME = r"'((?:[^']|'')+)'"  # storage/item.py's: a lexeme as a tsquery prints it
MATCHES = (
    "items.search @@ CAST(regexp_replace(CAST(websearch_to_tsquery('english'::regconfig, $3::varchar)"
    " AS text), $4::text, $5::text, 'g') AS tsquery)"
)
"""filter.text as storage/search.py's prefix_query makes it: web-search syntax, each lexeme a prefix."""
TENANT = "items.workspace_id = $1::uuid AND items.project_id = $2::uuid"
"""storage.database's stated(): the workspace said as a value, then the project."""
WALKS = database.WALKS.sql
SORTS = "SELECT set_config('enable_sort', 'on', true), set_config('jit', 'on', true)"
"""storage/database.py's walked: the settings that keep a walk a walk, and back."""
WINDOW, COMMON, WALK = 2_000, 0.2, 50_000
"""storage/search.py's: the newest items a page reads first; the share of them that makes a word
common; the most items a common word's count walks."""


def matching(word: str) -> tuple[str, str, str]:
    return (word, LEXEME, r"'\1':*")


def provenance(space: Space) -> list[Statement]:
    """The loaders a page warms whatever it is asked for: the items' asserters and confirmers,
    their sessions."""
    return [
        (ACTORS, (space.workspace_id, [m.id for m in space.everyone])),
        (SESSIONS, (space.workspace_id, list(space.sessions.values()))),
    ]


BOUND = 10_000
"""storage/count.py's LIMIT: a bounded count reads at most one row more (check_ceilings checks it)."""


def count_ceiling(space: Space) -> Statement:
    """A page's totalCount without a filter: the sum of the counters the items' triggers keep
    (storage/count.py ``counted``), under their own row-level security."""
    return (
        "SELECT coalesce(sum(item_counts.n), 0) FROM item_counts"
        " WHERE item_counts.workspace_id = $1::uuid AND item_counts.project_id = $2::uuid",
        (space.workspace_id, space.project),
    )


def matches_ceiling(space: Space, word: str) -> Statement:
    """A text search's totalCount from the text index: the matches counted up to BOUND + 1
    (storage/count.py ``bounded``)."""
    return (
        f"SELECT count(*) FROM (SELECT 1 FROM items WHERE {TENANT} AND {MATCHES} LIMIT $6::integer) AS m",
        (space.workspace_id, space.project, *matching(word), BOUND + 1),
    )


def walked_ceiling(space: Space, word: str) -> Statement:
    """A common word's totalCount: the newest WALK items walked, numbered, until BOUND + 1 match
    (with the walk's last row, which says whether it used up WALK before the project ended)."""
    hit = MATCHES.replace("items.search", "w.vector")
    return (
        "SELECT count(*) FILTER (WHERE k.hit), max(k.walked) FROM (SELECT n.hit, n.walked FROM"
        f" (SELECT {hit} AS hit, row_number() OVER (ORDER BY w.id DESC) AS walked FROM"
        f" (SELECT items.search AS vector, items.id FROM items WHERE {TENANT}"
        " ORDER BY items.id DESC LIMIT $6::integer) AS w) AS n"
        " WHERE n.hit OR n.walked = $6::integer LIMIT $7::integer) AS k",
        (space.workspace_id, space.project, *matching(word), WALK, BOUND + 1),
    )


def page_ceiling(space: Space, *, counted: bool) -> list[Statement]:
    """items(projectId, first: 50): the project, 51 newest items of the workspace's project (the
    workspace said as a value, as storage.database's stated()), their provenance, the count."""
    statements = [
        (PROJECTS, (space.workspace_id, [space.project])),
        (
            f"SELECT {COLUMNS} FROM items WHERE {TENANT} ORDER BY items.id DESC LIMIT $3::integer",
            (space.workspace_id, space.project, 51),
        ),
        *provenance(space),
    ]
    if counted:
        statements.append(count_ceiling(space))
    return statements


def search_ceiling(space: Space, word: str, totals: list[int] | None = None) -> list[Sent]:
    """items(projectId, first: 10, filter: {text}): as storage/search.py finds them, the newest
    WINDOW items walked and numbered until the 11th match (with the window's last row when there
    are fewer), the older matches only then, counted as they are read; their provenance; else the
    count, walked when the walk showed the word common, else from the text index; each walk
    between the settings that keep it a walk (storage.database.walked; restored after the older
    matches and the index count here, which need no sort the settings would change). ``totals``
    gets the count the older matches' pass made, when it made one (BOUND + 1: more than a count
    reads)."""
    tenant, words, limit = (space.workspace_id, space.project), matching(word), 11
    shares: list[float | None] = []
    edges: list[tuple[Any, int] | None] = []

    def older(answers: list[list[Any]]) -> Statement | None:
        """The newest older matches and how many there are, in one pass (storage.search._older)."""
        rows = answers[-1]
        page = sum(1 for row in rows if row["hit"])
        edges.append(None)
        if page == limit:
            shares.append(limit / rows[-1]["walked"])
            return None
        if not rows or rows[-1]["walked"] < WINDOW:
            shares.append(None)
            return None
        shares.append(page / WINDOW)
        edges[-1] = (rows[-1]["id"], page)
        return (
            f"SELECT {COLUMNS}, latest.older FROM items JOIN (SELECT capped.id, count(*) OVER () AS older"
            " FROM (SELECT matched.id FROM (SELECT items.id FROM items"
            f" WHERE {TENANT} AND {MATCHES} AND items.id < $6 OFFSET 0) AS matched LIMIT $8) AS capped"
            " ORDER BY capped.id DESC LIMIT $7) AS latest ON items.id = latest.id"
            " WHERE items.workspace_id = $1::uuid ORDER BY items.id DESC",
            (*tenant, *words, rows[-1]["id"], limit - page, BOUND + 1 - page),
        )

    def reread(answers: list[list[Any]]) -> Statement | None:
        """More older matches than a count reads: the newest of them again, in order."""
        if edges[-1] is None:
            return None
        edge, page = edges[-1]
        rows = answers[-1]
        counted = not rows or rows[0]["older"] < BOUND + 1 - page
        if totals is not None:
            totals.append(page + (rows[0]["older"] if rows else 0) if counted else BOUND + 1)
        if counted:  # with the page
            return None
        return (
            f"SELECT * FROM (SELECT {COLUMNS} FROM items WHERE {TENANT} AND {MATCHES} AND items.id < $6"
            " OFFSET 0) AS older ORDER BY older.id DESC LIMIT $7",
            (*tenant, *words, edge, limit - page),
        )

    def common() -> bool:
        share = shares[-1]
        return share is not None and share >= COMMON and edges[-1] is None

    def counted(answers: list[list[Any]]) -> Statement | None:
        if edges[-1] is not None:  # the older matches' pass counted them (or found past the bound)
            return None
        return walked_ceiling(space, word) if common() else matches_ceiling(space, word)

    def index_count(answers: list[list[Any]]) -> Statement | None:
        """After a walk that used up WALK items with BOUND or fewer matches: the count from the
        text index, as the server's."""
        if not common():
            return None
        hits, furthest = answers[-1][0]
        return matches_ceiling(space, word) if hits <= BOUND and (furthest or 0) >= WALK else None

    def walks(answers: list[list[Any]]) -> Statement | None:
        return (WALKS, ()) if common() else None

    def sorts(answers: list[list[Any]]) -> Statement | None:
        return (SORTS, ()) if common() else None

    hit = MATCHES.replace("items.search", "w.vector")
    return [
        (PROJECTS, (space.workspace_id, [space.project])),
        (WALKS, ()),
        (
            f"SELECT n.* FROM (SELECT {', '.join(f'w.{name}' for name in RECORD)}, {hit} AS hit,"
            " row_number() OVER (ORDER BY w.id DESC) AS walked"
            f" FROM (SELECT {COLUMNS}, items.search AS vector FROM items WHERE {TENANT}"
            f" ORDER BY items.id DESC LIMIT {WINDOW}) AS w) AS n"
            f" WHERE n.hit OR n.walked = {WINDOW} ORDER BY n.id DESC LIMIT $6",
            (*tenant, *words, limit),
        ),
        older,
        reread,
        (SORTS, ()),
        *provenance(space),
        walks,
        counted,
        index_count,
        sorts,
    ]


def as_of_ceiling(space: Space, moment: datetime) -> list[Statement]:
    """items(projectId, first: 50, asOf): the items said by then, each joined to its state then, written
    or implied by its row while none is written (storage.item._state_at)."""
    return [
        (PROJECTS, (space.workspace_id, [space.project])),
        (
            f"SELECT {COLUMNS_THEN} FROM items JOIN LATERAL ("
            f"SELECT {STATE_COLUMNS.format(table='w')} FROM item_states AS w"
            " WHERE w.workspace_id = items.workspace_id AND w.item_id = items.id"
            " AND w.since <= $1::timestamptz AND w.until > $1::timestamptz"
            f" UNION ALL SELECT {STATE_COLUMNS.format(table='items')}"
            " WHERE items.asserted_at <= $1::timestamptz AND NOT EXISTS (SELECT 1 FROM item_states AS o"
            " WHERE o.workspace_id = items.workspace_id AND o.item_id = items.id)) AS s ON true"
            " WHERE items.workspace_id = $4::uuid AND items.project_id = $2::uuid"
            " AND items.asserted_at <= $1::timestamptz"
            " ORDER BY items.asserted_at DESC, items.id DESC LIMIT $3::integer",
            (moment, space.project, 51, space.workspace_id),
        ),
        *provenance(space),
    ]


ACCESS = (
    "SELECT projects.id, projects.name, projects.team_id, projects.id = ANY (mneia_team_projects()), s.*"
    f" FROM projects LEFT OUTER JOIN (SELECT {SESSION_COLUMNS} WHERE sessions.id = $1::uuid) AS s ON true"
    " WHERE projects.id = ANY ($2::uuid[])"
)
INSERT = (
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, details, basis, confidence, scope,"
    " grant_actor_ids, asserted_by, session_id, valid_from, valid_to, decay_after, said_at, redacted)"
    " VALUES ($1::uuid, $2::uuid, $3::uuid, $4::varchar, $5::varchar, $6::varchar, $7::varchar, $8::float,"
    " $9::varchar, $10::uuid[], $11::uuid, $12::uuid, $13::timestamptz, $14::timestamptz, $15::interval,"
    " $16::timestamptz, $17::text[])"
    f" RETURNING {', '.join(RECORD)}"
)


def assert_ceiling(space: Space, agent: Member, said: dict[str, Any]) -> list[Statement]:
    """assertItem by an agent in its session: the project and session it works in, the INSERT."""
    session = space.sessions[agent.id]
    return [
        (ACCESS, (session, [space.project])),
        (
            INSERT,
            (
                space.workspace_id,
                new_id(),
                space.project,
                said["kind"],
                said["statement"],
                None,
                said["basis"],
                said["confidence"],
                "PROJECT",
                [],
                agent.id,
                session,
                None,
                None,
                None,
                None,
                [],
            ),
        ),
    ]


class Recording:
    """Stands in for a Tx in ``slice.assemble``: each statement it sends, recorded with its arguments."""

    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self.statements: list[Statement] = []
        self.workspace_id, self.actor_id, self.workspace = tx.workspace_id, tx.actor_id, tx.workspace

    async def fetch(self, statement: Any, params: Any) -> Any:
        self.statements.append((statement.sql, tuple(statement.arguments(params))))
        return await self.tx.fetch(statement, params)


async def rehydrate_ceiling(engine: AsyncEngine, space: Space, reader: Member, task: str) -> list[Statement]:
    """rehydrate: the project, every candidate statement ``slice.assemble`` sends for this task
    and reader (recorded now, in a transaction of its own), the entries' provenance."""
    ask = slice.Ask(
        project_id=space.project,
        task=task,
        budget=BUDGET,
        quotas=profile.GENERAL.quotas,
        weights=profile.GENERAL.weights,
    )
    context = Context(engine=engine, bearer=reader.token)
    async with context.authenticated(read=True) as tx:
        recording = Recording(tx)
        await slice.assemble(cast(Tx, recording), ask, context.view())
    return [(PROJECTS, (space.workspace_id, [space.project])), *recording.statements, *provenance(space)]


async def run_ceiling(
    connection: asyncpg.Connection, reader: Member, statements: Sequence[Sent], *, read: bool
) -> list[list[Any]]:
    """One transaction as the server opens it (a read: one snapshot, read only), bound by the token."""
    answers: list[list[Any]] = []
    if read:
        begun = connection.transaction(isolation="repeatable_read", readonly=True)
    else:
        begun = connection.transaction()
    async with begun:
        if not await connection.fetch(AUTHENTICATE, reader.digest, reader.workspace):
            raise BenchmarkBroken("a token did not authenticate")
        for step in statements:
            chosen = step(answers) if callable(step) else step
            if chosen is not None:
                sql, arguments = chosen
                answers.append(await connection.fetch(sql, *arguments))
    return answers


# ---------------------------------------------------------------------------
# Measuring one step


@dataclass
class Operation:
    """One operation: the request a client sends, and its ceiling; each called with the round's
    reader and number."""

    name: str
    graphql: Callable[[Member, int], Awaitable[Any]]
    ceiling: Callable[[Member, int], Awaitable[Any]]


@dataclass
class Measured:
    """One operation at one step: the request over HTTP, its SQL ceiling."""

    graphql: Series
    sql: Series

    def figures(self) -> dict[str, float]:
        g50, g95 = self.graphql.quantile(0.5), self.graphql.quantile(0.95)
        s50, s95 = self.sql.quantile(0.5), self.sql.quantile(0.95)
        return {
            "p50": g50,
            "p95": g95,
            "sql_p50": s50,
            "sql_p95": s95,
            "ratio_p50": g50 / s50,
            "ratio_p95": g95 / s95,
        }


@dataclass
class Step:
    label: str
    project_items: int
    database_items: int
    rounds: int = 0
    loadavg: tuple[float, float] = (0.0, 0.0)
    load: dict[str, float] = field(default_factory=dict)
    storage: dict[str, float] = field(default_factory=dict)
    ops: dict[str, Measured] = field(default_factory=dict)
    matches: dict[str, str] = field(default_factory=dict)


Check = Callable[[dict[str, Any]], None]
Build = Callable[[Member, int], Sequence[Sent]]


@dataclass
class Operations:
    """The operations of one step on one space, over one HTTP client and one SQL connection."""

    http: httpx.AsyncClient
    sql: asyncpg.Connection
    space: Space
    words: Words
    rng: random.Random
    rehydrations: dict[tuple[uuid.UUID, str], list[Statement]]
    moment: datetime  # the as-of page's: when the middle item of the project's history was said

    def request(
        self, query: str, check: Check | None = None, **variables: Any
    ) -> Callable[[Member, int], Awaitable[Any]]:
        async def call(reader: Member, n: int) -> Any:
            data = await gql(self.http, reader.token, query, **variables)
            if check:
                check(data)
            return data

        return call

    def ceiling(self, build: Build, read: bool = True) -> Callable[[Member, int], Awaitable[Any]]:
        async def call(reader: Member, n: int) -> Any:
            return await run_ceiling(self.sql, reader, build(reader, n), read=read)

        return call

    def all(self) -> list[Operation]:
        space, words, project = self.space, self.words, str(self.space.project)
        moment = self.moment
        ops = [
            Operation(
                "page with count",
                self.request(PAGE % (COUNT, NODE), full_page, p=project),
                self.ceiling(lambda r, n: page_ceiling(space, counted=True)),
            ),
            Operation(
                "page without count",
                self.request(PAGE % ("", NODE), full_page, p=project),
                self.ceiling(lambda r, n: page_ceiling(space, counted=False)),
            ),
        ]
        for label, word in (("common", words.common), ("rare", words.rare), ("absent", words.absent)):
            check = nothing_found if label == "absent" else None
            ops.append(
                Operation(
                    f"search, {label} word",
                    self.request(SEARCH % (COUNT, NODE), check, p=project, w=word),
                    self.ceiling(lambda r, n, w=word: search_ceiling(space, w)),  # type: ignore[misc]
                )
            )
        for label, task in zip(("common", "middling", "rare"), words.tasks(), strict=True):
            ops.append(
                Operation(
                    f"rehydrate, {label} words",
                    self.rehydration(task),
                    self.ceiling(lambda r, n, t=task: self.rehydrations[(r.id, t)]),  # type: ignore[misc]
                )
            )
        ops += [
            Operation(
                "as-of page",
                self.request(AS_OF, full_page, p=project, t=moment.isoformat()),
                self.ceiling(lambda r, n: as_of_ceiling(space, moment)),
            ),
            Operation("assertItem", self.assert_item, self.assert_sql),
        ]
        return ops

    def rehydration(self, task: str) -> Callable[[Member, int], Awaitable[Any]]:
        asked = {"projectId": str(self.space.project), "task": task, "tokenBudget": BUDGET}

        async def call(reader: Member, n: int) -> Any:
            found = (await gql(self.http, reader.token, REHYDRATE, i=asked))["rehydrate"]
            if found["tokensUsed"] > BUDGET and not found["overBudget"]:
                raise BenchmarkBroken(f"{found['tokensUsed']} tokens used of {BUDGET}")
            return found

        return call

    def said(self) -> dict[str, Any]:
        """What an agent asserts: an item of its session's project, with its basis and confidence."""
        return {
            "kind": weighted(self.rng, KINDS),
            "statement": self.words.sentence(self.rng, 6, 20),
            "basis": self.words.sentence(self.rng, 4, 12),
            "confidence": round(self.rng.uniform(0.5, 1.0), 2),
        }

    async def assert_item(self, reader: Member, n: int) -> Any:
        agent = self.space.agents[0]
        given = {
            **self.said(),
            "projectId": str(self.space.project),
            "sessionId": str(self.space.sessions[agent.id]),
            "scope": "PROJECT",
        }
        data = await gql(self.http, agent.token, ASSERT, i=given)
        if data["assertItem"]["authority"] != "AGENT_ASSERTED":
            raise BenchmarkBroken(f"unexpected answer {data}")
        return data

    async def assert_sql(self, reader: Member, n: int) -> Any:
        agent = self.space.agents[0]
        return await run_ceiling(self.sql, agent, assert_ceiling(self.space, agent, self.said()), read=False)


def full_page(data: dict[str, Any]) -> None:
    if len(data["items"]["nodes"]) != 50:
        raise BenchmarkBroken(f"a page of {len(data['items']['nodes'])} items")


def nothing_found(data: dict[str, Any]) -> None:
    if data["items"]["nodes"] or data["items"]["totalCount"]:
        raise BenchmarkBroken(f"a word no item holds matched {data['items']['totalCount']} items")


async def check_ceilings(
    http: httpx.AsyncClient, sql: asyncpg.Connection, space: Space, words: Words
) -> dict[str, str]:
    """The ceilings must count what the server counts: the page's total and each search word's (a
    bounded count above BOUND is BOUND, not exact; its ceiling reads one more). What each counted."""
    found: dict[str, str] = {}
    totals: list[int] = []
    checks: list[tuple[str, str, dict[str, str], list[Sent], bool]] = [
        ("project", PAGE % (COUNT, NODE), {}, page_ceiling(space, counted=True), False)
    ]
    for label, word in (("common", words.common), ("rare", words.rare), ("absent", words.absent)):
        statements = search_ceiling(space, word, totals)
        checks.append((f"{label} '{word}'", SEARCH % (COUNT, NODE), {"w": word}, statements, True))
    for name, query, variables, statements, bounded in checks:
        served = (await gql(http, space.alice.token, query, p=str(space.project), **variables))["items"]
        made = len(totals)
        answers = await run_ceiling(sql, space.alice, statements, read=True)
        # The older matches' pass's count, else the last count: after it come only the settings a
        # walk restores (strings).
        counted = (
            totals[-1]
            if len(totals) > made
            else next(rows[0][0] for rows in reversed(answers) if rows and not isinstance(rows[0][0], str))
        )
        answer = (served["totalCount"], served["totalCountIsExact"])
        if answer != ((BOUND, False) if bounded and counted > BOUND else (counted, True)):
            raise BenchmarkBroken(f"{name}: the server counts {answer} (total, exact), its ceiling {counted}")
        found[name] = f"{answer[0]:,}" + ("" if answer[1] else " (not exact)")
    return found


async def measure(
    base: str,
    url: str,
    admin: AsyncEngine,
    engine: AsyncEngine,
    space: Space,
    words: Words,
    step: Step,
    options: Options,
    rng: random.Random,
) -> None:
    """Rounds of every operation, each beside its ceiling, in a shuffled order, until ``rounds``
    or ``seconds`` (at least ``least`` rounds)."""
    sql = await ceiling_connection(url)
    try:
        rehydrations = {
            (reader.id, task): await rehydrate_ceiling(engine, space, reader, task)
            for reader in space.readers
            for task in words.tasks()
        }
        async with httpx.AsyncClient(base_url=base, timeout=120) as http:
            step.matches = await check_ceilings(http, sql, space, words)
            moment = await middle(admin, space)
            ops = Operations(http, sql, space, words, rng, rehydrations, moment).all()
            step.ops = {op.name: Measured(Series(op.name, None), Series(op.name, None)) for op in ops}
            before = os.getloadavg()[0]
            started = time.monotonic()
            for n in range(options.warmup + options.rounds):
                done = n - options.warmup
                if done == 0:
                    started = time.monotonic()
                elif done >= options.least and time.monotonic() - started > options.seconds:
                    break
                reader = space.readers[n % 2]
                order = list(ops)
                rng.shuffle(order)
                for op in order:
                    # The request first in even rounds, its ceiling first in odd ones.
                    if n % 2 == 0:
                        served_ms, _ = await timed(lambda: op.graphql(reader, n))  # noqa: B023
                        ceiling_ms, _ = await timed(lambda: op.ceiling(reader, n))  # noqa: B023
                    else:
                        ceiling_ms, _ = await timed(lambda: op.ceiling(reader, n))  # noqa: B023
                        served_ms, _ = await timed(lambda: op.graphql(reader, n))  # noqa: B023
                    if done >= 0:
                        step.ops[op.name].graphql.samples.append(served_ms)
                        step.ops[op.name].sql.samples.append(ceiling_ms)
                step.rounds = done + 1
            step.loadavg = (before, os.getloadavg()[0])
    finally:
        await sql.close()


# ---------------------------------------------------------------------------
# Storage

SIZES = text(
    "SELECT pg_database_size(current_database()) AS database,"
    " pg_total_relation_size('items') AS items, pg_indexes_size('items') AS items_indexes,"
    " pg_total_relation_size('item_events') AS events, pg_indexes_size('item_events') AS events_indexes,"
    " pg_total_relation_size('item_states') AS states, pg_indexes_size('item_states') AS states_indexes"
)


async def storage(admin: AsyncEngine) -> dict[str, float]:
    """Bytes on disk (with indexes and TOAST); the items counted (as the administrator: every
    workspace's), their events and states as the statistics count them after VACUUM."""
    async with admin.connect() as connection:
        sizes = (await connection.execute(SIZES)).one()._asdict()
        held_items = (await connection.execute(text("SELECT count(*) FROM items"))).scalar_one()
    rows = await row_counts(admin, ("item_events", "item_states"))
    found = {name: value / MB for name, value in sizes.items()}
    found.update({f"{name}_rows": float(count) for name, count in rows.items()}, items_rows=float(held_items))
    held = found["items"] + found["events"] + found["states"]
    found["per_100k"] = held / max(1.0, found["items_rows"]) * 100_000
    return found


# ---------------------------------------------------------------------------
# The report


def markdown(steps: Sequence[Step], options: Options, version: str) -> list[str]:
    out = [
        f"Scale benchmark (issue 24): {version}; uvicorn, 1 worker, in a child process; one httpx client,"
        f" sequential; {os.cpu_count()} cores. Loaded through {LOADERS[options.load]}. Each figure in ms;"
        " x SQL is the request over its SQL ceiling (the same statements through asyncpg, no GraphQL/HTTP),"
        " interleaved.",
        "",
    ]
    for step in steps:
        out.append(
            f"### {step.label}: {step.project_items:,} items in the project, {step.database_items:,} in the"
            f" database; {step.rounds} rounds; load average {step.loadavg[0]:.2f} before,"
            f" {step.loadavg[1]:.2f} after"
        )
        out.append("")
        out.append("| operation | p50 | p95 | SQL p50 | SQL p95 | x SQL p50 | x SQL p95 |")
        out.append("|---|--:|--:|--:|--:|--:|--:|")
        for name, measured in step.ops.items():
            f = measured.figures()
            out.append(
                f"| {name} | {f['p50']:.1f} | {f['p95']:.1f} | {f['sql_p50']:.1f} | {f['sql_p95']:.1f}"
                f" | {f['ratio_p50']:.2f} | {f['ratio_p95']:.2f} |"
            )
        matched = ", ".join(f"{word}: {n}" for word, n in step.matches.items())
        out += ["", f"Matches (Alice sees; the server's count equals its ceiling's): {matched}.", ""]
    out += ["### Loading and storage", ""]
    out.append(
        "| step | items added | load s | items/s | VACUUM ANALYZE s | database MB | items MB (indexes)"
        " | item_events MB (indexes) | item_states MB (indexes) | items+events+states per 100,000 items, MB |"
    )
    out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for step in steps:
        if not step.load:
            continue
        s, ld = step.storage, step.load
        rate = ld["items"] / max(ld["seconds"], 1e-9)
        out.append(
            f"| {step.label} | {ld['items']:,.0f} | {ld['seconds']:.1f} | {rate:,.0f}"
            f" | {ld['vacuum_seconds']:.1f} | {s['database']:,.0f}"
            f" | {s['items']:,.0f} ({s['items_indexes']:,.0f})"
            f" | {s['events']:,.0f} ({s['events_indexes']:,.0f})"
            f" | {s['states']:,.0f} ({s['states_indexes']:,.0f}) | {s['per_100k']:.1f} |"
        )
    out += ["", "(MB = 2^20 bytes, with indexes and TOAST; rows: after VACUUM ANALYZE.)", ""]
    out += growth(steps)
    out += targets(steps)
    out += ["### Summary: p95 in ms (x its SQL ceiling), as the README shows it", ""]
    out += [*summary(as_json(steps, options, version)), ""]
    return out


def summary(figures: dict[str, Any]) -> list[str]:
    """The README's table, from a run's figures (``as_json``, or ``--json``'s file): each operation's p95
    at each step with its ratio to the SQL ceiling, and the storage per 100,000 items."""
    steps = figures["steps"]
    out = ["| operation | " + " | ".join(step["label"] for step in steps) + " |"]
    out.append("|---|" + "--:|" * len(steps))
    for name in steps[0]["ops"]:
        cells = (f"{step['ops'][name]['p95']:.1f} ({step['ops'][name]['ratio_p95']:.1f})" for step in steps)
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    stored = (f"{step['storage']['per_100k']:.1f}" if step.get("storage") else "" for step in steps)
    out.append("| database, MB per 100,000 items | " + " | ".join(stored) + " |")
    return out


def growth(steps: Sequence[Step]) -> list[str]:
    """p95 at each step over p95 at the first, for the requests and for their ceilings."""
    if len(steps) < 2:
        return []
    first = steps[0]
    out = ["### Growth of p95 over the first step (flat: within 1.5x)", ""]
    out.append("| operation | " + " | ".join(s.label for s in steps[1:]) + " | SQL, last P step | flat |")
    out.append("|---|" + "--:|" * (len(steps) - 1) + "--:|---|")
    largest = max((s for s in steps if not s.label.startswith("tenant")), key=lambda s: s.project_items)
    for name in first.ops:
        base = first.ops[name].graphql.quantile(0.95)
        cells = [f"{s.ops[name].graphql.quantile(0.95) / base:.2f}" for s in steps[1:]]
        sql_growth = largest.ops[name].sql.quantile(0.95) / first.ops[name].sql.quantile(0.95)
        worst = max(s.ops[name].graphql.quantile(0.95) / base for s in steps[1:])
        out.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {sql_growth:.2f} | {'ok' if worst <= FLAT else 'NOT FLAT'} |"
        )
    return [*out, ""]


def targets(steps: Sequence[Step]) -> list[str]:
    out = ["### Issue 24's targets", ""]
    millions = [s for s in steps if s.project_items >= 1_000_000 and not s.label.startswith("tenant")]
    at = millions[0] if millions else max(steps, key=lambda s: s.project_items)
    where = f"at {at.project_items:,} items ({at.label})"
    common = at.ops["search, common word"]
    p95, sql95 = common.graphql.quantile(0.95), common.sql.quantile(0.95)
    verdict = "met" if p95 <= SEARCH_TARGET_MS else "MISSED"
    if not millions:
        verdict += " (not measured at 1,000,000 items)"
    out.append(
        f"- 10-result search with its count, common word, p95 {p95:.1f} ms <= {SEARCH_TARGET_MS:.0f} ms"
        f" {where}: {verdict}; its SQL alone p95 {sql95:.1f} ms (x {p95 / sql95:.2f})"
    )
    for label in ("rare", "absent"):
        other = at.ops[f"search, {label} word"].graphql.quantile(0.95)
        out.append(
            f"- {label} word p95 {other:.1f} ms / common word p95 {p95:.1f} ms = {other / p95:.2f}"
            f" (as fast: <= {FLAT}): {'met' if other / p95 <= FLAT else 'MISSED'}"
        )
    loaded = [s for s in steps if s.storage]
    if loaded:
        fullest = max(loaded, key=lambda s: s.storage["items_rows"])
        worst = fullest.storage["per_100k"]
        out.append(
            f"- storage at {fullest.label}: {worst:.1f} MB per 100,000 items with events and states"
            f" <= {STORAGE_TARGET_MB:.0f} MB: {'met' if worst <= STORAGE_TARGET_MB else 'MISSED'}"
        )
    return [*out, ""]


def as_json(steps: Sequence[Step], options: Options, version: str) -> dict[str, Any]:
    return {
        "database": version,
        "loader": LOADERS[options.load],
        "options": dataclasses.asdict(options),
        "steps": [
            {
                "label": s.label,
                "project_items": s.project_items,
                "database_items": s.database_items,
                "rounds": s.rounds,
                "loadavg": list(s.loadavg),
                "load": s.load,
                "storage": s.storage,
                "matches": s.matches,
                "ops": {name: m.figures() for name, m in s.ops.items()},
            }
            for s in steps
        ],
    }


# ---------------------------------------------------------------------------
# The run


@dataclass
class Options:
    sizes: list[int]
    tenants: int
    tenant_items: int
    rounds: int
    warmup: int
    least: int
    seconds: float
    seed: int
    keep: bool
    json: str | None
    load: str  # a key of LOADERS, or "auto" until the run looks at the schema


async def add_tenants(
    base: str,
    admin: AsyncEngine,
    load: Load,
    options: Options,
    rng: random.Random,
    words: Words,
    origin: datetime,
) -> tuple[list[Space], float]:
    """``tenants`` workspaces of ``tenant_items`` items each: built through the API two at a time,
    then loaded; the seconds the loading took."""
    spaces: list[Space] = []
    setup = time.perf_counter()
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for start in range(0, options.tenants, 2):
            made = await asyncio.gather(
                *(
                    build_space(
                        http,
                        admin,
                        f"tenant-{n:04d}",
                        humans=["alice"],
                        agents=["claude-code"],
                        total=options.tenant_items,
                        rules=5,
                        origin=origin,
                    )
                    for n in range(start, min(start + 2, options.tenants))
                )
            )
            spaces += made
    print(
        f"{len(spaces):,} workspaces set up through the API in {time.perf_counter() - setup:.1f} s",
        file=sys.stderr,
    )
    started = time.perf_counter()
    for start in range(0, len(spaces), 2):  # two writers, as for the project
        await asyncio.gather(
            *(grow(space, rng, words, options.tenant_items, load) for space in spaces[start : start + 2])
        )
    return spaces, time.perf_counter() - started


async def run(options: Options, url: str, version: str) -> None:
    rng = random.Random(options.seed)
    words = Words.drawn(rng, 5000)
    admin = create_engine(url, pool_size=3)
    engine = create_engine(app_url(url), pool_size=2)
    origin = datetime.now(UTC) - HISTORY - timedelta(days=1)
    steps: list[Step] = []
    in_database = 0

    async def settle(step: Step, seconds: float, added: int) -> None:
        started = time.perf_counter()
        await vacuum_analyze(url)
        step.load = {
            "items": float(added),
            "seconds": seconds,
            "vacuum_seconds": time.perf_counter() - started,
        }
        step.storage = await storage(admin)
        print(
            f"{step.label}: {added:,} items loaded in {seconds:.1f} s ({added / max(seconds, 1e-9):,.0f}/s),"
            f" VACUUM ANALYZE {step.load['vacuum_seconds']:.1f} s",
            file=sys.stderr,
        )

    try:
        with running_server(url) as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                main = await build_space(
                    http,
                    admin,
                    "scale",
                    humans=["alice", "bob"],
                    agents=["claude-code", "codex"],
                    total=options.sizes[-1],
                    rules=50,
                    origin=origin,
                )
                if options.load == "auto":
                    found = await gql(http, main.alice.token, FIELDS, t="Mutation")
                    bulk = "assertItems" in {f["name"] for f in found["__type"]["fields"]}
                    options.load = "api" if bulk else "owner"
            loading = httpx.AsyncClient(base_url=base, timeout=600)
            load = over_api(loading) if options.load == "api" else as_owner(admin)
            print(f"loading through {LOADERS[options.load]}", file=sys.stderr)
            for size in options.sizes:
                step = Step(f"P {size:,}", size, 0)
                started = time.perf_counter()
                added = size - main.loaded
                await grow(main, rng, words, size, load)
                in_database += added
                await settle(step, time.perf_counter() - started, added)
                step.database_items = int(step.storage["items_rows"])
                await measure(base, url, admin, engine, main, words, step, options, rng)
                print(f"{step.label}: measured, {step.rounds} rounds", file=sys.stderr)
                steps.append(step)
            if options.tenants:
                tenants, seconds = await add_tenants(base, admin, load, options, rng, words, origin)
                added = options.tenants * options.tenant_items
                label = f"{options.tenants:,} x {options.tenant_items:,}"
                again = Step(f"P {main.loaded:,} + {label}", main.loaded, 0)
                await settle(again, seconds, added)
                again.database_items = int(again.storage["items_rows"])
                await measure(base, url, admin, engine, main, words, again, options, rng)
                steps.append(again)
                tenant = tenants[len(tenants) // 2]
                one = Step(f"tenant {tenant.name} of {label}", tenant.loaded, again.database_items)
                await measure(base, url, admin, engine, tenant, words, one, options, rng)
                steps.append(one)
            await loading.aclose()
    finally:
        await engine.dispose()
        await admin.dispose()
    print("\n".join(markdown(steps, options, version)))
    if options.json:
        written = json.dumps(as_json(steps, options, version), indent=2, default=str)
        await asyncio.to_thread(Path(options.json).write_text, written)


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help="an admin URL of the server to create the bench database on")
    parser.add_argument("--sizes", default="10000,100000,1000000", help="the project's sizes, in order")
    parser.add_argument(
        "--tenants", type=int, default=1000, help="workspaces added after the last size (0: none)"
    )
    parser.add_argument("--tenant-items", type=int, default=1000)
    parser.add_argument(
        "--rounds", type=int, default=200, help="rounds per step, each one of every operation"
    )
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=180, help="stop a step's rounds after this long ...")
    parser.add_argument("--least", type=int, default=20, help="... once it has at least this many")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--json", help="also write every figure to this file")
    parser.add_argument(
        "--summary", metavar="FILE", help="print the README's table from a run's --json file, and run nothing"
    )
    parser.add_argument(
        "--load",
        choices=("auto", *LOADERS),
        default="auto",
        help="the bulk path: assertItems over HTTP (api), the owner's INSERT (owner); auto: api where the"
        " schema has assertItems",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.summary:
        print("\n".join(summary(json.loads(Path(args.summary).read_text()))))
        return 0
    sizes = sorted(int(size) for size in args.sizes.split(","))
    if sizes[0] < 100 or args.rounds < 1 or (args.tenants and args.tenant_items < 100):
        raise SystemExit("sizes of at least 100 items, at least one round")
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    options = Options(
        sizes,
        args.tenants,
        args.tenant_items,
        args.rounds,
        args.warmup,
        args.least,
        args.seconds,
        args.seed,
        args.keep,
        args.json,
        args.load,
    )
    on_fresh_database(run, options, keep=args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
