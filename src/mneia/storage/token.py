"""Bearer tokens: minted once, stored only as a SHA-256 digest (R3, F14).

A token is 256 random bits, so a fast digest is enough: there is nothing to
brute-force. After the secret it names its workspace (``mneia_`` + 43
characters of secret + the workspace id's 16 bytes in 22 base64url
characters), so that finding it states ``workspace_id = X`` as every other
query does: one tenant's rows are read, never every tenant's index (on a
cluster distributed by workspace, one node; docs/scale-out.md). The workspace
part is not a secret, and changing it changes the digest: a token names one
workspace and authenticates only there. Tokens minted before 0024 name none
and are still found by their digest alone.

A token of a workspace outside the default region (``config.DEFAULT_REGION``)
names that region before its secret: ``mneia_`` + region + ``_`` + secret +
workspace (``mneia_eu_…``), so that a server of several regions hands the
request to the right one without reading anything (http/region.py). The parts
are read by length: the secret and workspace are the last 65 characters, so a
default region's token (``mneia_`` + 65 or 43) is never read as naming one,
and a region's name (config.REGION_PATTERN) has no underscore. The region
part is not a secret either, and the digest covers the whole token: a token
changed to name another region is another token, unknown everywhere.

``mneia_authenticate`` (storage/sql/context.sql) finds the token by its
workspace and digest and binds the transaction to its workspace and actor,
sealed: it is the only way a transaction of the server's role gets a context.
A revoked token, or one past its expiry by the database's clock, finds nothing.

After minting, the secret is never shown again: a token is listed by its id,
a short hint (the first characters of the secret, useless on their own) and
its times. Who may list or revoke which token is the database's policy
(``token_read``, ``token_revoke``); a revocation is at now(), once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, insert, select, text, update

from mneia.config import DEFAULT_REGION, REGION_LENGTH, REGION_PATTERN
from mneia.storage.actor import ActorRecord
from mneia.storage.database import Driven, Tx, from_row, stated
from mneia.storage.ids import new_id
from mneia.storage.tables import api_tokens, workspaces
from mneia.vocabulary import ActorKind

PREFIX = "mneia_"
HINT_LENGTH = len(PREFIX) + 4  # "mneia_" and 24 of the secret's 256 bits
SECRET_LENGTH = 43  # 32 random bytes in unpadded base64url
WORKSPACE_LENGTH = 22  # a workspace id's 16 bytes in unpadded base64url
_NAMED = SECRET_LENGTH + WORKSPACE_LENGTH
_REGION_PART = re.compile(f"({REGION_PATTERN})_")

_AUTHENTICATE = Driven(
    text(
        "SELECT workspace_id, id, kind, name, created_at"
        " FROM mneia_authenticate(:digest, CAST(:workspace AS uuid))"
    )
)


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A token as it may be shown again: everything but the secret."""

    workspace_id: uuid.UUID
    id: uuid.UUID
    actor_id: uuid.UUID
    hint: str | None
    created_by: uuid.UUID | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    revoked_by: uuid.UUID | None


_COLUMNS = (
    api_tokens.c.workspace_id,
    api_tokens.c.id,
    api_tokens.c.actor_id,
    api_tokens.c.hint,
    api_tokens.c.created_by,
    api_tokens.c.created_at,
    api_tokens.c.expires_at,
    api_tokens.c.revoked_at,
    api_tokens.c.revoked_by,
)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mint(workspace_id: uuid.UUID, region: str = DEFAULT_REGION) -> str:
    """A new token of the workspace: the prefix, its region unless the default, 256 random bits, then
    the workspace it names."""
    named = base64.urlsafe_b64encode(workspace_id.bytes).rstrip(b"=").decode()
    regional = "" if region == DEFAULT_REGION else region + "_"
    return PREFIX + regional + secrets.token_urlsafe(32) + named


def _parts(token: str) -> tuple[str | None, str] | None:
    """The region a token names (None: the default) and what follows it; None for text that is no
    token of Mneia's form."""
    body = token.removeprefix(PREFIX)
    if body == token:
        return None
    if len(body) in (_NAMED, SECRET_LENGTH):
        return None, body
    region, rest = body[: -_NAMED - 1], body[-_NAMED - 1 :]
    if len(region) > REGION_LENGTH or not _REGION_PART.fullmatch(region + rest[0]):
        return None
    return region, rest[1:]


