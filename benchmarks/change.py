"""Change benchmark: ``chain`` over a 1,000-long supersede chain, and ``supersedeItem``, over HTTP.

One workspace and one project are loaded into a fresh database: a supersede
chain of ``--chain-length`` items (all SUPERSEDED but the newest, which is
ACTIVE) among ``--background-items`` other items, some of them in shorter
chains, so the recursive walk does not run on an empty table. The real
application then runs under uvicorn in a child process on 127.0.0.1 and is
driven sequentially by one httpx client over TCP (see ``common.py``).

It prints p50/p95/p99/max of:

- ``item(id) { chain { ... provenance { assertedBy { name } } } }`` from the
  chain's oldest, middle and newest item, and one step of
  ``supersedes``/``supersededBy``, plus the database's own share of the
  recursive statement (EXPLAIN ANALYZE as ``mneia_app`` with the context set)
  and of all the statements of one such request, timed in-process;
- ``supersedeItem`` by an agent on ACTIVE agent-asserted items (a fresh item,
  or the current head of a chain that grows with each sample), the same on a
  human-confirmed item (the answer is PendingConfirmation, R7), and a human's
  ``decideProposal(accept: true)`` of each of those proposals.

Issue 3 sets no numeric target: the figures are printed with "no target set".
The exit status is 0 unless the benchmark itself broke.

    .venv/bin/python benchmarks/change.py            # full size: chain 1,000, 20,000 others
    .venv/bin/python benchmarks/change.py --smoke    # small numbers, a few seconds
    .venv/bin/python benchmarks/change.py --plans    # also print the recursive plan

The database server is chosen as in ``foundation.py`` (``DATABASE_URL``, else
``MNEIA_BENCH_DATABASE_URL``, else embedded); the bench database is dropped at
the end unless ``--keep``.

Actors, the project, memberships and sessions are created through the API;
items are bulk-inserted as the owner role with the context of the actor who
would have written them, so policies and authority triggers check every row
and the triggers write each item's events. A chain is inserted ACTIVE and its
replaced items are then UPDATEd to SUPERSEDED under the replacing actor's
context, so the event log holds what ``supersedeItem`` would have written
(the STATUS_CHANGED events are dated at load time, which no figure reads).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import httpx
from common import (
    HEADER,
    KINDS,
    BenchmarkBroken,
    ExplainingTx,
    Series,
    bind,
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
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import app_url
from mneia.storage import actor, item, token, workspace
from mneia.storage.database import Tx, create_engine, transaction
from mneia.storage.ids import new_id

NO_TARGET = "   no target set"

CHAIN_QUERY = """
query Chain($id: ID!) {
  item(id: $id) {
    chain { id statement status supersessionReason provenance { assertedBy { name } } }
  }
}
"""

STEP_QUERY = """
query Step($id: ID!) { item(id: $id) { supersedes { id } supersededBy { id } } }
"""

SUPERSEDE = """
mutation Supersede($i: SupersedeInput!) {
  supersedeItem(input: $i) {
    __typename
    ... on Superseded { previous { id status } replacement { id status authority supersedesId } }
    ... on PendingConfirmation { proposal { id status kind } }
  }
}
"""

DECIDE = """
mutation Decide($id: ID!) {
  decideProposal(id: $id, accept: true) { id status result { id authority supersedesId } }
}
"""

CREATE_ACTOR = """
mutation($k: ActorKind!, $n: String!) { createActor(kind: $k, name: $n) { actor { id } token } }
"""
ADD_MEMBER = """
mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }
"""
START_SESSION = """
mutation($i: StartSessionInput!) { startSession(input: $i) { id } }
"""

AGENTS = (("claude-code", "1.0.98"), ("codex", "0.9"))
# Share of background items that belong to a shorter chain, and those chains' lengths.
CHAINED_SHARE = 0.04
SHORT_CHAIN = (2, 8)
REASONS = (
    "measured again",
    "the decision was revisited",
    "superseded by the new runbook",
    "wrong after the migration",
    "the customer changed the contract",
)


# ---------------------------------------------------------------------------
# The world: one workspace, two humans, two agents, one project


@dataclass(frozen=True)
class Member:
    id: uuid.UUID
    token: str
    kind: str
    name: str

    @property
    def human(self) -> bool:
        return self.kind == "HUMAN"


@dataclass
class World:
    workspace_id: uuid.UUID
    project_id: uuid.UUID
    alice: Member
    bob: Member
    agents: list[Member]
    sessions: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)  # agent -> its session
    chain: list[uuid.UUID] = field(default_factory=list)  # the long chain, oldest first

    @property
    def humans(self) -> list[Member]:
        return [self.alice, self.bob]

    @property
    def everyone(self) -> list[Member]:
        return [*self.humans, *self.agents]


async def build_world(http: httpx.AsyncClient, admin: AsyncEngine) -> World:
    made = await workspace.bootstrap(admin, "bench-change", "alice")
    alice = Member(made.actor_id, made.token, "HUMAN", "alice")

    async def new_actor(kind: str, name: str) -> Member:
        created = (await gql(http, alice.token, CREATE_ACTOR, k=kind, n=name))["createActor"]
        return Member(uuid.UUID(created["actor"]["id"]), created["token"], kind, name)

    bob = await new_actor("HUMAN", "bob")
    agents = [await new_actor("AGENT", name) for name, _ in AGENTS]
    data = await gql(http, alice.token, 'mutation { createProject(name: "change") { id } }')
    project_id = uuid.UUID(data["createProject"]["id"])
    world = World(made.workspace_id, project_id, alice, bob, agents)
    for member in (bob, *agents):
        await gql(http, alice.token, ADD_MEMBER, p=str(project_id), a=str(member.id))
    for agent, (tool, version) in zip(agents, AGENTS, strict=True):
        external = f"{tool}-{uuid.uuid4().hex[:12]}"
        data = await gql(
            http,
            agent.token,
            START_SESSION,
            i={
                "projectId": str(project_id),
                "task": "keep the change log straight",
                "client": {"tool": tool, "version": version},
                "externalId": external,
                "deepLink": f"{tool}://resume/{external}",
            },
        )
        world.sessions[agent.id] = uuid.UUID(data["startSession"]["id"])
    return world


# ---------------------------------------------------------------------------
# The rows: threads of items (a single item is a thread of one), in time order


def plan_rows(
    world: World, chain_length: int, background: int, rng: random.Random, now: datetime
) -> list[dict[str, Any]]:
    """Every item row, ids minted in time order; each row says under whose context it goes in.

    The long chain is written in stretches by one actor at a time, as a
    decision revised over months would be. An agent's item is sometimes
    confirmed later by a human; such a row is inserted under that human's
    context (the trigger accepts a confirmation only from the context actor).
    """
    span = timedelta(days=365)
    threads: list[list[tuple[datetime, Member]]] = []

    long_times = sorted(now - span * rng.random() for _ in range(chain_length))
    long_thread: list[tuple[datetime, Member]] = []
    while len(long_thread) < chain_length:
        writer = rng.choice(world.everyone)
        for _ in range(rng.randint(1, 30)):
            if len(long_thread) == chain_length:
                break
            long_thread.append((long_times[len(long_thread)], writer))
    threads.append(long_thread)

    left = background
    while left > 0:
        length = 1
        if rng.random() < CHAINED_SHARE:
            length = min(left, rng.randint(*SHORT_CHAIN))
        start = now - span * rng.random()
        times = [start + (now - start) * step / length for step in range(length)]
        threads.append([(at, pick_writer(world, rng)) for at in times])
        left -= length

    # Mint ids in time order, as the server would have, then link each thread.
    stamped = sorted(
        (at, number, position)
        for number, thread in enumerate(threads)
        for position, (at, _) in enumerate(thread)
    )
    ids: dict[tuple[int, int], uuid.UUID] = {}
    for _, number, position in stamped:
        ids[(number, position)] = new_id()

    rows: list[dict[str, Any]] = []
    for _, number, position in stamped:
        at, writer = threads[number][position]
        chained = len(threads[number]) > 1
        previous = ids[(number, position - 1)] if position > 0 else None
        rows.append(
            item_row(
                world,
                rng,
                ids[(number, position)],
                at,
                writer,
                chained=chained,
                supersedes_id=previous,
            )
        )
    world.chain = [ids[(0, position)] for position in range(chain_length)]
    return rows


def pick_writer(world: World, rng: random.Random) -> Member:
    roll = rng.random()
    if roll < 0.15:
        return world.alice
    if roll < 0.25:
        return world.bob
    return rng.choice(world.agents)


def item_row(
    world: World,
    rng: random.Random,
    item_id: uuid.UUID,
    asserted_at: datetime,
    writer: Member,
    *,
    chained: bool,
    supersedes_id: uuid.UUID | None,
) -> dict[str, Any]:
    """One item. A chained item is PROJECT-scoped and ACTIVE until its successor replaces it."""
    confirmer: Member | None = writer if writer.human else None
    if confirmer is None and rng.random() < 0.15:
        confirmer = rng.choice(world.humans)
    confirmed_at = None
    if confirmer is not None:
        confirmed_at = asserted_at if writer.human else asserted_at + timedelta(hours=rng.uniform(1, 48))
    status, scope = "ACTIVE", "PROJECT"
    if not chained:
        roll = rng.random()
        status = "ACTIVE" if roll < 0.92 else "RETIRED" if roll < 0.97 else "DISPUTED"
        roll = rng.random()
        scope = "PROJECT" if roll < 0.90 else "WORKSPACE" if roll < 0.95 else "PRIVATE"
    load_bearing = not chained and confirmer is not None and status == "ACTIVE" and rng.random() < 0.02
    return {
        "id": item_id,
        "project_id": world.project_id,
        "kind": weighted(rng, KINDS),
        "statement": sentence(rng, 6, 24),
        "details": sentence(rng, 10, 40) if rng.random() < 0.4 else None,
        "basis": sentence(rng, 4, 12) if rng.random() < 0.6 else None,
        "confidence": None if writer.human else round(rng.uniform(0.5, 1.0), 2),
        "status": status,
        "status_reason": {"RETIRED": "no longer true", "DISPUTED": "contradicted"}.get(status),
        "scope": scope,
        "grants": "",
        "asserted_by": writer.id,
        "asserted_at": asserted_at,
        "session_id": (world.sessions[writer.id] if not writer.human and rng.random() < 0.85 else None),
        "decay_after": None,
        "load_bearing": load_bearing,
        "load_bearing_set_by": confirmer.id if load_bearing and confirmer else None,
        "load_bearing_set_at": confirmed_at if load_bearing else None,
        "confirmed_by": confirmer.id if confirmer else None,
        "confirmed_at": confirmed_at,
        "supersedes_id": supersedes_id,
        "supersession_reason": rng.choice(REASONS) if supersedes_id else None,
        "context": confirmer.id if confirmer else writer.id,
    }


# ---------------------------------------------------------------------------
# Loading: predecessors before successors, one statement per context and pass


_SUPERSEDE_ALL = text(
    "UPDATE items SET status = 'SUPERSEDED', status_reason = v.reason"
    " FROM unnest(CAST(:ids AS uuid[]), CAST(:reasons AS text[])) AS v(id, reason)"
    " WHERE items.workspace_id = CAST(:ws AS uuid) AND items.id = v.id"
)


def batches(rows: Sequence[dict[str, Any]]) -> list[tuple[uuid.UUID, list[dict[str, Any]]]]:
    """Statements that respect the chains: a row goes in with or after its predecessor.

    Each pass takes, per context, every waiting row whose predecessor is in
    already (or earlier in the same batch). Singles all go in the first pass;
    the long chain needs about one pass per change of writer.
    """
    contexts = sorted({row["context"] for row in rows}, key=str)
    inserted: set[uuid.UUID] = set()
    waiting = list(rows)
    planned: list[tuple[uuid.UUID, list[dict[str, Any]]]] = []
    while waiting:
        before = len(waiting)
        for context in contexts:
            batch: list[dict[str, Any]] = []
            still: list[dict[str, Any]] = []
            for row in waiting:
                previous = row["supersedes_id"]
                if row["context"] == context and (previous is None or previous in inserted):
                    batch.append(row)
                    inserted.add(row["id"])  # rows are in time order: successors come later
                else:
                    still.append(row)
            waiting = still
            if batch:
                planned.append((context, batch))
        if len(waiting) == before:
            raise BenchmarkBroken("a chain's predecessor is missing from the rows")
    return planned


async def load(admin: AsyncEngine, world: World, rows: Sequence[dict[str, Any]]) -> int:
    """Insert every row, then mark each replaced item SUPERSEDED as its replacer; statements run."""
    planned = batches(rows)
    replaced: dict[uuid.UUID, list[tuple[uuid.UUID, str]]] = {}
    for row in rows:
        if row["supersedes_id"] is not None:
            replaced.setdefault(row["context"], []).append((row["supersedes_id"], row["supersession_reason"]))
    async with owner_transaction(admin, world.workspace_id, world.alice.id) as tx:
        for context, batch in planned:
            await bind(tx, world.workspace_id, context)
            await insert_items(tx, batch)
        for context, pairs in replaced.items():
            await bind(tx, world.workspace_id, context)
            changed = await tx.execute(
                _SUPERSEDE_ALL,
                {
                    "ws": str(world.workspace_id),
                    "ids": [str(target) for target, _ in pairs],
                    "reasons": [reason for _, reason in pairs],
                },
            )
            if changed.rowcount != len(pairs):
                raise BenchmarkBroken(f"marked {changed.rowcount} of {len(pairs)} replaced items SUPERSEDED")
    return len(planned) + len(replaced)


# ---------------------------------------------------------------------------
# Targets for the writes, read past every policy by the admin role


GROWING_CHAINS = 20


@dataclass
class Targets:
    fresh: list[uuid.UUID]  # ACTIVE, agent-asserted, unconfirmed, never replaced
    growing: list[uuid.UUID]  # ACTIVE heads of shorter chains, agent-asserted, unconfirmed
    confirmed: list[uuid.UUID]  # ACTIVE, human-confirmed

    def require(self, fresh: int, confirmed: int) -> None:
        if len(self.fresh) < fresh or len(self.confirmed) < confirmed or not self.growing:
            raise SystemExit(
                f"too few targets: {len(self.fresh)} fresh items (need {fresh}), "
                f"{len(self.confirmed)} confirmed (need {confirmed}), {len(self.growing)} "
                "chain heads (need 1): raise --background-items"
            )


_TARGETS = text(
    "SELECT id, supersedes_id IS NOT NULL AS head, confirmed_by IS NOT NULL AS confirmed,"
    " asserted_by = ANY (CAST(:agents AS uuid[])) AS by_agent"
    " FROM items WHERE workspace_id = CAST(:ws AS uuid) AND project_id = CAST(:p AS uuid)"
    " AND status = 'ACTIVE' AND scope = 'PROJECT' AND NOT load_bearing"
    " AND NOT (id = ANY (CAST(:excluded AS uuid[])))"
    " ORDER BY id"
)


async def find_targets(admin: AsyncEngine, world: World, rng: random.Random) -> Targets:
    async with admin.connect() as connection:
        rows = (
            await connection.execute(
                _TARGETS,
                {
                    "agents": [str(agent.id) for agent in world.agents],
                    "ws": str(world.workspace_id),
                    "p": str(world.project_id),
                    "excluded": [str(world.chain[-1])],
                },
            )
        ).all()
    fresh = [r.id for r in rows if r.by_agent and not r.confirmed and not r.head]
    heads = [r.id for r in rows if r.by_agent and not r.confirmed and r.head]
    confirmed = [r.id for r in rows if r.confirmed]
    for pool in (fresh, heads, confirmed):
        rng.shuffle(pool)
    return Targets(fresh, heads[:GROWING_CHAINS], confirmed)


# ---------------------------------------------------------------------------
# Reading the chain


@dataclass
class ChainSeries:
    oldest: Series
    middle: Series
    newest: Series
    everything: Series
    step: Series


def read_chain(
    http: httpx.AsyncClient, reader: Member, world: World, position: int
) -> Callable[[], Awaitable[Any]]:
    """The whole chain from one of its items; the answer must be the chain, oldest first."""
    target = world.chain[position]

    async def call() -> Any:
        data = await gql(http, reader.token, CHAIN_QUERY, id=str(target))
        chain = data["item"]["chain"]
        if (
            len(chain) != len(world.chain)
            or chain[0]["id"] != str(world.chain[0])
            or chain[-1]["id"] != str(world.chain[-1])
            or chain[-1]["status"] != "ACTIVE"
            or chain[0]["provenance"]["assertedBy"]["name"] is None
        ):
            raise BenchmarkBroken(f"a chain of {len(chain)} items from {target}")
        return data

    return call


def step(http: httpx.AsyncClient, reader: Member, world: World, position: int) -> Any:
    """One step back and one forward from an inner item of the chain."""
    target = world.chain[position]
    expected = (str(world.chain[position - 1]), str(world.chain[position + 1]))

    async def call() -> Any:
        found = (await gql(http, reader.token, STEP_QUERY, id=str(target)))["item"]
        if (found["supersedes"]["id"], found["supersededBy"]["id"]) != expected:
            raise BenchmarkBroken(f"wrong neighbours of {target}: {found}")
        return found

    return call


async def check_whole_chain(http: httpx.AsyncClient, world: World) -> None:
    """Once, in full: ids in order, every status, before anything is timed."""
    data = await gql(http, world.alice.token, CHAIN_QUERY, id=str(world.chain[len(world.chain) // 2]))
    chain = data["item"]["chain"]
    want_ids = [str(i) for i in world.chain]
    want_status = ["SUPERSEDED"] * (len(world.chain) - 1) + ["ACTIVE"]
    if [c["id"] for c in chain] != want_ids or [c["status"] for c in chain] != want_status:
        raise BenchmarkBroken("the chain read through the API is not the chain that was loaded")
    if any(c["supersessionReason"] is None for c in chain[1:]):
        raise BenchmarkBroken("a replacement without its supersession reason")


async def measure_reads(
    base: str, world: World, samples: int, warmup: int, rng: random.Random
) -> ChainSeries:
    """Rounds of chain(oldest), chain(middle), chain(newest) in random order, each with a step."""
    n = len(world.chain)
    found = ChainSeries(
        Series(f"chain of {n}, from oldest", None),
        Series(f"chain of {n}, from middle", None),
        Series(f"chain of {n}, from newest", None),
        Series(f"chain of {n}, all three", None),
        Series("supersedes+supersededBy { id }", None),
    )
    positions = {"oldest": 0, "middle": n // 2, "newest": n - 1}
    rounds = -(-samples // 3)
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        await check_whole_chain(http, world)
        for round_ in range(warmup + rounds):
            order = list(positions.items())
            rng.shuffle(order)
            for name, position in order:
                reader = rng.choice(world.everyone)
                chain_ms, _ = await timed(read_chain(http, reader, world, position))
                step_ms, _ = await timed(step(http, reader, world, rng.randrange(1, n - 1)))
                if round_ >= warmup:
                    getattr(found, name).samples.append(chain_ms)
                    found.everything.samples.append(chain_ms)
                    found.step.samples.append(step_ms)
    return found


# ---------------------------------------------------------------------------
# Writing: supersedeItem, PendingConfirmation, decideProposal


@dataclass
class WriteSeries:
    plain: Series
    pending: Series
    decide: Series


def replacement(world: World, agent: Member, rng: random.Random) -> dict[str, Any]:
    return {
        "projectId": str(world.project_id),
        "kind": weighted(rng, KINDS),
        "statement": sentence(rng, 6, 24),
        "basis": sentence(rng, 4, 12),
        "confidence": round(rng.uniform(0.5, 1.0), 2),
        "sessionId": str(world.sessions[agent.id]),
        "scope": "PROJECT",
    }


async def supersede(
    http: httpx.AsyncClient, world: World, agent: Member, target: uuid.UUID, rng: random.Random
) -> tuple[float, dict[str, Any]]:
    variables = {
        "targetId": str(target),
        "replacement": replacement(world, agent, rng),
        "reason": rng.choice(REASONS),
    }
    elapsed, data = await timed(partial(gql, http, agent.token, SUPERSEDE, i=variables))
    return elapsed, data["supersedeItem"]


async def plain_sample(
    http: httpx.AsyncClient, world: World, targets: Targets, fresh: bool, rng: random.Random
) -> float:
    """An agent replaces a fresh ACTIVE item, or the head of a growing chain (whose head moves)."""
    slot = None if fresh else rng.randrange(len(targets.growing))
    target = targets.fresh.pop() if slot is None else targets.growing[slot]
    elapsed, result = await supersede(http, world, rng.choice(world.agents), target, rng)
    if (
        result["__typename"] != "Superseded"
        or result["previous"]["status"] != "SUPERSEDED"
        or result["replacement"]["supersedesId"] != str(target)
        or result["replacement"]["authority"] != "AGENT_ASSERTED"
    ):
        raise BenchmarkBroken(f"superseding {target}: {result}")
    if slot is not None:
        targets.growing[slot] = uuid.UUID(result["replacement"]["id"])
    return elapsed


async def pending_sample(
    http: httpx.AsyncClient, world: World, targets: Targets, rng: random.Random
) -> tuple[float, float]:
    """An agent on a human-confirmed item gets a proposal; a human accepts it (R7)."""
    target = targets.confirmed.pop()
    elapsed, result = await supersede(http, world, rng.choice(world.agents), target, rng)
    if result["__typename"] != "PendingConfirmation" or result["proposal"]["status"] != "PENDING":
        raise BenchmarkBroken(f"an agent superseding confirmed {target}: {result}")
    proposal_id = result["proposal"]["id"]
    human = rng.choice(world.humans)
    decided_ms, data = await timed(partial(gql, http, human.token, DECIDE, id=proposal_id))
    decision = data["decideProposal"]
    if (
        decision["status"] != "ACCEPTED"
        or decision["result"]["authority"] != "HUMAN_CONFIRMED"
        or decision["result"]["supersedesId"] != str(target)
    ):
        raise BenchmarkBroken(f"accepting {proposal_id}: {decision}")
    return elapsed, decided_ms


async def measure_writes(
    base: str,
    world: World,
    targets: Targets,
    samples: int,
    pending_samples: int,
    warmup: int,
    rng: random.Random,
) -> WriteSeries:
    """Agent supersessions, alternately of fresh items and of growing chains' heads, and the
    pending path (an agent on a human-confirmed item, then a human accepting) among them."""
    found = WriteSeries(
        Series("supersedeItem (Superseded)", None),
        Series("supersedeItem (Pending)", None),
        Series("decideProposal(accept: true)", None),
    )
    warm = ["plain"] * min(warmup, samples) + ["pending"] * min(warmup, pending_samples)
    measured = ["plain"] * samples + ["pending"] * pending_samples
    rng.shuffle(measured)  # interleaved, so every kind sees the same conditions
    targets.require(
        fresh=(warm.count("plain") + samples + 1) // 2,
        confirmed=measured.count("pending") + warm.count("pending"),
    )
    plain_done = 0
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for number, what in enumerate([*warm, *measured]):
            recording = number >= len(warm)
            if what == "plain":
                elapsed = await plain_sample(http, world, targets, plain_done % 2 == 0, rng)
                plain_done += 1
                if recording:
                    found.plain.samples.append(elapsed)
            else:
                elapsed, decided_ms = await pending_sample(http, world, targets, rng)
                if recording:
                    found.pending.samples.append(elapsed)
                    found.decide.samples.append(decided_ms)
    return found


# ---------------------------------------------------------------------------
# The database's share of a chain request


@dataclass
class Share:
    recursive: dict[str, Series]
    path: Series
    plans: dict[str, dict[str, Any]]


async def sql_share(url: str, world: World, runs: int, rng: random.Random) -> Share:
    """The recursive statement's server time per starting point, and the whole storage path.

    The storage path is every statement a chain request issues (authentication,
    the item, the recursive walk, the asserters), timed in-process through
    SQLAlchemy and asyncpg, without GraphQL or HTTP.
    """
    n = len(world.chain)
    positions = {"oldest": 0, "middle": n // 2, "newest": n - 1}
    share = Share(
        {name: Series(f"  recursive SELECT, {name}", None) for name in positions},
        Series("  all 4 statements, in-process", None),
        {},
    )
    engine = create_engine(app_url(url), pool_size=2)
    try:
        for _ in range(5):  # warm the pool and the plan caches
            await storage_path(engine, world, rng.randrange(n), rng)
        for _ in range(runs):
            share.path.samples.append(await storage_path(engine, world, rng.randrange(n), rng))
            for name, position in positions.items():
                reader = rng.choice(world.everyone)
                async with transaction(engine, ExplainingTx) as tx:
                    await token.authenticate(tx, reader.token)
                    records = await item.chain(tx, world.chain[position])
                    tx.fail()
                if len(tx.plans) != 1 or len(records) != n:
                    raise BenchmarkBroken(
                        f"item.chain issued {len(tx.plans)} SELECTs for {len(records)} items"
                    )
                plan = tx.plans[0]
                share.recursive[name].samples.append(plan["Planning Time"] + plan["Execution Time"])
                share.plans[name] = plan
    finally:
        await engine.dispose()
    return share


async def storage_path(engine: AsyncEngine, world: World, position: int, rng: random.Random) -> float:
    """The statements of one chain request, in the order the resolvers issue them."""
    reader = rng.choice(world.everyone)
    started = time.perf_counter()
    async with transaction(engine) as tx:
        await path_statements(tx, reader, world.chain[position], len(world.chain))
    return (time.perf_counter() - started) * 1000


async def path_statements(tx: Tx, reader: Member, item_id: uuid.UUID, length: int) -> None:
    if await token.authenticate(tx, reader.token) is None:
        raise BenchmarkBroken("a reader's token did not authenticate")
    if await item.get(tx, item_id) is None:
        raise BenchmarkBroken(f"item {item_id} is not visible to {reader.name}")
    records = await item.chain(tx, item_id)
    if len(records) != length:
        raise BenchmarkBroken(f"a chain of {len(records)} items, expected {length}")
    await actor.by_ids(tx, list({record.asserted_by for record in records}))


# ---------------------------------------------------------------------------
# The run


@dataclass
class Options:
    chain_length: int
    background_items: int
    samples: int
    chain_samples: int
    pending_samples: int
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
            started = time.perf_counter()
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                world = await build_world(http, admin)
            setup_s = time.perf_counter() - started
            planned = time.perf_counter()
            rows = plan_rows(world, options.chain_length, options.background_items, rng, datetime.now(UTC))
            plan_s = time.perf_counter() - planned
            loading = time.perf_counter()
            statements = await load(admin, world, rows)
            load_s = time.perf_counter() - loading
            vacuum_started = time.perf_counter()
            await vacuum_analyze(url)
            vacuum_s = time.perf_counter() - vacuum_started
            counted = await row_counts(admin, ("items", "item_events", "proposals"))
            targets = await find_targets(admin, world, rng)
            chained = sum(1 for row in rows if row["supersedes_id"] is not None)
            planned_rows = len(rows)
            # The client's own garbage collection is not what is measured: drop the
            # planned rows and keep what is left out of the collector's full passes.
            del rows
            gc.collect()
            gc.freeze()

            print(f"database     {version}")
            print(f"server       uvicorn, 1 worker, child process on {base}; client httpx over TCP")
            print(f"cpu cores    {os.cpu_count()}")
            print(
                f"project      1 project: a chain of {options.chain_length:,} "
                f"(all SUPERSEDED but the newest) and {options.background_items:,} other items; "
                f"{chained:,} items replace another"
            )
            print(
                f"rows         items {counted.get('items', 0):,}, "
                f"item_events {counted.get('item_events', 0):,}"
            )
            print(
                f"load time    API setup {setup_s:.1f} s, rows planned {plan_s:.1f} s, "
                f"bulk insert {load_s:.1f} s ({statements} statements, "
                f"{planned_rows / load_s:,.0f} items/s), VACUUM ANALYZE {vacuum_s:.1f} s"
            )
            sys.stdout.flush()

            reads_before = os.getloadavg()[0]
            reads = await measure_reads(base, world, options.chain_samples, options.warmup, rng)
            reads_after = os.getloadavg()[0]
            share = await sql_share(url, world, options.explain_runs, rng)
            writes_before = os.getloadavg()[0]
            writes = await measure_writes(
                base,
                world,
                targets,
                options.samples,
                options.pending_samples,
                options.warmup,
                rng,
            )
            writes_after = os.getloadavg()[0]
    finally:
        await admin.dispose()

    print()
    print(
        f"reads        {len(reads.everything.samples)} chain requests (a third from each point) "
        f"and as many steps, after {options.warmup} warm-up rounds, sequential"
    )
    print(
        f"load average {reads_before:.2f} before, {reads_after:.2f} after (this run's own server, "
        "client and database count; much above 2 means other work shared the cores)"
    )
    print(HEADER)
    for series in (reads.oldest, reads.middle, reads.newest, reads.everything, reads.step):
        print(series.row() + NO_TARGET)
    print(
        f"chain, database share ({options.explain_runs} runs each, EXPLAIN ANALYZE "
        "planning+execution as mneia_app with context):"
    )
    for series in share.recursive.values():
        print(series.row())
    print(share.path.row())
    outside = reads.everything.quantile(0.5) - share.path.quantile(0.5)
    print(
        f"chain p50 minus the statements' p50: {outside:.1f} ms outside SQL "
        "(GraphQL execution, serialization, HTTP, client JSON parsing)"
    )
    print()
    print(
        f"writes       {options.samples} supersedeItem by an agent (half on fresh items, half on "
        f"the heads of {len(targets.growing)} growing chains), {options.pending_samples} "
        "on human-confirmed items, each then accepted by a human; interleaved at random, "
        "sequential"
    )
    print(f"load average {writes_before:.2f} before, {writes_after:.2f} after")
    print(HEADER)
    for series in (writes.plain, writes.pending, writes.decide):
        print(series.row() + NO_TARGET)
    if options.show_plans:
        for name, plan in share.plans.items():
            print(f"plan of the recursive statement from the {name} item (last sample):")
            print("\n".join(plan_lines(plan)))


SMOKE = {
    "chain_length": 100,
    "background_items": 2_000,
    "samples": 30,
    "chain_samples": 30,
    "pending_samples": 10,
    "warmup": 5,
    "explain_runs": 5,
}


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chain-length", type=int, default=1_000)
    parser.add_argument("--background-items", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=300, help="supersedeItem samples")
    parser.add_argument("--chain-samples", type=int, default=200, help="chain requests in all")
    parser.add_argument(
        "--pending-samples", type=int, default=100, help="PendingConfirmation and decideProposal"
    )
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--explain-runs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--plans", action="store_true", help="print the recursive query's plans")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="small numbers: " + ", ".join(f"{k.replace('_', '-')} {v}" for k, v in SMOKE.items()),
    )
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.chain_length < 3 or args.samples < 1 or args.chain_samples < 1:
        raise SystemExit("need a chain of at least 3 items and at least one sample of each")
    if args.pending_samples < 1 or args.background_items < 1:
        raise SystemExit("need at least one pending sample and one background item")
    options = Options(
        args.chain_length,
        args.background_items,
        args.samples,
        args.chain_samples,
        args.pending_samples,
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
