"""Settings read from the environment, and the database URLs derived from them.

``DATABASE_URL`` names a server with an administrative role: migrations and
``admin bootstrap`` use it. The GraphQL server never connects with it: it
connects as ``mneia_app`` (R1), by ``MNEIA_APP_DATABASE_URL`` when given, else
by the admin URL with the user swapped for ``mneia_app`` (and the password
from ``MNEIA_APP_PASSWORD``, if any).

``MNEIA_CORS_ORIGINS`` (comma-separated ``scheme://host[:port]``, or ``*``)
names the browser origins allowed to call the API; unset, there is no CORS.
``MNEIA_PERSISTED_QUERY_BYTES`` bounds the persisted queries' memory.

``MNEIA_REGION`` names the region of this server's database: where ``admin
bootstrap`` creates workspaces and what ``migrate`` gives the workspaces made
before regions (each workspace's own is ``Workspace.region``);
``MNEIA_REGIONS`` (``eu=postgresql://…,us=postgresql://…``) names several,
each by the URL the server connects to it with, for ``mneia serve`` to serve
them all; ``MNEIA_DIRECTORY_URL`` the regions' directory (storage.directory).
``MNEIA_OIDC_ISSUER``, ``MNEIA_OIDC_CLIENT_ID``, ``MNEIA_OIDC_CLIENT_SECRET``
and ``MNEIA_PUBLIC_URL`` turn on sign-in with an OpenID provider (all four, or
none: docs/identity.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
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


DEFAULT_PERSISTED_QUERY_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The largest answer /graphql sends (http.view.too_large); the cost rule stops most before."""
DEFAULT_MAX_WEBSOCKETS_PER_TOKEN = 100
"""Websocket connections one token holds open in one server process."""
DEFAULT_MAX_SUBSCRIPTIONS_PER_TOKEN = 500
"""Subscriptions one token may hold open in one server process (a dashboard needs a few)."""
"""The largest request body read (http.limits): 200 items of 20,000 characters fit in it."""
_ORIGIN = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[^/\s:\[\]]+)(:\d{1,5})?")


def cors_origins(value: str | None) -> tuple[str, ...]:
    """``MNEIA_CORS_ORIGINS`` as origins (no path, no trailing slash); empty when unset."""
    origins = tuple(origin.strip().rstrip("/") for origin in (value or "").split(",") if origin.strip())
    for origin in origins:
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise ValueError(
                f"MNEIA_CORS_ORIGINS: {origin!r} is not an origin; expected scheme://host[:port] or *"
            )
    return origins


def byte_count(name: str, value: str | None, default: int) -> int:
    return positive_count(name, value, default, "bytes")


def positive_count(name: str, value: str | None, default: int, of: str = "") -> int:
    if not value:
        return default
    if not value.isdigit() or int(value) <= 0:
        unit = f" of {of}" if of else ""
        raise ValueError(f"{name}: expected a positive number{unit}, got {value!r}")
    return int(value)


DEFAULT_REGION = "local"
"""The region of a server that names none; its tokens name no region (storage.token)."""
REGION_PATTERN = r"[a-z0-9]+(-[a-z0-9]+)*"
"""A region's name: lowercase letters and digits, words joined by single hyphens, at most 32
characters. No underscore, so that a token's region part reads unambiguously (``mneia_eu_…``);
the database's CHECK on ``workspaces.region`` (storage/sql/tables.sql) says the same."""
REGION_LENGTH = 32
_REGION = re.compile(REGION_PATTERN)


def region(value: str | None = None, *, name: str = "MNEIA_REGION") -> str:
    """``MNEIA_REGION`` (or ``value``): the region of this server's database, where it creates workspaces."""
    given = (os.environ.get("MNEIA_REGION") if value is None else value) or DEFAULT_REGION
    if len(given) > REGION_LENGTH or not _REGION.fullmatch(given):
        raise ValueError(
            f"{name}: {given!r} is not a region (lowercase letters and digits, words joined by '-',"
            f" at most {REGION_LENGTH} characters)"
        )
    return given


_REGION_ENTRY = re.compile(r",\s*(?=[a-z0-9-]+=)")


def regions(value: str | None, *, name: str = "MNEIA_REGIONS") -> tuple[tuple[str, str], ...]:
    """``MNEIA_REGIONS``: ``name=URL`` pairs, comma-separated, in order; empty when unset. Each URL is
    the one the server connects with (``mneia_app`` and that region's password). The same form
    for ``MNEIA_REGIONS_ADMIN`` (``name``), each region's administrator's URL."""
    found: dict[str, str] = {}
    for entry in _REGION_ENTRY.split((value or "").strip()):
        if not entry.strip():
            continue
        named, equals, url = entry.strip().partition("=")
        if not equals or not url.strip():
            raise ValueError(f"{name}: {entry.strip()!r} is not name=postgresql://…")
        named = region(named.strip(), name=name)
        if named in found:
            raise ValueError(f"{name}: region {named!r} is named twice")
        try:
            found[named] = async_url(url.strip())
        except ValueError:
            # Not the URL itself: it may carry a password.
            raise ValueError(f"{name}: region {named!r}: expected a postgresql:// URL") from None
    return tuple(found.items())


