"""What the probes ask the database: that it answers, and at which migration revision.

``ping`` and ``revisions`` run through the server's own engine (as
``mneia_app``); the caller bounds them with ``asyncio.timeout`` so that a
probe never hangs on a silent database. ``answers`` and ``revisions_at`` are
the commands' checks of a URL before they act, each on a connection of its
own.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage import migration
from mneia.storage.database import lone_engine


async def ping(engine: AsyncEngine) -> None:
    """Return when the database answered ``SELECT 1``; raise otherwise."""
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))


async def revisions(engine: AsyncEngine) -> set[str] | None:
    """The database's migration revisions (``migration.current``)."""
    async with engine.connect() as connection:
        return await migration.current(connection)


async def answers(url: str, *, connect_timeout: float) -> None:
    """Return when the database at ``url`` answered ``SELECT 1`` on a new connection; raise otherwise
    (a wrong host, port or password, or no connection within ``connect_timeout`` seconds)."""
    engine = lone_engine(url, connect_timeout=connect_timeout)
    try:
        await ping(engine)
    finally:
        await engine.dispose()


async def revisions_at(url: str) -> set[str] | None:
    """The migration revisions of the database at ``url``, on a new connection (``migration.current``)."""
    engine = lone_engine(url)
    try:
        return await revisions(engine)
    finally:
        await engine.dispose()
