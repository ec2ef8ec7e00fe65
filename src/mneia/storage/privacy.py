"""Retention policies, legal holds, redaction and erasure (R16-R18; storage/sql/privacy.sql).

The database holds the rules: only ``mneia_redact`` (the owner's) blanks
text; a held item is never redacted; a redacted item's text never comes
back; an erased actor gets no token. This module reads and writes the
policies and holds as the caller (row-level security), and runs the sweep
as the owner, one workspace and one batch per transaction, so that reads
are never blocked for long (only the due rows are locked).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import OWNER_ROLE
from mneia.storage import citus
from mneia.storage.database import Tx, create_engine, from_row, stated, transaction
from mneia.storage.ids import new_id
from mneia.storage.tables import legal_holds, retention_policies

SWEEP_BATCH = 1_000
"""Items redacted per transaction by the sweep."""
PACE = 0.5
"""After each batch the sweep waits this share of the batch's time: it shares the machine's cores with
the readers (benchmarks/sweep.py: a page's p95 during a sweep against its p95 before)."""


@dataclass(frozen=True, slots=True)
class PolicyRecord:
    id: uuid.UUID
    project_id: uuid.UUID | None
    kinds: list[str]
    statuses: list[str]
    after: timedelta
    created_by: uuid.UUID
    created_at: datetime
    removed_by: uuid.UUID | None
    removed_at: datetime | None


@dataclass(frozen=True, slots=True)
class HoldRecord:
    id: uuid.UUID
    project_id: uuid.UUID
    item_id: uuid.UUID | None
    reason: str
    placed_by: uuid.UUID
    placed_at: datetime
    released_by: uuid.UUID | None
    released_at: datetime | None


_POLICY = tuple(retention_policies.c[f.name] for f in PolicyRecord.__dataclass_fields__.values())
_HOLD = tuple(legal_holds.c[f.name] for f in HoldRecord.__dataclass_fields__.values())


async def policies(tx: Tx, project_id: uuid.UUID | None) -> list[PolicyRecord]:
    """The policies in force: the workspace's defaults and, with a project, that project's."""
    statement = select(*_POLICY).where(
        stated(retention_policies, tx), retention_policies.c.removed_at.is_(None)
    )
    if project_id is not None:
        statement = statement.where(
            (retention_policies.c.project_id == project_id) | retention_policies.c.project_id.is_(None)
        )
    rows = await tx.execute(statement.order_by(retention_policies.c.created_at, retention_policies.c.id))
    return [from_row(PolicyRecord, row) for row in rows]


async def policy(tx: Tx, policy_id: uuid.UUID) -> PolicyRecord | None:
    found = select(*_POLICY).where(stated(retention_policies, tx), retention_policies.c.id == policy_id)
    row = (await tx.execute(found)).first()
    return from_row(PolicyRecord, row) if row else None


async def set_policy(
    tx: Tx, project_id: uuid.UUID | None, kinds: Sequence[str], statuses: Sequence[str], after: timedelta
) -> PolicyRecord:
    assert tx.workspace_id and tx.actor_id
    row = (
        await tx.execute(
            pg_insert(retention_policies)
            .values(
                workspace_id=tx.workspace_id,
                id=new_id(),
                project_id=project_id,
                kinds=list(kinds),
                statuses=list(statuses),
                after=after,
                created_by=tx.actor_id,
                created_at=func.now(),
            )
            .returning(*_POLICY)
        )
    ).one()
    return from_row(PolicyRecord, row)


async def remove_policy(tx: Tx, policy_id: uuid.UUID) -> PolicyRecord | None:
    row = (
        await tx.execute(
            update(retention_policies)
            .where(
                stated(retention_policies, tx),
                retention_policies.c.id == policy_id,
                retention_policies.c.removed_at.is_(None),
            )
            .values(removed_by=tx.actor_id, removed_at=func.now())
            .returning(*_POLICY)
        )
    ).first()
    return from_row(PolicyRecord, row) if row else None


async def holds(tx: Tx, project_id: uuid.UUID) -> list[HoldRecord]:
    rows = await tx.execute(
        select(*_HOLD)
        .where(stated(legal_holds, tx), legal_holds.c.project_id == project_id)
        .order_by(legal_holds.c.placed_at.desc())
    )
    return [from_row(HoldRecord, row) for row in rows]


async def hold(tx: Tx, hold_id: uuid.UUID) -> HoldRecord | None:
    row = (
        await tx.execute(select(*_HOLD).where(stated(legal_holds, tx), legal_holds.c.id == hold_id))
    ).first()
    return from_row(HoldRecord, row) if row else None


async def place_hold(tx: Tx, project_id: uuid.UUID, item_id: uuid.UUID | None, reason: str) -> HoldRecord:
    assert tx.workspace_id and tx.actor_id
    row = (
        await tx.execute(
            pg_insert(legal_holds)
            .values(
                workspace_id=tx.workspace_id,
                id=new_id(),
                project_id=project_id,
                item_id=item_id,
                reason=reason,
                placed_by=tx.actor_id,
                placed_at=func.now(),
            )
            .returning(*_HOLD)
        )
    ).one()
    return from_row(HoldRecord, row)


async def release_hold(tx: Tx, hold_id: uuid.UUID) -> HoldRecord | None:
    row = (
        await tx.execute(
            update(legal_holds)
            .where(stated(legal_holds, tx), legal_holds.c.id == hold_id, legal_holds.c.released_at.is_(None))
            .values(released_by=tx.actor_id, released_at=func.now())
            .returning(*_HOLD)
        )
    ).first()
    return from_row(HoldRecord, row) if row else None


_HELD = (
    "EXISTS (SELECT 1 FROM legal_holds h WHERE h.workspace_id = CAST(:workspace AS uuid)"
    " AND h.project_id = i.project_id AND h.released_at IS NULL AND (h.item_id IS NULL OR h.item_id = i.id))"
)
"""Whether item ``i`` is under a legal hold (R17): the rule of ``mneia_held`` (storage/sql/privacy.sql),
written into the statement, since every hold of the workspace is its readers' to see (hold_read).
Not a call of it: on Citus a function that reads a table, called from a statement that runs on a
shard, is refused ('cannot execute a distributed query from a query on a shard')."""

_HELD_ITEMS = text(
    f"SELECT i.id, {_HELD} AS held FROM items i"
    " WHERE i.workspace_id = CAST(:workspace AS uuid) AND i.id = ANY (CAST(:ids AS uuid[]))"
)


async def held_items(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, bool]:
    """Whether each visible item among ``ids`` is under a legal hold now (R17)."""
    rows = await tx.execute(_HELD_ITEMS, {"workspace": tx.workspace, "ids": list(ids)})
    return {row.id: row.held for row in rows}


# The items due for redaction by ``until``: SUPERSEDED or RETIRED under a policy in force (the
# project's before the workspace's, a kind's before every kind's), counted from when the item took
# its status. One row per item, with the policy and when it is due. ``{order}``: by when they are due
# (the notices), or by id after a cursor (the sweep, one pass over the workspace's items in key order).
_DUE_SQL = """
    SELECT i.id, i.project_id, p.id AS policy_id, entered.since + p.after AS due_at, {held} AS held
    FROM items i
    CROSS JOIN LATERAL (
      -- An item with no history written (storage/sql/events.sql) has had its status since its assertion.
      SELECT coalesce(min(s.since), i.asserted_at) AS since FROM item_states s
      WHERE s.workspace_id = CAST(:workspace AS uuid) AND s.item_id = i.id AND s.status = i.status) entered
    CROSS JOIN LATERAL (
      SELECT rp.id, rp.after FROM retention_policies rp
      WHERE rp.workspace_id = CAST(:workspace AS uuid) AND rp.removed_at IS NULL
        AND (rp.project_id = i.project_id OR rp.project_id IS NULL)
        AND i.status = ANY (rp.statuses) AND (cardinality(rp.kinds) = 0 OR i.kind = ANY (rp.kinds))
      ORDER BY rp.project_id IS NULL, cardinality(rp.kinds) = 0, rp.created_at DESC, rp.id
      LIMIT 1) p
    WHERE i.workspace_id = CAST(:workspace AS uuid) AND i.status IN ('SUPERSEDED', 'RETIRED')
      AND i.redacted_at IS NULL AND (CAST(:project AS uuid) IS NULL OR i.project_id = CAST(:project AS uuid))
      AND entered.since + p.after <= CAST(:until AS timestamptz) {after}
    ORDER BY {order}
    LIMIT :limit
"""
_DUE = text(_DUE_SQL.format(held=_HELD, after="", order="due_at, i.id"))
_DUE_AFTER = text(_DUE_SQL.format(held=_HELD, after="AND i.id > CAST(:after AS uuid)", order="i.id"))


@dataclass(frozen=True, slots=True)
class Due:
    item_id: uuid.UUID
    project_id: uuid.UUID
    policy_id: uuid.UUID
    due_at: datetime
    held: bool


async def due(
    tx: Tx,
    until: datetime,
    *,
    project_id: uuid.UUID | None = None,
    limit: int = 10_000,
    after: uuid.UUID | None = None,
) -> list[Due]:
    """Soonest due first; with ``after``, in key order after that item (a pass over all of them)."""
    params = {"workspace": tx.workspace, "until": until, "project": project_id, "limit": limit}
    statement = _DUE if after is None else _DUE_AFTER
    rows = await tx.execute(statement, params if after is None else {**params, "after": after})
    return [Due(row.id, row.project_id, row.policy_id, row.due_at, row.held) for row in rows]


_REDACT = text("SELECT id FROM mneia_redact(CAST(:ids AS uuid[]), :why) AS id")


async def redact(tx: Tx, ids: Sequence[uuid.UUID], why: str) -> list[uuid.UUID]:
    rows = await tx.execute(_REDACT, {"ids": list(ids), "why": why})
    return [row.id for row in rows]


_ERASE = text("SELECT id FROM mneia_erase_actor(CAST(:actor AS uuid)) AS id")


async def erase(tx: Tx, actor_id: uuid.UUID) -> list[uuid.UUID]:
    """Erase an actor (R18) as the caller, a human; answers the PRIVATE items redacted."""
    rows = await tx.execute(_ERASE, {"actor": actor_id})
    return [row.id for row in rows]


@dataclass
class Swept:
    """What one sweep did: items redacted and held ones skipped, per workspace."""

    redacted: int = 0
    held: int = 0
    workspaces: int = 0
    skipped: list[uuid.UUID] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"redacted": self.redacted, "held": self.held, "workspaces": self.workspaces}


