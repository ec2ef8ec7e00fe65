"""Apply the alembic migrations programmatically (``mneia migrate``, ``mneia serve``, tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

import mneia


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


def upgrade(admin_url: str, revision: str = "head") -> None:
    command.upgrade(config(admin_url), revision)


def downgrade(admin_url: str, revision: str = "base") -> None:
    command.downgrade(config(admin_url), revision)


def run_beside(revision_file: str, direction: str) -> None:
    """Run a revision's SQL, kept beside it as ``<revision>.<direction>.sql``, in its transaction."""
    from alembic import op
    from sqlalchemy.util import await_only

    sql = Path(revision_file).with_suffix(f".{direction}.sql").read_text(encoding="utf-8")
    # asyncpg prepares single statements only; its plain execute runs a script.
    await_only(op.get_bind().connection.driver_connection.execute(sql))  # type: ignore[union-attr]
