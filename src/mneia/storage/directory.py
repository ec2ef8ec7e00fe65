"""The regions' directory: workspace id → region, and persons' memberships, by ids only.

It lives in a database of its own (``MNEIA_DIRECTORY_URL``), never in a
region's: a region's database holds whole workspaces and nothing of another
region's, and the directory holds no content of anyone's (storage/sql/
directory.sql says what it holds). Serving a request never reads it: a token
names its region (storage.token). ``mneia admin bootstrap`` records each new
workspace here after creating it in its region's database. An OpenID sign-in
(inbox.oidc) reads and writes it through ``Directory``: it records where the
region signing the person in is reached and which of its workspaces the person
belongs to, and finds the person's workspaces in the regions it does not serve,
so that the person can be sent there (docs/scale-out.md, Regions).

Its schema is versioned by ``directory_version``: ``migrate`` applies the
steps after the version it finds, under an advisory lock, in one
transaction; running it again does nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib.resources import files

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from mneia import config
from mneia.storage.database import lone_engine

VERSION = 3
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


@dataclass(frozen=True)
class Elsewhere:
    """A region the server does not serve where a person has workspaces or open invitations, and
    where to sign in to it (None: no server of that region has recorded its address yet)."""

    region: str
    sign_in_url: str | None
    workspaces: int


_SIGN_IN_AT = text(
    "INSERT INTO directory_regions (name, sign_in_url) VALUES (:region, :url)"
    " ON CONFLICT (name) DO UPDATE SET sign_in_url = EXCLUDED.sign_in_url, updated_at = now()"
    " WHERE directory_regions.sign_in_url IS DISTINCT FROM EXCLUDED.sign_in_url"
)
_WORKSPACES = text(
    "INSERT INTO directory_workspaces (id, region) SELECT unnest(CAST(:ids AS uuid[])), :region"
    " ON CONFLICT (id) DO NOTHING"
)
_LEFT = text(
    "DELETE FROM directory_people p USING directory_workspaces w"
    " WHERE p.person = :person AND w.id = p.workspace_id AND w.region = :region"
    " AND NOT p.workspace_id = ANY (CAST(:ids AS uuid[]))"
)
_BELONGS = text(
    "INSERT INTO directory_people (person, workspace_id) SELECT :person, unnest(CAST(:ids AS uuid[]))"
    " ON CONFLICT DO NOTHING"
)
_JOINED = text(
    "DELETE FROM directory_invitations WHERE email = :email AND workspace_id = ANY (CAST(:ids AS uuid[]))"
)
_INVITED = text(
    "INSERT INTO directory_invitations (email, workspace_id, expires_at) VALUES (:email, :id, :expires)"
    " ON CONFLICT (email, workspace_id)"
    " DO UPDATE SET expires_at = greatest(directory_invitations.expires_at, EXCLUDED.expires_at)"
)
_ELSEWHERE = text(
    "SELECT w.region, r.sign_in_url, count(*) AS workspaces"
    " FROM directory_workspaces w LEFT JOIN directory_regions r ON r.name = w.region"
    " WHERE NOT w.region = ANY (CAST(:served AS text[]))"
    " AND (w.id IN (SELECT p.workspace_id FROM directory_people p WHERE p.person = :person)"
    " OR w.id IN (SELECT i.workspace_id FROM directory_invitations i"
    " WHERE i.email = :email AND i.expires_at > now()))"
    " GROUP BY w.region, r.sign_in_url ORDER BY w.region"
)


class Directory:
    """The directory as a region's server uses it (``MNEIA_DIRECTORY_URL``, with OpenID sign-in).

    A person is known here by a keyed digest of the provider's issuer and subject, and an
    invitation by a keyed digest of its email (HMAC-SHA-256 under ``key``, which the servers of
    every region share and the directory's database does not hold, so that its rows name nobody
    to whoever reads them alone). ``invited`` records each invitation the server creates; each
    sign-in the server finishes records what it found in the regions it serves, then asks for
    the rest (``seen``): so the directory knows a person's workspaces of a region once they have
    signed in there, and forgets one when a sign-in there no longer finds it. ``region`` and
    ``sign_in_url``: the server's own, recorded with what it writes. It keeps no connection
    between calls, which are rare."""

    def __init__(self, url: str, key: bytes, region: str, sign_in_url: str) -> None:
        self.engine = lone_engine(url)
        self.key = key
        self.region = region
        self.sign_in_url = sign_in_url

    def person(self, issuer: str, subject: str) -> bytes:
        return hmac.new(self.key, b"person\0" + f"{issuer}\0{subject}".encode(), hashlib.sha256).digest()

    def email(self, address: str) -> bytes:
        return hmac.new(self.key, b"email\0" + address.strip().lower().encode(), hashlib.sha256).digest()

    async def invited(self, address: str, workspace_id: uuid.UUID, expires_at: datetime) -> None:
        """Record an open invitation of this server's region, until it expires."""
        async with self.engine.begin() as connection:
            await connection.execute(_SIGN_IN_AT, {"region": self.region, "url": self.sign_in_url})
            await connection.execute(_WORKSPACES, {"ids": [str(workspace_id)], "region": self.region})
            await connection.execute(
                _INVITED, {"email": self.email(address), "id": workspace_id, "expires": expires_at}
            )

    async def seen(
        self,
        issuer: str,
        subject: str,
        verified_email: str | None,
        memberships: Mapping[str, Sequence[uuid.UUID]],
        served: Iterable[str],
    ) -> list[Elsewhere]:
        """Record that the person is a member of exactly these workspaces of each region named (the
        regions served here that answered, each reached at this server's address), and no longer
        invited to them, in one transaction; then, by region, the person's workspaces and the open
        invitations of ``verified_email`` in the regions not ``served`` here."""
        person = self.person(issuer, subject)
        email = self.email(verified_email) if verified_email else None
        async with self.engine.begin() as connection:
            for region, workspace_ids in memberships.items():
                ids = [str(each) for each in workspace_ids]
                await connection.execute(_SIGN_IN_AT, {"region": region, "url": self.sign_in_url})
                await connection.execute(_WORKSPACES, {"ids": ids, "region": region})
                await connection.execute(_LEFT, {"person": person, "region": region, "ids": ids})
                await connection.execute(_BELONGS, {"person": person, "ids": ids})
                if email is not None:
                    await connection.execute(_JOINED, {"email": email, "ids": ids})
            found = await connection.execute(
                _ELSEWHERE, {"person": person, "email": email, "served": list(served)}
            )
            return [
                Elsewhere(region, url if url and config.is_url(url) else None, count)
                for region, url, count in found
            ]
