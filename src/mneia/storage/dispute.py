"""Disputes: an assertion that contradicts another item, open until a human resolves it (R8)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage.announced import Announcement
from mneia.storage.database import Tx, from_row, stated
from mneia.storage.ids import new_id
from mneia.storage.item import ItemRecord
from mneia.storage.notification import Floors
from mneia.storage.tables import disputes
from mneia.vocabulary import DisputeStatus


@dataclass(frozen=True, slots=True)
class DisputeRecord:
    id: uuid.UUID
    project_id: uuid.UUID
    status: DisputeStatus
    item_id: uuid.UUID
    contested_id: uuid.UUID
    raised_by: uuid.UUID
    raised_at: datetime
    reason: str | None
    resolved_by: uuid.UUID | None
    resolved_at: datetime | None
    kept_item_id: uuid.UUID | None
    resolution_note: str | None
    seq: int

    def at(self, moment: datetime) -> DisputeRecord | None:
        """The dispute as it stood at ``moment`` (R9): none before it was raised, OPEN until resolved."""
        if self.raised_at > moment:
            return None
        if self.resolved_at is None or self.resolved_at <= moment:
            return self
        return dataclasses.replace(
            self,
            status=DisputeStatus.OPEN,
            resolved_by=None,
            resolved_at=None,
            kept_item_id=None,
            resolution_note=None,
        )


_COLUMNS = tuple(disputes.c[field.name] for field in dataclasses.fields(DisputeRecord))


async def by_ids(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, DisputeRecord]:
    rows = await tx.execute(select(*_COLUMNS).where(stated(disputes, tx), disputes.c.id.in_(ids)))
    return {row.id: from_row(DisputeRecord, row) for row in rows}


# Read for every subscriber class of every announcement (resolvers.subscription).
ANNOUNCED = Announcement(
    disputes,
    DisputeRecord,
    _COLUMNS,
    item_refs=("item_id", "contested_id", "kept_item_id"),
    actor_refs=("raised_by", "resolved_by"),
)


async def since(tx: Tx, floors: Floors) -> list[DisputeRecord]:
    """The announced disputes numbered above ``floors`` that the caller can see, in number order
    (catch-up; storage.notification.Floors)."""
    query = (
        select(*_COLUMNS).where(stated(disputes, tx), floors.clause(disputes.c.seq)).order_by(disputes.c.seq)
    )
    return [from_row(DisputeRecord, row) for row in await tx.execute(query)]


async def lock(tx: Tx, dispute_id: uuid.UUID) -> DisputeRecord | None:
    """A visible dispute, row-locked so that two humans cannot resolve it differently at once."""
    locked = select(*_COLUMNS).where(stated(disputes, tx), disputes.c.id == dispute_id).with_for_update()
    row = (await tx.execute(locked)).first()
    return from_row(DisputeRecord, row) if row else None


async def resolve(tx: Tx, dispute_id: uuid.UUID, kept: uuid.UUID, note: str | None) -> DisputeRecord:
    row = (
        await tx.execute(
            update(disputes)
            .where(stated(disputes, tx), disputes.c.id == dispute_id, disputes.c.status == DisputeStatus.OPEN)
            .values(
                status=DisputeStatus.RESOLVED,
                resolved_by=tx.actor_id,
                resolved_at=func.now(),
                kept_item_id=kept,
                resolution_note=note,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return from_row(DisputeRecord, row)


async def of_project(
    tx: Tx, project_id: uuid.UUID, status: DisputeStatus | None, limit: int | None = None
) -> list[DisputeRecord]:
    """A project's visible disputes, newest first (the newest ``limit``, when given)."""
    query = select(*_COLUMNS).where(stated(disputes, tx), disputes.c.project_id == project_id)
    if status is not None:
        query = query.where(disputes.c.status == status)
    rows = await tx.execute(query.order_by(disputes.c.raised_at.desc(), disputes.c.id.desc()).limit(limit))
    return [from_row(DisputeRecord, row) for row in rows]


async def involving(tx: Tx, item_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[DisputeRecord]]:
    """Every visible dispute in which each item is either side, newest first."""
    rows = await tx.execute(
        select(*_COLUMNS)
        .where(
            stated(disputes, tx), or_(disputes.c.item_id.in_(item_ids), disputes.c.contested_id.in_(item_ids))
        )
        .order_by(disputes.c.raised_at.desc(), disputes.c.id.desc())
    )
    found: dict[uuid.UUID, list[DisputeRecord]] = {item_id: [] for item_id in item_ids}
    for row in rows:
        record = from_row(DisputeRecord, row)
        for side in (record.item_id, record.contested_id):
            if side in found:
                found[side].append(record)
    return found


async def open(tx: Tx, newcomer: ItemRecord, contested: ItemRecord, reason: str | None) -> DisputeRecord:
    """Open a dispute: ``newcomer`` contradicts ``contested``; neither is changed by it."""
    assert tx.workspace_id and tx.actor_id
    row = (
        await tx.execute(
            pg_insert(disputes)
            .values(
                workspace_id=tx.workspace_id,
                id=new_id(),
                project_id=contested.project_id,
                item_id=newcomer.id,
                contested_id=contested.id,
                raised_by=tx.actor_id,
                reason=reason,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return from_row(DisputeRecord, row)


async def open_between(tx: Tx, item_id: uuid.UUID, contested_id: uuid.UUID) -> DisputeRecord | None:
    row = (
        await tx.execute(
            select(*_COLUMNS).where(
                stated(disputes, tx),
                disputes.c.item_id == item_id,
                disputes.c.contested_id == contested_id,
                disputes.c.status == DisputeStatus.OPEN,
            )
        )
    ).first()
    return from_row(DisputeRecord, row) if row else None
