"""The declared database: every role, table, policy, function and trigger, by concern.

``storage/sql/*.sql`` holds the current definition of each object, once; read
them in ``FILES`` order. The migrations must arrive at exactly this schema:
``tests/test_declared.py`` migrates one database, applies these files to
another and compares the two catalogues object by object, and
``python -m scripts.catalog`` prints the SQL a new migration starts from.
"""

from __future__ import annotations

from importlib.resources import files

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from mneia.config import OWNER_ROLE

FILES = (
    "roles.sql",  # applied as the administrator; the rest as the owner
    "tables.sql",
    "context.sql",
    "visibility.sql",
    "authority.sql",
    "events.sql",
    "identity.sql",
    "privacy.sql",
    "counts.sql",
    "announcements.sql",
    "grants.sql",
)

# Names in DDL resolve when it runs: never through a temporary schema (pg_temp last).
SAFE_SEARCH_PATH = "SET LOCAL search_path = public, pg_catalog, pg_temp"


def read(name: str) -> str:
    return files("mneia.storage").joinpath("sql", name).read_text(encoding="utf-8")


async def script(connection: AsyncConnection, sql: str) -> None:
    """Run several statements at once (asyncpg prepares single statements only)."""
    raw = await connection.get_raw_connection()
    await raw.driver_connection.execute(sql)  # type: ignore[union-attr]


async def apply(connection: AsyncConnection) -> None:
    """Create the declared schema in an empty database, inside the connection's transaction."""
    # Through SQLAlchemy first: the driver's transaction begins with the first statement.
    await connection.execute(text(SAFE_SEARCH_PATH))
    await script(connection, read(FILES[0]))
    await script(connection, f"SET LOCAL ROLE {OWNER_ROLE}")
    for name in FILES[1:]:
        await script(connection, read(name))
    await script(connection, "RESET ROLE")
