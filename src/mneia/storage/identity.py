"""Identities (R19): one person across workspaces, as an OpenID provider knows them.

What must stay true: a workspace reads another workspace's rows only through
the owner's functions of storage/sql/identity.sql, and each of them answers
one person's memberships (a workspace's id and name, the person's actor's id
and name), never anything else. The caller's own come from
``mneia_my_memberships`` (bound by a token); at sign-in, ``mneia_sign_in``
answers for the issuer and subject of an ID token the server has validated,
accepting the open invitations of the email the provider verified, and
``mneia_sign_in_session`` mints the session's token, by its digest only.

On Citus (``sign_in_routed``) the server takes the same steps itself, since an
acceptance binds its workspace and must run on the node that holds it:
``mneia_sign_in_invitations`` lists them, ``mneia_sign_in_accept`` accepts
each on its node, and ``mneia_sign_in_memberships`` answers. No step reads every
workspace: a person's workspaces come from their links (``identity_links``) and
their invitations from their emails (``invitation_emails``), each then read by
its key (migrations 0037, 0038).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import text

from mneia.config import DEFAULT_REGION
from mneia.storage import token
from mneia.storage.database import Tx, from_row, transaction
from mneia.storage.node import Nodes


@dataclass(frozen=True, slots=True)
class IdentityRecord:
    id: uuid.UUID
    """As the reading workspace knows the person (``seen_from``), never the stored id."""
    display_name: str
    issuer: str


@dataclass(frozen=True, slots=True)
class MembershipRecord:
    """A person's actor in one workspace: all a membership shows of another workspace."""

    workspace_id: uuid.UUID
    workspace_name: str
    actor_id: uuid.UUID
    actor_name: str


def seen_from(workspace_id: uuid.UUID, identity_id: uuid.UUID) -> uuid.UUID:
    """The id a workspace knows a person by: its own, so that two workspaces cannot match people by it."""
    return uuid.uuid5(workspace_id, str(identity_id))


_IDENTITIES = text(
    "SELECT workspace_id, actor_id, identity_id, display_name, issuer"
    " FROM mneia_identities_of(CAST(:actors AS uuid[]))"
)


async def of_actors(tx: Tx, actor_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, IdentityRecord]:
    """The identities the caller's workspace sees linked to these actors (a provider's sign-in only),
    each under the id the workspace knows it by; read through ``mneia_identities_of``, which finds
    them from the caller's own actors."""
    rows = await tx.execute(_IDENTITIES, {"actors": [str(a) for a in actor_ids]})
    return {
        row.actor_id: IdentityRecord(
            seen_from(row.workspace_id, row.identity_id), row.display_name, row.issuer
        )
        for row in rows
    }


_MINE = text("SELECT workspace_id, workspace_name, actor_id, actor_name FROM mneia_my_memberships()")
_SIGN_IN = text(
    "SELECT workspace_id, workspace_name, actor_id, actor_name"
    " FROM mneia_sign_in(:issuer, :subject, :email, :name)"
)
_INVITATIONS = text(
    "SELECT workspace_id, invitation_id FROM mneia_sign_in_invitations(:issuer, :subject, :email)"
)
_ACCEPT = text(
    "SELECT mneia_sign_in_accept(:issuer, :subject, :email, :name, CAST(:workspace AS uuid),"
    " CAST(:invitation AS uuid))"
)
_MEMBERSHIPS = text(
    "SELECT workspace_id, workspace_name, actor_id, actor_name"
    " FROM mneia_sign_in_memberships(:issuer, :subject)"
)
_SESSION = text(
    "SELECT mneia_sign_in_session(:issuer, :subject, CAST(:workspace AS uuid), :digest, :hint, :lifetime)"
)
_KEEP = text("SELECT mneia_sign_in_keep(:key, :value, :seconds)")
_TAKE = text("SELECT mneia_sign_in_take(:key)")


async def my_memberships(tx: Tx) -> list[MembershipRecord]:
    """The caller's person's memberships; for an actor with no identity, only its own."""
    return [from_row(MembershipRecord, row) for row in await tx.execute(_MINE)]


async def sign_in(
    tx: Tx, issuer: str, subject: str, verified_email: str | None, name: str
) -> list[MembershipRecord]:
    """The memberships of the person an ID token names, after accepting the open invitations
    of ``verified_email`` (None: accept none). Empty: nobody the database knows."""
    found = await tx.execute(
        _SIGN_IN, {"issuer": issuer, "subject": subject, "email": verified_email, "name": name}
    )
    return [from_row(MembershipRecord, row) for row in found]


async def sign_in_routed(
    nodes: Nodes, issuer: str, subject: str, verified_email: str | None, name: str
) -> list[MembershipRecord]:
    """``sign_in`` on a Citus cluster: the open invitations listed on the coordinator, each accepted
    in a transaction of its own on its workspace's node (where the binding's seal verifies), then
    the memberships read on the coordinator. An invitation another sign-in accepted meanwhile is
    passed over, as by ``sign_in``."""
    person = {"issuer": issuer, "subject": subject}
    if verified_email is not None:
        async with transaction(nodes.coordinator) as tx:
            invited = [
                (row.workspace_id, row.invitation_id)
                for row in await tx.execute(_INVITATIONS, {**person, "email": verified_email})
            ]
        for workspace_id, invitation_id in invited:
            async with transaction(await nodes.engine(workspace_id)) as tx:
                await tx.execute(
                    _ACCEPT,
                    {
                        **person,
                        "email": verified_email,
                        "name": name,
                        "workspace": str(workspace_id),
                        "invitation": str(invitation_id),
                    },
                )
    async with transaction(nodes.coordinator) as tx:
        found = await tx.execute(_MEMBERSHIPS, person)
        return [from_row(MembershipRecord, row) for row in found]


async def open_session(
    tx: Tx,
    issuer: str,
    subject: str,
    workspace_id: uuid.UUID,
    lifetime: timedelta,
    region: str = DEFAULT_REGION,
) -> tuple[str, uuid.UUID] | None:
    """A session token for the person's human actor of the workspace: its secret (shown once) and id.
    ``region``: the server's, where the workspace is (its token names it)."""
    secret = token.mint(workspace_id, region)
    made = (
        await tx.execute(
            _SESSION,
            {
                "issuer": issuer,
                "subject": subject,
                "workspace": str(workspace_id),
                "digest": token.digest(secret),
                "hint": token.hint(secret),
                "lifetime": lifetime,
            },
        )
    ).scalar_one()
    return (secret, made) if made is not None else None


async def keep(tx: Tx, key: str, value: str, seconds: int) -> None:
    """Keep a sign-in's value under a key, for at most ten minutes, to be taken once."""
    await tx.execute(_KEEP, {"key": key, "value": value, "seconds": seconds})


async def take(tx: Tx, key: str) -> str | None:
    """The value kept under ``key``, once; None after that, or once it expired."""
    value: str | None = (await tx.execute(_TAKE, {"key": key})).scalar_one()
    return value
