"""Throughput benchmark: assertItem/s and page/s under concurrent load, beside the database's ceiling.

The real command, ``mneia serve --workers N``, serves a fresh database in a
child process; ``wrk`` (Debian's package, with ``graphql.lua`` for the POST
bodies) drives it over TCP with 1, 4 and 16 connections. Beside it, the same
transactions run as raw SQL through asyncpg on as many connections, with no
HTTP, GraphQL or SQLAlchemy: what the database alone can do on this machine.

An assertion is an agent's ``assertItem`` in its own session; a page is
``items(projectId:…, first:50)`` with provenance, the query of
benchmarks/foundation.py. The raw transactions issue the statements the
server issues for them, in the same order (authenticate; project with membership
and session, insert / project, listing, count, actors, sessions).

Run it from the checkout:

    .venv/bin/python benchmarks/throughput.py                        # workers 1 and 2
    .venv/bin/python benchmarks/throughput.py --workers 2 --repeat 3 --duration 10

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL), as in
foundation.py. Each line of the table is the median run of ``--repeat``
(by requests/s) with the range of requests/s over the runs; p50/p95/p99 are
wrk's (closed loop: each connection sends its next request when the answer
arrives). A request that is not HTTP 200 or carries ``errors`` fails the
benchmark: the figures would mean nothing. Pages are measured before
assertions, which add items, so that every page line sees the same data; the
runs of one operation are taken in turns (SQL, then each server, ``--repeat``
times), so that no path reads a table the others have grown. The last lines
give each server's rate at 16 connections as a share of raw SQL's, beside
issue 24's targets (page >= 0.5, assertItem >= 0.75).

The last two columns are CPU milliseconds per request, read from /proc:
"app" is the server's processes (for the SQL lines, the raw client), "db"
the PostgreSQL backends connected to the bench database. On a shared
machine they move much less than the rates do, so they say where the time
goes. ``--profile DIR`` also records the server with py-spy during each
measured run; ``--operations`` measures only one of the two. ``--floor``
also serves floor.py for assertItem in the same turns, with each worker
count: the user's stack with none of Mneia in it, the most a server on it
reaches for the same transaction, and Mneia's rate beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
from common import (
    KINDS,
    BenchmarkBroken,
    Series,
    _child_serving,
    ceiling_connection,
    database_server,
    free_port,
    fresh_database,
    mneia_serve,
    sentence,
    server_version,
    vacuum_analyze,
    weighted,
)
from foundation import ASSERT_MUTATION, PAGE_QUERY, Space, build_space, bulk_load, plan_items
from sqlalchemy.engine import make_url

from mneia.storage import token
from mneia.storage.database import create_engine
from mneia.storage.ids import new_id

HERE = Path(__file__).resolve().parent
LUA = HERE / "graphql.lua"
OPERATIONS = ("assertItem", "page")
OPERATIONS_IN_ORDER = ("page", "assertItem")
SQL = "SQL (asyncpg)"
HTTP = "HTTP"
FLOOR = "floor"
FLOOR_KINDS = ("strawberry", "graphql-core")
"""floor.py's kinds (its ``--kind``): Strawberry's stock view with its caches, and graphql-core alone."""
ASSERT_TARGET_PER_S = 500.0
ASSERT_TARGET_P99_MS = 50.0
SHARE_TARGETS = {"page": 0.5, "assertItem": 0.75}
"""Issue 24: at 16 connections, the server's requests/s as a share of the same transactions' as raw SQL."""


# ---------------------------------------------------------------------------
# The requests: each one a token and its variables, shared by wrk and the raw path


@dataclass(frozen=True)
class Assertion:
    token: str
    project_id: uuid.UUID
    session_id: uuid.UUID
    kind: str
    statement: str
    basis: str
    confidence: float

    def body(self) -> dict[str, Any]:
        variables = {
            "projectId": str(self.project_id),
            "kind": self.kind,
            "statement": self.statement,
            "basis": self.basis,
            "confidence": self.confidence,
            "sessionId": str(self.session_id),
            "scope": "PROJECT",
        }
        return {"query": ASSERT_MUTATION, "variables": {"i": variables}}


@dataclass(frozen=True)
class PageRead:
    token: str
    project_id: uuid.UUID

    def body(self) -> dict[str, Any]:
        return {"query": PAGE_QUERY, "variables": {"p": str(self.project_id)}}


def assertions(spaces: Sequence[Space], count: int, rng: random.Random) -> list[Assertion]:
    made = []
    for _ in range(count):
        space = rng.choice(spaces)
        agent, project_id = rng.choice(space.agents), rng.choice(space.projects)
        made.append(
            Assertion(
                agent.token,
                project_id,
                space.sessions[(agent.id, project_id)],
                weighted(rng, KINDS),
                sentence(rng, 6, 24),
                sentence(rng, 4, 12),
                round(rng.uniform(0.5, 1.0), 2),
            )
        )
    return made


def page_reads(spaces: Sequence[Space], count: int, rng: random.Random) -> list[PageRead]:
    made = []
    for _ in range(count):
        space = rng.choice(spaces)
        made.append(PageRead(rng.choice(space.readers).token, rng.choice(space.projects)))
    return made


def write_requests(path: Path, requests: Sequence[Assertion | PageRead]) -> Path:
    """The file graphql.lua reads: a token, a tab, the JSON body, per line."""
    with path.open("w") as out:
        for request in requests:
            out.write(f"{request.token}\t{json.dumps(request.body(), separators=(',', ':'))}\n")
    return path


# ---------------------------------------------------------------------------
# A measurement


@dataclass(frozen=True)
class Run:
    requests: int
    seconds: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    client_cpu_ms: float = 0.0
    """CPU seconds of the server's processes (or of the raw client), in ms per request."""
    database_cpu_ms: float = 0.0
    """CPU of the database backends serving the run, in ms per request."""

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds

    def costed(self, cpu: CpuUse) -> Run:
        return dataclasses.replace(
            self,
            client_cpu_ms=cpu.client_s * 1000 / self.requests,
            database_cpu_ms=cpu.database_s * 1000 / self.requests,
        )


