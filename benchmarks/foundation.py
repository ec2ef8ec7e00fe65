"""Foundation benchmark: assertItem and a 50-item page with full provenance, over real HTTP.

Two workspaces of equal size (by default 100,000 items across 20 projects each)
are loaded into a fresh database; the real application then runs under
uvicorn in a child process on 127.0.0.1 and is driven sequentially by one
httpx client over TCP. The script prints p50/p95/p99/max for each operation
next to the targets (page p95 <= 25 ms, assert p95 <= 15 ms on a 2-core
machine), plus the database's own share of the page query (EXPLAIN ANALYZE as
``mneia_app`` with the tenant context set). A missed target is reported, not
failed: the exit status is 0 unless the benchmark itself broke.

Run it from the checkout:

    .venv/bin/python benchmarks/foundation.py                      # full size
    .venv/bin/python benchmarks/foundation.py --items-per-workspace 2000 --samples 50   # smoke
    .venv/bin/python benchmarks/foundation.py --plans    # also print the page's two query plans

The server comes from ``DATABASE_URL`` if set, else ``MNEIA_BENCH_DATABASE_URL``,
else an embedded PostgreSQL in a temporary directory. The admin role must be
able to create databases; the bench database ``mneia_bench_<random>`` is dropped
at the end unless ``--keep`` is given.

Actors, projects, memberships and sessions are created through the API. The
bulk of the items is not (200,000 assertItem calls take about half an hour):
it is inserted as the owner role with the tenant context set, in batches per
acting human or agent, so the row-level security policies and the authority
triggers check every row as they would for the server, and the AFTER INSERT
trigger writes each item's events. It is one INSERT ... SELECT FROM unnest(...)
per batch because PostgreSQL refuses COPY FROM into a table with row-level
security. Items are spread over the past year, ids minted in time order; the
sessions they cite were started by the setup, so they are younger than most
of their items (irrelevant to the figures).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from common import (
    HEADER,
    KINDS,
    BenchmarkBroken,
    ExplainingTx,
    Series,
    gql,
    insert_items,
    on_fresh_database,
    owner_transaction,
    plan_lines,
    row_counts,
    running_server,
    sentence,
    timed,
    vacuum_analyze,
    weighted,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import app_url
from mneia.storage import actor, item, project, session, token, workspace
from mneia.storage.database import create_engine, transaction
from mneia.storage.ids import new_id

PAGE_TARGET_MS = 25.0
ASSERT_TARGET_MS = 15.0

PAGE_QUERY = """
query Page($p: ID!) {
  items(projectId: $p, first: 50) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes {
      id kind statement status authority loadBearing confidence assertedAt stale
      project { id name }
      confirmation { by { name } at }
      provenance {
        assertedBy { id name kind }
        actorKind assertedAt basis partial missing
        session { id externalId deepLink client { tool version } }
      }
    }
  }
}
"""

ASSERT_MUTATION = """
mutation Assert($i: AssertItemInput!) {
  assertItem(input: $i) { id status authority scope }
}
"""

CREATE_ACTOR = """
mutation($k: ActorKind!, $n: String!) { createActor(kind: $k, name: $n) { actor { id } token } }
"""
ADD_MEMBER = """
mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }
"""

AGENT_NAMES = ("claude-code", "codex", "cursor-agent")
# (tool, version, externalId?, deepLink?): one complete client, two that leave parts out (R13).
CLIENTS = (
    ("claude-code", "1.0.98", True, True),
    ("codex", None, True, False),
    ("cursor", "0.42", False, False),
)


# ---------------------------------------------------------------------------
# The world: two workspaces, each with humans, agents, projects, sessions


@dataclass(frozen=True)
class Member:
    id: uuid.UUID
    token: str
    kind: str


@dataclass
class Space:
    id: uuid.UUID
    alice: Member
    bob: Member
    agents: list[Member]
    projects: list[uuid.UUID]
    bob_projects: list[uuid.UUID]
    # (agent id, project id) -> that agent's open session in that project
    sessions: dict[tuple[uuid.UUID, uuid.UUID], uuid.UUID] = field(default_factory=dict)
    items: int = 0

    @property
    def readers(self) -> list[Member]:
        return [self.alice, *self.agents]


async def build_space(http: httpx.AsyncClient, admin: AsyncEngine, name: str, projects: int) -> Space:
    made = await workspace.bootstrap(admin, name, "alice")
    alice = Member(made.actor_id, made.token, "HUMAN")

    async def new_actor(kind: str, actor_name: str) -> Member:
        data = await gql(
            http,
            alice.token,
            CREATE_ACTOR,
            k=kind,
            n=actor_name,
        )
        created = data["createActor"]
        return Member(uuid.UUID(created["actor"]["id"]), created["token"], kind)

    bob = await new_actor("HUMAN", "bob")
    agents = [await new_actor("AGENT", agent_name) for agent_name in AGENT_NAMES]
    space = Space(made.workspace_id, alice, bob, agents, [], [])
    for number in range(projects):
        data = await gql(
            http,
            alice.token,
            "mutation($n: String!) { createProject(name: $n) { id } }",
            n=f"{name}-project-{number:02d}",
        )
        project_id = uuid.UUID(data["createProject"]["id"])
        space.projects.append(project_id)
        members = list(agents)
        if number % 2 == 0:  # bob works in half of the projects
            members.append(bob)
            space.bob_projects.append(project_id)
        for member in members:
            await gql(
                http,
                alice.token,
                ADD_MEMBER,
                p=str(project_id),
                a=str(member.id),
            )
        for agent, (tool, version, has_external, has_link) in zip(agents, CLIENTS, strict=True):
            external = f"{tool}-{uuid.uuid4().hex[:12]}" if has_external else None
            data = await gql(
                http,
                agent.token,
                "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }",
                i={
                    "projectId": str(project_id),
                    "task": f"work on {name}-project-{number:02d}",
                    "client": {"tool": tool, "version": version},
                    "externalId": external,
                    "deepLink": f"claude --resume {external}" if has_link else None,
                },
            )
            space.sessions[(agent.id, project_id)] = uuid.UUID(data["startSession"]["id"])
    return space


# ---------------------------------------------------------------------------
# Bulk load


def plan_items(
    space: Space, count: int, rng: random.Random, now: datetime
) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """The rows of one workspace, grouped by the actor whose context must insert them.

    Human-asserted items carry that human's confirmation; agent items confirmed
    or made load-bearing later are inserted under the confirming human's
    context too (the trigger accepts a confirmation only from the context
    actor, and only if that actor is HUMAN, R3).
    """
    span = timedelta(days=365)
    times = sorted(now - span * rng.random() for _ in range(count))
    everyone = [space.alice.id, space.bob.id, *(agent.id for agent in space.agents)]
    batches: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for asserted_at in times:  # ids are minted in time order, as the server would have
        roll = rng.random()
        if roll < 0.20:
            asserter, project_id = space.alice, rng.choice(space.projects)
        elif roll < 0.30:
            asserter, project_id = space.bob, rng.choice(space.bob_projects)
        else:
            asserter, project_id = rng.choice(space.agents), rng.choice(space.projects)
        human = asserter.kind == "HUMAN"
        kind = weighted(rng, KINDS)
        scope_roll = rng.random()
        scope = (
            "PROJECT"
            if scope_roll < 0.85
            else "WORKSPACE"
            if scope_roll < 0.93
            else "PRIVATE"
            if scope_roll < 0.98
            else "GRANTS"
        )
        grants = str(rng.choice([a for a in everyone if a != asserter.id])) if scope == "GRANTS" else ""
        status_roll = rng.random()
        status = "ACTIVE" if status_roll < 0.93 else "RETIRED" if status_roll < 0.98 else "DISPUTED"
        confirmer = asserter if human else (space.alice if rng.random() < 0.15 else None)
        confirmed_at = None
        if confirmer is not None:
            confirmed_at = asserted_at if human else asserted_at + timedelta(hours=rng.uniform(1, 48))
        load_bearing = (
            confirmer is not None
            and status == "ACTIVE"
            and rng.random() < (0.30 if kind == "CONSTRAINT" else 0.03)
        )
        row = {
            "id": new_id(),
            "project_id": project_id,
            "kind": kind,
            "statement": sentence(rng, 6, 24),
            "details": sentence(rng, 10, 40) if rng.random() < 0.4 else None,
            "basis": sentence(rng, 4, 12) if rng.random() < 0.6 else None,
            "confidence": None if human else round(rng.uniform(0.5, 1.0), 2),
            "status": status,
            "status_reason": {"RETIRED": "no longer true", "DISPUTED": "contradicted"}.get(status),
            "scope": scope,
            "grants": grants,
            "asserted_by": asserter.id,
            "asserted_at": asserted_at,
            "session_id": (
                space.sessions[(asserter.id, project_id)] if not human and rng.random() < 0.85 else None
            ),
            "decay_after": timedelta(days=90) if rng.random() < 0.1 else None,
            "load_bearing": load_bearing,
            "load_bearing_set_by": confirmer.id if load_bearing and confirmer else None,
            "load_bearing_set_at": confirmed_at if load_bearing else None,
            "confirmed_by": confirmer.id if confirmer else None,
            "confirmed_at": confirmed_at,
        }
        context = confirmer.id if confirmer else asserter.id
        batches.setdefault(context, []).append(row)
    return batches


async def bulk_load(
    admin: AsyncEngine,
    space: Space,
    batches: Mapping[uuid.UUID, list[dict[str, Any]]],
) -> None:
    """Insert as the owner role under each acting actor's context: RLS and triggers apply."""
    for context_actor, rows in batches.items():
        async with owner_transaction(admin, space.id, context_actor) as tx:
            await insert_items(tx, rows)
        space.items += len(rows)


