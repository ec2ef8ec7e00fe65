"""What the benchmark scripts share: a throwaway database, the app in a child process, timing.

Each script in ``benchmarks/`` runs as ``.venv/bin/python benchmarks/<name>.py``,
so this directory is ``sys.path[0]`` and ``import common`` finds this module.
Everything here must mean the same in every script: a figure printed by one
benchmark is comparable with a figure printed by another only if both were
measured the same way (same server set-up, same client, same percentile).

It is also the child process's entry point: ``running_server`` starts
``python benchmarks/common.py --serve URL --port N``, so the server under test
never shares an interpreter (and a GIL) with the client on a 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from sqlalchemy import Executable, Select, text
from sqlalchemy.engine import CursorResult, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from mneia.config import OWNER_ROLE, app_url, async_url
from mneia.storage import migration
from mneia.storage.database import PLAN_CACHE_MODE, Driven, Tx, transaction

# ---------------------------------------------------------------------------
# Where the database comes from


@contextmanager
def database_server(keep: bool) -> Iterator[str]:
    """An admin URL to a server on which the bench database may be created.

    ``DATABASE_URL``, else ``MNEIA_BENCH_DATABASE_URL``, else an embedded
    PostgreSQL in a temporary directory (kept with ``keep``).
    """
    explicit = os.environ.get("DATABASE_URL") or os.environ.get("MNEIA_BENCH_DATABASE_URL")
    if explicit:
        yield explicit
        return
    from mneia.storage.embedded import EmbeddedServer

    scratch = Path(tempfile.mkdtemp(prefix="mneia-bench-"))
    server = EmbeddedServer(scratch, cleanup="stop" if keep else "delete")
    try:
        yield server.url()
    finally:
        server.stop()
        if keep:
            print(f"embedded data directory kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def on_fresh_database(
    run: Callable[[Any, str, str], Awaitable[None]], options: Any, *, keep: bool = False
) -> None:
    """``run(options, url, server version)`` on a fresh, migrated database of the chosen server
    (``database_server``), then the whole time taken."""
    started = time.perf_counter()
    with database_server(keep) as server, fresh_database(server, keep) as url:
        version = asyncio.run(server_version(url))
        asyncio.run(run(options, url, version))
    print(f"total        {time.perf_counter() - started:.1f} s")


async def create_database(server_url: str, name: str) -> None:
    maintenance = create_async_engine(async_url(server_url), isolation_level="AUTOCOMMIT")
    async with maintenance.connect() as connection:
        await connection.execute(text(f'CREATE DATABASE "{name}"'))
    await maintenance.dispose()


async def drop_database(server_url: str, name: str) -> None:
    maintenance = create_async_engine(async_url(server_url), isolation_level="AUTOCOMMIT")
    async with maintenance.connect() as connection:
        await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    await maintenance.dispose()


@contextmanager
def fresh_database(server_url: str, keep: bool) -> Iterator[str]:
    """A new, migrated ``mneia_bench_<random>`` database; dropped afterwards unless ``keep``."""
    name = f"mneia_bench_{uuid.uuid4().hex[:10]}"
    asyncio.run(create_database(server_url, name))
    url = with_database(server_url, name)
    try:
        migration.upgrade(url)  # sync: alembic runs its own event loop
        yield url
    finally:
        if keep:
            print(f"bench database kept: {url}")
        else:
            asyncio.run(drop_database(server_url, name))


async def server_version(url: str) -> str:
    engine = create_async_engine(async_url(url))
    async with engine.connect() as connection:
        version = (await connection.execute(text("SHOW server_version"))).scalar_one()
    await engine.dispose()
    return f"PostgreSQL {version}"


def ceiling_dsn(url: str) -> str:
    """Where a raw-SQL ceiling connects: the database of ``url`` as the app role, as asyncpg takes it."""
    return make_url(app_url(url)).set(drivername="postgresql").render_as_string(hide_password=False)


async def ceiling_connection(url: str) -> asyncpg.Connection:
    """A raw-SQL ceiling's connection, as the app role's and planning as the server's transactions do
    (storage.database.PLANNED_WITH_VALUES, set here once for the connection instead)."""
    return await asyncpg.connect(ceiling_dsn(url), server_settings={"plan_cache_mode": PLAN_CACHE_MODE})


async def vacuum_analyze(url: str) -> None:
    """What a settled production database looks like: hint bits set, statistics fresh."""
    engine = create_async_engine(async_url(url), isolation_level="AUTOCOMMIT")
    async with engine.connect() as connection:
        await connection.execute(text("VACUUM (ANALYZE)"))
    await engine.dispose()


async def row_counts(admin: AsyncEngine, tables: Sequence[str]) -> dict[str, int]:
    """Row counts from the statistics, read by the admin role (so: not filtered by RLS)."""
    async with admin.connect() as connection:
        rows = await connection.execute(
            text(
                "SELECT relname, n_live_tup FROM pg_stat_user_tables"
                " WHERE relname = ANY (CAST(:tables AS text[]))"
            ),
            {"tables": list(tables)},
        )
        return {name: int(count) for name, count in rows}


# ---------------------------------------------------------------------------
# Bulk load: as the owner role bound to each writer in turn (mneia_bind, the
# owner's own way in), so the row-level security policies check every row as
# they would for the server and the AFTER INSERT trigger writes each item's
# events. The authority guards trust an administrator's session (it could
# drop them), which is what lets a year of history carry its own times.

_BIND = text("SELECT mneia_bind(CAST(:workspace AS uuid), CAST(:actor AS uuid))")


async def bind(tx: Tx, workspace_id: uuid.UUID, actor_id: uuid.UUID) -> None:
    """Act for ``actor_id`` from now on in this owner transaction."""
    await tx.execute(_BIND, {"workspace": str(workspace_id), "actor": str(actor_id)})
    tx.workspace_id, tx.actor_id = workspace_id, actor_id


@asynccontextmanager
async def owner_transaction(
    admin: AsyncEngine, workspace_id: uuid.UUID, actor_id: uuid.UUID
) -> AsyncIterator[Tx]:
    """One transaction as ``mneia_owner`` on behalf of ``actor_id``; ``bind`` may switch."""
    async with transaction(admin) as tx:
        await tx.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
        await bind(tx, workspace_id, actor_id)
        yield tx


ITEM_COLUMNS = (
    ("id", "uuid"),
    ("project_id", "uuid"),
    ("kind", "text"),
    ("statement", "text"),
    ("details", "text"),
    ("basis", "text"),
    ("confidence", "float8"),
    ("status", "text"),
    ("status_reason", "text"),
    ("scope", "text"),
    ("grants", "text"),
    ("asserted_by", "uuid"),
    ("asserted_at", "timestamptz"),
    ("session_id", "uuid"),
    ("decay_after", "interval"),
    ("load_bearing", "bool"),
    ("load_bearing_set_by", "uuid"),
    ("load_bearing_set_at", "timestamptz"),
    ("confirmed_by", "uuid"),
    ("confirmed_at", "timestamptz"),
    ("supersedes_id", "uuid"),
    ("supersession_reason", "text"),
    ("last_verified_at", "timestamptz"),
)
OPTIONAL_COLUMNS = ("supersedes_id", "supersession_reason", "last_verified_at")

# One statement per batch: every column travels as one array parameter. It is
# INSERT ... SELECT FROM unnest(...) because PostgreSQL refuses COPY FROM into
# a table with row-level security. Foreign keys are checked at the end of the
# statement, so a row may name as its predecessor a row of the same batch.
_BULK_INSERT = text(
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, details, basis, confidence,"
    " status, status_reason, scope, grant_actor_ids, asserted_by, asserted_at, session_id,"
    " decay_after, load_bearing, load_bearing_set_by, load_bearing_set_at, confirmed_by,"
    " confirmed_at, supersedes_id, supersession_reason, last_verified_at)"
    " SELECT CAST(:ws AS uuid), id, project_id, kind, statement, details, basis, confidence,"
    " status, status_reason, scope,"
    " CASE WHEN grants = '' THEN '{}'::uuid[] ELSE string_to_array(grants, ',')::uuid[] END,"
    " asserted_by, asserted_at, session_id, decay_after, load_bearing, load_bearing_set_by,"
    " load_bearing_set_at, confirmed_by, confirmed_at, supersedes_id, supersession_reason, last_verified_at"
    " FROM unnest("
    + ", ".join(f"CAST(:{name} AS {kind}[])" for name, kind in ITEM_COLUMNS)
    + ") AS t("
    + ", ".join(name for name, _ in ITEM_COLUMNS)
    + ")"
)


async def insert_items(tx: Tx, rows: Sequence[Mapping[str, Any]], chunk: int = 5000) -> None:
    """Insert item rows (keys: ``ITEM_COLUMNS``; ``grants`` comma-separated) in the tx's context."""
    assert tx.workspace_id is not None, "set the context first"
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        params: dict[str, Any] = {"ws": str(tx.workspace_id)}
        for name, _ in ITEM_COLUMNS:
            if name in OPTIONAL_COLUMNS:
                params[name] = [row.get(name) for row in part]
            else:
                params[name] = [row[name] for row in part]
        await tx.execute(_BULK_INSERT, params)


