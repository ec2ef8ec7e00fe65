"""A real PostgreSQL for every test: a fresh database, migrated, used as the server's role.

The GraphQL tests go through the real ASGI application over httpx; the
database tests connect as ``mneia_app`` (never a superuser), as the server does.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.config import app_url
from mneia.storage import migration, workspace
from mneia.storage.database import create_engine
from tests.database import citus_asked, citus_database, scratch_database, server_url
from tests.graphql import Api


def _interrupted(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def server_scratch() -> Iterator[Path]:
    # Not under pytest's basetemp: pytest prunes old basetemps, which would pull
    # the data directory from under a concurrent run's embedded server.
    directory = Path(tempfile.mkdtemp(prefix="mneia-pg-"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def server(server_scratch: Path) -> Iterator[str]:
    # A run killed with SIGTERM or a closed terminal (SIGHUP) stops as Ctrl-C does, so that
    # the session's teardown runs and the embedded server stops with it (issue 21: a killed
    # run left it running). SIGKILL leaves nothing to run.
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _interrupted)
    with server_url(server_scratch) as url:
        yield url


@pytest.fixture(scope="session")
async def admin_url(server: str, server_scratch: Path) -> AsyncIterator[str]:
    """A fresh, migrated database for this run, dropped afterwards (on Citus, with the cluster)."""
    async with citus_database(server_scratch) if citus_asked() else scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url)
        yield url


@pytest.fixture(scope="session")
async def admin_engine(admin_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(admin_url, pool_size=2)
    yield engine
    await engine.dispose()


@pytest.fixture(scope="session")
async def engine(admin_url: str) -> AsyncIterator[AsyncEngine]:
    """The server's engine: connected as mneia_app, bound by row-level security."""
    engine = create_engine(app_url(admin_url), pool_size=5)
    yield engine
    await engine.dispose()


@pytest.fixture(scope="session")
async def http(engine: AsyncEngine) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(engine, dispose_engine=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://mneia.test") as client:
        yield client


@pytest.fixture(scope="session")
def api(http: httpx.AsyncClient, admin_engine: AsyncEngine) -> Api:
    return Api(http, admin_engine)


@pytest.fixture
async def world(api: Api) -> Any:
    """A workspace with a human, an agent, a project they both work in."""
    return await api.world()


__all__ = ["workspace"]


SLOW_MODULES = {
    "test_cli",
    "test_real_clients",
    "test_mcp_clients",
    "test_mcp_config",
    "test_graphiql",
    "test_inbox_browser",
    "test_graphql_http_audit",
    "test_edge",
    "test_input_matrix",
    "test_regions",
}
"""Modules whose tests start ``mneia serve``, a browser, the Node clients or other programs, or run
schema-wide fuzzing: ``pytest -m "not slow"`` leaves them out (README, Install and test)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