@dataclass(frozen=True)
class Line:
    operation: str
    path: str
    connections: int
    runs: list[Run]

    @property
    def median(self) -> Run:
        """The run with the median requests/s (the lower middle one of an even number)."""
        return sorted(self.runs, key=lambda run: run.per_second)[(len(self.runs) - 1) // 2]

    def text(self) -> str:
        rates = sorted(run.per_second for run in self.runs)
        median = self.median
        spread = f"{rates[0]:.0f}-{rates[-1]:.0f}" if len(rates) > 1 else ""
        return (
            f"{self.operation:<11}{self.path:<32}{self.connections:>5}{median.per_second:>9.0f}{spread:>12}"
            f"{median.p50_ms:>8.1f}{median.p95_ms:>8.1f}{median.p99_ms:>8.1f}{median.max_ms:>8.1f}"
            f"{median.client_cpu_ms:>8.2f}{median.database_cpu_ms:>8.2f}"
        )


HEADER = (
    f"{'operation':<11}{'path':<32}{'conns':>5}{'req/s':>9}{'range':>12}"
    f"{'p50':>8}{'p95':>8}{'p99':>8}{'max':>8}{'app cpu':>8}{'db cpu':>8}   (ms; cpu per request)"
)


# ---------------------------------------------------------------------------
# Where the CPU went: the serving processes (or the raw client) and the database's backends


@dataclass(frozen=True)
class CpuUse:
    client_s: float
    database_s: float


def _cpu_seconds(processes: Sequence[psutil.Process]) -> dict[int, float]:
    seconds = {}
    for process in processes:
        with suppress(psutil.Error):
            times = process.cpu_times()
            seconds[process.pid] = times.user + times.system
    return seconds


def _backends(database: str) -> list[psutil.Process]:
    """The PostgreSQL backends connected to ``database`` (their title names it)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        title = " ".join(process.info["cmdline"] or [])
        if title.startswith("postgres: ") and f" {database} " in title:
            found.append(process)
    return found


@contextmanager
def cpu_use(client: psutil.Process, database: str) -> Iterator[list[CpuUse]]:
    """CPU spent inside the block by ``client`` and its children, and by the database's backends.

    A backend that ends inside the block takes its time with it, so the pools
    must hold their connections (they do: the runs are warmed up first).
    """
    box: list[CpuUse] = []

    def sample() -> tuple[dict[int, float], dict[int, float]]:
        return (
            _cpu_seconds([client, *client.children(recursive=True)]),
            _cpu_seconds(_backends(database)),
        )

    client_before, database_before = sample()
    yield box
    client_after, database_after = sample()

    def spent(before: dict[int, float], after: dict[int, float]) -> float:
        return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())

    box.append(CpuUse(spent(client_before, client_after), spent(database_before, database_after)))


# ---------------------------------------------------------------------------
# The server: `mneia serve --workers N`, measured by wrk


def _served_path(kind: str, workers: int) -> str:
    """A served line's name: ``HTTP, 2 workers`` (mneia serve) or ``floor strawberry, 2 workers``
    (floor.py, of the kind named)."""
    return f"{kind}, {workers} worker{'s' if workers > 1 else ''}"


@contextmanager
def floor_serve(url: str, workers: int, kind: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The stack's floor (floor.py) on a free port until the block ends; its base URL and process."""
    port = free_port()
    command = [sys.executable, str(HERE / "floor.py"), "--database-url", url, "--port", str(port)]
    with _child_serving(
        "the floor", [*command, "--workers", str(workers), "--kind", kind], port, 60
    ) as served:
        yield served


def wrk(base: str, requests: Path, connections: int, seconds: float) -> Run:
    """One wrk run (one thread: the server needs the cores more than the client)."""
    command = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{seconds:g}s",
        "--timeout",
        "10s",
        "-s",
        str(LUA),
        base,
        "--",
        str(requests),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, check=False)
    summary = next((line for line in finished.stdout.splitlines() if line.startswith("{")), None)
    if finished.returncode != 0 or summary is None:
        raise BenchmarkBroken(f"wrk failed: {finished.stderr.strip() or finished.stdout.strip()}")
    figures = json.loads(summary)
    if figures["failed"] or figures["socket_errors"]:
        raise BenchmarkBroken(
            f"{figures['failed']} failed answers, {figures['socket_errors']} socket errors "
            f"({requests.name}, {connections} connections)"
        )
    return Run(
        figures["requests"],
        figures["duration_us"] / 1e6,
        figures["p50_us"] / 1000,
        figures["p95_us"] / 1000,
        figures["p99_us"] / 1000,
        figures["max_us"] / 1000,
    )


