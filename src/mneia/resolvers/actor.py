"""Who is asking, and the creation of actors (humans only; never by an agent, R3)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from mneia.resolvers.inputs import name as name_text
from mneia.resolvers.request.context import Info
from mneia.resolvers.token import issue
from mneia.schema.actor import Actor
from mneia.schema.enums import ActorKind
from mneia.schema.scalars import Duration
from mneia.schema.token import ActorWithToken
from mneia.storage import actor


async def me(info: Info) -> Actor:
    return Actor.of(info.context.actor)


async def create_actor(
    info: Info,
    kind: Annotated[
        ActorKind, strawberry.argument(description="Whether the new actor is a person or an agent.")
    ],
    name: Annotated[str, strawberry.argument(description="The new actor's name.")],
    expires_at: Annotated[
        datetime | None,
        strawberry.argument(
            description="When the new token stops authenticating; give this or expiresIn. It may not"
            " outlast the token making the request; given neither, the new token expires with that one (or"
            " never)."
        ),
    ] = None,
    expires_in: Annotated[
        Duration | None,
        strawberry.argument(
            description="How long the new token authenticates, e.g. P90D; give this or expiresAt."
        ),
    ] = None,
) -> ActorWithToken:
    """A new actor and its first token, which may expire (at an instant, or after a duration)."""
    context = info.context
    creator = context.actor
    record = await actor.create(context.tx, creator.workspace_id, kind, name_text(name), creator.id)
    return await issue(context, record, expires_at, expires_in)
