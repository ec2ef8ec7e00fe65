"""Projects (a body of work) and their members."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import any_, func, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage.database import Tx, from_row, one_of
from mneia.storage.ids import new_id
from mneia.storage.tables import project_members, projects


@dataclass(frozen=True, slots=True)
class ProjectRecord:
    id: uuid.UUID
    name: str
    team_id: uuid.UUID | None


_COLUMNS = (projects.c.id, projects.c.name, projects.c.team_id)

_BY_IDS = select(*_COLUMNS).where(one_of(projects.c.id))


async def by_ids(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, ProjectRecord]:
    rows = await tx.execute(_BY_IDS, {"ids": list(ids)})
    return {row.id: from_row(ProjectRecord, row) for row in rows}


async def get(tx: Tx, project_id: uuid.UUID) -> ProjectRecord | None:
    return (await by_ids(tx, [project_id])).get(project_id)


async def all_visible(tx: Tx) -> list[ProjectRecord]:
    rows = await tx.execute(select(*_COLUMNS).order_by(projects.c.name, projects.c.id))
    return [from_row(ProjectRecord, row) for row in rows]


async def create(tx: Tx, name: str, team_id: uuid.UUID | None) -> ProjectRecord:
    """Create a project; its creator becomes its first member."""
    assert tx.workspace_id and tx.actor_id
    row = (
        await tx.execute(
            insert(projects)
            .values(
                workspace_id=tx.workspace_id,
                id=new_id(),
                name=name,
                team_id=team_id,
                created_by=tx.actor_id,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    record = from_row(ProjectRecord, row)
    await add_member(tx, record.id, tx.actor_id)
    return record


async def add_member(tx: Tx, project_id: uuid.UUID, actor_id: uuid.UUID) -> None:
    """Add an actor to a project; adding a member twice is not an error."""
    assert tx.workspace_id and tx.actor_id
    await tx.execute(
        pg_insert(project_members)
        .values(workspace_id=tx.workspace_id, project_id=project_id, actor_id=actor_id, added_by=tx.actor_id)
        .on_conflict_do_nothing()
    )


async def access(tx: Tx, project_id: uuid.UUID) -> tuple[ProjectRecord, bool] | None:
    """The project if the actor can see it, and whether it may work in it.

    Working in a project (asserting, starting sessions) takes membership,
    directly or through the project's team, as the database bound it for this
    transaction: one statement for both answers, on the path of every write.
    """
    row = (await tx.execute(_ACCESS, {"ids": [project_id]})).first()
    if row is None:
        return None
    return from_row(ProjectRecord, row[:-1]), bool(row[-1])


_ACCESS = select(*_COLUMNS, projects.c.id == any_(func.mneia_team_projects())).where(one_of(projects.c.id))
