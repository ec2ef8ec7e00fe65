"""Invitations (R19): a workspace's human asks a person, by email, to join it.

Written and read only by the workspace's humans (policies ``invitation_create``
and ``invitation_read``, storage/sql/identity.sql), written through ``mneia_invite``
alone, which keeps each open invitation's email beside it (``invitation_emails``).
Accepted by the person's first sign-in whose provider verified the email
(``mneia_sign_in``), once; nothing else changes an invitation.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Interval, bindparam, column, func, select

from mneia.storage.database import Tx, from_row, stated
from mneia.storage.tables import invitations

LISTED = 200
"""The newest invitations ``visible`` lists."""


@dataclass(frozen=True, slots=True)
class InvitationRecord:
    workspace_id: uuid.UUID
    id: uuid.UUID
    email: str
    invited_by: uuid.UUID
    created_at: datetime
    expires_at: datetime
    accepted_at: datetime | None
    accepted_actor_id: uuid.UUID | None


_COLUMNS = (
    invitations.c.workspace_id,
    invitations.c.id,
    invitations.c.email,
    invitations.c.invited_by,
    invitations.c.created_at,
    invitations.c.expires_at,
    invitations.c.accepted_at,
    invitations.c.accepted_actor_id,
)


_INVITED = func.mneia_invite(bindparam("email"), bindparam("lifetime", type_=Interval)).table_valued(
    *(column(c.name, c.type) for c in _COLUMNS)
)
_INVITE = select(*(_INVITED.c[c.name] for c in _COLUMNS))


async def create(tx: Tx, email: str, expires_in: timedelta) -> InvitationRecord:
    """A new invitation of the caller's workspace by the caller, open until ``expires_in`` after the
    database's now(): through ``mneia_invite``, which writes its email beside it for sign-ins."""
    row = (await tx.execute(_INVITE, {"email": email, "lifetime": expires_in})).one()
    return from_row(InvitationRecord, row)


async def visible(tx: Tx) -> list[InvitationRecord]:
    """The workspace's newest invitations (a human's; an agent sees none)."""
    query = (
        select(*_COLUMNS)
        .where(stated(invitations, tx))
        .order_by(invitations.c.created_at.desc(), invitations.c.id.desc())
        .limit(LISTED)
    )
    return [from_row(InvitationRecord, row) for row in await tx.execute(query)]
