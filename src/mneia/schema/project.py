"""Project: a body of work, usually one repository."""

from __future__ import annotations

import uuid

import strawberry

from mneia.schema.loading import now_or_later
from mneia.schema.reading import Info
from mneia.schema.team import Team
from mneia.storage.project import ProjectRecord


@strawberry.type(
    description="A body of work, usually one repository. Items, sessions and handoffs belong to a project."
)
class Project:
    id: strawberry.ID = strawberry.field(description="The project's id.")
    name: str = strawberry.field(description="The project's name.")
    team_id: strawberry.Private[uuid.UUID | None]

    @strawberry.field(
        description="The team the project belongs to, whose function sets its default quotas; null when none."
    )
    def team(self, info: Info) -> Team | None:
        if self.team_id is None:
            return None
        found = info.context.loaders.team.load(self.team_id)
        return now_or_later(found, lambda record: Team.of(record) if record else None)

    @classmethod
    def of(cls, record: ProjectRecord) -> Project:
        return cls(id=strawberry.ID(str(record.id)), name=record.name, team_id=record.team_id)
