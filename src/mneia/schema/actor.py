"""Workspace and Actor. An actor's kind is its record's, never the caller's word (R3)."""

from __future__ import annotations

import strawberry

from mneia.schema.enums import ActorKind
from mneia.schema.identity import Identity, identity_of
from mneia.storage.actor import ActorRecord
from mneia.storage.workspace import WorkspaceRecord


@strawberry.type(
    description="The tenant: one company. Every row belongs to one workspace, and no workspace reads"
    " another's (R1)."
)
class Workspace:
    id: strawberry.ID = strawberry.field(description="The workspace's id.")
    name: str = strawberry.field(description="The workspace's name.")
    region: str = strawberry.field(
        description="The region whose database keeps the workspace's data, fixed when the workspace"
        " was created; its tokens name it unless it is the default region, local."
    )

    @classmethod
    def of(cls, record: WorkspaceRecord) -> Workspace:
        return cls(id=strawberry.ID(str(record.id)), name=record.name, region=record.region)


@strawberry.type(
    description="A person or an agent inside one workspace. The same person in two workspaces is two actors."
)
class Actor:
    id: strawberry.ID = strawberry.field(description="The actor's id.")
    kind: ActorKind = strawberry.field(description="Read from the actor's record, never from the caller.")
    name: str = strawberry.field(description="The actor's name; a pseudonym once the actor is erased.")
    erased: bool = strawberry.field(
        description="Erased by a human (R18): its name is a pseudonym and it never authenticates again."
    )
    identity: Identity | None = strawberry.field(
        resolver=identity_of,
        description="The person, for a human who signed in with an OpenID provider (R19); null for an"
        " agent, a human who never did, and an actor of another workspace.",
    )

    @classmethod
    def of(cls, record: ActorRecord) -> Actor:
        return cls(
            id=strawberry.ID(str(record.id)),
            kind=ActorKind(record.kind),
            name=record.name,
            erased=record.erased_at is not None,
        )
