"""The migrations: ``upgrade head`` on an empty database, ``downgrade base`` back to nothing, and again.

The roles are cluster-wide and other test databases may be using them, so
downgrade keeps them when they are still needed; everything else it removes.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from mneia.config import async_url
from mneia.storage import migration
from tests.database import scratch_database

OBJECTS = text(
    """
    SELECT
      (SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'),
      (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'public' AND p.proname LIKE 'mneia\\_%'),
      (SELECT count(*) FROM pg_policies WHERE schemaname = 'public')
    """
)


async def _objects(url: str) -> tuple[int, int, int]:
    engine = create_async_engine(async_url(url))
    try:
        async with engine.connect() as connection:
            tables, functions, policies = (await connection.execute(OBJECTS)).one()
            return tables, functions, policies
    finally:
        await engine.dispose()


async def test_upgrade_downgrade_upgrade_on_an_empty_database(server: str) -> None:
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url)
        tables, functions, policies = await _objects(url)
        assert tables == 14 and functions >= 10 and policies >= 30

        await asyncio.to_thread(migration.downgrade, url)
        assert await _objects(url) == (0, 0, 0)

        await asyncio.to_thread(migration.upgrade, url)
        assert await _objects(url) == (tables, functions, policies)
