"""Token: a bearer token as it may be shown again after its creation: never the secret (F14)."""

from __future__ import annotations

from datetime import datetime

import strawberry

from mneia.schema.actor import Actor
from mneia.storage.token import TokenRecord


@strawberry.type(description="A bearer token as it may be shown again: its secret never is.")
class Token:
    id: strawberry.ID = strawberry.field(description="The token's id, to revoke it with.")
    hint: str | None = strawberry.field(
        description="The first characters of the secret, to tell tokens apart; useless on their own."
        " Null for tokens minted before hints were kept."
    )
    created_at: datetime = strawberry.field(description="When it was minted.")
    expires_at: datetime | None = strawberry.field(description="From then on it authenticates no more.")
    revoked_at: datetime | None = strawberry.field(description="When it was revoked; null when it is not.")
    record: strawberry.Private[TokenRecord]

    @strawberry.field(description="Neither revoked nor expired, by the server's clock at this request.")
    def active(self, info: strawberry.Info) -> bool:
        record = self.record
        expired = record.expires_at is not None and record.expires_at <= info.context.now
        return record.revoked_at is None and not expired

    @strawberry.field(description="The actor the token authenticates.")
    async def actor(self, info: strawberry.Info) -> Actor:
        return Actor.of(await info.context.loaders.actor.load(self.record.actor_id))

    @strawberry.field(description="Who minted it; null for a workspace's first token (the administrator's).")
    async def created_by(self, info: strawberry.Info) -> Actor | None:
        if self.record.created_by is None:
            return None
        return Actor.of(await info.context.loaders.actor.load(self.record.created_by))

    @strawberry.field(description="Who revoked it; null when not revoked, or revoked by the administrator.")
    async def revoked_by(self, info: strawberry.Info) -> Actor | None:
        if self.record.revoked_by is None:
            return None
        return Actor.of(await info.context.loaders.actor.load(self.record.revoked_by))

    @classmethod
    def of(cls, record: TokenRecord) -> Token:
        return cls(
            id=strawberry.ID(str(record.id)),
            hint=record.hint,
            created_at=record.created_at,
            expires_at=record.expires_at,
            revoked_at=record.revoked_at,
            record=record,
        )


@strawberry.type(description="An actor and a new bearer token of its. The token is shown once.")
class ActorWithToken:
    actor: Actor = strawberry.field(description="The actor the token authenticates.")
    token: str = strawberry.field(description="The bearer token's secret. Shown this once: store it now.")
    issued: Token = strawberry.field(
        description="The new token as it is listed and revoked later (tokens, revokeToken): id, hint, expiry."
    )
