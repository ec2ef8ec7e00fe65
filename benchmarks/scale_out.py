"""Scale-out benchmark: plain PostgreSQL against a local Citus cluster, routed by workspace, in one run.

Issue 25, part 4. One run starts a Citus cluster of its own (``scripts/citus.sh
up`` in a state directory of its own, ``createdb``, ``mneia migrate``; ``down``
at the end, whatever happens) and a plain PostgreSQL beside it: by default the
embedded server, the same PostgreSQL 18 build the cluster's nodes run (the
fairest comparison), or ``--plain-url`` (a scratch database is created on that
server and dropped at the end). On each, 100 workspaces (``--workspaces``)
are bootstrapped, each with a human, an agent, a project, the agent's session
and ``--items-per-workspace`` items asserted through the API (``assertItems``).

Every request goes through the server's own application (``routing.Router``:
``create_app`` with ``storage.node.Nodes`` on Citus, as ``mneia serve``
builds it): the workspace named by the token picks the node, and the whole
transaction runs on the worker holding the workspace, connected as
``mneia_app`` straight to it (docs/scale-out.md); plain PostgreSQL is the
same application with one engine.

1. **Single tenant**, sequential, in this process (the app through httpx's
   ASGI transport: no sockets): a page (``items(first: 50)`` with provenance),
   ``assertItem`` and ``rehydrate`` (4,000 tokens) of one workspace, in turns.
   Beside each, its SQL alone: the statements that very request sent,
   recorded as it sent them and replayed at once on a connection of the same
   role to the same node, in the transaction the server opens
   (``replay.py``). Request minus SQL is what the application adds.
   Target (issue 25): a routed request within 1.5 ms of plain PostgreSQL,
   read as the cluster's cost per request: the routed SQL's p50 minus plain
   SQL's p50; the requests' difference is printed beside it.
2. **Many tenants**: each operation at ``--connections`` (16) concurrent
   connections for ``--duration`` seconds across every workspace, against
   the router serving in a child process (one uvicorn worker, as ``mneia
   serve --workers 1``), driven by httpx over TCP from this process:
   operations per second, p50 and p95, for both engines in turns, and what
   the backends on every node were doing meanwhile (``activity.py``).

A wrong answer (an error, an empty page) stops the benchmark: the figures
would mean nothing. The machine is shared: the load average is printed
before and after each part, and the ratios of one run are what count.

    .venv/bin/python benchmarks/scale_out.py                 # about 5 minutes on 2 cores
    .venv/bin/python benchmarks/scale_out.py --quick         # a short run: fewer items, samples, seconds
    .venv/bin/python benchmarks/scale_out.py --plain-url postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from activity import Activity, sampled
from common import (
    KINDS,
    BenchmarkBroken,
    Series,
    _child_serving,
    create_database,
    drop_database,
    free_port,
    gql,
    sentence,
    server_version,
    vacuum_analyze,
    weighted,
    with_database,
)
from foundation import ADD_MEMBER, ASSERT_MUTATION, CREATE_ACTOR, PAGE_QUERY
from replay import Recorder, driver_dsn, renewed, replayed
from routing import Router, Routes
from sqlalchemy.engine import make_url

from mneia.config import app_url
from mneia.storage import citus, workspace
from mneia.storage.database import ON_TABLES, create_engine
from mneia.storage.node import SHARDS_SHOWN

HERE = Path(__file__).resolve().parent
CITUS_SH = HERE.parent / "scripts" / "citus.sh"
CITUS_PATIENCE = 1800  # a cold `up` builds Citus first: under a minute idle, ~10 minutes when busy
DATABASE_URL = re.compile(r"DATABASE_URL=(\S+)")
TARGET_MS = 1.5
OPERATIONS = ("page", "rehydrate", "assertItem")
BUDGET = 4000
REQUEST_PATIENCE = 60.0
"""Seconds a request may take under load before the run counts it as failed."""

REHYDRATE_QUERY = """query Rehydrate($i: RehydrateInput!) { rehydrate(input: $i) {
  tokensUsed overBudget rendered entries { item { id status } reason score tokens } } }"""
START_SESSION = "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }"
ASSERT_ITEMS = "mutation($i: [AssertItemInput!]!) { assertItems(input: $i) { id } }"
TASKS = (
    "Fix the webhook retry backoff for the payments queue",
    "Review the tenant partition migration and its index",
    "Add idempotency to the refund export",
    "Rollout of the billing canary behind a flag",
)


# ---------------------------------------------------------------------------
# The two databases


@dataclass(frozen=True)
class Engine:
    """One side of the comparison: its administrator's URL and where its workspaces' requests go."""

    name: str
    admin_url: str
    version: str


@contextmanager
def citus_cluster(scratch: Path) -> Iterator[str]:
    """A local cluster of this run's own, migrated with ``mneia migrate``: the coordinator's URL.
    Brought down when the block ends, whatever happens."""
    env = {**os.environ, "MNEIA_CITUS_DIR": str(scratch / "citus")}

    def citus_sh(*args: str) -> str:
        done = subprocess.run(
            [str(CITUS_SH), *args], env=env, capture_output=True, text=True, timeout=CITUS_PATIENCE
        )
        if done.returncode != 0:
            raise BenchmarkBroken(f"scripts/citus.sh {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    try:
        citus_sh("up")
        found = DATABASE_URL.search(citus_sh("createdb", "mneia_scale_out"))
        if found is None:
            raise BenchmarkBroken("scripts/citus.sh createdb printed no DATABASE_URL")
        url = found.group(1)
        migrate(url, scratch, "on the cluster")
        yield url
    finally:
        subprocess.run([str(CITUS_SH), "down"], env=env, capture_output=True, timeout=CITUS_PATIENCE)


def migrate(url: str, scratch: Path, where: str) -> None:
    """The real ``mneia migrate`` on ``url``'s database, as an operator runs it."""
    done = subprocess.run(
        [str(Path(sys.executable).with_name("mneia")), "migrate"],
        env={**mneia_env(scratch), "DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=CITUS_PATIENCE,
    )
    if done.returncode != 0:
        raise BenchmarkBroken(f"mneia migrate {where}: {done.stderr.strip()}")


def mneia_env(scratch: Path) -> dict[str, str]:
    """The environment of a ``mneia`` command: this run's database only, no data directory of the user's."""
    scrubbed = ("DATABASE_URL", "MNEIA_APP_DATABASE_URL", "MNEIA_APP_PASSWORD", "MNEIA_DATA_DIR")
    env = {name: value for name, value in os.environ.items() if name not in scrubbed}
    return {**env, "MNEIA_DATA_DIR": str(scratch / "data")}


@contextmanager
def plain_database(given: str | None, scratch: Path) -> Iterator[tuple[str, str]]:
    """A fresh, migrated database on plain PostgreSQL (``given``'s server, else an embedded one of the
    cluster's build), dropped at the end: its URL and where it came from."""
    with ExitStack() as stack:
        if given:
            server, said = given, "the server at --plain-url"
        else:
            from mneia.storage.embedded import EmbeddedServer

            embedded = EmbeddedServer(scratch / "plain", cleanup="delete")
            stack.callback(embedded.stop)
            server, said = embedded.url(), "the embedded server (the cluster's PostgreSQL build)"
        name = f"mneia_scale_out_{uuid.uuid4().hex[:10]}"
        asyncio.run(create_database(server, name))
        stack.callback(lambda: asyncio.run(drop_database(server, name)))
        url = with_database(server, name)
        migrate(url, scratch, "on plain PostgreSQL")
        yield url, said


# ---------------------------------------------------------------------------
# The world: workspaces of one human, one agent, one project with its items


@dataclass(frozen=True)
class Tenant:
    workspace_id: uuid.UUID
    human: str
    agent: str
    project_id: uuid.UUID
    session_id: uuid.UUID


@dataclass
class World:
    engine: Engine
    routes: Routes
    tenants: list[Tenant]
    failed: dict[str, str] = field(default_factory=dict)
    """Operations that failed on this engine, with their cause: not measured further."""


async def bootstrap(engine: Engine, workspaces: int) -> tuple[Routes, list[tuple[uuid.UUID, str]]]:
    """The workspaces, each with its human (as ``mneia admin bootstrap``), and the node of each."""
    admin = create_engine(engine.admin_url, pool_size=1)
    nodes: dict[str, str] = {}
    homes: dict[uuid.UUID, str] = {}
    humans = []
    try:
        for number in range(workspaces):
            made = await workspace.bootstrap(admin, f"scale-out-{number:03d}", "alice")
            home = await citus.home(admin, made.workspace_id) or engine.admin_url
            where = make_url(home)
            node = f"{where.host}:{where.port}" if home != engine.admin_url else "plain"
            nodes.setdefault(node, app_url(home))
            homes[made.workspace_id] = node
            humans.append((made.workspace_id, made.token))
    finally:
        await admin.dispose()
    distributed = "plain" not in nodes
    settings = SHARDS_SHOWN if distributed else {}
    return Routes(app_url(engine.admin_url), distributed, nodes, homes, settings), humans


async def populate(
    router: Router, humans: Sequence[tuple[uuid.UUID, str]], items: int, rng: random.Random
) -> list[Tenant]:
    """Through the API, each workspace's agent, project, session and items."""
    tenants = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=router), base_url="http://bench") as http:
        for workspace_id, human in humans:
            created = (await gql(http, human, CREATE_ACTOR, k="AGENT", n="claude-code"))["createActor"]
            agent, agent_id = created["token"], created["actor"]["id"]
            project = await gql(http, human, 'mutation { createProject(name: "main") { id } }')
            project_id = project["createProject"]["id"]
            await gql(http, human, ADD_MEMBER, p=project_id, a=agent_id)
            started = await gql(
                http,
                agent,
                START_SESSION,
                i={"projectId": project_id, "task": "scale out", "client": {"tool": "claude-code"}},
            )
            session_id = started["startSession"]["id"]
            for start in range(0, items, 500):
                batch = [assertion(project_id, session_id, rng) for _ in range(min(500, items - start))]
                await gql(http, agent, ASSERT_ITEMS, i=batch)
            tenants.append(Tenant(workspace_id, human, agent, uuid.UUID(project_id), uuid.UUID(session_id)))
    return tenants


