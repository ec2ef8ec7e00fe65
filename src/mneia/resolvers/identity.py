"""A person's memberships, and invitations (R19).

``myMemberships`` answers from the database's own function, which reads
across workspaces only for the caller's person (storage.identity); what it
shows of another workspace is its id and name (and its region: the caller's
workspace's, since a region's database holds only that region's workspaces),
and the person's actor's id and name there. Invitations are a workspace's
humans' (``createInvitation`` is human only; an agent lists none).
"""

from __future__ import annotations

import logging
import re
import uuid
from datetime import datetime, timedelta
from typing import Annotated

import strawberry
from sqlalchemy.exc import SQLAlchemyError

from mneia.errors import BadInput
from mneia.resolvers.request.context import Info
from mneia.schema.actor import Actor, Workspace
from mneia.schema.enums import ActorKind
from mneia.schema.invitation import Invitation
from mneia.schema.membership import Membership
from mneia.schema.scalars import Duration
from mneia.storage import identity, invitation, workspace
from mneia.storage.directory import Directory
from mneia.storage.workspace import WorkspaceRecord

log = logging.getLogger("mneia.identity")

INVITATION_LIFETIME = timedelta(days=7)
"""How long an invitation stays open when no expiresIn is given."""
LONGEST_INVITATION = timedelta(days=30)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_EMAIL_LIMIT = 320


async def my_memberships(info: Info) -> list[Membership]:
    context = info.context
    me = context.actor
    found = await identity.my_memberships(context.tx)
    mine = await workspace.get(context.tx, me.workspace_id)
    assert mine is not None, "an authenticated actor's workspace is always visible"
    return [
        Membership(
            workspace=Workspace.of(WorkspaceRecord(each.workspace_id, each.workspace_name, mine.region)),
            actor=Actor.of(me)
            if each.actor_id == me.id
            else Actor(
                id=strawberry.ID(str(each.actor_id)), kind=ActorKind.HUMAN, name=each.actor_name, erased=False
            ),
        )
        for each in found
    ]


def _email(value: str) -> str:
    email = value.strip().lower()
    if not email or len(email) > _EMAIL_LIMIT or not _EMAIL.fullmatch(email):
        raise BadInput("email", f"{value!r} is not an email address")
    return email


async def create_invitation(
    info: Info,
    email: Annotated[str, strawberry.argument(description="The address of the person to invite.")],
    expires_in: Annotated[
        Duration | None,
        strawberry.argument(
            description="How long it stays open: more than nothing and at most P30D. Default: P7D."
        ),
    ] = None,
) -> Invitation:
    """Invite a person by email; open for ``expiresIn`` (default 7 days, at most 30)."""
    lifetime = INVITATION_LIFETIME if expires_in is None else expires_in
    if lifetime <= timedelta(0) or lifetime > LONGEST_INVITATION:
        raise BadInput("expiresIn", "must be more than nothing and at most 30 days (P30D)")
    context = info.context
    me = context.actor
    address = _email(email)
    record = await invitation.create(context.tx, address, lifetime)
    if context.directory is not None:
        await _announced(context.directory, address, me.workspace_id, record.expires_at)
    return Invitation.of(record)


async def _announced(
    directory: Directory, address: str, workspace_id: uuid.UUID, expires_at: datetime
) -> None:
    """The invitation recorded in the regions' directory, so that the person signing in at another
    region's server is sent here (inbox.oidc). Before this transaction commits: should it then
    fail, the directory sends the person to a sign-in that finds nothing. A directory that fails
    costs the invitation nothing but that: said in the log."""
    try:
        await directory.invited(address, workspace_id, expires_at)
    except (OSError, SQLAlchemyError) as error:
        log.warning("the invitation could not be recorded in the regions' directory: %s", error)


async def list_invitations(info: Info) -> list[Invitation]:
    return [Invitation.of(record) for record in await invitation.visible(info.context.tx)]
