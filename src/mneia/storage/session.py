"""Sessions (one run of an actor against a project) and the clients that produced them.

R13: what the client did not say is recorded as missing, never guessed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, func, literal, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage.database import Driven, Tx, from_row, one_of, stated
from mneia.storage.ids import new_id
from mneia.storage.tables import clients, sessions

PROVENANCE_PARTS = ("client.tool", "client.version", "externalId", "deepLink")

PLACEHOLDER_VERSIONS: dict[str | None, frozenset[str]] = {
    None: frozenset({"0.0.0"}),  # any client: a version nobody released
    "cursor-vscode": frozenset({"1.0.0"}),  # Cursor's MCP clientInfo, whatever Cursor's version
}
"""Versions a client sends that say nothing of its release: recorded as sent, reported missing (R13)."""


def placeholder_version(tool: str | None, version: str | None) -> bool:
    if version is None:
        return False
    return version in PLACEHOLDER_VERSIONS[None] or version in PLACEHOLDER_VERSIONS.get(tool, frozenset())


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: uuid.UUID
    project_id: uuid.UUID
    actor_id: uuid.UUID
    client_tool: str | None
    client_version: str | None
    external_id: str | None
    deep_link: str | None
    task: str | None
    started_at: datetime
    ended_at: datetime | None
    transcript_started_at: datetime | None = None
    transcript_ended_at: datetime | None = None

    @property
    def has_client(self) -> bool:
        return self.client_tool is not None or self.client_version is not None

    @property
    def placeholder_version(self) -> bool:
        return placeholder_version(self.client_tool, self.client_version)

    @property
    def provenance_missing(self) -> list[str]:
        """What the client did not give; a placeholder version counts as not given (kept as sent)."""
        version = None if self.placeholder_version else self.client_version
        given = (self.client_tool, version, self.external_id, self.deep_link)
        return [part for part, value in zip(PROVENANCE_PARTS, given, strict=True) if not value]


_COLUMNS = (
    sessions.c.id,
    sessions.c.project_id,
    sessions.c.actor_id,
    clients.c.tool,
    clients.c.version,
    sessions.c.external_id,
    sessions.c.deep_link,
    sessions.c.task,
    sessions.c.started_at,
    sessions.c.ended_at,
    sessions.c.transcript_started_at,
    sessions.c.transcript_ended_at,
)

_FROM = sessions.outerjoin(
    clients,
    (clients.c.workspace_id == sessions.c.workspace_id) & (clients.c.id == sessions.c.client_id),
)

# every session loader's
_BY_IDS = Driven(select(*_COLUMNS).select_from(_FROM).where(stated(sessions), one_of(sessions.c.id)))


def by_id_query(session_id: ColumnElement[uuid.UUID]) -> Select[Any]:
    """The session whose id is ``session_id`` (a bound parameter), with its client, for others to join;
    its workspace is the parameter ``workspace``."""
    return select(*_COLUMNS).select_from(_FROM).where(stated(sessions), sessions.c.id == session_id)


async def by_ids(tx: Tx, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, SessionRecord]:
    records = [
        from_row(SessionRecord, row)
        for row in await tx.fetch(_BY_IDS, {"workspace": tx.workspace, "ids": list(ids)})
    ]
    return {record.id: record for record in records}


async def get(tx: Tx, session_id: uuid.UUID) -> SessionRecord | None:
    return (await by_ids(tx, [session_id])).get(session_id)


async def _client_id(tx: Tx, tool: str | None, version: str | None) -> uuid.UUID | None:
    if tool is None and version is None:
        return None
    assert tx.workspace_id
    await tx.execute(
        pg_insert(clients)
        .values(workspace_id=tx.workspace_id, id=new_id(), tool=tool, version=version)
        .on_conflict_do_nothing()
    )
    found = await tx.execute(
        select(clients.c.id).where(
            stated(clients, tx),
            clients.c.tool.is_not_distinct_from(tool),
            clients.c.version.is_not_distinct_from(version),
        )
    )
    client_id: uuid.UUID = found.scalar_one()
    return client_id


async def start(
    tx: Tx,
    project_id: uuid.UUID,
    *,
    task: str | None,
    tool: str | None,
    version: str | None,
    external_id: str | None,
    deep_link: str | None,
    transcript_started_at: datetime | None = None,
    transcript_ended_at: datetime | None = None,
) -> SessionRecord:
    """Start a session of the caller's, now; an imported one also keeps its transcript's times."""
    assert tx.workspace_id and tx.actor_id
    session_id = new_id()
    await tx.execute(
        pg_insert(sessions).values(
            workspace_id=tx.workspace_id,
            id=session_id,
            project_id=project_id,
            actor_id=tx.actor_id,
            client_id=await _client_id(tx, tool, version),
            external_id=external_id,
            deep_link=deep_link,
            task=task,
            transcript_started_at=transcript_started_at,
            transcript_ended_at=transcript_ended_at,
        )
    )
    record = await get(tx, session_id)
    assert record is not None
    return record


async def end(tx: Tx, session_id: uuid.UUID) -> bool:
    """End a session; False when the caller may not end it. Ending twice keeps the first end.

    Not ``ended_at = coalesce(ended_at, now())`` in one statement: Citus refuses a non-immutable
    function inside COALESCE or CASE in an UPDATE. So the open session is ended at now(); only
    when that changed no row does a second UPDATE, which keeps the end it has, say whether the
    caller may end it (the same update policy decides; a concurrent end is waited for by the
    first and found by the second).
    """
    where = (stated(sessions, tx), sessions.c.id == session_id)
    opened = await tx.execute(
        update(sessions).where(*where, sessions.c.ended_at.is_(None)).values(ended_at=func.now())
    )
    if opened.rowcount == 1:
        return True
    kept = await tx.execute(update(sessions).where(*where).values(ended_at=sessions.c.ended_at))
    return kept.rowcount == 1


async def lock(tx: Tx, session_id: uuid.UUID) -> SessionRecord | None:
    """The session, row-locked until the transaction ends; None when the caller may not end it.

    Concurrent checkpoints of one session (a client retrying after a timeout)
    queue here, and each then sees what the one before it committed.
    """
    statement = by_id_query(bindparam("session")).with_for_update(of=sessions)
    row = (await tx.execute(statement, {"workspace": tx.workspace, "session": session_id})).first()
    return from_row(SessionRecord, row) if row else None


async def transcript_grew(tx: Tx, session_id: uuid.UUID, ended_at: datetime) -> None:
    """A re-imported transcript that grew: its session's last time moves on (never back)."""
    await tx.execute(
        update(sessions)
        .where(stated(sessions, tx), sessions.c.id == session_id)
        .values(transcript_ended_at=func.greatest(sessions.c.transcript_ended_at, ended_at))
    )