def assertion(project_id: str, session_id: str, rng: random.Random) -> dict[str, Any]:
    return {
        "projectId": project_id,
        "kind": weighted(rng, KINDS),
        "statement": sentence(rng, 6, 24),
        "basis": sentence(rng, 4, 12),
        "confidence": round(rng.uniform(0.5, 1.0), 2),
        "sessionId": session_id,
        "scope": "PROJECT",
    }


# ---------------------------------------------------------------------------
# The requests, each a token and a GraphQL body


@dataclass(frozen=True)
class Request:
    operation: str
    bearer: str
    body: dict[str, Any]
    read: bool


def request(operation: str, tenant: Tenant, rng: random.Random) -> Request:
    if operation == "page":
        return Request(
            operation, tenant.human, {"query": PAGE_QUERY, "variables": {"p": str(tenant.project_id)}}, True
        )
    if operation == "rehydrate":
        asked = {"projectId": str(tenant.project_id), "task": rng.choice(TASKS), "tokenBudget": BUDGET}
        return Request(operation, tenant.human, {"query": REHYDRATE_QUERY, "variables": {"i": asked}}, True)
    variables = assertion(str(tenant.project_id), str(tenant.session_id), rng)
    return Request(operation, tenant.agent, {"query": ASSERT_MUTATION, "variables": {"i": variables}}, False)