# ---------------------------------------------------------------------------
# Made-up content


KINDS = (
    ("FACT", 30),
    ("DECISION", 20),
    ("TASK", 15),
    ("PREFERENCE", 12),
    ("CONSTRAINT", 13),
    ("QUESTION", 10),
)
# A word list reads better as one string.
WORDS = (  # noqa: SIM905
    "payments ledger invoice retry idempotency webhook queue schema migration index tenant "
    "postgres latency cache token budget rollout flag canary review deploy billing refund "
    "currency rounding audit export import backfill partition vacuum replica failover alert "
    "runbook oncall customer contract api version deprecation pagination cursor timeout "
    "circuit breaker backoff jitter batch stream consumer producer offset checkpoint handoff"
).split()


def weighted(rng: random.Random, choices: Sequence[tuple[str, int]]) -> str:
    return rng.choices([c for c, _ in choices], weights=[w for _, w in choices])[0]


def sentence(rng: random.Random, low: int, high: int) -> str:
    words = rng.choices(WORDS, k=rng.randint(low, high))
    return (" ".join(words)).capitalize() + "."


# ---------------------------------------------------------------------------
# The server under test: uvicorn in a child process


def serve(url: str, port: int) -> None:
    """Child process entry point: the real app on 127.0.0.1:port, as ``mneia_app``, built as
    ``mneia serve`` builds each worker's."""
    import uvicorn

    from mneia.cli import worker_app
    from mneia.http.transport import server_options

    app = worker_app(app_url(url))
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        **server_options(),
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _child_serving(
    name: str, command: list[str], port: int, patience: float, env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``command`` serving on ``port`` until the block ends: its base URL once /healthz answers, and it."""
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + patience
        while True:
            if child.poll() is not None:
                raise SystemExit(f"{name} exited with status {child.returncode}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"{name} did not answer /healthz within {patience:.0f} s")
            time.sleep(0.1)
        yield base, child
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@contextmanager
def running_server(url: str) -> Iterator[str]:
    """The app on a free local port until the block ends; yields its base URL."""
    port = free_port()
    command = [sys.executable, __file__, "--serve", url, "--port", str(port)]
    with _child_serving("the server", command, port, 30) as (base, _):
        yield base


@contextmanager
def mneia_serve(url: str, workers: int) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The real command on a free port until the block ends; yields its base URL and process."""
    port = free_port()
    command = [sys.executable, "-m", "mneia.cli", "serve", "--port", str(port), "--log-level", "warning"]
    env = {**os.environ, "DATABASE_URL": url}
    with _child_serving("mneia serve", [*command, "--workers", str(workers)], port, 60, env) as served:
        yield served


# ---------------------------------------------------------------------------
# The GraphQL client


class BenchmarkBroken(RuntimeError):
    """An answer that is wrong, not slow: the figures would mean nothing."""


async def gql(http: httpx.AsyncClient, bearer: str, query: str, **variables: Any) -> dict[str, Any]:
    response = await http.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {bearer}"},
    )
    if response.status_code != 200:
        raise BenchmarkBroken(f"HTTP {response.status_code}: {response.text[:500]}")
    body = response.json()
    if body.get("errors"):
        raise BenchmarkBroken(json.dumps(body["errors"])[:1000])
    return body["data"]


