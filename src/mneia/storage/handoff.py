"""Handoffs: what a session leaves, at its checkpoint, for whoever resumes the work (R12).

A handoff is written once and never changed (the server's role may not
UPDATE or DELETE it). It keeps references, never copies: the items asserted
in the session, the replacements made in it, and the project's pending
proposals and open disputes as its author saw them. Whoever reads it loads
those under its own row-level security (resolvers.handoff), so an item only
its author may see appears to no one else.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, literal, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage.database import Tx, from_row, one_of, stated
from mneia.storage.ids import new_id
from mneia.storage.tables import handoffs


@dataclass(frozen=True, slots=True)
class NewHandoff:
    """What a checkpoint leaves; who leaves it, and when, is the server's to record."""

    project_id: uuid.UUID
    session_id: uuid.UUID
    summary: str
    next_steps: tuple[str, ...]
    open_questions: tuple[str, ...]
    item_ids: tuple[uuid.UUID, ...]
    replacement_ids: tuple[uuid.UUID, ...]
    proposal_ids: tuple[uuid.UUID, ...]
    dispute_ids: tuple[uuid.UUID, ...]
    pointed_ids: tuple[uuid.UUID, ...]
    """The items the replacements, proposals and disputes point at (what was replaced, the targets,
    both sides): a reader loads them in one batch with the rest."""
    idempotency_key: str | None
    request_digest: str
    """A digest of the checkpoint's input: a retry with the same key must carry the same."""
    draft: bool = False
    """Its summary was written by the client's model (a compact summary), not in a checkpoint call."""


@dataclass(frozen=True, slots=True)
class HandoffRecord:
    id: uuid.UUID
    project_id: uuid.UUID
    session_id: uuid.UUID
    created_by: uuid.UUID
    created_at: datetime
    summary: str
    next_steps: list[str]
    open_questions: list[str]
    item_ids: list[uuid.UUID]
    replacement_ids: list[uuid.UUID]
    proposal_ids: list[uuid.UUID]
    dispute_ids: list[uuid.UUID]
    pointed_ids: list[uuid.UUID]
    idempotency_key: str | None
    request_digest: str
    draft: bool


_COLUMNS = tuple(handoffs.c[field.name] for field in dataclasses.fields(HandoffRecord))

# Built once: resume reads the newest handoff on every call.
_BY_IDS = select(*_COLUMNS).where(stated(handoffs), one_of(handoffs.c.id))
_LATEST = (
    select(*_COLUMNS)
    .where(stated(handoffs), handoffs.c.project_id == bindparam("project"))
    .order_by(handoffs.c.created_at.desc(), handoffs.c.id.desc())
    .limit(1)
)
_BY_KEY = select(*_COLUMNS).where(
    stated(handoffs),
    handoffs.c.created_by == bindparam("actor"),
    handoffs.c.idempotency_key == bindparam("key"),
)
_OF_SESSION = select(*_COLUMNS).where(stated(handoffs), handoffs.c.session_id == bindparam("session"))


def _record(row: Any) -> HandoffRecord:
    return from_row(HandoffRecord, row)


async def by_ids(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, HandoffRecord]:
    """The visible handoffs among ``ids``."""
    rows = await tx.execute(_BY_IDS, {"workspace": tx.workspace, "ids": list(ids)})
    return {row.id: _record(row) for row in rows}


async def latest(tx: Tx, project_id: uuid.UUID) -> HandoffRecord | None:
    """The project's newest handoff the caller can see (index handoffs_latest)."""
    row = (await tx.execute(_LATEST, {"workspace": tx.workspace, "project": project_id})).first()
    return _record(row) if row else None


async def by_key(tx: Tx, key: str) -> HandoffRecord | None:
    """The caller's own handoff left with idempotency key ``key``."""
    row = (await tx.execute(_BY_KEY, {"workspace": tx.workspace, "actor": tx.actor_id, "key": key})).first()
    return _record(row) if row else None


async def of_session(tx: Tx, session_id: uuid.UUID) -> HandoffRecord | None:
    row = (await tx.execute(_OF_SESSION, {"workspace": tx.workspace, "session": session_id})).first()
    return _record(row) if row else None


async def create(tx: Tx, new: NewHandoff) -> HandoffRecord:
    """Store the caller's handoff, now. One per session (handoffs_one_per_session)."""
    assert tx.workspace_id and tx.actor_id
    values = {field.name: getattr(new, field.name) for field in dataclasses.fields(NewHandoff)}
    for name, value in values.items():
        if isinstance(value, tuple):
            values[name] = list(value)
    row = (
        await tx.execute(
            pg_insert(handoffs)
            .values(workspace_id=tx.workspace_id, id=new_id(), created_by=tx.actor_id, **values)
            .returning(*_COLUMNS)
        )
    ).one()
    return _record(row)


async def page(
    tx: Tx, project_id: uuid.UUID, *, first: int, after: uuid.UUID | None
) -> tuple[list[HandoffRecord], bool]:
    """A project's handoffs the caller can see, newest first (index handoffs_latest); one more
    than ``first`` is read to tell whether another page follows."""
    statement = select(*_COLUMNS).where(stated(handoffs, tx), handoffs.c.project_id == project_id)
    if after is not None:
        cursor = handoffs.alias("cursor")
        made = select(cursor.c.created_at).where(stated(cursor, tx), cursor.c.id == after).scalar_subquery()
        statement = statement.where(
            tuple_(handoffs.c.created_at, handoffs.c.id) < tuple_(made, literal(after))
        )
    newest = statement.order_by(handoffs.c.created_at.desc(), handoffs.c.id.desc()).limit(first + 1)
    rows = (await tx.execute(newest)).all()
    return [_record(row) for row in rows[:first]], len(rows) > first
