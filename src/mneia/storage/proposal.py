"""Proposals: an agent's change that waits for a human (load-bearing, supersession).

A SUPERSESSION proposal keeps the replacement the agent proposed until a human
decides, stored by one versioned codec: ``{"v": 1, "item": {column: value}}``
with values as PostgreSQL reads them back (ids and times as text, durations
in seconds). The database reads the same form when it checks that an
accepted replacement is exactly what was proposed
(``mneia_replacement_matches`` in storage/sql/authority.sql).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage.announced import Announcement
from mneia.storage.database import Tx, from_row, one_of, stated
from mneia.storage.ids import new_id
from mneia.storage.item import NewItem
from mneia.storage.notification import Floors
from mneia.storage.tables import proposals
from mneia.vocabulary import ItemKind, ProposalKind, ProposalStatus, Scope

CODEC_VERSION = 1


@dataclass(frozen=True, slots=True)
class ProposalRecord:
    id: uuid.UUID
    project_id: uuid.UUID
    kind: ProposalKind
    status: ProposalStatus
    target_id: uuid.UUID
    proposed_by: uuid.UUID
    proposed_at: datetime
    reason: str | None
    replacement: dict[str, Any] | None
    result_id: uuid.UUID | None
    decided_by: uuid.UUID | None
    decided_at: datetime | None
    decision_note: str | None
    seq: int

    def at(self, moment: datetime) -> ProposalRecord | None:
        """The proposal as it stood at ``moment`` (R9): none before it was raised, PENDING until decided."""
        if self.proposed_at > moment:
            return None
        if self.decided_at is None or self.decided_at <= moment:
            return self
        return dataclasses.replace(
            self,
            status=ProposalStatus.PENDING,
            result_id=None,
            decided_by=None,
            decided_at=None,
            decision_note=None,
        )

    @property
    def replacement_item(self) -> NewItem | None:
        return decode_replacement(self.replacement) if self.replacement is not None else None


_COLUMNS = tuple(proposals.c[field.name] for field in dataclasses.fields(ProposalRecord))


def encode_replacement(new: NewItem) -> dict[str, Any]:
    item: dict[str, Any] = {}
    for field in dataclasses.fields(NewItem):
        value = getattr(new, field.name)
        if isinstance(value, uuid.UUID):
            value = str(value)
        elif isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, timedelta):
            value = value.total_seconds()
        elif field.name in ("grant_actor_ids", "redacted"):
            value = [str(each) for each in value]
        item[field.name] = value.value if isinstance(value, (ItemKind, Scope)) else value
    return {"v": CODEC_VERSION, "item": item}


def decode_replacement(encoded: dict[str, Any]) -> NewItem:
    if encoded.get("v") != CODEC_VERSION:
        raise ValueError(
            f"a replacement stored by codec version {encoded.get('v')!r}, expected {CODEC_VERSION}"
        )
    item = encoded["item"]

    def optional(name: str, convert: Any) -> Any:
        value = item.get(name)
        return None if value is None else convert(value)

    return NewItem(
        project_id=uuid.UUID(item["project_id"]),
        kind=ItemKind(item["kind"]),
        statement=item["statement"],
        details=item.get("details"),
        basis=item.get("basis"),
        confidence=item.get("confidence"),
        scope=Scope(item.get("scope") or Scope.PROJECT),
        grant_actor_ids=tuple(uuid.UUID(actor) for actor in item.get("grant_actor_ids") or ()),
        session_id=optional("session_id", uuid.UUID),
        valid_from=optional("valid_from", datetime.fromisoformat),
        valid_to=optional("valid_to", datetime.fromisoformat),
        decay_after=optional("decay_after", lambda seconds: timedelta(seconds=seconds)),
        said_at=optional("said_at", datetime.fromisoformat),
        redacted=tuple(item.get("redacted") or ()),
    )


async def by_ids(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, ProposalRecord]:
    rows = await tx.execute(select(*_COLUMNS).where(stated(proposals, tx), proposals.c.id.in_(ids)))
    return {row.id: from_row(ProposalRecord, row) for row in rows}


# Read for every subscriber class of every announcement (resolvers.subscription).
ANNOUNCED = Announcement(
    proposals,
    ProposalRecord,
    _COLUMNS,
    item_refs=("target_id", "result_id"),
    actor_refs=("proposed_by", "decided_by"),
)


async def since(tx: Tx, floors: Floors) -> list[ProposalRecord]:
    """The announced proposals numbered above ``floors`` that the caller can see, in number order
    (catch-up; storage.notification.Floors)."""
    query = (
        select(*_COLUMNS)
        .where(stated(proposals, tx), floors.clause(proposals.c.seq))
        .order_by(proposals.c.seq)
    )
    return [from_row(ProposalRecord, row) for row in await tx.execute(query)]


async def lock(tx: Tx, proposal_id: uuid.UUID) -> ProposalRecord | None:
    """A visible proposal, row-locked so that two deciders cannot both decide it."""
    locked = select(*_COLUMNS).where(stated(proposals, tx), proposals.c.id == proposal_id).with_for_update()
    row = (await tx.execute(locked)).first()
    return from_row(ProposalRecord, row) if row else None


async def decide(
    tx: Tx, proposal_id: uuid.UUID, *, accepted: bool, note: str | None, result_id: uuid.UUID | None
) -> ProposalRecord:
    row = (
        await tx.execute(
            update(proposals)
            .where(
                stated(proposals, tx),
                proposals.c.id == proposal_id,
                proposals.c.status == ProposalStatus.PENDING,
            )
            .values(
                status=ProposalStatus.ACCEPTED if accepted else ProposalStatus.REJECTED,
                decided_by=tx.actor_id,
                decided_at=func.now(),
                decision_note=note,
                result_id=result_id,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return from_row(ProposalRecord, row)


async def of_project(
    tx: Tx, project_id: uuid.UUID, status: ProposalStatus | None, limit: int | None = None
) -> list[ProposalRecord]:
    """A project's visible proposals, newest first (the newest ``limit``, when given)."""
    query = select(*_COLUMNS).where(stated(proposals, tx), proposals.c.project_id == project_id)
    if status is not None:
        query = query.where(proposals.c.status == status)
    rows = await tx.execute(
        query.order_by(proposals.c.proposed_at.desc(), proposals.c.id.desc()).limit(limit)
    )
    return [from_row(ProposalRecord, row) for row in rows]