async def counts(admin: AsyncEngine) -> dict[str, int]:
    """Row counts, read as the owner without RLS filtering by a context (so: as a superuser)."""
    return await row_counts(admin, ("items", "item_events", "sessions", "actors", "projects"))


# ---------------------------------------------------------------------------
# Measurement


def one_page(
    http: httpx.AsyncClient, rng: random.Random, spaces: Sequence[Space]
) -> Callable[[], Awaitable[Any]]:
    """A page request by a random reader of a random project; the drawing is not timed."""
    space = rng.choice(spaces)
    reader, project_id = rng.choice(space.readers), rng.choice(space.projects)

    async def call() -> Any:
        data = await gql(http, reader.token, PAGE_QUERY, p=str(project_id))
        nodes = data["items"]["nodes"]
        if not nodes or len(nodes) > 50:
            raise BenchmarkBroken(f"a page of {len(nodes)} items for project {project_id}")
        return data

    return call


def one_assert(
    http: httpx.AsyncClient, rng: random.Random, spaces: Sequence[Space]
) -> Callable[[], Awaitable[Any]]:
    """An agent's assertion, in its own session, into a random project it works in."""
    space = rng.choice(spaces)
    agent, project_id = rng.choice(space.agents), rng.choice(space.projects)
    variables = {
        "projectId": str(project_id),
        "kind": weighted(rng, KINDS),
        "statement": sentence(rng, 6, 24),
        "basis": sentence(rng, 4, 12),
        "confidence": round(rng.uniform(0.5, 1.0), 2),
        "sessionId": str(space.sessions[(agent.id, project_id)]),
        "scope": "PROJECT",
    }

    async def call() -> Any:
        data = await gql(http, agent.token, ASSERT_MUTATION, i=variables)
        if data["assertItem"]["authority"] != "AGENT_ASSERTED":
            raise BenchmarkBroken(f"unexpected answer {data}")
        return data

    return call