def hint(token: str) -> str:
    """What a token is listed by: ``mneia_`` and the secret's first 4 characters (24 of its 256 bits),
    the region part left out (it would not fit the column's 16 characters; the workspace says it)."""
    parts = _parts(token)
    return PREFIX + parts[1][: HINT_LENGTH - len(PREFIX)] if parts else token[:HINT_LENGTH]


def region_of(token: str) -> str | None:
    """The region a token names; None when it names none (the default region's, or text that is no
    token: the database finds neither). Reads nothing but the token."""
    parts = _parts(token)
    return parts[0] if parts else None


def workspace_of(token: str) -> uuid.UUID | None:
    """The workspace a token names; None for a token minted before 0024, or text that is no token."""
    parts = _parts(token)
    if parts is None or len(parts[1]) != _NAMED:
        return None
    try:
        named = base64.urlsafe_b64decode(parts[1][SECRET_LENGTH:] + "==")
    except (binascii.Error, ValueError):
        return None
    return uuid.UUID(bytes=named) if len(named) == 16 else None


async def authenticate(tx: Tx, token: str) -> ActorRecord | None:
    """The token's actor, with the transaction bound to it; None for an unknown, revoked or expired token."""
    named = workspace_of(token)
    rows = await tx.fetch(
        _AUTHENTICATE, {"digest": digest(token), "workspace": str(named) if named else None}
    )
    if not rows:
        return None
    workspace_id, actor_id, kind, name, created_at = rows[0]
    record = ActorRecord(workspace_id, actor_id, ActorKind(kind), name, created_at)
    tx.workspace_id, tx.actor_id = record.workspace_id, record.id
    return record


async def create(
    tx: Tx,
    workspace_id: uuid.UUID,
    actor_id: uuid.UUID,
    created_by: uuid.UUID | None,
    *,
    expires_at: datetime | None = None,
    expires_in: timedelta | None = None,
) -> tuple[str, TokenRecord]:
    """A new token: its secret (shown once) and record. ``expires_in`` counts from the database's now().

    It names the workspace's region, read from the workspace's row (fixed when it was created)."""
    region = (
        await tx.execute(select(workspaces.c.region).where(workspaces.c.id == workspace_id))
    ).scalar_one()
    secret = mint(workspace_id, region)
    expiry = func.now() + expires_in if expires_in is not None else expires_at
    row = (
        await tx.execute(
            insert(api_tokens)
            .values(
                workspace_id=workspace_id,
                id=new_id(),
                actor_id=actor_id,
                token_hash=digest(secret),
                hint=hint(secret),
                created_by=created_by,
                expires_at=expiry,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return secret, from_row(TokenRecord, row)


async def visible(tx: Tx, actor_ids: Sequence[uuid.UUID] | None = None) -> list[TokenRecord]:
    """The tokens the caller may see (its own; a human also those of actors it created), newest first."""
    query = (
        select(*_COLUMNS)
        .where(stated(api_tokens, tx))
        .order_by(api_tokens.c.created_at.desc(), api_tokens.c.id.desc())
    )
    if actor_ids is not None:
        query = query.where(api_tokens.c.actor_id.in_(actor_ids))
    return [from_row(TokenRecord, row) for row in await tx.execute(query)]


async def presented(tx: Tx, token: str) -> TokenRecord | None:
    """The token the transaction was authenticated with (its actor may see it)."""
    row = (
        await tx.execute(
            select(*_COLUMNS).where(stated(api_tokens, tx), api_tokens.c.token_hash == digest(token))
        )
    ).first()
    return from_row(TokenRecord, row) if row else None


async def get(tx: Tx, token_id: uuid.UUID) -> TokenRecord | None:
    row = (
        await tx.execute(select(*_COLUMNS).where(stated(api_tokens, tx), api_tokens.c.id == token_id))
    ).first()
    return from_row(TokenRecord, row) if row else None


async def revoke(tx: Tx, token_id: uuid.UUID) -> TokenRecord | None:
    """Revoke a token the caller may revoke, by the caller, now; None when it may not (or no such token).

    Revoking a revoked token changes nothing and returns it as it was.
    """
    row = (
        await tx.execute(
            update(api_tokens)
            .where(stated(api_tokens, tx), api_tokens.c.id == token_id, api_tokens.c.revoked_at.is_(None))
            .values(revoked_at=func.now(), revoked_by=tx.actor_id)
            .returning(*_COLUMNS)
        )
    ).first()
    if row is not None:
        return from_row(TokenRecord, row)
    return await get(tx, token_id)
