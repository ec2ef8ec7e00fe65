"""Projects (a body of work) and their members."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import UUID, any_, bindparam, func, insert, select, true
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage import session
from mneia.storage.database import Driven, Tx, from_row, one_of, stated
from mneia.storage.ids import new_id
from mneia.storage.session import SessionRecord
from mneia.storage.tables import project_members, projects


@dataclass(frozen=True, slots=True)
class ProjectRecord:
    id: uuid.UUID
    name: str
    team_id: uuid.UUID | None


_COLUMNS = (projects.c.id, projects.c.name, projects.c.team_id)

_BY_IDS = Driven(select(*_COLUMNS).where(stated(projects), one_of(projects.c.id)))  # every project loader's


async def by_ids(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, ProjectRecord]:
    records = [
        from_row(ProjectRecord, row)
        for row in await tx.fetch(_BY_IDS, {"workspace": tx.workspace, "ids": list(ids)})
    ]
    return {record.id: record for record in records}


async def get(tx: Tx, project_id: uuid.UUID) -> ProjectRecord | None:
    return (await by_ids(tx, [project_id])).get(project_id)


async def all_visible(tx: Tx) -> list[ProjectRecord]:
    rows = await tx.execute(
        select(*_COLUMNS).where(stated(projects, tx)).order_by(projects.c.name, projects.c.id)
    )
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


@dataclass(frozen=True, slots=True)
class Access:
    """What the actor may do in a project, and the session it names, as one statement answered."""

    project: ProjectRecord
    member: bool  # works in it: a member, directly or through the project's team
    session: SessionRecord | None  # the session asked about, if the actor can see it


async def access(tx: Tx, project_id: uuid.UUID, session_id: uuid.UUID | None = None) -> Access | None:
    """The project if the actor can see it, whether it works in it, and the session asked about.

    On the path of every write (asserting, starting a session), so one
    statement answers all three: membership as the database bound it for
    this transaction, the session joined in when one is named. None when the
    actor cannot see the project.
    """
    rows = await tx.fetch(_ACCESS, {"workspace": tx.workspace, "ids": [project_id], "session": session_id})
    return _access_of(rows[0]) if rows else None


async def access_all(
    tx: Tx, project_ids: Sequence[uuid.UUID], session_ids: Sequence[uuid.UUID] = ()
) -> tuple[dict[uuid.UUID, Access], dict[uuid.UUID, SessionRecord]]:
    """``access`` for a batch of writes: each project the actor can see, and each session.

    One statement when the batch names at most one session (a client's
    batch is in its session, or in none), two otherwise; never one per item.
    The accesses carry no session: a batch's sessions are in the second map.
    """
    named = session_ids[0] if len(session_ids) == 1 else None
    places: dict[uuid.UUID, Access] = {}
    sessions: dict[uuid.UUID, SessionRecord] = {}
    accessed = {"workspace": tx.workspace, "ids": list(project_ids), "session": named}
    for row in await tx.fetch(_ACCESS, accessed):
        found = _access_of(row)
        places[found.project.id] = dataclasses.replace(found, session=None)
        if found.session is not None:
            sessions[found.session.id] = found.session
    if len(session_ids) > 1:
        sessions = await session.by_ids(tx, session_ids)
    return places, sessions


def _access_of(row: Sequence[Any]) -> Access:
    project_part, session_part = row[: len(_COLUMNS)], row[len(_COLUMNS) + 1 :]
    found = from_row(SessionRecord, session_part) if session_part[0] is not None else None
    return Access(from_row(ProjectRecord, project_part), bool(row[len(_COLUMNS)]), found)


_NAMED_SESSION = session.by_id_query(bindparam("session", type_=UUID)).subquery()
_ACCESS = Driven(
    select(*_COLUMNS, projects.c.id == any_(func.mneia_team_projects()), *_NAMED_SESSION.c)
    .select_from(projects.outerjoin(_NAMED_SESSION, true()))
    .where(stated(projects), one_of(projects.c.id))
)
