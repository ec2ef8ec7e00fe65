"""Workspace and Actor. An actor's kind is its record's, never the caller's word (R3)."""

from __future__ import annotations

import strawberry

from mneia.schema.enums import ActorKind
from mneia.storage.actor import ActorRecord
from mneia.storage.workspace import WorkspaceRecord


@strawberry.type
class Workspace:
    id: strawberry.ID
    name: str

    @classmethod
    def of(cls, record: WorkspaceRecord) -> Workspace:
        return cls(id=strawberry.ID(str(record.id)), name=record.name)


@strawberry.type
class Actor:
    id: strawberry.ID
    kind: ActorKind = strawberry.field(description="Read from the actor's record, never from the caller.")
    name: str

    @classmethod
    def of(cls, record: ActorRecord) -> Actor:
        return cls(id=strawberry.ID(str(record.id)), kind=ActorKind(record.kind), name=record.name)
