"""Proposals: an agent's change that waits for a human (load-bearing, supersession)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text, update
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


# A SUPERSESSION proposal keeps the replacement's validated column values as
# JSON until a human decides; these columns need converting back.
_UUIDS = ("project_id", "session_id")
_TIMES = ("valid_from", "valid_to")


def encode_replacement(values: dict[str, Any]) -> dict[str, Any]:
    encoded: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, uuid.UUID):
            encoded[key] = str(value)
        elif isinstance(value, datetime):
            encoded[key] = value.isoformat()
        elif isinstance(value, timedelta):
            encoded[key] = value.total_seconds()
        elif key == "grant_actor_ids":
            encoded[key] = [str(actor) for actor in value]
        else:
            encoded[key] = value
    return encoded


def decode_replacement(encoded: dict[str, Any]) -> dict[str, Any]:
    values = dict(encoded)
    for key in _UUIDS:
        if values.get(key) is not None:
            values[key] = uuid.UUID(values[key])
    for key in _TIMES:
        if values.get(key) is not None:
            values[key] = datetime.fromisoformat(values[key])
    if values.get("decay_after") is not None:
        values["decay_after"] = timedelta(seconds=values["decay_after"])
    values["grant_actor_ids"] = [uuid.UUID(actor) for actor in values.get("grant_actor_ids", [])]
    return values


async def lock(tx: Tx, proposal_id: uuid.UUID) -> ProposalRecord | None:
    """A visible proposal, row-locked so that two deciders cannot both decide it."""
    row = (await tx.execute(select(*_COLUMNS).where(proposals.c.id == proposal_id).with_for_update())).first()
    return from_row(ProposalRecord, row) if row else None


async def decide(
    tx: Tx, proposal_id: uuid.UUID, *, accepted: bool, note: str | None, result_id: uuid.UUID | None
) -> ProposalRecord:
    row = (
        await tx.execute(
            update(proposals)
            .where(proposals.c.id == proposal_id, proposals.c.status == "PENDING")
            .values(
                status="ACCEPTED" if accepted else "REJECTED",
                decided_by=tx.actor_id,
                decided_at=func.now(),
                decision_note=note,
                result_id=result_id,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return from_row(ProposalRecord, row)


async def of_project(tx: Tx, project_id: uuid.UUID, status: str | None) -> list[ProposalRecord]:
    """A project's visible proposals, newest first."""
    query = select(*_COLUMNS).where(proposals.c.project_id == project_id)
    if status is not None:
        query = query.where(proposals.c.status == status)
    rows = await tx.execute(query.order_by(proposals.c.proposed_at.desc(), proposals.c.id.desc()))
    return [from_row(ProposalRecord, row) for row in rows]


def _insert(
    tx: Tx,
    *,
    project_id: uuid.UUID,
    kind: str,
    target_id: uuid.UUID,
    reason: str | None,
    replacement: dict[str, Any] | None = None,
) -> Any:
    """A new PENDING proposal by the caller."""
    assert tx.workspace_id and tx.actor_id
    return pg_insert(proposals).values(
        workspace_id=tx.workspace_id,
        id=new_id(),
        project_id=project_id,
        kind=kind,
        target_id=target_id,
        proposed_by=tx.actor_id,
        reason=reason,
        replacement=replacement,
    )


async def suggest_load_bearing(
    tx: Tx, *, project_id: uuid.UUID, target_id: uuid.UUID, reason: str | None
) -> None:
    """Open a LOAD_BEARING proposal unless one is pending; concurrent suggestions make one."""
    statement = _insert(tx, project_id=project_id, kind="LOAD_BEARING", target_id=target_id, reason=reason)
    await tx.execute(
        statement.on_conflict_do_nothing(
            index_elements=[proposals.c.workspace_id, proposals.c.target_id],
            # The predicate of the partial index proposals_one_pending_load_bearing, verbatim.
            index_where=text("kind = 'LOAD_BEARING' AND status = 'PENDING'"),
        )
    )


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
    statement = _insert(
        tx, project_id=project_id, kind=kind, target_id=target_id, reason=reason, replacement=replacement
    )
    row = (await tx.execute(statement.returning(*_COLUMNS))).one()
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
