"""Projects and their members. Creating and adding members is for humans (R3)."""

from __future__ import annotations

import uuid
from typing import Annotated

import strawberry

from mneia.errors import Forbidden, NotFound
from mneia.resolvers.inputs import name as name_text
from mneia.resolvers.inputs import parse_id
from mneia.resolvers.request.context import Info
from mneia.schema.project import Project
from mneia.storage import actor, project, team
from mneia.storage.database import Tx
from mneia.storage.project import Access


async def visible_project_id(info: Info, given: strawberry.ID, field: str = "projectId") -> uuid.UUID:
    """The id of the project named at ``field``, if the caller sees it (NotFound otherwise: a project
    the caller cannot see and one that does not exist answer alike, R2). Read through the request's
    project loader, so a later field asking for the same project reads nothing again."""
    key = parse_id(given, field)
    if await info.context.loaders.project.load(key) is None:
        raise NotFound("project", given)
    return key


async def project_to_work_in(
    tx: Tx, given: strawberry.ID, field: str, session_id: uuid.UUID | None = None
) -> Access:
    """The project named at ``field``, if the actor may work in it (assert, start a session).

    NotFound when the actor cannot see it, Forbidden when it can but is not a
    member, directly or through the project's team. The session named by
    ``session_id`` comes with it, if the actor can see it.
    """
    return work_in(await project.access(tx, parse_id(given, field), session_id), given, field)


def work_in(found: Access | None, given: strawberry.ID, field: str) -> Access:
    """The rule of ``project_to_work_in`` over an access already read (a batch reads them at once)."""
    if found is None:
        raise NotFound("project", given)
    if not found.member:
        raise Forbidden(f"{field}: you are not a member of this project")
    return found


async def get_project(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
) -> Project | None:
    record = await project.get(info.context.tx, parse_id(id, "id"))
    return Project.of(record) if record else None


async def list_projects(info: Info) -> list[Project]:
    return [Project.of(record) for record in await project.all_visible(info.context.tx)]


async def create_project(
    info: Info,
    name: Annotated[str, strawberry.argument(description="The project's name.")],
    team_id: Annotated[
        strawberry.ID | None, strawberry.argument(description="The team the project belongs to; null: none.")
    ] = None,
) -> Project:
    context = info.context
    team_key = parse_id(team_id, "teamId") if team_id is not None else None
    if team_key is not None and not await team.by_ids(context.tx, [team_key]):
        raise NotFound("team", team_id)
    record = await project.create(context.tx, name_text(name), team_key)
    return Project.of(record)


async def add_project_member(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
    actor_id: Annotated[strawberry.ID, strawberry.argument(description="The actor to make a member.")],
) -> Project:
    context = info.context
    project_key = parse_id(project_id, "projectId")
    actor_key = parse_id(actor_id, "actorId")
    found = await project.get(context.tx, project_key)
    if found is None:
        raise NotFound("project", project_id)
    if await actor.get(context.tx, actor_key) is None:
        raise NotFound("actor", actor_id)
    await project.add_member(context.tx, project_key, actor_key)
    return Project.of(found)
