"""F10, F15: an operation that reads nothing still has its token checked, in one statement.

``{ __typename }`` with a token opens no transaction (``Context.verified``):
``mneia_authenticate`` runs alone. What a client sees stays what it saw when
the token was checked inside a transaction: a missing, unknown, revoked or
expired token is refused exactly as for any other operation, and a database
that is away answers SERVICE_UNAVAILABLE.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.config import app_url
from mneia.storage import token
from mneia.storage.database import create_engine
from tests.graphql import Api, World
from tests.support import counted

TYPENAME = "{ __typename }"
NAME = "mneia-request-test"
SPOIL = {
    "revoked": text("UPDATE api_tokens SET revoked_at = now() WHERE actor_id = :a"),
    "expired": text(
        "UPDATE api_tokens SET created_at = now() - interval '2 seconds',"
        " expires_at = now() - interval '1 second' WHERE actor_id = :a"
    ),
}


async def answered(http: httpx.AsyncClient, query: str, secret: str | None) -> tuple[int, str | None, Any]:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    response = await http.post("/graphql", json={"query": query}, headers=headers)
    return response.status_code, response.headers.get("www-authenticate"), response.json()


async def spoilt(api: Api, world: World, how: str) -> str:
    """A token refused in the way ``how`` names."""
    if how == "unknown":
        return token.mint(uuid.UUID(world.workspace_id))
    agent = await api.actor(world.human.token, "AGENT", f"{how}-{uuid.uuid4().hex[:6]}")
    async with api.admin_engine.begin() as connection:
        await connection.execute(SPOIL[how], {"a": agent.id})
    return agent.token


@pytest.mark.parametrize("how", ["unknown", "revoked", "expired"])
async def test_f15_typename_with_a_refused_token_is_refused_as_any_operation(
    http: httpx.AsyncClient, api: Api, world: World, how: str
) -> None:
    secret = await spoilt(api, world, how)
    status, challenge, body = await answered(http, TYPENAME, secret)
    assert (status, challenge, body) == await answered(http, "{ me { id } }", secret)
    assert status == 401 and challenge == ("Bearer" if how == "missing" else 'Bearer error="invalid_token"')
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_f10_typename_without_a_token_needs_none(http: httpx.AsyncClient) -> None:
    assert await answered(http, TYPENAME, None) == (200, None, {"data": {"__typename": "Query"}})


async def test_f10_typename_with_a_token_sends_only_its_authentication(
    http: httpx.AsyncClient, engine: AsyncEngine, world: World
) -> None:
    with counted(engine) as statements:
        assert await answered(http, TYPENAME, world.agent.token) == (
            200,
            None,
            {"data": {"__typename": "Query"}},
        )
    assert len(statements) == 1 and "mneia_authenticate" in statements[0], statements
    with counted(engine) as statements:
        await answered(http, "{ me { id } }", world.agent.token)
    assert any("mneia_authenticate" in statement for statement in statements)


@pytest.fixture
async def droppable(admin_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The real app on its own engine, whose connections the test may drop."""
    engine = create_engine(app_url(admin_url), pool_size=2, application_name=NAME)
    app = create_app(engine)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mneia.test") as http,
    ):
        yield http


async def test_f5_typename_over_connections_dropped_while_idle_is_answered(
    droppable: httpx.AsyncClient, admin_engine: AsyncEngine, world: World
) -> None:
    assert (await answered(droppable, TYPENAME, world.agent.token))[0] == 200
    async with admin_engine.connect() as connection:
        dropped = await connection.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = :n AND datname = current_database()"
            ),
            {"n": NAME},
        )
        assert dropped.scalar_one() >= 1
    assert await answered(droppable, TYPENAME, world.agent.token) == (
        200,
        None,
        {"data": {"__typename": "Query"}},
    )


async def test_f5_typename_when_the_database_is_away_is_service_unavailable(world: World) -> None:
    app = create_app(create_engine(f"postgresql://mneia_app@127.0.0.1:1/{uuid.uuid4().hex}"))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://mneia.test"
    ) as http:
        status, _, body = await answered(http, TYPENAME, world.agent.token)
    assert status < 500 and body["errors"][0]["extensions"]["code"] == "SERVICE_UNAVAILABLE", body
    assert world.agent.token not in str(body)