_WORKSPACES = text(
    "SELECT DISTINCT ON (workspace_id) workspace_id, created_by FROM retention_policies"
    " WHERE removed_at IS NULL ORDER BY workspace_id, created_at"
)
_BIND = text("SELECT mneia_bind(CAST(:workspace AS uuid), CAST(:actor AS uuid))")
_BOUND = text("SELECT mneia_workspace() AS workspace, mneia_actor() AS actor")


async def sweep(
    admin: AsyncEngine,
    now: datetime,
    *,
    batch: int = SWEEP_BATCH,
    workspace: uuid.UUID | None = None,
    pace: float = PACE,
) -> Swept:
    """Redact every item due by ``now`` (R16), in every workspace with a policy, skipping held ones
    (R17). ``now`` is the clock's (``mneia.clock``): tests sweep at day 29 and 31 without waiting.
    Each batch is one transaction as the owner, acting for the policy's author (the REDACTED
    event's actor)."""
    done = Swept()
    async with transaction(admin, read=True) as tx:
        await tx.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
        owners = [
            (row.workspace_id, row.created_by)
            for row in await tx.execute(_WORKSPACES)
            if workspace is None or row.workspace_id == workspace
        ]
    for workspace_id, actor_id in owners:
        done.workspaces += 1
        # On Citus, on the node that holds the workspace: bound on the coordinator, the batch's
        # statements would reach the workspace's shards in backends bound to nobody, and redact
        # nothing (docs/scale-out.md).
        node = await citus.home(admin, workspace_id)
        engine = create_engine(node, pool_size=1) if node else admin
        try:
            await _sweep_workspace(engine, workspace_id, actor_id, now, batch, pace, done)
        finally:
            if node:
                await engine.dispose()
    return done


async def _sweep_workspace(
    admin: AsyncEngine,
    workspace_id: uuid.UUID,
    actor_id: uuid.UUID,
    now: datetime,
    batch: int,
    pace: float,
    done: Swept,
) -> None:
    """One workspace's due items redacted, a batch per transaction (``sweep``)."""
    cursor = uuid.UUID(int=0)
    while True:
        started = time.perf_counter()
        async with transaction(admin) as tx:
            await tx.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
            await tx.execute(_BIND, {"workspace": str(workspace_id), "actor": str(actor_id)})
            bound = (await tx.execute(_BOUND)).one()  # as the database bound it (storage.database.Tx)
            tx.workspace_id, tx.actor_id = bound.workspace, bound.actor
            found = await due(tx, now, limit=batch, after=cursor)
            if not found:
                break
            cursor = found[-1].item_id
            held_now = [d.item_id for d in found if d.held]
            done.held += len(held_now)
            done.skipped.extend(held_now)
            wanted = [d.item_id for d in found if not d.held]
            if wanted:
                done.redacted += len(await redact(tx, wanted, "retention"))
        if pace:
            await asyncio.sleep((time.perf_counter() - started) * pace)
