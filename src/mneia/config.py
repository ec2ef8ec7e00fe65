"""Settings read from the environment, and the database URLs derived from them.

``DATABASE_URL`` names a server with an administrative role: migrations and
``admin bootstrap`` use it. The GraphQL server never connects with it: it
connects as ``mneia_app`` (R1), by ``MNEIA_APP_DATABASE_URL`` when given, else
by the admin URL with the user swapped for ``mneia_app`` (and the password
from ``MNEIA_APP_PASSWORD``, if any).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from sqlalchemy.engine import make_url

APP_ROLE = "mneia_app"
OWNER_ROLE = "mneia_owner"


def async_url(url: str) -> str:
    """The same URL with the asyncpg driver named, whatever scheme it came with."""
    parsed = make_url(url)
    if parsed.drivername in ("postgres", "postgresql", "postgresql+psycopg", "postgresql+psycopg2"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    if parsed.drivername != "postgresql+asyncpg":
        raise ValueError(f"DATABASE_URL: expected a postgresql:// URL, got {parsed.drivername}://")
    return parsed.render_as_string(hide_password=False)


def app_url(admin_url: str, password: str | None = None) -> str:
    """The URL the server uses: the admin URL's server and database, as ``mneia_app``."""
    parsed = make_url(async_url(admin_url)).set(username=APP_ROLE, password=password)
    return parsed.render_as_string(hide_password=False)


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("mneia", appauthor=False))


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    app_database_url: str | None
    app_password: str | None
    data_dir: Path

    @classmethod
    def from_env(cls, data_dir: Path | None = None) -> Settings:
        env = os.environ
        return cls(
            database_url=env.get("DATABASE_URL") or None,
            app_database_url=env.get("MNEIA_APP_DATABASE_URL") or None,
            app_password=env.get("MNEIA_APP_PASSWORD") or None,
            data_dir=data_dir or Path(env.get("MNEIA_DATA_DIR") or default_data_dir()),
        )

    def server_url(self, admin_url: str) -> str:
        if self.app_database_url:
            return async_url(self.app_database_url)
        return app_url(admin_url, self.app_password)
