"""Teams and their members (humans only)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from mneia.errors import NotFound
from mneia.resolvers.inputs import name as name_text
from mneia.resolvers.inputs import parse_id, required_text
from mneia.resolvers.request.context import Info
from mneia.schema.team import Team
from mneia.storage import actor, team


async def create_team(
    info: Info,
    name: Annotated[str, strawberry.argument(description="The team's name.")],
    function: Annotated[
        str,
        strawberry.argument(
            description="What the team does, e.g. backend or support: it picks the rehydration profile of"
            " the team's projects."
        ),
    ],
) -> Team:
    context = info.context
    record = await team.create(
        context.tx, name_text(name), required_text(function, "function", 500, one_line=True)
    )
    await team.add_member(context.tx, record.id, context.actor.id)
    return Team.of(record)


async def add_team_member(
    info: Info,
    team_id: Annotated[strawberry.ID, strawberry.argument(description="The team's id.")],
    actor_id: Annotated[
        strawberry.ID,
        strawberry.argument(description="The actor to add: it works in every project of the team."),
    ],
) -> Team:
    context = info.context
    team_key = parse_id(team_id, "teamId")
    actor_key = parse_id(actor_id, "actorId")
    found = (await team.by_ids(context.tx, [team_key])).get(team_key)
    if found is None:
        raise NotFound("team", team_id)
    if await actor.get(context.tx, actor_key) is None:
        raise NotFound("actor", actor_id)
    await team.add_member(context.tx, team_key, actor_key)
    return Team.of(found)