async def measure(
    base: str, spaces: Sequence[Space], samples: int, warmup: int, rng: random.Random
) -> tuple[Series, Series]:
    """Alternate one page query and one assertion, so both see the same conditions."""
    pages = Series("items page (50, provenance)", PAGE_TARGET_MS)
    asserts = Series("assertItem", ASSERT_TARGET_MS)
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        for round_ in range(warmup + samples):
            page_ms, _ = await timed(one_page(http, rng, spaces))
            assert_ms, _ = await timed(one_assert(http, rng, spaces))
            if round_ >= warmup:
                pages.samples.append(page_ms)
                asserts.samples.append(assert_ms)
    return pages, asserts


# ---------------------------------------------------------------------------
# The database's share of a page: EXPLAIN ANALYZE as mneia_app, context set


async def sql_share(
    url: str, spaces: Sequence[Space], runs: int, rng: random.Random
) -> tuple[Series, Series, Series, dict[str, Any]]:
    """Per page: the listing and count statements' server time, and the whole storage path.

    The storage path is every statement a page request issues (authentication,
    project, listing, count, asserters and confirmers, sessions) timed
    in-process through SQLAlchemy and asyncpg, without GraphQL or HTTP.
    """
    engine = create_engine(app_url(url), pool_size=2)
    listing = Series("  listing SELECT (server)", None)
    count = Series("  totalCount SELECT (server)", None)
    path = Series("  all 6 statements, in-process", None)
    example: dict[str, Any] = {}
    try:
        for _ in range(10):  # warm the pool and the plan caches
            await storage_path(engine, rng, spaces)
        for _ in range(runs):
            path.samples.append(await storage_path(engine, rng, spaces))
            space = rng.choice(spaces)
            reader, project_id = rng.choice(space.readers), rng.choice(space.projects)
            async with transaction(engine, ExplainingTx) as tx:
                await token.authenticate(tx, reader.token)
                found = await item.page(tx, project_id, item.ItemFilter(), first=50, after=None)
                await found.count()
                tx.fail()
            if len(tx.plans) != 2:
                raise BenchmarkBroken(f"item.page issued {len(tx.plans)} SELECTs, expected listing and count")
            first, second = tx.plans
            listing.samples.append(first["Planning Time"] + first["Execution Time"])
            count.samples.append(second["Planning Time"] + second["Execution Time"])
            example = {"listing": first, "count": second}
    finally:
        await engine.dispose()
    return listing, count, path, example


