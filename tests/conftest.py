"""A real PostgreSQL for every test: a fresh database, migrated, used as the server's role.

The GraphQL tests go through the real ASGI application over httpx; the
database tests connect as ``mneia_app`` (never a superuser), as the server does.

``MNEIA_TEST_CITUS=1``: the same, on a local Citus cluster of the session's own
(``scripts/citus.sh``), its database built by ``mneia migrate``'s Citus path, and the
application routed as ``mneia serve`` routes it there (storage.node): each request, and
each ``support.as_caller`` transaction, on the node of its workspace.
"""

from __future__ import annotations

import asyncio
import re
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
from mneia.storage.node import Nodes
from tests import citus, support
from tests.database import scratch_database, server_url
from tests.graphql import Api

CITUS = citus.ON_CLUSTER


def _interrupted(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    # A run killed with SIGTERM or a closed terminal (SIGHUP) stops as Ctrl-C does, so that
    # the session's teardown runs and the embedded server stops with it (issue 21: a killed
    # run left it running). SIGKILL leaves nothing to run.
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _interrupted)
    # Not under pytest's basetemp: pytest prunes old basetemps, which would pull
    # the data directory from under a concurrent run's embedded server.
    scratch = Path(tempfile.mkdtemp(prefix="mneia-pg-"))
    try:
        if CITUS:
            # The cluster's state outside pytest's basetemp (mode 0700): as root the nodes run as
            # another user, who must reach their data directories.
            state = scratch / "citus"
            try:
                citus.output("up", state=state, timeout=citus.BUILD_TIMEOUT)
                yield str(state)
            finally:
                citus.run("down", state=state)
            return
        with server_url(scratch) as url:
            yield url
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="session")
async def admin_url(server: str) -> AsyncIterator[str]:
    """A fresh, migrated database for this run, dropped afterwards (on Citus, with the cluster)."""
    if CITUS:
        created = re.search(r"DATABASE_URL=(\S+)", citus.output("createdb", "mneia", state=Path(server)))
        assert created, "citus.sh createdb printed no DATABASE_URL"
        await asyncio.to_thread(migration.upgrade, created.group(1))
        yield created.group(1)
        return
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url)
        yield url


@pytest.fixture(scope="session")
async def admin_engine(admin_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(admin_url, pool_size=2)
    routed = support.ROUTED_ADMIN = Nodes(engine, pool_size=2) if CITUS else None
    yield engine
    support.ROUTED_ADMIN = None
    if routed is not None:
        await routed.dispose()
    await engine.dispose()


@pytest.fixture(scope="session")
async def engine(admin_url: str) -> AsyncIterator[AsyncEngine]:
    """The server's engine: connected as mneia_app, bound by row-level security."""
    engine = create_engine(app_url(admin_url), pool_size=5)
    # On Citus, as_caller's transactions run on their workspace's node (support.ROUTED).
    routed = support.ROUTED = Nodes(engine, pool_size=5) if CITUS else None
    yield engine
    support.ROUTED = None
    if routed is not None:
        await routed.dispose()
    await engine.dispose()


@pytest.fixture(scope="session")
def nodes(engine: AsyncEngine) -> Nodes | None:
    """On Citus (``MNEIA_TEST_CITUS``), the workspace → node map the server routes by."""
    return support.ROUTED


@pytest.fixture(scope="session")
async def http(engine: AsyncEngine, nodes: Nodes | None) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(engine, dispose_engine=False, nodes=nodes)
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
}
"""Modules whose tests start ``mneia serve``, a browser, the Node clients or other programs, or run
schema-wide fuzzing: ``pytest -m "not slow"`` leaves them out (README, Install and test)."""


NOT_ON_CITUS = {
    "test_r1_context_is_transaction_local_on_a_pooled_connection": (
        "connects an engine of its own to the coordinator, where a token binds nobody"
    ),
    "test_r11_9_candidates_are_chosen_in_sql_with_indexes_never_the_whole_project": (
        "EXPLAIN ANALYZE after local execution in the transaction: Citus refuses to switch local"
        " execution off; the plans asserted are one server's"
    ),
    "test_r11_9_full_text_search_may_use_its_index_under_row_level_security": (
        "authenticates as the administrator on the coordinator, where a token binds nobody"
    ),
    "test_r11_a_half_written_supersession_never_breaks_a_slice": (
        "writes past every guard with session_replication_role through the coordinator; the setting"
        " does not reach the workers' shards, whose triggers refuse the write"
    ),
    "test_r15_on_one_server_the_hub_holds_one_listening_connection": (
        "one server's: on Citus the hub listens on every node (tests/test_citus_notify.py)"
    ),
    "test_f6_no_acknowledged_dispute_is_lost_across_a_postgresql_restart": (
        "restarts an embedded server of its own, not a cluster"
    ),
    "test_f15_r1_an_event_is_read_once_per_token_not_once_per_subscriber": (
        "counts the statements sent through the coordinator's engine; routed, they go through the"
        " nodes' pools"
    ),
    "test_r1_every_statement_of_the_request_path_states_its_workspace": (
        "reads one server's plans; on Citus the coordinator's are read for fan-out instead"
        " (test_r1_on_citus_no_statement_of_the_request_path_fans_out)"
    ),
    "test_r1_the_statements_inside_the_databases_functions_state_it_too": (
        "loads auto_explain on a connection of its own to the coordinator, where a token binds nobody"
    ),
    "test_r1_the_checker_finds_a_statement_that_leaves_its_workspace_out": (
        "the controls of one server's plans; on Citus a router plan hides its scans in the worker's"
    ),
    "test_f6_a_subscriber_is_told_when_what_it_missed_cannot_be_read_again": (
        "restarts an embedded server of its own, not a cluster: on one server the same test runs"
    ),
}
"""Tests whose own mechanics do not apply on a Citus cluster (``MNEIA_TEST_CITUS``), and why."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if CITUS and item.name.split("[")[0] in NOT_ON_CITUS:
            item.add_marker(pytest.mark.skip(reason=NOT_ON_CITUS[item.name.split("[")[0]]))
        module = getattr(item, "module", None)
        if module is not None and module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
