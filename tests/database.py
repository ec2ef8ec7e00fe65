"""Where the tests' PostgreSQL comes from, in order of preference.

0. ``MNEIA_TEST_CITUS=1``: a local Citus cluster (``scripts/citus.sh``) whose coordinator holds
   every shard itself, each test run's database migrated the Citus way (``citus_database``).
1. ``MNEIA_TEST_DATABASE_URL``: an existing server (CI uses the machine's own).
2. A Docker engine that answers ``GET /_ping``: a testcontainers PostgreSQL.
3. Otherwise the same embedded server ``mneia serve`` uses, in a temporary directory.

Each test run creates a fresh database on that server and drops it at the end.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path

from scripts import catalog
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from mneia.config import async_url


def docker_answers(path: str = "/var/run/docker.sock") -> bool:
    if not os.path.exists(path):
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            sock.connect(path)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            return b"200 OK" in sock.recv(256)
    except OSError:
        return False


@contextmanager
def server_url(scratch: Path) -> Iterator[str]:
    """An admin URL to a server on which test databases may be created."""
    if citus_asked():
        with citus_cluster(scratch) as url:
            yield url
        return
    explicit = os.environ.get("MNEIA_TEST_DATABASE_URL")
    if explicit:
        yield explicit
        return
    if docker_answers():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:16-alpine", driver=None) as container:
            yield container.get_connection_url()
        return
    from mneia.storage.embedded import EmbeddedServer

    server = EmbeddedServer(scratch, cleanup="delete")
    try:
        yield server.url()
    finally:
        server.stop()


def with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def fresh_name() -> str:
    return f"mneia_test_{uuid.uuid4().hex[:10]}"


def scratch_database(server: str) -> AbstractAsyncContextManager[str]:
    """A new, empty database on ``server`` (its admin URL), dropped afterwards whatever happens."""
    return catalog.scratch_database(server, prefix="mneia_test")


def citus_asked() -> bool:
    return os.environ.get("MNEIA_TEST_CITUS") == "1"


CITUS_SHARDS = 4
"""Shards per table in a test run's Citus database: each table's DDL and each policy run once per
shard, and on one node 32 shards (Citus's default) made ``mneia migrate`` take a minute."""


@contextmanager
def citus_cluster(scratch: Path) -> Iterator[str]:
    """``scripts/citus.sh up`` with its state in ``scratch``: the coordinator's maintenance URL."""
    from tests import citus

    state = scratch / "citus"
    up = citus.output("up", state=state, timeout=citus.BUILD_TIMEOUT)
    try:
        yield up.strip().removeprefix("CITUS_URL=")
    finally:
        citus.run("down", state=state)


@asynccontextmanager
async def citus_database(scratch: Path) -> AsyncIterator[str]:
    """A new database on the cluster kept in ``scratch``, made one node: the coordinator holds the
    shards, the workers are removed from it.

    That is the design's own case (docs/scale-out.md): every statement of a request runs where its
    workspace's shards are, in the backend that authenticated. So the suites run unchanged through
    one engine, against the Citus schema (distributed tables, shard triggers, both policy
    variants); what needs two nodes is tests/test_citus_*.py's."""
    from tests import citus

    state = scratch / "citus"
    name = fresh_name()
    url = citus.output("createdb", name, state=state).strip().removeprefix("DATABASE_URL=")
    engine = create_async_engine(async_url(url), isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            port = make_url(url).port
            await connection.execute(
                text("SELECT citus_set_coordinator_host('127.0.0.1', :port)"), {"port": port}
            )
            await connection.execute(
                text("SELECT citus_remove_node(nodename, nodeport) FROM pg_dist_node WHERE groupid <> 0")
            )
            await connection.execute(
                text("SELECT citus_set_node_property('127.0.0.1', :port, 'shouldhaveshards', true)"),
                {"port": port},
            )
            await connection.execute(text(f'ALTER DATABASE "{name}" SET citus.shard_count = {CITUS_SHARDS}'))
    finally:
        await engine.dispose()
    yield url