def checked(asked: Request, response: httpx.Response) -> dict[str, Any]:
    if response.status_code != 200:
        raise BenchmarkBroken(f"{asked.operation}: HTTP {response.status_code}: {response.text[:500]}")
    body = response.json()
    if body.get("errors"):
        raise BenchmarkBroken(f"{asked.operation}: {body['errors']}"[:1000])
    data: dict[str, Any] = body["data"]
    if asked.operation == "page" and not data["items"]["nodes"]:
        raise BenchmarkBroken("an empty page")
    if asked.operation == "rehydrate" and not data["rehydrate"]["entries"]:
        raise BenchmarkBroken("an empty slice")
    return data


async def send(http: httpx.AsyncClient, asked: Request) -> dict[str, Any]:
    response = await http.post(
        "/graphql", json=asked.body, headers={"Authorization": f"Bearer {asked.bearer}"}
    )
    return checked(asked, response)


# ---------------------------------------------------------------------------
# 1. One tenant: each request, then the SQL it sent, alone


@dataclass
class Latency:
    request: Series
    sql: Series
    by_statement: dict[str, list[float]] = field(default_factory=dict)
    """Each statement's replayed milliseconds, by its text: where the SQL's time goes."""


class Causes(logging.Handler):
    """The cause of each request the app answered with an internal error, as it logged it: a client
    sees only a request id."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        while error is not None and (error.__cause__ or error.__context__) is not None:
            error = error.__cause__ or error.__context__
        if error is not None:
            self.last = f"{type(error).__name__}: {str(error).splitlines()[0]}"


@contextmanager
def causes() -> Iterator[Causes]:
    handler = Causes()
    logging.getLogger("mneia").addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger("mneia").removeHandler(handler)


async def single_tenant(
    router: Router, routes: Routes, tenant: Tenant, samples: int, warmup: int, rng: random.Random
) -> tuple[dict[str, Latency], dict[str, str]]:
    """Each operation's request and SQL times, and the operations that failed, with their cause
    (not measured further)."""
    recorder = Recorder()
    for engine in await router.engines():
        recorder.watch(engine)
    measured = {
        op: Latency(Series(f"{op} request", None), Series(f"{op} SQL alone", None)) for op in OPERATIONS
    }
    failed: dict[str, str] = {}
    node = routes.nodes[routes.homes[tenant.workspace_id]]
    replaying = await asyncpg.connect(driver_dsn(node), server_settings=routes.settings)
    transport = httpx.ASGITransport(app=router)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=60) as http:
            with causes() as cause:
                for round_ in range(warmup + samples):
                    for operation in OPERATIONS:
                        if operation in failed:
                            continue
                        asked = request(operation, tenant, rng)
                        with recorder.recording() as sent:
                            started = time.perf_counter()
                            try:
                                data = await send(http, asked)
                            except BenchmarkBroken as error:
                                failed[operation] = cause.last or str(error)
                                continue
                            request_ms = (time.perf_counter() - started) * 1000
                        statements = list(sent)
                        if operation == "assertItem":
                            statements = renewed(statements, [uuid.UUID(data["assertItem"]["id"])])
                        spent = measured[operation].by_statement if round_ >= warmup else None
                        sql_ms = await replayed(replaying, statements, asked.read, spent)
                        if round_ >= warmup:
                            measured[operation].request.samples.append(request_ms)
                            measured[operation].sql.samples.append(sql_ms)
    finally:
        await replaying.close()
        recorder.close()
    return measured, failed


# ---------------------------------------------------------------------------
# 2. Many tenants: the router in a child process, 16 connections


@dataclass(frozen=True)
class Run:
    operation: str
    requests: int
    seconds: float
    p50_ms: float
    p95_ms: float
    failed: str = ""
    """The first request that failed or timed out, if any: the run stopped there."""
    activity: Activity | None = None

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds


@contextmanager
def serving(routes: Routes, scratch: Path, name: str) -> Iterator[str]:
    """The router over ``routes`` in a child process on a free port: its base URL."""
    port = free_port()
    path = routes.dump(scratch / f"routes-{name}.json")
    command = [sys.executable, str(HERE / "routing.py"), "--routes", str(path), "--port", str(port)]
    with _child_serving(f"the {name} router", command, port, 120) as (base, _):
        yield base


async def drive(
    base: str,
    asked: Sequence[Request],
    connections: int,
    seconds: float,
    warmup: float,
    nodes: dict[str, str],
) -> Run:
    """``connections`` clients back to back over ``asked`` (each from its own place), for ``seconds``
    after ``warmup``: requests answered, p50 and p95. A request that fails, or takes longer than
    ``REQUEST_PATIENCE``, ends the run, and the run says so. The backends of ``nodes`` (their
    administrators' DSNs) are sampled meanwhile, warm-up included (``activity.py``)."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    latencies: list[float] = []
    failures: list[str] = []
    async with httpx.AsyncClient(base_url=base, timeout=REQUEST_PATIENCE, limits=limits) as http:

        async def client(start: int, until: float) -> None:
            position = start
            while time.perf_counter() < until and not failures:
                one = asked[position % len(asked)]
                position += 1
                started = time.perf_counter()
                try:
                    await send(http, one)
                except (BenchmarkBroken, httpx.HTTPError) as error:
                    said = str(error) or f"no answer within {REQUEST_PATIENCE:g} s"
                    failures.append(f"{type(error).__name__}: {said}"[:300])
                    return
                latencies.append((time.perf_counter() - started) * 1000)

        spread = len(asked) // connections
        stop = asyncio.Event()
        watching = asyncio.create_task(sampled(nodes, stop))
        await asyncio.gather(*(client(c * spread, time.perf_counter() + warmup) for c in range(connections)))
        latencies.clear()
        started = time.perf_counter()
        await asyncio.gather(*(client(c * spread, started + seconds) for c in range(connections)))
        elapsed = time.perf_counter() - started
        stop.set()
        activity = await watching
    if not latencies:
        failed = failures[0] if failures else "no answer"
        return Run(asked[0].operation, 0, elapsed, 0.0, 0.0, failed, activity)
    series = Series(asked[0].operation, None, latencies)
    return Run(
        asked[0].operation,
        len(latencies),
        elapsed,
        series.quantile(0.5),
        series.quantile(0.95),
        failures[0] if failures else "",
        activity,
    )


# ---------------------------------------------------------------------------
# The run


@dataclass(frozen=True)
class Options:
    workspaces: int
    items_per_workspace: int
    samples: int
    warmup: int
    connections: int
    duration: float
    throughput_warmup: float
    plain_url: str | None
    seed: int


def load() -> float:
    return os.getloadavg()[0]


async def build(engine: Engine, options: Options, rng: random.Random) -> World:
    routes, humans = await bootstrap(engine, options.workspaces)
    router = Router(routes, pool_size=4)
    try:
        async with router.running():
            tenants = await populate(router, humans, options.items_per_workspace, rng)
    finally:
        await router.dispose()
    await vacuum_analyze(engine.admin_url)
    return World(engine, routes, tenants)


async def latencies(world: World, options: Options, rng: random.Random) -> dict[str, Latency]:
    """One tenant's latencies (the first workspace: on Citus, on its worker); an operation that fails
    is named in ``world.failed`` with its cause."""
    router = Router(world.routes, pool_size=2)
    try:
        async with router.running():
            measured, world.failed = await single_tenant(
                router, world.routes, world.tenants[0], options.samples, options.warmup, rng
            )
    finally:
        await router.dispose()
    return measured


def throughput(
    worlds: Sequence[World], options: Options, scratch: Path, rng: random.Random
) -> dict[tuple[str, str], Run]:
    """Each operation on every engine in turns, but where it failed alone; pages and slices before
    assertions, which add items."""
    runs: dict[tuple[str, str], Run] = {}
    with ExitStack() as stack:
        bases = [
            stack.enter_context(serving(world.routes, scratch, f"{n}")) for n, world in enumerate(worlds)
        ]
        for operation in OPERATIONS:
            for world, base in zip(worlds, bases, strict=True):
                if operation in world.failed:
                    continue
                asked = [
                    request(operation, rng.choice(world.tenants), rng) for _ in range(4 * len(world.tenants))
                ]
                run = asyncio.run(
                    drive(
                        base,
                        asked,
                        options.connections,
                        options.duration,
                        options.throughput_warmup,
                        administrators(world),
                    )
                )
                runs[(operation, world.engine.name)] = run
                print(
                    f"  {operation:<11}{world.engine.name:<16}{run.per_second:>7.0f}/s"
                    f" p50 {run.p50_ms:.1f} p95 {run.p95_ms:.1f} ms   load average {load():.2f}"
                    + (f"   FAILED: {run.failed}" if run.failed else ""),
                    flush=True,
                )
                if run.activity is not None:
                    print("\n".join(run.activity.summary()), flush=True)
    return runs


def administrators(world: World) -> dict[str, str]:
    """The administrator's DSN on every node of ``world`` (a coordinator too), by node name."""
    admin = make_url(world.engine.admin_url)
    dsns = {
        node: driver_dsn(
            make_url(url)
            .set(username=admin.username, password=admin.password)
            .render_as_string(hide_password=False)
        )
        for node, url in world.routes.nodes.items()
    }
    if driver_dsn(world.engine.admin_url) not in dsns.values():  # Citus: the coordinator too
        dsns[f"coordinator {admin.host}:{admin.port}"] = driver_dsn(world.engine.admin_url)
    return dsns


def report_latency(plain: World, routed: World, measured: dict[str, dict[str, Latency]]) -> list[str]:
    """Request and SQL p50/p95 on each, the ratio and the difference of the p50s; then the target."""
    lines = [
        f"{'(ms)':<24}{'plain p50':>10}{'p95':>8}{'Citus p50':>11}{'p95':>8}{'ratio p50':>11}{'+ms p50':>9}"
    ]
    verdicts = []
    for operation in OPERATIONS:
        failed = plain.failed.get(operation) or routed.failed.get(operation)
        if failed:
            on = plain.engine.name if operation in plain.failed else routed.engine.name
            lines.append(f"{operation:<24}fails on {on}: {failed}")
            continue
        a, b = measured[plain.engine.name][operation], measured[routed.engine.name][operation]
        for name, x, y in (("request", a.request, b.request), ("SQL alone", a.sql, b.sql)):
            x50, y50 = x.quantile(0.5), y.quantile(0.5)
            lines.append(
                f"{operation + ' ' + name:<24}{x50:>10.2f}{x.quantile(0.95):>8.2f}{y50:>11.2f}"
                f"{y.quantile(0.95):>8.2f}{y50 / x50:>11.2f}{y50 - x50:>+9.2f}"
            )
        app_a = a.request.quantile(0.5) - a.sql.quantile(0.5)
        app_b = b.request.quantile(0.5) - b.sql.quantile(0.5)
        lines.append(
            f"{operation + ' app (req - SQL)':<24}{app_a:>10.2f}{'':>8}{app_b:>11.2f}{'':>8}{'':>11}"
            f"{app_b - app_a:>+9.2f}"
        )
        cost = b.sql.quantile(0.5) - a.sql.quantile(0.5)
        lines.extend(slowest(a, b))
        verdicts.append(
            f"target       {operation}: the routed SQL {cost:+.2f} ms against plain SQL (p50),"
            f" within {TARGET_MS} ms: {'met' if cost <= TARGET_MS else 'MISSED'}; the routed request"
            f" {b.request.quantile(0.5) - a.request.quantile(0.5):+.2f} ms against plain's request,"
            f" {b.request.quantile(0.5) - a.sql.quantile(0.5):+.2f} ms against plain's SQL"
        )
    return lines + verdicts


def slowest(plain: Latency, routed: Latency, shown: int = 3) -> list[str]:
    """The statements that cost the most more on Citus (mean ms a request), each shortened."""

    def per_request(times: list[float], latency: Latency) -> float:
        return sum(times) / len(latency.sql.samples)

    more = sorted(
        (  # a statement read from shards (Driven.on) against the same on plain's tables
            (
                per_request(times, routed)
                - per_request(plain.by_statement.get(ON_TABLES.get(sql, sql), []), plain),
                sql,
            )
            for sql, times in routed.by_statement.items()
        ),
        reverse=True,
    )
    return [f"    {extra:+7.2f} ms a request: {' '.join(sql.split())[:90]}" for extra, sql in more[:shown]]


def report_throughput(plain: World, routed: World, runs: dict[tuple[str, str], Run]) -> list[str]:
    lines = [
        f"{'(ms)':<14}{'plain ops/s':>12}{'p50':>8}{'p95':>8}{'Citus ops/s':>13}{'p50':>8}{'p95':>8}"
        f"{'ratio ops/s':>13}{'p95':>7}"
    ]
    for operation in OPERATIONS:
        a, b = runs.get((operation, plain.engine.name)), runs.get((operation, routed.engine.name))
        if a is None or b is None:
            lines.append(
                f"{operation:<14}not measured: it fails on {routed.engine.name if b is None else 'plain'}"
            )
            continue
        if a.failed or b.failed:
            lines.append(
                f"{operation:<14}failed: {a.failed or b.failed} ({'plain' if a.failed else 'Citus'})"
            )
            continue
        lines.append(
            f"{operation:<14}{a.per_second:>12.0f}{a.p50_ms:>8.1f}{a.p95_ms:>8.1f}"
            f"{b.per_second:>13.0f}{b.p50_ms:>8.1f}{b.p95_ms:>8.1f}"
            f"{b.per_second / a.per_second:>13.2f}{b.p95_ms / a.p95_ms:>7.2f}"
        )
    return lines


def arguments(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="a short run: 60 items a workspace, 30 samples, 3 s runs"
    )
    parser.add_argument("--workspaces", type=int, default=100)
    parser.add_argument("--items-per-workspace", type=int, default=None, help="default 300 (--quick: 60)")
    parser.add_argument("--samples", type=int, default=None, help="default 200 (--quick: 30)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--duration", type=float, default=None, help="seconds per throughput run, default 10 (--quick: 3)"
    )
    parser.add_argument(
        "--plain-url",
        default=None,
        help="an administrator's URL of the plain PostgreSQL server (a scratch database is made there);"
        " default: an embedded server of the cluster's PostgreSQL build",
    )
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args(argv)
    quick = args.quick
    options = Options(
        workspaces=args.workspaces,
        items_per_workspace=args.items_per_workspace or (60 if quick else 300),
        samples=args.samples or (30 if quick else 200),
        warmup=5 if quick else 20,
        connections=args.connections,
        duration=args.duration or (3.0 if quick else 10.0),
        throughput_warmup=1.0 if quick else 2.0,
        plain_url=args.plain_url,
        seed=args.seed,
    )
    if min(options.workspaces, options.samples, options.connections) < 1 or options.items_per_workspace < 51:
        parser.error("need a workspace, 51 items a workspace (a full page of 50), a sample and a connection")
    return options


def main(argv: Sequence[str] | None = None) -> int:
    options = arguments(argv)
    started = time.perf_counter()
    rng = random.Random(options.seed)
    scratch = Path(tempfile.mkdtemp(prefix="mneia-scale-out-"))
    scratch.chmod(0o755)  # as root, the nodes run as another user, who must reach their directories
    try:
        print(f"cpu cores    {os.cpu_count()}; load average {load():.2f} at the start", flush=True)
        with (
            citus_cluster(scratch) as cluster_url,
            plain_database(options.plain_url, scratch) as (plain_url, said),
        ):
            plain = Engine("plain", plain_url, asyncio.run(server_version(plain_url)))
            routed = Engine("Citus, routed", cluster_url, asyncio.run(server_version(cluster_url)))
            print(f"plain        {plain.version}, {said}")
            coordinator = make_url(cluster_url)
            print(
                f"Citus        {routed.version}, a coordinator ({coordinator.host}:{coordinator.port}) and"
                " two workers (scripts/citus.sh)"
            )
            built = time.perf_counter()
            worlds = [asyncio.run(build(engine, options, rng)) for engine in (plain, routed)]
            homes = list(worlds[1].routes.homes.values())
            spread = ", ".join(f"{homes.count(node)} on {node}" for node in sorted(set(homes)))
            print(
                f"world        {options.workspaces} workspaces of {options.items_per_workspace} items each,"
                f" through the API ({time.perf_counter() - built:.0f} s); on Citus {spread}"
            )
            before = load()
            measured = {world.engine.name: asyncio.run(latencies(world, options, rng)) for world in worlds}
            after = load()
            print()
            print(
                f"single tenant, sequential, in-process: {options.samples} of each after {options.warmup}"
                f" rounds of warm-up; load average {before:.2f} before, {after:.2f} after"
            )
            print("\n".join(report_latency(*worlds, measured)))
            print()
            print(
                f"many tenants: {options.connections} connections across {options.workspaces} workspaces,"
                f" {options.duration:g} s a run after {options.throughput_warmup:g} s; the router in a"
                " child process, httpx over TCP"
            )
            before = load()
            runs = throughput(worlds, options, scratch, rng)
            after = load()
            print(
                f"load average {before:.2f} before, {after:.2f} after (above 2: other work shared the cores)"
            )
            print("\n".join(report_throughput(*worlds, runs)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"total        {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
