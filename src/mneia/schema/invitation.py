"""Invitation (R19): a workspace's human asks a person, by email, to join it."""

from __future__ import annotations

from datetime import datetime

import strawberry

from mneia.schema.actor import Actor
from mneia.schema.loading import now_or_later
from mneia.schema.reading import Info
from mneia.storage.invitation import InvitationRecord


@strawberry.type(
    description="An invitation to this workspace. The person's first sign-in with an OpenID provider that"
    " verified this email accepts it, once, and makes them a human actor here."
)
class Invitation:
    record: strawberry.Private[InvitationRecord]
    id: strawberry.ID = strawberry.field(description="The invitation's id.")
    email: str = strawberry.field(description="The address the person was invited at.")
    created_at: datetime = strawberry.field(description="When it was made.")
    expires_at: datetime = strawberry.field(description="From then on no sign-in accepts it.")
    accepted_at: datetime | None = strawberry.field(description="When a sign-in accepted it; null: not yet.")

    @classmethod
    def of(cls, record: InvitationRecord) -> Invitation:
        return cls(
            record=record,
            id=strawberry.ID(str(record.id)),
            email=record.email,
            created_at=record.created_at,
            expires_at=record.expires_at,
            accepted_at=record.accepted_at,
        )

    @strawberry.field(description="The human who invited.")
    def invited_by(self, info: Info) -> Actor:
        return now_or_later(info.context.loaders.actor.load(self.record.invited_by), Actor.of)

    @strawberry.field(description="The actor the person became here; null while the invitation is open.")
    def accepted_by(self, info: Info) -> Actor | None:
        if self.record.accepted_actor_id is None:
            return None
        return now_or_later(info.context.loaders.actor.load(self.record.accepted_actor_id), Actor.of)

    @strawberry.field(description="Neither accepted nor expired, at the request's time.")
    def open(self, info: Info) -> bool:
        return self.record.accepted_at is None and self.record.expires_at > info.context.now
