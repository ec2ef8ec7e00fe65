"""F5: a database that drops connections or is away never shows a client its internals.

Clients see SERVICE_UNAVAILABLE (retryable) with a request id, and the log
has the same id; never the SQL, the parameters (a token's digest) or driver
text. A connection dropped while idle in the pool is replaced without the
client noticing, and an operation answered as done was committed.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from graphql import GraphQLError
from mneia.app import create_app
from mneia.config import app_url, async_url
from mneia.resolvers.request.errors import present
from mneia.storage.database import TransactionEnded, create_engine, transaction
from mneia.storage.token import digest
from tests.graphql import World
from tests.support import ASSERT_ITEM, rows

pytestmark = pytest.mark.asyncio

NAME = "mneia-failure-test"
DROP_CONNECTIONS = text(
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
    " WHERE application_name = :name AND datname = current_database()"
)


@pytest.fixture
async def client(admin_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The real app on its own engine, whose connections the test may drop."""
    engine = create_engine(app_url(admin_url), pool_size=3, application_name=NAME)
    app = create_app(engine)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mneia.test") as http,
    ):
        yield http


async def post(http: httpx.AsyncClient, token: str, query: str, **variables: Any) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    response = await http.post("/graphql", json={"query": query, "variables": variables}, headers=headers)
    assert response.status_code < 500, response.text
    return response.json()


def assert_nothing_internal(body: dict[str, Any], token: str) -> None:
    shown = str(body)
    for secret in ("SQL", "mneia_authenticate", "asyncpg", "sqlalchemy", digest(token), token):
        assert secret not in shown, f"{secret!r} reached the client: {shown}"


async def drop_connections(admin_engine: AsyncEngine) -> int:
    async with admin_engine.connect() as connection:
        return (await connection.execute(DROP_CONNECTIONS, {"name": NAME})).scalar_one()


async def test_f5_connections_dropped_while_idle_are_replaced(
    client: httpx.AsyncClient, admin_engine: AsyncEngine, world: World
) -> None:
    token = world.agent.token
    assert "errors" not in await post(client, token, "{ me { id } }")
    assert await drop_connections(admin_engine) >= 1
    body = await post(client, token, "{ me { id } }")
    assert body.get("errors") is None, body
    assert body["data"]["me"]["id"] == world.agent.id


async def test_f5_a_database_that_is_away_answers_service_unavailable_and_logs_the_request_id(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    closed = f"postgresql://mneia_app@127.0.0.1:1/{uuid.uuid4().hex}"
    app = create_app(create_engine(closed))
    transport = httpx.ASGITransport(app=app)
    token = world.agent.token
    with caplog.at_level(logging.WARNING, logger="mneia"):
        async with httpx.AsyncClient(transport=transport, base_url="http://mneia.test") as http:
            body = await post(http, token, "{ me { id } }")
    assert_nothing_internal(body, token)
    [error] = body["errors"]
    assert error["extensions"]["code"] == "SERVICE_UNAVAILABLE"
    request_id = error["extensions"]["requestId"]
    assert request_id in error["message"]
    assert any(request_id in record.getMessage() for record in caplog.records)


async def test_f5_a_connection_refused_while_it_opens_answers_service_unavailable(
    admin_url: str, world: World
) -> None:
    """The server reaches the database but cannot open a connection (here: a role it does not
    know; under load, a connection dropped during its setup): the database's absence, not a bug."""
    refused = make_url(app_url(admin_url)).set(username=f"nobody_{uuid.uuid4().hex[:8]}", password=None)
    engine = create_engine(refused.render_as_string(hide_password=False))
    app = create_app(engine)
    token = world.agent.token
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://mneia.test"
    ) as http:
        body = await post(http, token, "{ me { id } }")
    await engine.dispose()
    assert_nothing_internal(body, token)
    [error] = body["errors"]
    assert error["extensions"]["code"] == "SERVICE_UNAVAILABLE", error


