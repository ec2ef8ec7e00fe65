"""Bearer tokens: minted once, stored only as a SHA-256 digest (R3).

A token is 256 random bits, so a fast digest is enough: there is nothing to
brute-force. ``mneia_authenticate`` (storage/sql/context.sql) finds the token
by its digest and binds the transaction to its workspace and actor, sealed:
it is the only way a transaction of the server's role gets a context.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid

from sqlalchemy import insert, text

from mneia.storage.actor import ActorRecord
from mneia.storage.database import Tx
from mneia.storage.ids import new_id
from mneia.storage.tables import api_tokens
from mneia.vocabulary import ActorKind

PREFIX = "mneia_"

_AUTHENTICATE = text("SELECT workspace_id, id, kind, name, created_at FROM mneia_authenticate(:digest)")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mint() -> str:
    return PREFIX + secrets.token_urlsafe(32)


async def authenticate(tx: Tx, token: str) -> ActorRecord | None:
    """The token's actor, with the transaction bound to it; None for an unknown or revoked token."""
    row = (await tx.execute(_AUTHENTICATE, {"digest": digest(token)})).first()
    if row is None:
        return None
    record = ActorRecord(row.workspace_id, row.id, ActorKind(row.kind), row.name, row.created_at)
    tx.workspace_id, tx.actor_id = record.workspace_id, record.id
    return record


async def create(tx: Tx, workspace_id: uuid.UUID, actor_id: uuid.UUID, created_by: uuid.UUID | None) -> str:
    token = mint()
    await tx.execute(
        insert(api_tokens).values(
            workspace_id=workspace_id,
            id=new_id(),
            actor_id=actor_id,
            token_hash=digest(token),
            created_by=created_by,
        )
    )
    return token