async def storage_path(engine: AsyncEngine, rng: random.Random, spaces: Sequence[Space]) -> float:
    """The statements of one page request, in the order the resolvers issue them."""
    space = rng.choice(spaces)
    reader, project_id = rng.choice(space.readers), rng.choice(space.projects)
    started = time.perf_counter()
    async with transaction(engine) as tx:
        if await token.authenticate(tx, reader.token) is None:
            raise BenchmarkBroken("a reader's token did not authenticate")
        await project.by_ids(tx, [project_id])
        found = await item.page(tx, project_id, item.ItemFilter(), first=50, after=None)
        await found.count()
        people = {r.asserted_by for r in found.records} | {
            r.confirmed_by for r in found.records if r.confirmed_by
        }
        await actor.by_ids(tx, list(people))
        await session.by_ids(tx, list({r.session_id for r in found.records if r.session_id}))
    return (time.perf_counter() - started) * 1000


# ---------------------------------------------------------------------------
# The run


@dataclass
class Options:
    items_per_workspace: int
    projects: int
    samples: int
    warmup: int
    explain_runs: int
    seed: int
    keep: bool
    show_plans: bool


async def run(options: Options, url: str, version: str) -> None:
    rng = random.Random(options.seed)
    admin = create_engine(url, pool_size=2)
    try:
        with running_server(url) as base:
            loaded = time.perf_counter()
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                spaces = [
                    await build_space(http, admin, f"bench-{letter}", options.projects)
                    for letter in ("a", "b")
                ]
            setup_s = time.perf_counter() - loaded
            now = datetime.now(UTC)
            bulk_started = time.perf_counter()
            for space in spaces:
                await bulk_load(admin, space, plan_items(space, options.items_per_workspace, rng, now))
            bulk_s = time.perf_counter() - bulk_started
            vacuum_started = time.perf_counter()
            await vacuum_analyze(url)
            vacuum_s = time.perf_counter() - vacuum_started
            rows = await counts(admin)

            print(f"database     {version}")
            print(f"server       uvicorn, 1 worker, child process on {base}; client httpx over TCP")
            print(f"cpu cores    {os.cpu_count()}")
            print(
                f"workspaces   {len(spaces)} x {options.projects} projects, "
                + ", ".join(f"{s.items:,} items" for s in spaces)
            )
            print(
                f"rows         items {rows.get('items', 0):,}, "
                f"item_events {rows.get('item_events', 0):,}, "
                f"sessions {rows.get('sessions', 0):,}, actors {rows.get('actors', 0):,}, "
                f"projects {rows.get('projects', 0):,}"
            )
            print(
                f"load time    API setup {setup_s:.1f} s, bulk insert {bulk_s:.1f} s "
                f"({sum(s.items for s in spaces) / bulk_s:,.0f} items/s), "
                f"VACUUM ANALYZE {vacuum_s:.1f} s"
            )
            sys.stdout.flush()

            load_before = os.getloadavg()[0]
            pages, asserts = await measure(base, spaces, options.samples, options.warmup, rng)
            load_after = os.getloadavg()[0]
        listing, count, path, example = await sql_share(url, spaces, options.explain_runs, rng)
    finally:
        await admin.dispose()

    print()
    print(
        f"measured     {options.samples} of each, after {options.warmup} warm-up rounds, "
        "alternating page and assert, sequential"
    )
    print(
        f"load average {load_before:.2f} before, {load_after:.2f} after (this run's own server, "
        "client and database count; much above 2 means other work shared the cores)"
    )
    print(HEADER)
    print(pages.row())
    print(asserts.row())
    print(
        f"page query, database share ({options.explain_runs} random pages, EXPLAIN ANALYZE "
        "planning+execution as mneia_app with context):"
    )
    print(listing.row())
    print(count.row())
    print(path.row())
    outside = pages.quantile(0.5) - path.quantile(0.5)
    print(
        f"page p50 minus the statements' p50: {outside:.1f} ms outside SQL "
        "(GraphQL execution, serialization, HTTP)"
    )
    if options.show_plans and example:
        for name, plan in example.items():
            print(f"plan of the {name} statement (last sample):")
            print("\n".join(plan_lines(plan)))


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items-per-workspace", type=int, default=100_000)
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--explain-runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--plans", action="store_true", help="print the page's two query plans")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.items_per_workspace < args.projects or args.projects < 1 or args.samples < 1:
        raise SystemExit("need at least one project, one item per project and one sample")
    options = Options(
        args.items_per_workspace,
        args.projects,
        args.samples,
        args.warmup,
        args.explain_runs,
        args.seed,
        args.keep,
        args.plans,
    )
    on_fresh_database(run, options, keep=args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