async def about(tx: Tx, item_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[ProposalRecord]]:
    """The visible proposals about each item (their target), newest first."""
    rows = await tx.execute(
        select(*_COLUMNS)
        .where(stated(proposals), one_of(proposals.c.target_id))
        .order_by(proposals.c.proposed_at.desc(), proposals.c.id.desc()),
        {"workspace": tx.workspace, "ids": list(item_ids)},
    )
    found: dict[uuid.UUID, list[ProposalRecord]] = {item_id: [] for item_id in item_ids}
    for row in rows:
        found[row.target_id].append(from_row(ProposalRecord, row))
    return found


def _insert(
    tx: Tx,
    *,
    project_id: uuid.UUID,
    kind: ProposalKind,
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
    statement = _insert(
        tx, project_id=project_id, kind=ProposalKind.LOAD_BEARING, target_id=target_id, reason=reason
    )
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
                stated(proposals, tx),
                proposals.c.target_id == target_id,
                proposals.c.kind == ProposalKind.LOAD_BEARING,
                proposals.c.status == ProposalStatus.PENDING,
            )
        )
    ).first()
    return from_row(ProposalRecord, row) if row else None


async def propose_replacement(
    tx: Tx, *, target_id: uuid.UUID, project_id: uuid.UUID, new: NewItem, reason: str
) -> ProposalRecord:
    statement = _insert(
        tx,
        project_id=project_id,
        kind=ProposalKind.SUPERSESSION,
        target_id=target_id,
        reason=reason,
        replacement=encode_replacement(new),
    )
    row = (await tx.execute(statement.returning(*_COLUMNS))).one()
    return from_row(ProposalRecord, row)


async def settle_load_bearing(tx: Tx, target_id: uuid.UUID, *, accepted: bool) -> None:
    """Close the pending load-bearing suggestion on an item, if any, as decided by the caller."""
    await tx.execute(
        update(proposals)
        .where(
            stated(proposals, tx),
            proposals.c.target_id == target_id,
            proposals.c.kind == ProposalKind.LOAD_BEARING,
            proposals.c.status == ProposalStatus.PENDING,
        )
        .values(
            status=ProposalStatus.ACCEPTED if accepted else ProposalStatus.REJECTED,
            decided_by=tx.actor_id,
            decided_at=func.now(),
            decision_note="settled by setLoadBearing",
            result_id=target_id if accepted else None,
        )
    )