_NEWEST = [sessions.c.started_at.desc(), sessions.c.id.desc()]


async def page(
    tx: Tx,
    project_id: uuid.UUID,
    *,
    external_id: str | None,
    tool: str | None = None,
    actor_id: uuid.UUID | None = None,
    first: int,
    after: uuid.UUID | None,
) -> tuple[list[SessionRecord], bool]:
    """A project's sessions, newest first (index sessions_project), or those with a client's own id;
    one more than ``first`` is read to tell whether another page follows."""
    statement = (
        select(*_COLUMNS).select_from(_FROM).where(stated(sessions, tx), sessions.c.project_id == project_id)
    )
    if external_id is not None:
        statement = statement.where(sessions.c.external_id == external_id)
    if tool is not None:
        statement = statement.where(clients.c.tool == tool)
    if actor_id is not None:
        statement = statement.where(sessions.c.actor_id == actor_id)
    if after is not None:
        cursor = sessions.alias("cursor")
        began = select(cursor.c.started_at).where(stated(cursor, tx), cursor.c.id == after).scalar_subquery()
        statement = statement.where(
            tuple_(sessions.c.started_at, sessions.c.id) < tuple_(began, literal(after))
        )
    rows = (await tx.execute(statement.order_by(*_NEWEST).limit(first + 1))).all()
    return [from_row(SessionRecord, row) for row in rows[:first]], len(rows) > first