# ---------------------------------------------------------------------------
# Measurement


@dataclass
class Series:
    name: str
    target_ms: float | None
    samples: list[float] = field(default_factory=list)

    def quantile(self, q: float) -> float:
        """Nearest-rank percentile, in milliseconds."""
        ordered = sorted(self.samples)
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    def row(self) -> str:
        p50, p95, p99 = (self.quantile(q) for q in (0.50, 0.95, 0.99))
        line = (
            f"{self.name:<32}{len(self.samples):>6}{p50:>9.2f}{p95:>9.2f}{p99:>9.2f}{max(self.samples):>9.2f}"
        )
        if self.target_ms is not None:
            verdict = "met" if p95 <= self.target_ms else "MISSED"
            line += f"   p95 <= {self.target_ms:.0f} ms: {verdict}"
        return line


HEADER = f"{'':<32}{'n':>6}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}   (milliseconds)"


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await call()
    return (time.perf_counter() - started) * 1000, result


# ---------------------------------------------------------------------------
# The database's share: EXPLAIN ANALYZE as mneia_app, bound by a reader's token


class ExplainingTx(Tx):
    """A Tx that runs EXPLAIN ANALYZE of each SELECT before running it for real."""

    def __init__(self, connection: AsyncConnection, driver: asyncpg.Connection) -> None:
        super().__init__(connection, driver)
        self.connection = connection
        self.driver = driver
        self.plans: list[dict[str, Any]] = []

    async def execute(
        self,
        statement: Executable,
        params: Mapping[str, Any] | list[Mapping[str, Any]] | None = None,
    ) -> CursorResult[Any]:
        if isinstance(statement, Select) and (params is None or isinstance(params, Mapping)):
            bound = statement.params(**params) if params else statement
            sql = str(
                bound.compile(
                    dialect=self.connection.dialect,
                    compile_kwargs={"literal_binds": True, "render_postcompile": True},
                )
            )
            explained = await self.connection.exec_driver_sql(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql
            )
            plan = explained.scalar_one()
            self.plans.append(plan[0] if isinstance(plan, list) else json.loads(plan)[0])
        return await super().execute(statement, params)

    async def fetch(self, statement: Driven, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The same for a statement the driver sends (``Driven``: a page's listing and count),
        but authentication and settings, which read no table of the page."""
        sql = statement.sql.lstrip()
        reads = sql.upper().startswith(("SELECT", "WITH")) and re.search(r"\bFROM\b", sql, re.I) is not None
        if reads and "mneia_authenticate" not in sql:
            plan = await self.driver.fetchval(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, *statement.arguments(params)
            )
            self.plans.append(plan[0] if isinstance(plan, list) else json.loads(plan)[0])
        return await super().fetch(statement, params)


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """A compact rendering of a JSON plan: node type, relation, index, rows, time."""
    lines: list[str] = []

    def walk(node: dict[str, Any], depth: int) -> None:
        what = node["Node Type"]
        if "Relation Name" in node:
            what += f" on {node['Relation Name']}"
        if "Index Name" in node:
            what += f" using {node['Index Name']}"
        loops = node.get("Actual Loops", 1)
        removed = node.get("Rows Removed by Filter")
        lines.append(
            f"{'  ' * depth}{what}  rows={node.get('Actual Rows')} loops={loops}"
            f" time={node.get('Actual Total Time')} ms" + (f" filtered={removed}" if removed else "")
        )
        for child in node.get("Plans", []):
            walk(child, depth + 1)

    walk(plan["Plan"], 1)
    lines.append(f"  planning {plan['Planning Time']:.2f} ms, execution {plan['Execution Time']:.2f} ms")
    return lines


if __name__ == "__main__":
    # Only as the child process of running_server.
    parser = argparse.ArgumentParser(description="the app under test (started by running_server)")
    parser.add_argument("--serve", required=True)
    parser.add_argument("--port", type=int, required=True)
    arguments = parser.parse_args()
    serve(arguments.serve, arguments.port)
