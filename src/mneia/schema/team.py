"""Team: a group inside a workspace with a function (what it does)."""

from __future__ import annotations

import strawberry

from mneia.storage.team import TeamRecord


@strawberry.type(
    description="A group inside a workspace with a function, which sets the default view of its projects."
)
class Team:
    id: strawberry.ID = strawberry.field(description="The team's id.")
    name: str = strawberry.field(description="The team's name.")
    function: str = strawberry.field(
        description="What the team does, e.g. backend or support: it picks the rehydration profile of its"
        " projects."
    )

    @classmethod
    def of(cls, record: TeamRecord) -> Team:
        return cls(id=strawberry.ID(str(record.id)), name=record.name, function=record.function)
