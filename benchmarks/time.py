"""Time benchmark: a page of 50 items as of a moment, beside the same page now, over real HTTP (R9).

One project of (by default) 100,000 items and about 300,000 events is loaded
into a fresh database: a year of history, each item asserted at its own time
by Alice or one of three agents (in their sessions), many agent items
confirmed by Alice hours or days later, most verified some time after, some
constraints made load-bearing, one item in eight replacing an earlier one and
one in fifty contradicting an earlier one (an open dispute). The real
application then runs under uvicorn in a child process and one httpx client
asks, alternately:

- the as-of page: ``items(projectId, first: 50, asOf: T)`` with provenance
  down to the client, ``supersededBy`` and ``disputes``, T drawn uniformly
  over the year (each item, link and dispute as it stood then);
- the same page without ``asOf``.

Target: the as-of page's p95 <= 40 ms. A missed target is reported, not
failed. It also prints the SQL statements one request of each kind sends, at
first: 5 and first: 50 (counted in-process on the server's engine): the
count must not grow with the page.

The bulk of the history is inserted as the owner role bound to each writer
(common.insert_items), so the policies check every row and the event log
trigger writes each item's events and states at the times the rows carry
(a trusted session loads history). The replaced items are then marked
SUPERSEDED, and a share of the items verified again, in one transaction at
load time: their instant is the load, which as-of moments before it do not
see.

    .venv/bin/python benchmarks/time.py                                # full size
    .venv/bin/python benchmarks/time.py --items 5000 --samples 50      # smoke

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL), as in
foundation.py; ``--keep`` keeps the bench database.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from common import (
    HEADER,
    KINDS,
    BenchmarkBroken,
    Series,
    bind,
    gql,
    insert_items,
    on_fresh_database,
    owner_transaction,
    row_counts,
    running_server,
    sentence,
    timed,
    vacuum_analyze,
    weighted,
)
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.config import app_url
from mneia.storage import workspace
from mneia.storage.database import create_engine
from mneia.storage.ids import new_id

AS_OF_TARGET_MS = 40.0

NODE = """id kind statement status authority loadBearing confidence assertedAt stale freshness
  confirmation { by { name } at }
  provenance {
    assertedBy { id name kind }
    actorKind assertedAt basis partial missing
    session { id externalId deepLink client { tool version } }
  }
  supersededBy { id status }
  disputes { id status }"""
AS_OF_PAGE = f"""query AsOf($p: ID!, $t: DateTime, $first: Int) {{
  items(projectId: $p, asOf: $t, first: $first) {{ pageInfo {{ hasNextPage endCursor }} nodes {{ {NODE} }} }}
}}"""
NOW_PAGE = f"""query Now($p: ID!, $first: Int) {{
  items(projectId: $p, first: $first) {{ pageInfo {{ hasNextPage endCursor }} nodes {{ {NODE} }} }}
}}"""

AGENTS = (("claude-code", "1.0.98"), ("codex", None), ("cursor", "0.42"))
REVERIFIED = 0.6  # share of items verified again at load time
CHUNK = 5000  # rows per insert round, in time order; a row names only rows of earlier rounds


@dataclass(frozen=True)
class Member:
    id: uuid.UUID
    token: str


@dataclass
class World:
    workspace_id: uuid.UUID
    project_id: uuid.UUID
    alice: Member
    agents: list[Member]
    sessions: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)  # agent -> its session
    first: datetime | None = None
    last: datetime | None = None

    @property
    def readers(self) -> list[Member]:
        return [self.alice, *self.agents]


async def build_world(http: httpx.AsyncClient, admin: AsyncEngine) -> World:
    made = await workspace.bootstrap(admin, f"time-{uuid.uuid4().hex[:6]}", "alice")
    alice = Member(made.actor_id, made.token)
    project = await gql(http, alice.token, 'mutation { createProject(name: "ledger") { id } }')
    world = World(made.workspace_id, uuid.UUID(project["createProject"]["id"]), alice, [])
    for tool, version in AGENTS:
        created = await gql(
            http,
            alice.token,
            "mutation($n: String!) { createActor(kind: AGENT, name: $n) { actor { id } token } }",
            n=tool,
        )
        agent = Member(uuid.UUID(created["createActor"]["actor"]["id"]), created["createActor"]["token"])
        await gql(
            http,
            alice.token,
            "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }",
            p=str(world.project_id),
            a=str(agent.id),
        )
        started = await gql(
            http,
            agent.token,
            "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }",
            i={"projectId": str(world.project_id), "client": {"tool": tool, "version": version}},
        )
        world.agents.append(agent)
        world.sessions[agent.id] = uuid.UUID(started["startSession"]["id"])
    return world


# ---------------------------------------------------------------------------
# A year of history


@dataclass
class History:
    rows: dict[uuid.UUID, list[dict[str, Any]]]  # by the context that inserts them
    replaced: list[uuid.UUID]
    disputes: list[dict[str, Any]]


def plan(world: World, count: int, rng: random.Random, now: datetime) -> History:
    span = timedelta(days=365)
    times = sorted(now - span * rng.random() for _ in range(count))
    # Moments to read at: from when the project held a few pages (a page of the past is full) to the end.
    world.first, world.last = times[min(500, count - 1)], times[-1]
    rows: dict[uuid.UUID, list[dict[str, Any]]] = {}
    # ACTIVE, not yet replaced, and in an earlier chunk than the row that names it (see load).
    replaceable: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # ACTIVE rows of the current chunk
    replaced: list[uuid.UUID] = []
    disputes: list[dict[str, Any]] = []
    for index, asserted_at in enumerate(times):
        if index % CHUNK == 0:
            replaceable += pending
            pending = []
        human = rng.random() < 0.25
        asserter = world.alice if human else rng.choice(world.agents)
        kind = weighted(rng, KINDS)
        later = asserted_at + (now - asserted_at) * rng.random() * 0.2
        confirmed_at = asserted_at if human else (later if rng.random() < 0.5 else None)
        load_bearing = confirmed_at is not None and kind == "CONSTRAINT" and rng.random() < 0.3
        row: dict[str, Any] = {
            "id": new_id(),
            "project_id": world.project_id,
            "kind": kind,
            "statement": sentence(rng, 6, 20),
            "details": None,
            "basis": sentence(rng, 4, 10) if rng.random() < 0.6 else None,
            "confidence": None if human else round(rng.uniform(0.5, 1.0), 2),
            "status": "ACTIVE",
            "status_reason": None,
            "scope": "PROJECT",
            "grants": "",
            "asserted_by": asserter.id,
            "asserted_at": asserted_at,
            "session_id": None if human else world.sessions[asserter.id],
            "decay_after": timedelta(days=90) if rng.random() < 0.3 else None,
            "load_bearing": load_bearing,
            "load_bearing_set_by": world.alice.id if load_bearing else None,
            "load_bearing_set_at": confirmed_at if load_bearing else None,
            "confirmed_by": world.alice.id if confirmed_at else None,
            "confirmed_at": confirmed_at,
            "last_verified_at": asserted_at + (now - asserted_at) * rng.random()
            if rng.random() < 0.9
            else None,
        }
        roll = rng.random()
        if roll < 0.125 and len(replaceable) > 100:
            target = replaceable.pop(rng.randrange(len(replaceable)))
            row["supersedes_id"], row["supersession_reason"] = target["id"], "superseded by a newer finding"
            replaced.append(target["id"])
        elif roll < 0.145 and not human and len(replaceable) > 100:
            contested = rng.choice(replaceable)
            row.update(status="DISPUTED", status_reason=f"contradicts {contested['id']}", confirmed_by=None)
            row.update(
                confirmed_at=None, load_bearing=False, load_bearing_set_by=None, load_bearing_set_at=None
            )
            disputes.append(
                {
                    "id": new_id(),
                    "item": row["id"],
                    "contested": contested["id"],
                    "by": asserter.id,
                    "at": asserted_at,
                }
            )
        if row["status"] == "ACTIVE":
            pending.append(row)
        context = world.alice.id if row["confirmed_by"] else asserter.id
        rows.setdefault(context, []).append(row)
    return History(rows, replaced, disputes)


_DISPUTES = text(
    "INSERT INTO disputes (workspace_id, id, project_id, item_id, contested_id, raised_by, raised_at, reason)"
    " SELECT CAST(:ws AS uuid), d.id, CAST(:project AS uuid), d.item, d.contested, d.raised_by, d.at,"
    " 'contradicts'"
    " FROM unnest(CAST(:ids AS uuid[]), CAST(:items AS uuid[]), CAST(:contested AS uuid[]),"
    " CAST(:by AS uuid[]), CAST(:at AS timestamptz[])) AS d(id, item, contested, raised_by, at)"
)
_SUPERSEDE = text(
    "UPDATE items SET status = 'SUPERSEDED', status_reason = 'superseded by a newer finding'"
    " WHERE workspace_id = CAST(:ws AS uuid) AND id = ANY (CAST(:ids AS uuid[]))"
)
_REVERIFY = text(
    "UPDATE items SET last_verified_at = now()"
    " WHERE workspace_id = CAST(:ws AS uuid) AND project_id = CAST(:project AS uuid) AND random() < :share"
)


async def load(admin: AsyncEngine, world: World, history: History) -> None:
    """The rows in time order (a replacement after what it replaces), then the load-time changes."""
    ws = str(world.workspace_id)
    async with owner_transaction(admin, world.workspace_id, world.alice.id) as tx:
        # Replacements name earlier rows: insert everything in time order, one context at a time per chunk.
        ordered = sorted(
            ((row["asserted_at"], context, row) for context, rows in history.rows.items() for row in rows),
            key=lambda entry: entry[0],
        )
        for start in range(0, len(ordered), CHUNK):
            chunk = ordered[start : start + CHUNK]
            by_context: dict[uuid.UUID, list[dict[str, Any]]] = {}
            for _, context, row in chunk:
                by_context.setdefault(context, []).append(row)
            for context, rows in by_context.items():
                await bind(tx, world.workspace_id, context)
                await insert_items(tx, rows)
        by_raiser: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for dispute in history.disputes:
            by_raiser.setdefault(dispute["by"], []).append(dispute)
        for raiser, found in by_raiser.items():
            await bind(tx, world.workspace_id, raiser)
            await tx.execute(
                _DISPUTES,
                {
                    "ws": ws,
                    "project": str(world.project_id),
                    "ids": [str(d["id"]) for d in found],
                    "items": [str(d["item"]) for d in found],
                    "contested": [str(d["contested"]) for d in found],
                    "by": [str(d["by"]) for d in found],
                    "at": [d["at"] for d in found],
                },
            )
        await bind(tx, world.workspace_id, world.alice.id)
        await tx.execute(_SUPERSEDE, {"ws": ws, "ids": [str(i) for i in history.replaced]})
        await tx.execute(_REVERIFY, {"ws": ws, "project": str(world.project_id), "share": REVERIFIED})


# ---------------------------------------------------------------------------
# Measurement


def moment(rng: random.Random, world: World) -> str:
    assert world.first and world.last
    return (world.first + (world.last - world.first) * rng.random()).isoformat()


async def one_page(http: httpx.AsyncClient, rng: random.Random, world: World, as_of: bool) -> Any:
    reader = rng.choice(world.readers)
    if as_of:
        data = await gql(
            http, reader.token, AS_OF_PAGE, p=str(world.project_id), t=moment(rng, world), first=50
        )
    else:
        data = await gql(http, reader.token, NOW_PAGE, p=str(world.project_id), first=50)
    nodes = data["items"]["nodes"]
    if len(nodes) != 50:
        raise BenchmarkBroken(f"a page of {len(nodes)} items")
    return data


async def measure(
    base: str, world: World, samples: int, warmup: int, rng: random.Random
) -> tuple[Series, Series]:
    then = Series("as-of page (50, asOf: T)", AS_OF_TARGET_MS)
    now = Series("same page now (no asOf)", None)
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        for round_ in range(warmup + samples):
            as_of_ms, _ = await timed(lambda: one_page(http, rng, world, True))
            now_ms, _ = await timed(lambda: one_page(http, rng, world, False))
            if round_ >= warmup:
                then.samples.append(as_of_ms)
                now.samples.append(now_ms)
    return then, now


async def statements(url: str, world: World, rng: random.Random) -> dict[tuple[str, int], int]:
    """The statements one request sends, counted on an in-process app's engine, by page kind and size."""
    engine = create_engine(app_url(url), pool_size=2)
    sent: list[str] = []
    event.listen(engine.sync_engine, "before_cursor_execute", lambda *args: sent.append(args[2]))
    app = create_app(engine, dispose_engine=False)
    counts: dict[tuple[str, int], int] = {}
    t = moment(rng, world)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
            for first in (5, 50):
                for name, query, variables in (
                    ("as-of", AS_OF_PAGE, {"t": t}),
                    ("now", NOW_PAGE, {}),
                ):
                    arguments = {"p": str(world.project_id), "first": first, **variables}
                    await gql(http, world.alice.token, query, **arguments)  # warm
                    sent.clear()
                    await gql(http, world.alice.token, query, **arguments)
                    counts[(name, first)] = len(sent)
    finally:
        await engine.dispose()
    return counts


