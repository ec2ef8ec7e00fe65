"""Bulk benchmark: assertItems items/s into a project that already holds a million items, beside the ceiling.

Issue 24's target: at least 5,000 items/s on 2 cores into a project that
already has 1,000,000 items, with every guard on. One project is seeded
with ``--existing`` items (the owner's ``common.insert_items``, spread over
the past year, as every benchmark seeds history); then, in each of
``--rounds`` rounds, interleaved:

- *assertItems*: an agent's batches of ``--batch`` items in its session,
  over HTTP to the real application (uvicorn, one worker, a child process),
  from 1 and 2 concurrent clients (``--clients``); each request is one
  transaction, with every check, guard, event and counter;
- *ceiling*: the same multi-row INSERT (storage.bulk.create_many, the
  statement assertItems sends) issued as raw SQL by the owner bound to the
  agent, with every trigger on (the owner's session is trusted, so the
  authority guard returns at once; the events, states and counters are
  written as for the server);
- *app SQL*: the same statement as the server's role, authenticated by the
  agent's token, every guard on: the database's share of an assertItems.

Beside them, single ``assertItem`` calls over HTTP, one client, for
comparison. Each line is the median of the rounds (by items/s) with the
range; its ratio is to the ceiling of the same round. Request bodies are
encoded before the clock starts, so the client's JSON encoding is not in
the figures; the client, the server and the database share the machine's
cores. The load average is printed with each line.

    .venv/bin/python benchmarks/bulk.py                                     # 1,000,000 existing
    .venv/bin/python benchmarks/bulk.py --existing 100000 --rounds 1 --requests 5   # quick

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from common import (
    KINDS,
    BenchmarkBroken,
    gql,
    insert_items,
    on_fresh_database,
    owner_transaction,
    row_counts,
    running_server,
    sentence,
    vacuum_analyze,
    weighted,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import app_url
from mneia.storage import bulk, token, workspace
from mneia.storage.database import create_engine, transaction
from mneia.storage.ids import new_ids
from mneia.storage.item import NewItem
from mneia.vocabulary import ItemKind

TARGET_PER_S = 5_000
TARGET_EXISTING = 1_000_000
SEED_CHUNK = 50_000  # items per owner transaction while seeding

ASSERT_ITEMS = "mutation($i: [AssertItemInput!]!) { assertItems(input: $i) { id } }"
ASSERT_ITEM = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id } }"


@dataclass(frozen=True)
class World:
    workspace_id: uuid.UUID
    agent_id: uuid.UUID
    agent_token: str
    project_id: uuid.UUID
    session_id: uuid.UUID


async def build_world(http: httpx.AsyncClient, admin: AsyncEngine) -> World:
    """A workspace, its human, an agent working in one project, in a session of its own."""
    made = await workspace.bootstrap(admin, "bulk", "alice")
    human = made.token
    created = (
        await gql(
            http,
            human,
            'mutation { createActor(kind: AGENT, name: "loader") { actor { id } token } }',
        )
    )["createActor"]
    project = (await gql(http, human, 'mutation { createProject(name: "big") { id } }'))["createProject"][
        "id"
    ]
    await gql(
        http,
        human,
        "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }",
        p=project,
        a=created["actor"]["id"],
    )
    started = await gql(
        http,
        created["token"],
        "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }",
        i={"projectId": project, "client": {"tool": "bulk-bench", "version": "1.0"}, "externalId": "bench"},
    )
    return World(
        made.workspace_id,
        uuid.UUID(created["actor"]["id"]),
        created["token"],
        uuid.UUID(project),
        uuid.UUID(started["startSession"]["id"]),
    )


async def seed(admin: AsyncEngine, world: World, count: int, rng: random.Random) -> float:
    """``count`` agent items of the past year in the project, as the owner; answers the seconds taken."""
    now = datetime.now(UTC)
    started = time.perf_counter()
    for first in range(0, count, SEED_CHUNK):
        size = min(SEED_CHUNK, count - first)
        times = sorted(now - timedelta(days=365) * rng.random() for _ in range(size))
        rows = [
            {
                "id": item_id,
                "project_id": world.project_id,
                "kind": weighted(rng, KINDS),
                "statement": sentence(rng, 6, 24),
                "details": None,
                "basis": sentence(rng, 4, 12) if rng.random() < 0.6 else None,
                "confidence": round(rng.uniform(0.5, 1.0), 2),
                "status": "ACTIVE",
                "status_reason": None,
                "scope": "PROJECT",
                "grants": "",
                "asserted_by": world.agent_id,
                "asserted_at": moment,
                "session_id": world.session_id,
                "decay_after": None,
                "load_bearing": False,
                "load_bearing_set_by": None,
                "load_bearing_set_at": None,
                "confirmed_by": None,
                "confirmed_at": None,
            }
            for item_id, moment in zip(new_ids(size), times, strict=True)
        ]
        async with owner_transaction(admin, world.workspace_id, world.agent_id) as tx:
            await insert_items(tx, rows)
    return time.perf_counter() - started


@dataclass(frozen=True)
class Said:
    """One item of a batch, as the API takes it and as storage takes it."""

    kind: str
    statement: str
    basis: str | None
    confidence: float


def said(rng: random.Random, count: int) -> list[Said]:
    return [
        Said(
            weighted(rng, KINDS),
            sentence(rng, 6, 24),
            sentence(rng, 4, 12) if rng.random() < 0.6 else None,
            round(rng.uniform(0.5, 1.0), 2),
        )
        for _ in range(count)
    ]


def api_input(world: World, one: Said) -> dict[str, Any]:
    return {
        "projectId": str(world.project_id),
        "sessionId": str(world.session_id),
        "kind": one.kind,
        "statement": one.statement,
        "basis": one.basis,
        "confidence": one.confidence,
    }


def new_item(world: World, one: Said) -> NewItem:
    return NewItem(
        project_id=world.project_id,
        kind=ItemKind(one.kind),
        statement=one.statement,
        basis=one.basis,
        confidence=one.confidence,
        session_id=world.session_id,
    )


@dataclass
class Line:
    name: str
    batch: int
    rates: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)

    def text(self) -> str:
        rate = statistics.median(self.rates)
        spread = f"{min(self.rates):,.0f}-{max(self.rates):,.0f}"
        ratio = f"{statistics.median(self.ratios):.2f}" if self.ratios else "-"
        return (
            f"{self.name:<42}{self.batch:>6}{rate:>10,.0f}{spread:>16}{ratio:>9}"
            f"{statistics.median(self.loads):>8.2f}"
        )


HEADER = f"{'':<42}{'batch':>6}{'items/s':>10}{'range':>16}{'ratio':>9}{'load':>8}"


async def timed_items(count: int, work: Callable[[], Awaitable[None]]) -> float:
    started = time.perf_counter()
    await work()
    return count / (time.perf_counter() - started)


async def concurrently(
    count: int, workers: int, batches: Sequence[Any], send: Callable[[Any], Awaitable[None]]
) -> float:
    """Send ``batches`` (``count`` items in all) from ``workers`` concurrent loops; items/s."""
    pending = list(batches)

    async def worker() -> None:
        while pending:
            await send(pending.pop())

    async def work() -> None:
        await asyncio.gather(*(worker() for _ in range(workers)))

    return await timed_items(count, work)


async def over_http(
    http: httpx.AsyncClient, world: World, bodies: list[bytes], count: int, clients: int
) -> float:
    """The encoded assertItems requests, from ``clients`` concurrent clients; items/s."""
    headers = {"Authorization": f"Bearer {world.agent_token}", "Content-Type": "application/json"}

    async def send(body: bytes) -> None:
        response = await http.post("/graphql", content=body, headers=headers)
        if response.status_code != 200 or response.json().get("errors"):
            raise BenchmarkBroken(response.text[:500])

    return await concurrently(count, clients, bodies, send)


async def as_owner(admin: AsyncEngine, world: World, batches: list[list[NewItem]], connections: int) -> float:
    """The same statement, each batch in its own owner transaction bound to the agent; items/s."""

    async def send(news: list[NewItem]) -> None:
        async with owner_transaction(admin, world.workspace_id, world.agent_id) as tx:
            await bulk.create_many(tx, news, confirmed=[False] * len(news))

    return await concurrently(sum(map(len, batches)), connections, batches, send)


async def as_app(engine: AsyncEngine, world: World, batches: list[list[NewItem]], connections: int) -> float:
    """The same statement as the server's role, bound by the agent's token, every guard on; items/s."""

    async def send(news: list[NewItem]) -> None:
        async with transaction(engine) as tx:
            if await token.authenticate(tx, world.agent_token) is None:
                raise BenchmarkBroken("the agent's token does not authenticate")
            await bulk.create_many(tx, news, confirmed=[False] * len(news))

    return await concurrently(sum(map(len, batches)), connections, batches, send)


async def singles(http: httpx.AsyncClient, world: World, items: list[Said]) -> float:
    async def work() -> None:
        for one in items:
            await gql(http, world.agent_token, ASSERT_ITEM, i=api_input(world, one))

    return await timed_items(len(items), work)


@dataclass
class Options:
    existing: int
    batches: list[int]
    clients: list[int]
    rounds: int
    requests: int
    singles: int
    seed: int
    keep: bool


def encoded(world: World, items: Sequence[Said]) -> bytes:
    body = {"query": ASSERT_ITEMS, "variables": {"i": [api_input(world, one) for one in items]}}
    return json.dumps(body).encode()


async def run(options: Options, url: str, version: str) -> None:
    rng = random.Random(options.seed)
    admin = create_engine(url, pool_size=max(options.clients))
    engine = create_engine(app_url(url), pool_size=max(options.clients))
    lines: dict[tuple[str, int], Line] = {}

    def line(name: str, batch: int) -> Line:
        return lines.setdefault((name, batch), Line(name, batch))

    try:
        with running_server(url) as base:
            async with httpx.AsyncClient(base_url=base, timeout=300) as http:
                world = await build_world(http, admin)
                seconds = await seed(admin, world, options.existing, rng)
                vacuumed = time.perf_counter()
                await vacuum_analyze(url)
                vacuum_s = time.perf_counter() - vacuumed
                print(f"database     {version}; cpu cores {os.cpu_count()}")
                print(f"server       uvicorn, 1 worker, child process on {base}; client httpx over TCP")
                print(
                    f"seeded       {options.existing:,} items into one project in {seconds:.1f} s"
                    f" ({options.existing / max(seconds, 1e-9):,.0f} items/s, owner, insert_items);"
                    f" VACUUM ANALYZE {vacuum_s:.1f} s"
                )
                await over_http(http, world, [encoded(world, said(rng, 10))], 10, 1)  # warm up
                connections = max(options.clients)
                sys.stdout.flush()
                for number in range(options.rounds):
                    for size in options.batches:
                        content = [said(rng, size) for _ in range(options.requests)]
                        stored = [[new_item(world, one) for one in items] for items in content]
                        bodies = [encoded(world, items) for items in content]
                        count = size * options.requests
                        ceiling = await as_owner(admin, world, stored, connections)
                        top = line(f"ceiling: owner SQL, triggers on, {connections} conn", size)
                        top.rates.append(ceiling)
                        top.loads.append(os.getloadavg()[0])
                        app_sql = await as_app(engine, world, stored, connections)
                        measured = [(f"app SQL, every guard, {connections} conn", app_sql)]
                        for clients in options.clients:
                            name = f"assertItems HTTP, {clients} client{'s' if clients > 1 else ''}"
                            measured.append((name, await over_http(http, world, bodies, count, clients)))
                        for name, rate in measured:
                            line(name, size).rates.append(rate)
                            line(name, size).ratios.append(rate / ceiling)
                            line(name, size).loads.append(os.getloadavg()[0])
                    print(f"round {number + 1} of {options.rounds} measured", flush=True)
                one_by_one = line("assertItem HTTP, 1 client (single)", 1)
                one_by_one.rates.append(await singles(http, world, said(rng, options.singles)))
                one_by_one.loads.append(os.getloadavg()[0])
        rows = await row_counts(admin, ("items", "item_events", "item_states"))
    finally:
        await admin.dispose()
        await engine.dispose()

    print()
    print(
        f"measured     {options.rounds} round(s), {options.requests} requests per line and batch size;"
        " each line the median round, its ratio to the same round's ceiling"
    )
    print(
        f"rows after   items {rows.get('items', 0):,}, item_events {rows.get('item_events', 0):,},"
        f" item_states {rows.get('item_states', 0):,} (statistics)"
    )
    print(HEADER)
    for found in lines.values():
        print(found.text())
    print(verdict(options, list(lines.values())))


def verdict(options: Options, lines: Sequence[Line]) -> str:
    api = [found for found in lines if found.name.startswith("assertItems")]
    best = max(api, key=lambda found: statistics.median(found.rates), default=None)
    if best is None:
        return "target       (not measured)"
    rate = statistics.median(best.rates)
    met = "met" if rate >= TARGET_PER_S and options.existing >= TARGET_EXISTING else "MISSED"
    if options.existing < TARGET_EXISTING:
        met = f"not judged: {options.existing:,} existing items, the target is for {TARGET_EXISTING:,}"
    return (
        f"target       >= {TARGET_PER_S:,} items/s into a project of {TARGET_EXISTING:,} items:"
        f" {rate:,.0f} ({best.name}, batch {best.batch}): {met}"
    )


def numbers(value: str) -> list[int]:
    return [int(part) for part in value.split(",") if part]


def arguments(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--existing", type=int, default=TARGET_EXISTING, help="items seeded first")
    parser.add_argument("--batch", type=numbers, default=[500, 1000], help="items per request (500,1000)")
    parser.add_argument("--clients", type=numbers, default=[1, 2], help="concurrent HTTP clients (1,2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20, help="requests per line and round")
    parser.add_argument("--singles", type=int, default=300, help="single assertItem calls")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.requests < 1 or not args.batch or not args.clients:
        raise SystemExit("need at least one round, one request, one batch size and one client")
    return Options(
        args.existing,
        args.batch,
        args.clients,
        args.rounds,
        args.requests,
        args.singles,
        args.seed,
        args.keep,
    )


def main(argv: Sequence[str] | None = None) -> int:
    options = arguments(argv)
    on_fresh_database(run, options, keep=options.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
