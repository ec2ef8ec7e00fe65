"""Where the tests' PostgreSQL comes from, in order of preference.

1. ``MNEIA_TEST_DATABASE_URL``: an existing server (CI uses the machine's own).
2. A Docker engine that answers ``GET /_ping``: a testcontainers PostgreSQL.
3. Otherwise the same embedded server ``mneia serve`` uses, in a temporary directory.

Each test run creates a fresh database on that server and drops it at the end.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path

from scripts import catalog
from sqlalchemy.engine import make_url


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
