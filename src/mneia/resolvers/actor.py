"""Who is asking, and the creation of actors (humans only; never by an agent, R3)."""

from __future__ import annotations

from mneia.resolvers.context import Info
from mneia.resolvers.inputs import name as name_text
from mneia.schema.actor import Actor, ActorWithToken
from mneia.schema.enums import ActorKind
from mneia.storage import actor, token


async def me(info: Info) -> Actor:
    return Actor.of(info.context.actor)


async def create_actor(info: Info, kind: ActorKind, name: str) -> ActorWithToken:
    context = info.context
    creator = context.actor
    record = await actor.create(context.tx, creator.workspace_id, kind, name_text(name), creator.id)
    secret = await token.create(context.tx, creator.workspace_id, record.id, created_by=creator.id)
    return ActorWithToken(actor=Actor.of(record), token=secret)