@contextmanager
def profiled(server: subprocess.Popen[bytes], into: Path | None, name: str, seconds: float) -> Iterator[None]:
    """py-spy on the server and its workers for ``seconds``, if asked for (``--profile``)."""
    if into is None:
        yield
        return
    into.mkdir(parents=True, exist_ok=True)
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    command = [spy, "record", "--subprocesses", "--nonblocking", "--format", "raw", "--pid", str(server.pid)]
    out = into / f"{name}.txt"
    recorder = subprocess.Popen(
        [*command, "--duration", f"{seconds:.0f}", "--output", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        recorder.wait()


# ---------------------------------------------------------------------------
# The ceiling: the same transactions as raw SQL through asyncpg

_AUTHENTICATE = "SELECT workspace_id, id, kind, name, created_at FROM mneia_authenticate($1, $2)"
_PROJECT = "SELECT projects.id, projects.name, projects.team_id FROM projects WHERE projects.id = ANY($1)"
_SESSION_COLUMNS = (
    "sessions.id, sessions.project_id, sessions.actor_id, clients.tool, clients.version,"
    " sessions.external_id, sessions.deep_link, sessions.task, sessions.started_at, sessions.ended_at"
    " FROM sessions LEFT OUTER JOIN clients"
    " ON clients.workspace_id = sessions.workspace_id AND clients.id = sessions.client_id"
)
_SESSIONS = f"SELECT {_SESSION_COLUMNS} WHERE sessions.id = ANY($1)"
_ACCESS = (
    "SELECT projects.id, projects.name, projects.team_id, projects.id = ANY (mneia_team_projects()), s.*"
    f" FROM projects LEFT OUTER JOIN (SELECT {_SESSION_COLUMNS} WHERE sessions.id = $1) AS s ON true"
    " WHERE projects.id = ANY($2)"
)
_ITEM_COLUMNS = (
    "id, project_id, kind, statement, details, basis, confidence, status, status_reason, scope,"
    " grant_actor_ids, asserted_by, asserted_at, session_id, valid_from, valid_to, decay_after,"
    " last_verified_at, load_bearing, load_bearing_suggested, confirmed_by, confirmed_at,"
    " supersedes_id, supersession_reason"
)
_INSERT = (
    "INSERT INTO items (workspace_id, id, asserted_by, project_id, kind, statement, details, basis,"
    " confidence, scope, grant_actor_ids, session_id, valid_from, valid_to, decay_after)"
    " VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, 'PROJECT', '{}', $9, NULL, NULL, NULL)"
    f" RETURNING {_ITEM_COLUMNS}"
)
_LISTING = f"SELECT {_ITEM_COLUMNS} FROM items WHERE project_id = $1 ORDER BY id DESC LIMIT 51"
_COUNT = "SELECT count(*) FROM items WHERE project_id = $1"
_ACTORS = "SELECT workspace_id, id, kind, name, created_at FROM actors WHERE id = ANY($1)"


def _presented(secret: str) -> tuple[str, uuid.UUID | None]:
    """What the server gives ``mneia_authenticate`` for a token: its digest and the workspace it names."""
    return token.digest(secret), token.workspace_of(secret)


async def asserted(connection: asyncpg.Connection, case: Assertion) -> asyncpg.Record:
    """An assertion's transaction as raw SQL, and the row it wrote: the ceiling's, and the floor's
    resolver's (floor.py)."""
    async with connection.transaction():
        who = await connection.fetchrow(_AUTHENTICATE, *_presented(case.token))
        if who is None:
            raise BenchmarkBroken("an agent's token did not authenticate")
        access = await connection.fetchrow(_ACCESS, case.session_id, [case.project_id])
        if access is None or not access[3] or access[4] != case.session_id:
            raise BenchmarkBroken("the agent does not work in its project, or its session is not there")
        row = await connection.fetchrow(
            _INSERT,
            who["workspace_id"],
            new_id(),
            who["id"],
            case.project_id,
            case.kind,
            case.statement,
            case.basis,
            case.confidence,
            case.session_id,
        )
    if row is None:  # pragma: no cover - INSERT … RETURNING returns its row
        raise BenchmarkBroken("the INSERT returned nothing")
    return row


async def raw_assert(connection: asyncpg.Connection, case: Assertion) -> None:
    await asserted(connection, case)


async def raw_page(connection: asyncpg.Connection, case: PageRead) -> None:
    async with connection.transaction():
        if await connection.fetchrow(_AUTHENTICATE, *_presented(case.token)) is None:
            raise BenchmarkBroken("a reader's token did not authenticate")
        await connection.fetch(_PROJECT, [case.project_id])
        rows = await connection.fetch(_LISTING, case.project_id)
        if not rows:
            raise BenchmarkBroken(f"an empty page for project {case.project_id}")
        await connection.fetchval(_COUNT, case.project_id)
        people = {row["asserted_by"] for row in rows} | {
            row["confirmed_by"] for row in rows if row["confirmed_by"]
        }
        await connection.fetch(_ACTORS, list(people))
        await connection.fetch(_SESSIONS, list({row["session_id"] for row in rows if row["session_id"]}))


async def raw_load(
    url: str,
    cases: Sequence[Any],
    transact: Callable[[asyncpg.Connection, Any], Awaitable[None]],
    connections: int,
    seconds: float,
) -> Run:
    """``connections`` clients, each on its own connection, back to back for ``seconds``."""
    pool = [await ceiling_connection(url) for _ in range(connections)]
    latencies: list[float] = []
    done = 0
    try:

        async def client(connection: asyncpg.Connection, start: int, until: float) -> None:
            nonlocal done
            position = start
            while time.perf_counter() < until:
                case = cases[position % len(cases)]
                position += 1
                started = time.perf_counter()
                await transact(connection, case)
                latencies.append((time.perf_counter() - started) * 1000)
                done += 1

        warm_until = time.perf_counter() + min(2.0, seconds / 3)
        await asyncio.gather(*(client(c, i * 97, warm_until) for i, c in enumerate(pool)))
        latencies.clear()
        done = 0
        with cpu_use(psutil.Process(), make_url(url).database or "") as used:
            started = time.perf_counter()
            await asyncio.gather(*(client(c, i * 97, started + seconds) for i, c in enumerate(pool)))
            elapsed = time.perf_counter() - started
    finally:
        for connection in pool:
            await connection.close()
    series = Series("raw", None, latencies)
    run = Run(
        done, elapsed, series.quantile(0.50), series.quantile(0.95), series.quantile(0.99), max(latencies)
    )
    return run.costed(used[0])


# ---------------------------------------------------------------------------
# The run


@dataclass(frozen=True)
class Options:
    workers: list[int]
    connections: list[int]
    duration: float
    warmup: float
    repeat: int
    items_per_workspace: int
    projects: int
    seed: int
    keep: bool
    skip_sql: bool
    profile: Path | None
    operations: list[str]
    floor: bool = False


async def build_world(url: str, base: str, options: Options, rng: random.Random) -> list[Space]:
    admin = create_engine(url, pool_size=2)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            spaces = [
                await build_space(http, admin, f"bench-{letter}", options.projects) for letter in ("a", "b")
            ]
        now = datetime.now(UTC)
        for space in spaces:
            await bulk_load(admin, space, plan_items(space, options.items_per_workspace, rng, now))
    finally:
        await admin.dispose()
    await vacuum_analyze(url)
    return spaces


def measure(options: Options, url: str) -> list[Line]:
    rng = random.Random(options.seed)
    scratch = Path(tempfile.mkdtemp(prefix="mneia-throughput-"))
    lines: list[Line] = []
    try:
        with mneia_serve(url, 1) as (base, _):
            spaces = asyncio.run(build_world(url, base, options, rng))
        asserting = assertions(spaces, 2000, rng)
        reading = page_reads(spaces, 2000, rng)
        files = {
            "assertItem": write_requests(scratch / "asserts.txt", asserting),
            "page": write_requests(scratch / "pages.txt", reading),
        }
        files = {operation: files[operation] for operation in options.operations}
        raw: dict[str, tuple[Sequence[Any], Callable[[asyncpg.Connection, Any], Awaitable[None]]]] = {
            "assertItem": (asserting, raw_assert),
            "page": (reading, raw_page),
        }
        raw = {operation: raw[operation] for operation in options.operations}
        # Pages first: every assertion adds an item, and a page's count (an
        # index-only scan) costs more over rows not yet vacuumed, so each page
        # line must see the same data.
        for operation in sorted(options.operations, key=OPERATIONS_IN_ORDER.index):
            lines += interleaved(options, url, operation, raw[operation], files[operation])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return lines


def interleaved(
    options: Options,
    url: str,
    operation: str,
    raw: tuple[Sequence[Any], Callable[[asyncpg.Connection, Any], Awaitable[None]]],
    requests: Path,
) -> list[Line]:
    """One operation's lines, their runs taken in turns: SQL, then each server, ``--repeat`` times.

    Every run adds to what the next one reads (an assertion adds an item, and
    autovacuum follows the rows): measured one path after the other, the last
    paths ran on a bigger table, with autovacuum's work counted in their
    database CPU. In turns, each path sees the same states of the table.
    """
    database = make_url(url).database or ""
    cases, transact = raw
    servers_wanted = [
        (_served_path(HTTP, workers), partial(mneia_serve, url, workers)) for workers in options.workers
    ]
    if options.floor and operation == "assertItem":
        servers_wanted += [
            (_served_path(f"{FLOOR} {kind}", workers), partial(floor_serve, url, workers, kind))
            for kind in FLOOR_KINDS
            for workers in options.workers
        ]
    paths = ([] if options.skip_sql else [SQL]) + [path for path, _ in servers_wanted]
    lines: list[Line] = []
    with ExitStack() as servers:
        served = [(path, servers.enter_context(start())) for path, start in servers_wanted]
        for connections in options.connections:
            runs: dict[str, list[Run]] = {path: [] for path in paths}
            for turn in range(options.repeat):
                if not options.skip_sql:
                    run = asyncio.run(raw_load(url, cases, transact, connections, options.duration))
                    runs[SQL].append(run)
                for path, (base, server) in served:
                    wrk(base, requests, connections, options.warmup)
                    name = f"{operation}-{path.replace(', ', '-').replace(' ', '')}-{connections}c-{turn + 1}"
                    with (
                        profiled(server, options.profile, name, options.duration),
                        cpu_use(psutil.Process(server.pid), database) as used,
                    ):
                        run = wrk(base, requests, connections, options.duration)
                    runs[path].append(run.costed(used[0]))
            for path in paths:
                lines.append(Line(operation, path, connections, runs[path]))
                print(lines[-1].text(), flush=True)
    return lines


def verdict(lines: Sequence[Line]) -> str:
    """The issue's target: >= 500 assertItem/s with p99 <= 50 ms at 16 connections."""
    served = [
        line
        for line in lines
        if line.operation == "assertItem" and line.connections == 16 and line.path.startswith("HTTP")
    ]
    if not served:
        return "target       (not measured: needs assertItem over HTTP at 16 connections)"
    parts = []
    for line in served:
        rate, p99 = line.median.per_second, line.median.p99_ms
        met = rate >= ASSERT_TARGET_PER_S and p99 <= ASSERT_TARGET_P99_MS
        parts.append(f"{line.path}: {rate:.0f}/s, p99 {p99:.1f} ms, {'met' if met else 'MISSED'}")
    return (
        f"target       >= {ASSERT_TARGET_PER_S:.0f} assertItem/s, p99 <= {ASSERT_TARGET_P99_MS:.0f} ms"
        " at 16 connections: " + "; ".join(parts)
    )


def shares(lines: Sequence[Line]) -> list[str]:
    """Each server's rate at 16 connections as a share of raw SQL's, beside issue 24's target."""
    said = []
    for operation, target in SHARE_TARGETS.items():
        ceiling = next(
            (line for line in lines if (line.operation, line.path, line.connections) == (operation, SQL, 16)),
            None,
        )
        served = [
            line
            for line in lines
            if line.operation == operation and line.connections == 16 and line.path != SQL
        ]
        if ceiling is None or not served:
            continue
        for line in served:
            share = line.median.per_second / ceiling.median.per_second
            verdict = f"target >= {target:.2f}: {'met' if share >= target else 'MISSED'}"
            if line.path.startswith(FLOOR):
                verdict = "floor.py: the stack with nothing of Mneia"
            said.append(
                f"share        {operation} {line.path}: {share:.2f} of SQL at 16 connections ({verdict})"
            )
        for line in served:
            if not line.path.startswith(HTTP):
                continue
            workers = line.path.removeprefix(HTTP)
            for floor in served:
                if floor.path.startswith(FLOOR) and floor.path.endswith(workers):
                    of_floor = line.median.per_second / floor.median.per_second
                    said.append(
                        f"of floor     {operation} {line.path}: {of_floor:.2f} of"
                        f" {floor.path.split(',')[0]}'s rate"
                    )
    return said


def numbers(value: str) -> list[int]:
    try:
        parsed = [int(part) for part in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list of numbers") from None
    if not parsed or min(parsed) < 1:
        raise argparse.ArgumentTypeError("every number must be at least 1")
    return parsed


def arguments(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=numbers, default=[1, 2], help="worker counts (default 1,2)")
    parser.add_argument("--connections", type=numbers, default=[1, 4, 16], help="default 1,4,16")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per run")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of wrk before each line")
    parser.add_argument("--repeat", type=int, default=1, help="runs per line (median and range)")
    parser.add_argument("--items-per-workspace", type=int, default=20_000)
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--skip-sql", action="store_true", help="no raw-SQL ceiling")
    parser.add_argument(
        "--operations",
        type=lambda value: value.split(","),
        default=list(OPERATIONS),
        help="which to measure (default: assertItem,page)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="record the server's processes with py-spy during each measured HTTP run "
        "(collapsed stacks, DIR/<operation>-<workers>w-<connections>c.txt; costs some throughput)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also serve the stack's floor for assertItem (floor.py: Strawberry's stock view, graphql-core"
        " and asyncpg, none of Mneia) with each worker count, in the same turns",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.duration <= 0:
        parser.error("--repeat must be at least 1 and --duration positive")
    if not args.operations or set(args.operations) - set(OPERATIONS):
        parser.error(f"--operations takes {', '.join(OPERATIONS)}")
    return Options(
        args.workers,
        args.connections,
        args.duration,
        args.warmup,
        args.repeat,
        args.items_per_workspace,
        args.projects,
        args.seed,
        args.keep,
        args.skip_sql,
        args.profile,
        args.operations,
        args.floor,
    )


def main(argv: Sequence[str] | None = None) -> int:
    options = arguments(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    started = time.perf_counter()
    with database_server(options.keep) as server, fresh_database(server, options.keep) as url:
        version = asyncio.run(server_version(url))
        print(f"database     {version}")
        print(f"cpu cores    {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} at the start")
        print(
            f"world        2 workspaces x {options.projects} projects x "
            f"{options.items_per_workspace:,} items; {options.duration:g} s per run, "
            f"{options.repeat} run(s) per line after {options.warmup:g} s of warm-up"
        )
        print(HEADER, flush=True)
        lines = measure(options, url)
    print()
    print(f"load average {os.getloadavg()[0]:.2f} at the end (above 2: other work shared the cores)")
    print(verdict(lines))
    for said in shares(lines):
        print(said)
    print(f"total        {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