async def test_f5_connections_dropped_under_load_answer_cleanly_and_acknowledged_writes_are_kept(
    client: httpx.AsyncClient, admin_engine: AsyncEngine, world: World
) -> None:
    """Writers and a connection killer race: every answer is a success or a clean error, and
    every assertion answered with an id is in the database."""
    token = world.agent.token
    acknowledged: list[str] = []
    codes: set[str] = set()

    async def writer(n: int) -> None:
        for i in range(15):
            given = {"projectId": world.project_id, "kind": "FACT", "statement": f"F5 write {n}.{i}"}
            body = await post(client, token, ASSERT_ITEM, i=given)
            assert_nothing_internal(body, token)
            if body.get("errors"):
                codes.update(error["extensions"]["code"] for error in body["errors"])
            else:
                acknowledged.append(body["data"]["assertItem"]["id"])

    async def killer() -> None:
        for _ in range(10):
            await drop_connections(admin_engine)
            await asyncio.sleep(0.03)

    await asyncio.gather(killer(), *(writer(n) for n in range(3)))
    assert codes <= {"SERVICE_UNAVAILABLE"}, codes
    assert acknowledged, "some writes must have succeeded"
    stored = await rows(
        admin_engine, "SELECT id::text FROM items WHERE id = ANY(CAST(:ids AS uuid[]))", ids=acknowledged
    )
    assert {row["id"] for row in stored} == set(acknowledged)


async def test_f5_a_transaction_that_ended_waits_for_its_statement_in_flight_and_refuses_later_ones(
    engine: AsyncEngine,
) -> None:
    """graphql-core answers as soon as an error bubbles out of a synchronous field, settling the
    sibling fields in the background: none of their statements may run on the connection once
    it is back in the pool (another request's), nor be cut off mid-flight by the rollback."""
    in_flight: asyncio.Task[object] | None = None
    async with transaction(engine) as tx:
        in_flight = asyncio.create_task(tx.execute(text("SELECT 1 FROM pg_sleep(0.3)")))
        await asyncio.sleep(0.05)  # the statement is running when the operation ends
        tx.fail()
    assert in_flight.done(), "the transaction ended before its statement in flight finished"
    assert in_flight.result().scalar_one() == 1  # type: ignore[attr-defined]
    with pytest.raises(TransactionEnded):
        await tx.execute(text("SELECT 1"))


async def test_issue_21_a_statement_timeout_is_too_expensive_not_retry(
    admin_url: str, admin_engine: AsyncEngine, world: World
) -> None:
    """A statement the database stops at its ``statement_timeout`` answered SERVICE_UNAVAILABLE,
    "retry shortly": the same request would only time out again. Here the timeout is 300 ms and
    the items table is locked by another transaction, so the page waits until the database
    stops it: TOO_EXPENSIVE, the field named, nothing internal shown."""
    engine = create_async_engine(
        async_url(app_url(admin_url)),
        connect_args={"server_settings": {"application_name": NAME, "statement_timeout": "300"}},
    )
    app = create_app(engine)
    page = "query($p: ID!) { items(projectId: $p) { nodes { id } } }"
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mneia.test") as http,
            admin_engine.connect() as holder,
        ):
            await holder.execute(text("BEGIN"))
            await holder.execute(text("LOCK TABLE items IN ACCESS EXCLUSIVE MODE"))
            body = await post(http, world.agent.token, page, p=world.project_id)
            await holder.execute(text("ROLLBACK"))
            assert_nothing_internal(body, world.agent.token)
            [error] = body["errors"]
            assert error["extensions"]["code"] == "TOO_EXPENSIVE", error
            assert error["message"].startswith("items: ") and "statement_timeout" in error["message"]
            assert "errors" not in await post(http, world.agent.token, page, p=world.project_id)
    finally:
        await engine.dispose()


async def test_issue_21_a_full_disk_stays_service_unavailable() -> None:
    """What the fault runs saw (a full disk answered SERVICE_UNAVAILABLE) stays so, beside the
    statement timeout's own code: the same error boundary tells them apart by SQLSTATE."""

    def answered(driver_error: Exception) -> str:
        wrapped = DBAPIError("INSERT ...", None, driver_error, connection_invalidated=False)
        error = GraphQLError("failed", original_error=wrapped, path=["assertItem"])
        return str((present(error).extensions or {})["code"])

    assert answered(asyncpg.exceptions.DiskFullError("could not extend file: No space left on device")) == (
        "SERVICE_UNAVAILABLE"
    )
    timed_out = asyncpg.exceptions.QueryCanceledError("canceling statement due to statement timeout")
    assert answered(timed_out) == "TOO_EXPENSIVE"
    cancelled = asyncpg.exceptions.QueryCanceledError("canceling statement due to user request")
    assert answered(cancelled) == "SERVICE_UNAVAILABLE"
