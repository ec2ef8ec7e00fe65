"""Teams, each with its function (what makes a support engineer's view differ from a backend team's)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage.database import Tx, from_row, one_of, stated
from mneia.storage.ids import new_id
from mneia.storage.tables import team_members, teams


@dataclass(frozen=True, slots=True)
class TeamRecord:
    id: uuid.UUID
    name: str
    function: str


_COLUMNS = (teams.c.id, teams.c.name, teams.c.function)

_BY_IDS = select(*_COLUMNS).where(stated(teams), one_of(teams.c.id))


async def by_ids(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, TeamRecord]:
    rows = await tx.execute(_BY_IDS, {"workspace": tx.workspace, "ids": list(ids)})
    return {row.id: from_row(TeamRecord, row) for row in rows}


async def create(tx: Tx, name: str, function: str) -> TeamRecord:
    assert tx.workspace_id and tx.actor_id
    row = (
        await tx.execute(
            insert(teams)
            .values(
                workspace_id=tx.workspace_id,
                id=new_id(),
                name=name,
                function=function,
                created_by=tx.actor_id,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return from_row(TeamRecord, row)


async def add_member(tx: Tx, team_id: uuid.UUID, actor_id: uuid.UUID) -> None:
    """Add an actor to a team; adding a member twice is not an error."""
    assert tx.workspace_id and tx.actor_id
    await tx.execute(
        pg_insert(team_members)
        .values(workspace_id=tx.workspace_id, team_id=team_id, actor_id=actor_id, added_by=tx.actor_id)
        .on_conflict_do_nothing()
    )
