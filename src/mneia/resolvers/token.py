"""Tokens (F14): minted with an optional expiry, listed without their secret, revoked.

A human mints, sees and revokes the tokens of the actors it created (and its
own); an agent sees and revokes its own. The database decides which rows
each caller may see or revoke (policies ``token_read``, ``token_revoke``):
a token outside them is NOT_FOUND, as anything else out of scope.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from mneia.errors import BadInput, NotFound
from mneia.resolvers.inputs import parse_id
from mneia.resolvers.request.context import Context, Info
from mneia.schema.actor import Actor
from mneia.schema.scalars import Duration
from mneia.schema.token import ActorWithToken, Token
from mneia.storage import actor, token
from mneia.storage.actor import ActorRecord


async def issue(
    context: Context,
    holder: ActorRecord,
    expires_at: datetime | None,
    expires_in: Duration | None,
) -> ActorWithToken:
    """A new token for ``holder``, minted by the requesting human; the secret is in the answer only."""
    if expires_at is not None and expires_in is not None:
        raise BadInput("expiresIn", "give expiresAt or expiresIn, not both")
    if expires_at is not None and expires_at <= context.now:
        raise BadInput("expiresAt", "must be in the future")
    expires_at, expires_in = await _bounded(context, expires_at, expires_in)
    secret, record = await token.create(
        context.tx,
        holder.workspace_id,
        holder.id,
        created_by=context.actor.id,
        expires_at=expires_at,
        expires_in=expires_in,
    )
    return ActorWithToken(actor=Actor.of(holder), token=secret, issued=Token.of(record))


async def _bounded(
    context: Context, expires_at: datetime | None, expires_in: Duration | None
) -> tuple[datetime | None, Duration | None]:
    """The expiry a new token may have: none later than the token making the request (issue 21: a
    60-second token minted one that never expired). Given none, it expires with that token; given
    a later one, the request is refused, naming the field."""
    presenting = await token.presented(context.tx, context.token() or "")
    bound = presenting.expires_at if presenting is not None else None
    if bound is None:
        return expires_at, expires_in
    if expires_at is None and expires_in is None:
        return bound, None
    field, asked = ("expiresAt", expires_at) if expires_at is not None else ("expiresIn", None)
    if asked is None and expires_in is not None:
        asked = context.now + expires_in
    if asked is not None and asked > bound:
        raise BadInput(
            field, f"may not outlast the token making the request, which expires {bound.isoformat()}"
        )
    return expires_at, expires_in


async def list_tokens(
    info: Info,
    actor_id: Annotated[
        strawberry.ID | None,
        strawberry.argument(description="Only this actor's tokens; null: every token you may see."),
    ] = None,
) -> list[Token]:
    """The tokens you may see, newest first: yours, and a human's also those of the actors it created."""
    actor_ids = [parse_id(actor_id, "actorId")] if actor_id is not None else None
    return [Token.of(record) for record in await token.visible(info.context.tx, actor_ids)]


async def current_token(info: Info) -> Token:
    """The token the request was authenticated with (its own actor may always see it)."""
    context = info.context
    found = await token.presented(context.tx, context.token() or "")
    if found is None:  # authenticated by this very token: only a race with its deletion
        raise NotFound("token", "current")
    return Token.of(found)


async def create_token(
    info: Info,
    actor_id: Annotated[
        strawberry.ID,
        strawberry.argument(description="The actor the new token authenticates; not an erased one."),
    ],
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
    context = info.context
    holder = await actor.get(context.tx, parse_id(actor_id, "actorId"))
    if holder is None:
        raise NotFound("actor", actor_id)
    if holder.erased_at is not None:
        raise BadInput("actorId", "is erased (R18): an erased actor never authenticates again")
    return await issue(context, holder, expires_at, expires_in)


async def revoke_token(
    info: Info,
    id: Annotated[
        strawberry.ID, strawberry.argument(description="The token's id (Token.id), never its secret.")
    ],
) -> Token:  # noqa: A002 - the contract's name
    """Revoke a token you may see, now; revoking a revoked token changes nothing."""
    context = info.context
    record = await token.revoke(context.tx, parse_id(id, "id"))
    if record is None:
        raise NotFound("token", id)
    return Token.of(record)