def regions_admin(value: str | None, served: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``MNEIA_REGIONS_ADMIN``: the administrator's URL of regions of ``MNEIA_REGIONS`` (``served``),
    for the retention sweep ``mneia serve`` runs in each; a region not served is refused."""
    given = regions(value, name="MNEIA_REGIONS_ADMIN")
    names = {named for named, _ in served}
    for named, _ in given:
        if named not in names:
            raise ValueError(f"MNEIA_REGIONS_ADMIN: region {named!r} is not one of MNEIA_REGIONS")
    return given


@dataclass(frozen=True)
class Oidc:
    """Sign-in with an OpenID provider (mneia.http.oidc): on only when all four are given."""

    issuer: str
    """Exactly the ID tokens' ``iss``; its discovery document is under ``/.well-known/``."""
    client_id: str
    client_secret: str
    public_url: str
    """Where browsers reach this server, without a trailing slash: the redirect URI's base."""

    @property
    def redirect_uri(self) -> str:
        return self.public_url + "/auth/callback"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Oidc | None:
        names = ("MNEIA_OIDC_ISSUER", "MNEIA_OIDC_CLIENT_ID", "MNEIA_OIDC_CLIENT_SECRET", "MNEIA_PUBLIC_URL")
        given = {name: (env.get(name) or "").strip() for name in names}
        if not any(given.values()):
            return None
        missing = [name for name, value in given.items() if not value]
        if missing:
            raise ValueError(f"{', '.join(missing)}: OpenID sign-in needs all of {', '.join(names)}")
        for name in ("MNEIA_OIDC_ISSUER", "MNEIA_PUBLIC_URL"):
            if not is_url(given[name].rstrip("/")):
                raise ValueError(f"{name}: {given[name]!r} is not an http(s) URL")
        return cls(
            issuer=given["MNEIA_OIDC_ISSUER"],  # as the provider writes it in iss, to the slash
            client_id=given["MNEIA_OIDC_CLIENT_ID"],
            client_secret=given["MNEIA_OIDC_CLIENT_SECRET"],
            public_url=given["MNEIA_PUBLIC_URL"].rstrip("/"),
        )


_URL = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[^/\s:\[\]]+)(:\d{1,5})?(/[^\s?#]*)?")


def is_url(value: str) -> bool:
    """An http(s) URL with a host, an optional port and path, no query: a server's public address."""
    return _URL.fullmatch(value) is not None


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("mneia", appauthor=False))


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    app_database_url: str | None
    app_password: str | None
    data_dir: Path
    cors_origins: tuple[str, ...] = ()
    persisted_query_bytes: int = DEFAULT_PERSISTED_QUERY_BYTES
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_subscriptions_per_token: int = DEFAULT_MAX_SUBSCRIPTIONS_PER_TOKEN
    max_websockets_per_token: int = DEFAULT_MAX_WEBSOCKETS_PER_TOKEN
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    region: str = DEFAULT_REGION
    oidc: Oidc | None = None
    regions: tuple[tuple[str, str], ...] = ()
    """``MNEIA_REGIONS``: each region served by ``mneia serve``, and its server URL."""
    regions_admin: tuple[tuple[str, str], ...] = ()
    """``MNEIA_REGIONS_ADMIN``: the administrator's URL of regions served, for their retention sweep."""
    directory_url: str | None = None

    @classmethod
    def from_env(cls, data_dir: Path | None = None) -> Settings:
        env = os.environ
        served = regions(env.get("MNEIA_REGIONS"))
        return cls(
            database_url=env.get("DATABASE_URL") or None,
            app_database_url=env.get("MNEIA_APP_DATABASE_URL") or None,
            app_password=env.get("MNEIA_APP_PASSWORD") or None,
            data_dir=data_dir or Path(env.get("MNEIA_DATA_DIR") or default_data_dir()),
            cors_origins=cors_origins(env.get("MNEIA_CORS_ORIGINS")),
            persisted_query_bytes=byte_count(
                "MNEIA_PERSISTED_QUERY_BYTES",
                env.get("MNEIA_PERSISTED_QUERY_BYTES"),
                DEFAULT_PERSISTED_QUERY_BYTES,
            ),
            max_body_bytes=byte_count(
                "MNEIA_MAX_BODY_BYTES", env.get("MNEIA_MAX_BODY_BYTES"), DEFAULT_MAX_BODY_BYTES
            ),
            max_response_bytes=byte_count(
                "MNEIA_MAX_RESPONSE_BYTES", env.get("MNEIA_MAX_RESPONSE_BYTES"), DEFAULT_MAX_RESPONSE_BYTES
            ),
            max_websockets_per_token=positive_count(
                "MNEIA_MAX_WEBSOCKETS_PER_TOKEN",
                env.get("MNEIA_MAX_WEBSOCKETS_PER_TOKEN"),
                DEFAULT_MAX_WEBSOCKETS_PER_TOKEN,
            ),
            max_subscriptions_per_token=positive_count(
                "MNEIA_MAX_SUBSCRIPTIONS_PER_TOKEN",
                env.get("MNEIA_MAX_SUBSCRIPTIONS_PER_TOKEN"),
                DEFAULT_MAX_SUBSCRIPTIONS_PER_TOKEN,
            ),
            region=region(env.get("MNEIA_REGION") or ""),
            oidc=Oidc.from_env(env),
            regions=served,
            regions_admin=regions_admin(env.get("MNEIA_REGIONS_ADMIN"), served),
            directory_url=env.get("MNEIA_DIRECTORY_URL") or None,
        )

    def server_url(self, admin_url: str) -> str:
        if self.app_database_url:
            return async_url(self.app_database_url)
        return app_url(admin_url, self.app_password)
