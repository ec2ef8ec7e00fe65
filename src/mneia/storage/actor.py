"""Actors: a person or an agent inside one workspace. The kind is the record's (R3)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select

from mneia.storage.database import Driven, Tx, from_row, one_of, stated
from mneia.storage.ids import new_id
from mneia.storage.tables import actors
from mneia.vocabulary import ActorKind


@dataclass(frozen=True, slots=True)
class ActorRecord:
    workspace_id: uuid.UUID
    id: uuid.UUID
    kind: ActorKind
    name: str
    created_at: datetime
    erased_at: datetime | None = None
    """R18: erased by a human; ``name`` is a pseudonym since."""

    @property
    def is_human(self) -> bool:
        return self.kind == ActorKind.HUMAN


COLUMNS = (
    actors.c.workspace_id,
    actors.c.id,
    actors.c.kind,
    actors.c.name,
    actors.c.created_at,
    actors.c.erased_at,
)
"""An ``ActorRecord``'s columns, in its field order."""

_BY_IDS = Driven(select(*COLUMNS).where(stated(actors), one_of(actors.c.id)))  # every actor loader's


async def by_ids(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, ActorRecord]:
    records = [
        from_row(ActorRecord, row)
        for row in await tx.fetch(_BY_IDS, {"workspace": tx.workspace, "ids": list(ids)})
    ]
    return {record.id: record for record in records}


async def get(tx: Tx, actor_id: uuid.UUID) -> ActorRecord | None:
    return (await by_ids(tx, [actor_id])).get(actor_id)


async def create(
    tx: Tx, workspace_id: uuid.UUID, kind: ActorKind, name: str, created_by: uuid.UUID | None
) -> ActorRecord:
    row = (
        await tx.execute(
            insert(actors)
            .values(workspace_id=workspace_id, id=new_id(), kind=kind, name=name, created_by=created_by)
            .returning(*COLUMNS)
        )
    ).one()
    return from_row(ActorRecord, row)
