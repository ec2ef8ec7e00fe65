"""Team: a group inside a workspace with a function (what it does)."""

from __future__ import annotations

import strawberry

from mneia.storage.team import TeamRecord


@strawberry.type
class Team:
    id: strawberry.ID
    name: str
    function: str

    @classmethod
    def of(cls, record: TeamRecord) -> Team:
        return cls(id=strawberry.ID(str(record.id)), name=record.name, function=record.function)
