"""The regions' directory: workspace id → region, and persons' memberships, by ids only.

It lives in a database of its own (``MNEIA_DIRECTORY_URL``), never in a
region's: a region's database holds whole workspaces and nothing of another
region's, and the directory holds no content of anyone's (storage/sql/
directory.sql says what it holds). Serving a request never reads it: a token
names its region (storage.token). ``mneia admin bootstrap`` records each new
workspace here after creating it in its region's database; sign-in across
regions would read it to find a person's workspaces (not built yet:
docs/scale-out.md).

Its schema is versioned by ``directory_version``: ``migrate`` applies the
steps after the version it finds, under an advisory lock, in one
transaction; running it again does nothing.
"""

from __future__ import annotations

import uuid
from importlib.resources import files

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from mneia.storage.database import lone_engine

VERSION = 1
"""The directory's schema version: the number of steps in storage/sql/directory.sql."""
_LOCK = 0x6D6E6469  # "mndi": one migration of the directory at a time


def _steps() -> list[str]:
    """The SQL of each version, split at its ``-- Version N.`` line."""
    sql = files("mneia.storage").joinpath("sql", "directory.sql").read_text(encoding="utf-8")
    return [part.split("\n", 1)[1] for part in sql.split("-- Version ")[1:]]


async def _script(connection: AsyncConnection, sql: str) -> None:
    raw = await connection.get_raw_connection()
    await raw.driver_connection.execute(sql)  # type: ignore[union-attr]


async def migrate(url: str) -> int:
    """Create or upgrade the directory at ``url`` (an administrator's); the version it is at after."""
    engine = lone_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("SELECT pg_advisory_xact_lock(:lock)"), {"lock": _LOCK})
            await connection.execute(
                text("CREATE TABLE IF NOT EXISTS directory_version (version integer NOT NULL)")
            )
            found = (await connection.execute(text("SELECT max(version) FROM directory_version"))).scalar()
            at = found or 0
            steps = _steps()
            if at > len(steps):
                raise RuntimeError(f"the directory is at version {at}, newer than this Mneia's {len(steps)}")
            for step in steps[at:]:
                await _script(connection, step)
            if at < len(steps):
                await connection.execute(text("DELETE FROM directory_version"))
                await connection.execute(
                    text("INSERT INTO directory_version (version) VALUES (:v)"), {"v": len(steps)}
                )
            return len(steps)
    finally:
        await engine.dispose()


async def record(url: str, workspace_id: uuid.UUID, region: str, identity_id: uuid.UUID | None) -> None:
    """Record a new workspace's region, and its first person's membership, in one transaction."""
    engine = lone_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text("INSERT INTO directory_workspaces (id, region) VALUES (:id, :region)"),
                {"id": workspace_id, "region": region},
            )
            if identity_id is not None:
                await connection.execute(
                    text("INSERT INTO directory_identities (id) VALUES (:id) ON CONFLICT (id) DO NOTHING"),
                    {"id": identity_id},
                )
                await connection.execute(
                    text("INSERT INTO directory_memberships (identity_id, workspace_id) VALUES (:p, :w)"),
                    {"p": identity_id, "w": workspace_id},
                )
    finally:
        await engine.dispose()


async def region_of(url: str, workspace_id: uuid.UUID) -> str | None:
    """The region holding the workspace; None when the directory has no such workspace."""
    engine = lone_engine(url)
    try:
        async with engine.connect() as connection:
            found = await connection.execute(
                text("SELECT region FROM directory_workspaces WHERE id = :id"), {"id": workspace_id}
            )
            return found.scalar()
    finally:
        await engine.dispose()
