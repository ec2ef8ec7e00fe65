"""Bearer tokens: minted once, stored only as a SHA-256 digest (R3).

A token is 256 random bits, so a fast digest is enough: there is nothing to
brute-force. Authentication reveals exactly the one row whose digest matches
the presented secret (the ``token_read`` policy), then binds the transaction to
that token's workspace and actor.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass

from sqlalchemy import insert, select, text

from mneia.storage.database import Tx
from mneia.storage.ids import new_id
from mneia.storage.tables import api_tokens

PREFIX = "mneia_"

_PRESENT = text("SELECT set_config('mneia.token_hash', :digest, true)")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mint() -> str:
    return PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class TokenOwner:
    workspace_id: uuid.UUID
    actor_id: uuid.UUID


async def lookup(tx: Tx, token: str) -> TokenOwner | None:
    hashed = digest(token)
    await tx.execute(_PRESENT, {"digest": hashed})
    row = (
        await tx.execute(
            select(api_tokens.c.workspace_id, api_tokens.c.actor_id).where(
                api_tokens.c.token_hash == hashed, api_tokens.c.revoked_at.is_(None)
            )
        )
    ).first()
    return TokenOwner(row.workspace_id, row.actor_id) if row else None


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
