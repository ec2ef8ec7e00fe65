"""Retention policies, legal holds and redaction notices (R16-R18)."""

from __future__ import annotations

import uuid
from datetime import datetime

import strawberry

from mneia.schema.actor import Actor
from mneia.schema.enums import ItemKind, ItemStatus
from mneia.schema.item import Item
from mneia.schema.project import Project
from mneia.schema.reading import View
from mneia.schema.scalars import Duration
from mneia.storage.privacy import HoldRecord, PolicyRecord


async def _project(view: View, project_id: uuid.UUID | None) -> Project | None:
    if project_id is None:
        return None
    found = await view.loaders.project.load(project_id)
    return Project.of(found) if found else None


@strawberry.type(description="How long SUPERSEDED and RETIRED items keep their text (R16).")
class RetentionPolicy:
    id: strawberry.ID = strawberry.field(description="The policy's id.")
    kinds: list[ItemKind] = strawberry.field(description="Empty: every kind.")
    statuses: list[ItemStatus] = strawberry.field(
        description="The statuses it applies to: SUPERSEDED, RETIRED or both."
    )
    after: Duration = strawberry.field(description="Counted from the status change; at least P30D.")
    created_at: datetime = strawberry.field(description="When it was set.")
    record: strawberry.Private[PolicyRecord]
    view: strawberry.Private[View]

    @strawberry.field(description="Null: the workspace's default.")
    async def project(self) -> Project | None:
        return await _project(self.view, self.record.project_id)

    @strawberry.field(description="The human who set it.")
    async def created_by(self) -> Actor:
        return Actor.of(await self.view.loaders.actor.load(self.record.created_by))

    @classmethod
    def of(cls, record: PolicyRecord, view: View) -> RetentionPolicy:
        return cls(
            id=strawberry.ID(str(record.id)),
            kinds=[ItemKind(kind) for kind in record.kinds],
            statuses=[ItemStatus(status) for status in record.statuses],
            after=Duration(record.after),
            created_at=record.created_at,
            record=record,
            view=view,
        )


@strawberry.type(
    description="A legal hold on a project or an item: it wins over retention and erasure (R17)."
)
class LegalHold:
    id: strawberry.ID = strawberry.field(description="The hold's id.")
    reason: str = strawberry.field(description="Why it was placed.")
    placed_at: datetime = strawberry.field(description="When it was placed.")
    released_at: datetime | None = strawberry.field(description="When it was released; null while it holds.")
    record: strawberry.Private[HoldRecord]
    view: strawberry.Private[View]

    @strawberry.field(description="The project held, or of the item held.")
    async def project(self) -> Project | None:
        return await _project(self.view, self.record.project_id)

    @strawberry.field(description="Null: the whole project is held.")
    async def item(self) -> Item | None:
        if self.record.item_id is None:
            return None
        found = await self.view.loaders.item.load(self.record.item_id)
        return Item.of(found, self.view) if found else None

    @strawberry.field(description="The human who placed it.")
    async def placed_by(self) -> Actor:
        return Actor.of(await self.view.loaders.actor.load(self.record.placed_by))

    @strawberry.field(description="The human who released it; null while it holds.")
    async def released_by(self) -> Actor | None:
        if self.record.released_by is None:
            return None
        return Actor.of(await self.view.loaders.actor.load(self.record.released_by))

    @classmethod
    def of(cls, record: HoldRecord, view: View) -> LegalHold:
        return cls(
            id=strawberry.ID(str(record.id)),
            reason=record.reason,
            placed_at=record.placed_at,
            released_at=record.released_at,
            record=record,
            view=view,
        )


@strawberry.type(description="An item a policy will redact, and when.")
class RedactionNotice:
    item: Item = strawberry.field(description="The item that will be redacted.")
    due_at: datetime = strawberry.field(
        description="When the policy redacts it; in the past when it is overdue."
    )
    policy: RetentionPolicy = strawberry.field(description="The policy that will redact it.")


@strawberry.input(description="A retention policy to set for a project or as the workspace's default (R16).")
class RetentionPolicyInput:
    project_id: strawberry.ID | None = strawberry.field(
        default=None, description="Null: the workspace's default."
    )
    kinds: list[ItemKind] | None = strawberry.field(default=None, description="Empty or null: every kind.")
    statuses: list[ItemStatus] = strawberry.field(description="A subset of SUPERSEDED, RETIRED.")
    after: Duration = strawberry.field(description="At least P30D, counted from the status change.")
