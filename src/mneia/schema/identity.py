"""Identity (R19): the person behind a human actor, as an OpenID provider knows them.

A workspace sees the identity of its own actors only, and only of a human
signed in with a provider: an agent never has one (the database refuses it),
and an unlinked human shows none. What it sees is the person's name as the
provider gave it and the provider's issuer, under an id of its own: another
workspace knows the same person by another id, so two workspaces cannot match
their people by it. Never the provider's subject, never an email.
"""

from __future__ import annotations

import uuid
from typing import Any

import strawberry

from mneia.schema.loading import now_or_later
from mneia.schema.reading import Info
from mneia.storage.identity import IdentityRecord


@strawberry.type(description="A person signed in with an OpenID provider, as this workspace knows them.")
class Identity:
    id: strawberry.ID = strawberry.field(
        description="The person's id in this workspace; another workspace knows them by another."
    )
    display_name: str = strawberry.field(description="The name the provider gave at the first sign-in.")
    issuer: str = strawberry.field(description="The OpenID provider that vouches for the person.")

    @classmethod
    def of(cls, record: IdentityRecord) -> Identity:
        return cls(id=strawberry.ID(str(record.id)), display_name=record.display_name, issuer=record.issuer)


def _maybe(record: IdentityRecord | None) -> Identity | None:
    return Identity.of(record) if record is not None else None


def identity_of(root: Any, info: Info) -> Identity | None:
    """``Actor.identity``: through the request's loader, one statement for a page of actors."""
    return now_or_later(info.context.loaders.identity.load(uuid.UUID(str(root.id))), _maybe)
