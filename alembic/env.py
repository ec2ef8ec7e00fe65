"""Alembic environment: migrations run over asyncpg as the database's admin.

The URL comes from the config attribute ``url`` (set by ``mneia migrate``),
else from ``DATABASE_URL``. The migrations themselves switch to the owner
role (``mneia_owner``) for every object they create.
"""

from __future__ import annotations

import asyncio
import os

from alembic import context
from alembic.runtime.migration import MigrationInfo
from sqlalchemy import pool
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from mneia.config import async_url
from mneia.storage import migration


def _url() -> str:
    url = context.config.attributes.get("url") or os.environ.get("DATABASE_URL")
    if not url:
        raise SystemExit("mneia: set DATABASE_URL to the database to migrate")
    return async_url(url)


def _announced(ctx: object, step: MigrationInfo, heads: object, run_args: object) -> None:
    """Tell ``mneia serve`` and ``mneia migrate`` of each revision as it is applied (``on_step``)."""
    said = context.config.attributes.get("on_step")
    if said is not None:
        said(", ".join(step.destination_revision_ids))


def _run(connection: Connection) -> None:
    context.configure(connection=connection, transactional_ddl=True, on_version_apply=_announced)
    with context.begin_transaction():
        migration.revision_readable(connection, False)
        context.run_migrations()
        migration.revision_readable(connection, True)


async def _run_async() -> None:
    engine = create_async_engine(_url(), poolclass=pool.NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    raise SystemExit("mneia: offline (--sql) migrations are not supported")

connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    asyncio.run(_run_async())
