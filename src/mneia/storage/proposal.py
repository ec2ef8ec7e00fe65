"""Proposals: an agent's change that waits for a human (load-bearing, supersession)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage.database import Tx, from_row
from mneia.storage.ids import new_id
from mneia.storage.tables import proposals


@dataclass(frozen=True, slots=True)
class ProposalRecord:
    id: uuid.UUID
    project_id: uuid.UUID
    kind: str
    status: str
    target_id: uuid.UUID
    proposed_by: uuid.UUID
    proposed_at: datetime
    reason: str | None
    replacement: dict[str, Any] | None
    result_id: uuid.UUID | None
    decided_by: uuid.UUID | None
    decided_at: datetime | None
    decision_note: str | None


_COLUMNS = tuple(proposals.c[field.name] for field in dataclasses.fields(ProposalRecord))


async def by_ids(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, ProposalRecord]:
    rows = await tx.execute(select(*_COLUMNS).where(proposals.c.id.in_(ids)))
    return {row.id: from_row(ProposalRecord, row) for row in rows}


async def pending_load_bearing(tx: Tx, target_id: uuid.UUID) -> ProposalRecord | None:
    row = (
        await tx.execute(
            select(*_COLUMNS).where(
                proposals.c.target_id == target_id,
                proposals.c.kind == "LOAD_BEARING",
                proposals.c.status == "PENDING",
            )
        )
    ).first()
    return from_row(ProposalRecord, row) if row else None


async def create(
    tx: Tx,
    *,
    project_id: uuid.UUID,
    kind: str,
    target_id: uuid.UUID,
    reason: str | None,
    replacement: dict[str, Any] | None = None,
) -> ProposalRecord:
    assert tx.workspace_id and tx.actor_id
    row = (
        await tx.execute(
            pg_insert(proposals)
            .values(
                workspace_id=tx.workspace_id,
                id=new_id(),
                project_id=project_id,
                kind=kind,
                target_id=target_id,
                proposed_by=tx.actor_id,
                reason=reason,
                replacement=replacement,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return from_row(ProposalRecord, row)


async def settle_load_bearing(tx: Tx, target_id: uuid.UUID, *, accepted: bool) -> None:
    """Close the pending load-bearing suggestion on an item, if any, as decided by the caller."""
    await tx.execute(
        update(proposals)
        .where(
            proposals.c.target_id == target_id,
            proposals.c.kind == "LOAD_BEARING",
            proposals.c.status == "PENDING",
        )
        .values(
            status="ACCEPTED" if accepted else "REJECTED",
            decided_by=tx.actor_id,
            decided_at=func.now(),
            decision_note="settled by setLoadBearing",
        )
    )