@dataclass
class Options:
    items: int
    samples: int
    warmup: int
    seed: int
    keep: bool


async def run(options: Options, url: str, version: str) -> None:
    rng = random.Random(options.seed)
    admin = create_engine(url, pool_size=2)
    try:
        with running_server(url) as base:
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                world = await build_world(http, admin)
            now = datetime.now(UTC)
            history = plan(world, options.items, rng, now)
            started = time.perf_counter()
            await load(admin, world, history)
            load_s = time.perf_counter() - started
            started = time.perf_counter()
            await vacuum_analyze(url)
            vacuum_s = time.perf_counter() - started
            rows = await row_counts(admin, ("items", "item_events", "item_states", "disputes"))
            print(f"database     {version}")
            print(f"server       uvicorn, 1 worker, child process on {base}; client httpx over TCP")
            print(f"cpu cores    {os.cpu_count()}")
            print(
                f"rows         items {rows.get('items', 0):,} (one project),"
                f" item_events {rows.get('item_events', 0):,},"
                f" item_states {rows.get('item_states', 0):,}, disputes {rows.get('disputes', 0):,};"
                f" {len(history.replaced):,} replaced"
            )
            print(
                f"load time    bulk insert and load-time changes {load_s:.1f} s,"
                f" VACUUM ANALYZE {vacuum_s:.1f} s"
            )
            sys.stdout.flush()
            load_before = os.getloadavg()[0]
            then, present = await measure(base, world, options.samples, options.warmup, rng)
            load_after = os.getloadavg()[0]
        counts = await statements(url, world, rng)
    finally:
        await admin.dispose()

    print()
    print(
        f"measured     {options.samples} of each, after {options.warmup} warm-up rounds, alternating,"
        " sequential;"
        " T uniform over the year (after its first 500 items); readers Alice and the agents"
    )
    print(
        f"load average {load_before:.2f} before, {load_after:.2f} after"
        " (much above 2 means other work shared the cores)"
    )
    print(HEADER)
    print(then.row())
    print(present.row())
    print()
    print(f"{'SQL statements per request':<32}{'first: 5':>10}{'first: 50':>10}")
    for name, label in (("as-of", "as-of page"), ("now", "same page now")):
        small, large = counts[(name, 5)], counts[(name, 50)]
        verdict = "" if small == large else "   GROWS WITH THE PAGE"
        print(f"{label:<32}{small:>10}{large:>10}{verdict}")


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.items < 1000 or args.samples < 1:
        raise SystemExit("need at least 1,000 items and one sample")
    options = Options(args.items, args.samples, args.warmup, args.seed, args.keep)
    on_fresh_database(run, options, keep=args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
