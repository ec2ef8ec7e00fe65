"""The HTTP surface around GraphQL: the probes, GraphiQL in a browser, a query without a token.

What must stay true: ``/healthz`` answers 200 only when the database answers
``SELECT 1`` through the server's own engine, else 503 with a reason and
never a hang; ``/readyz`` answers 200 only when the database is at exactly
the migration heads this version ships, read as ``mneia_app``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.storage import migration
from mneia.storage.database import create_engine
from tests.database import scratch_database

CLOSED_PORT_URL = "postgresql://mneia_app@127.0.0.1:1/mneia"


@asynccontextmanager
async def client_for(engine: AsyncEngine) -> AsyncIterator[httpx.AsyncClient]:
    """The real app over its own engine, so that a test can point it at a broken database."""
    app = create_app(engine, dispose_engine=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://mneia.test"
    ) as client:
        yield client
    await engine.dispose()


async def test_healthz_answers_without_a_token(http: httpx.AsyncClient) -> None:
    response = await http.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_healthz_is_503_when_the_database_is_down() -> None:
    async with client_for(create_engine(CLOSED_PORT_URL)) as client:
        response = await client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "the database is unreachable"}


async def test_healthz_is_503_not_a_hang_when_the_database_accepts_but_never_answers() -> None:
    silent = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        async with client_for(create_engine(f"postgresql://mneia_app@127.0.0.1:{port}/mneia")) as client:
            response = await asyncio.wait_for(client.get("/healthz"), timeout=30)
    finally:
        silent.close()
    assert response.status_code == 503
    assert "did not answer within" in response.json()["reason"]


async def test_readyz_is_200_when_the_database_is_at_the_shipped_heads(http: httpx.AsyncClient) -> None:
    """Read as mneia_app: migrating grants it SELECT on alembic_version, and nothing more."""
    response = await http.get("/readyz")
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "ready", "revisions": sorted(migration.heads())}


async def test_readyz_grant_is_select_on_alembic_version_only(admin_engine: AsyncEngine) -> None:
    async with admin_engine.connect() as connection:
        granted = await connection.execute(
            text(
                "SELECT p, has_table_privilege('mneia_app', 'public.alembic_version', p)"
                " FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) AS p"
            )
        )
        assert dict(granted.all()) == {
            "SELECT": True,
            "INSERT": False,
            "UPDATE": False,
            "DELETE": False,
            "TRUNCATE": False,
        }


async def test_readyz_grant_is_lifted_by_a_downgrade_to_nothing(server: str) -> None:
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url)
        await asyncio.to_thread(migration.downgrade, url)
        engine = create_engine(url)
        try:
            async with engine.connect() as connection:
                app_role_left = await connection.scalar(
                    text("SELECT count(*) FROM pg_roles WHERE rolname = 'mneia_app'")
                )
                if app_role_left:  # another database on this server still uses the roles
                    readable = await connection.scalar(
                        text("SELECT has_table_privilege('mneia_app', 'public.alembic_version', 'SELECT')")
                    )
                    assert readable is False
        finally:
            await engine.dispose()


async def test_readyz_is_503_when_the_database_is_behind(
    http: httpx.AsyncClient, admin_engine: AsyncEngine
) -> None:
    async with admin_engine.begin() as connection:
        shipped = (await connection.execute(text("SELECT version_num FROM alembic_version"))).scalar_one()
        await connection.execute(text("UPDATE alembic_version SET version_num = '0001_foundation'"))
    try:
        response = await http.get("/readyz")
    finally:
        async with admin_engine.begin() as connection:
            await connection.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": shipped})
    assert response.status_code == 503
    assert response.json()["current"] == ["0001_foundation"]
    assert response.json()["expected"] == sorted(migration.heads())


async def test_readyz_is_503_on_a_database_without_the_schema(server: str) -> None:
    async with scratch_database(server) as empty, client_for(create_engine(empty)) as client:
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert "no Mneia schema" in response.json()["reason"]


async def test_readyz_is_503_when_the_database_is_down() -> None:
    async with client_for(create_engine(CLOSED_PORT_URL)) as client:
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["reason"] == "the database is unreachable"


async def test_graphiql_is_served_to_a_browser(http: httpx.AsyncClient) -> None:
    response = await http.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert "graphiql" in response.text.lower()


async def test_r14_a_query_without_a_token_is_unauthenticated(http: httpx.AsyncClient) -> None:
    response = await http.post("/graphql", json={"query": "{ me { id } }"})
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert response.json()["data"] is None
