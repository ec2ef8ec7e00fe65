"""Project: a body of work, usually one repository."""

from __future__ import annotations

import strawberry

from mneia.schema.loading import now_or_later
from mneia.schema.reading import Info
from mneia.schema.team import Team
from mneia.storage.project import ProjectRecord


@strawberry.type
class Project:
    id: strawberry.ID
    name: str
    team_id: strawberry.Private[object]

    @strawberry.field
    def team(self, info: Info) -> Team | None:
        if self.team_id is None:
            return None
        found = info.context.loaders.team.load(self.team_id)
        return now_or_later(found, lambda record: Team.of(record) if record else None)

    @classmethod
    def of(cls, record: ProjectRecord) -> Project:
        return cls(id=strawberry.ID(str(record.id)), name=record.name, team_id=record.team_id)
