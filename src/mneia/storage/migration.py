"""Apply the alembic migrations programmatically (``mneia migrate``, ``mneia serve``, tests)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

import mneia
from mneia.storage.database import lone_engine


def script_location() -> Path:
    """The migrations: shipped inside the wheel, or the checkout's ``alembic/`` folder."""
    packaged = Path(mneia.__file__).parent / "_alembic"
    if packaged.is_dir():
        return packaged
    return Path(mneia.__file__).resolve().parents[2] / "alembic"


def config(admin_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    cfg.attributes["url"] = admin_url
    return cfg


def upgrade(admin_url: str, revision: str = "head", on_step: Callable[[str], None] | None = None) -> None:
    """Apply the migrations up to ``revision``; ``on_step`` hears each revision's id once it is applied
    (they commit together, at the end)."""
    cfg = config(admin_url)
    if on_step is not None:
        cfg.attributes["on_step"] = on_step
    command.upgrade(cfg, revision)


def downgrade(admin_url: str, revision: str = "base") -> None:
    command.downgrade(config(admin_url), revision)


def run_beside(revision_file: str, direction: str) -> None:
    """Run a revision's SQL, kept beside it as ``<revision>.<direction>.sql``, in its transaction."""
    from alembic import op
    from sqlalchemy.util import await_only

    sql = Path(revision_file).with_suffix(f".{direction}.sql").read_text(encoding="utf-8")
    # asyncpg prepares single statements only; its plain execute runs a script.
    await_only(op.get_bind().connection.driver_connection.execute(sql))  # type: ignore[union-attr]


def heads() -> set[str]:
    """The revisions this version of Mneia ships as heads: a current database is at exactly these."""
    from alembic.script import ScriptDirectory

    return set(ScriptDirectory.from_config(config("")).get_heads())


async def current(connection: AsyncConnection) -> set[str] | None:
    """The revisions the database is at; None when it has no Mneia schema yet."""
    if await connection.scalar(text("SELECT to_regclass('public.alembic_version')")) is None:
        return None
    rows = await connection.execute(text("SELECT version_num FROM alembic_version"))
    return {row[0] for row in rows}


# The server's role may read which revision the database is at (its readiness
# probe), nothing else of alembic's own table. The grant is lifted while the
# migrations run and given back only when the database is at a revision, so
# that a downgrade to nothing can still drop the roles.
_WHEN_BOTH_EXIST = """
DO $$
BEGIN
  IF to_regclass('public.alembic_version') IS NOT NULL
     AND EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'mneia_app') THEN
    %s
  END IF;
END
$$
"""
_GRANT_REVISION = _WHEN_BOTH_EXIST % (
    "IF EXISTS (SELECT FROM public.alembic_version) THEN"
    " GRANT SELECT ON public.alembic_version TO mneia_app; END IF;"
)
_REVOKE_REVISION = _WHEN_BOTH_EXIST % "REVOKE ALL ON public.alembic_version FROM mneia_app;"


def revision_readable(connection: Connection, readable: bool) -> None:
    """Grant (or revoke) the server's role SELECT on alembic_version, when both exist."""
    connection.exec_driver_sql(_GRANT_REVISION if readable else _REVOKE_REVISION)


# ALTER ROLE takes no bind parameters: PostgreSQL itself quotes the literal (%L).
_ALTER_PASSWORD = text(
    "SELECT format('ALTER ROLE %I PASSWORD %L', CAST(:role AS text), CAST(:password AS text))"
)


async def set_password(admin_url: str, role: str, password: str) -> None:
    """Set ``role``'s password (the server's login role, after a migration made it)."""
    engine = lone_engine(admin_url)
    try:
        async with engine.begin() as connection:
            statement = await connection.scalar(_ALTER_PASSWORD, {"role": role, "password": password})
            await connection.exec_driver_sql(statement)
    finally:
        await engine.dispose()
