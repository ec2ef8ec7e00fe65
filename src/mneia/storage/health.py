"""What the probes ask the database: that it answers, and at which migration revision.

Both run through the server's own engine (as ``mneia_app``); the caller bounds
them with ``asyncio.timeout`` so that a probe never hangs on a silent database.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage import migration


async def ping(engine: AsyncEngine) -> None:
    """Return when the database answered ``SELECT 1``; raise otherwise."""
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))


async def revisions(engine: AsyncEngine) -> set[str] | None:
    """The database's migration revisions (``migration.current``)."""
    async with engine.connect() as connection:
        return await migration.current(connection)
