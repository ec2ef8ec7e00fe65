"""Apply the alembic migrations programmatically (``mneia migrate``, ``mneia serve``, tests).

On a Citus coordinator the migrations are not replayed: a Citus database is always new, so
its schema is built from storage/sql with the Citus steps (``storage.citus``) and stamped at
the head revision. A Citus database at an older revision is refused, never migrated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.util import CommandError
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

import mneia
from mneia.storage import citus
from mneia.storage.database import lone_engine


def script_location() -> Path:
    """The migrations: shipped inside the wheel, or the checkout's ``alembic/`` folder."""
    packaged = Path(mneia.__file__).parent / "_alembic"
    if packaged.is_dir():
        return packaged
    return Path(mneia.__file__).resolve().parents[2] / "alembic"


def config(admin_url: str, region: str | None = None) -> Config:
    """Alembic's configuration; ``region``: the server's, which 0029 gives the workspaces that exist
    (None: ``MNEIA_REGION``, else ``local``)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    cfg.attributes["url"] = admin_url
    cfg.attributes["region"] = region
    return cfg


def upgrade(
    admin_url: str,
    revision: str = "head",
    on_step: Callable[[str], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    region: str | None = None,
) -> None:
    """Apply the migrations up to ``revision``; ``on_step`` hears each revision's id once it is applied
    (they commit together, at the end). On Citus, build the declared schema instead (``on_note``
    hears its steps, ``on_warning`` what it leaves out)."""
    if asyncio.run(citus.detected(admin_url)):
        _build_on_citus(admin_url, revision, on_note or _unheard, on_warning or _unheard)
        return
    cfg = config(admin_url, region)
    if on_step is not None:
        cfg.attributes["on_step"] = on_step
    command.upgrade(cfg, revision)


def _unheard(_: str) -> None:
    pass


def _build_on_citus(
    admin_url: str, revision: str, on_note: Callable[[str], None], on_warning: Callable[[str], None]
) -> None:
    head = heads()
    at = asyncio.run(_revisions_at(admin_url))
    if at == head:
        # Built already: a worker added since holds nothing of the build's per-node steps.
        asyncio.run(citus.refresh_workers(admin_url, on_note))
        _check_plan_cache(admin_url, on_warning)
        return
    if at is not None or revision != "head":
        raise CommandError(
            f"a Citus database is built new at the latest revision, never migrated"
            f" (at {', '.join(sorted(at or [])) or 'nothing'}, asked for {revision})"
        )
    on_note("a Citus coordinator: the declared schema is built new, distributed by workspace")
    asyncio.run(citus.build(admin_url, on_note, on_warning))
    command.stamp(config(admin_url), "head")
    on_note(f"stamped at {', '.join(sorted(head))}")
    _check_plan_cache(admin_url, on_warning)


def _check_plan_cache(admin_url: str, on_warning: Callable[[str], None]) -> None:
    """When the cluster's Citus keeps a plan per call of a keyed lookup (``citus.plans_kept``), plan
    Mneia's keyed lookups with their values instead, and warn; when it does not (fixed since the
    last run), plan them generically again, as declared."""
    leaking = citus.leaking(asyncio.run(citus.plans_kept(admin_url)))
    asyncio.run(citus.plan_keyed_lookups(admin_url, generically=not leaking))
    if leaking:
        on_warning(
            f"the Citus on {', '.join(leaking)} plans a keyed lookup again at every call and keeps"
            " every plan, so that each connection would grow with every request until the node runs"
            " out of memory: Mneia's functions now plan their lookups with their values at every"
            " call instead, which costs each request more. Install a Citus with the fix (citusdata/"
            "citus PR 8824, after 14.0.1; scripts/citus-patches/ has it for 14.0.1) and run"
            " `mneia migrate` again"
        )


async def _revisions_at(admin_url: str) -> set[str] | None:
    engine = lone_engine(admin_url)
    try:
        async with engine.connect() as connection:
            return await current(connection)
    finally:
        await engine.dispose()


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
