"""Invitations (R19): a workspace's human asks a person, by email, to join it.

Written and read only by the workspace's humans (policies ``invitation_create``
and ``invitation_read``, storage/sql/identity.sql). Accepted by the person's
first sign-in whose provider verified the email (``mneia_sign_in``), once;
nothing else changes an invitation.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, insert, select

from mneia.storage.database import Tx, from_row, stated
from mneia.storage.ids import new_id
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


async def create(
    tx: Tx, workspace_id: uuid.UUID, email: str, invited_by: uuid.UUID, expires_in: timedelta
) -> InvitationRecord:
    """A new invitation, open until ``expires_in`` after the database's now()."""
    row = (
        await tx.execute(
            insert(invitations)
            .values(
                workspace_id=workspace_id,
                id=new_id(),
                email=email,
                invited_by=invited_by,
                expires_at=func.now() + expires_in,
            )
            .returning(*_COLUMNS)
        )
    ).one()
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
