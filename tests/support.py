"""Helpers shared by the tests: snapshots of the whole database, raw SQL as a given role, counters.

Three ways in, each for one purpose:
- ``database_state`` reads every table through the admin engine (a superuser,
  past every policy), so comparing two snapshots proves that nothing at all
  was inserted, updated or deleted;
- ``as_caller`` runs raw SQL as the server's role (``mneia_app``) bound to a
  caller, always rolled back, to prove what the database itself refuses;
- ``as_owner`` writes as the migrations' owner role with a caller's context
  (still bound by row-level security, which is FORCEd), for bulk fixtures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from sqlalchemy import Text, cast, event, func, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from mneia.config import OWNER_ROLE
from mneia.storage.tables import metadata

SET_CONTEXT = text(
    "SELECT set_config('mneia.workspace_id', :ws, true), set_config('mneia.actor_id', :actor, true)"
)
INSUFFICIENT_PRIVILEGE = "42501"
UNIQUE_VIOLATION = "23505"

State = dict[str, tuple[int, Any]]


async def database_state(admin_engine: AsyncEngine) -> State:
    """Each table's row count and a hash of its rows, read as a superuser (past every policy).

    Comparing two states shows that nothing was inserted, updated or deleted anywhere.
    """
    state: State = {}
    async with admin_engine.connect() as connection:
        for table in metadata.sorted_tables:
            row_text = cast(table.table_valued(), Text)
            query = select(func.count(), func.sum(func.hashtextextended(row_text, 0)))
            count, digest = (await connection.execute(query.select_from(table))).one()
            state[table.name] = (count, digest)
    return state


def changed_tables(before: State, after: State) -> set[str]:
    """The names of the tables whose rows differ between two snapshots."""
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def sqlstate(error: DBAPIError) -> str | None:
    return getattr(error.orig, "sqlstate", None) or getattr(error.orig, "pgcode", None)


def constraint_of(error: DBAPIError) -> str | None:
    """The constraint a database error names (asyncpg keeps it on the wrapped cause)."""
    cause = getattr(error.orig, "__cause__", None)
    return getattr(cause, "constraint_name", None)


@asynccontextmanager
async def as_caller(
    engine: AsyncEngine, workspace_id: str, actor_id: str
) -> AsyncIterator[AsyncConnection]:
    """A transaction as the server's role (mneia_app) bound to a caller; always rolled back."""
    async with engine.connect() as connection:
        await connection.begin()
        await connection.execute(SET_CONTEXT, {"ws": workspace_id, "actor": actor_id})
        try:
            yield connection
        finally:
            await connection.rollback()


@asynccontextmanager
async def as_owner(
    admin_engine: AsyncEngine, workspace_id: str, actor_id: str
) -> AsyncIterator[AsyncConnection]:
    """A committed transaction as the owner role with a caller's context (for bulk fixtures)."""
    async with admin_engine.connect() as connection, connection.begin():
        await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
        await connection.execute(SET_CONTEXT, {"ws": workspace_id, "actor": actor_id})
        yield connection


async def rows(admin_engine: AsyncEngine, sql: str, **params: Any) -> list[dict[str, Any]]:
    """Run a query as the administrator (past every policy) and return its rows as dicts."""
    async with admin_engine.connect() as connection:
        result = await connection.execute(text(sql), params)
        return [dict(row._mapping) for row in result]


async def events_of(admin_engine: AsyncEngine, item_id: str) -> list[dict[str, Any]]:
    """An item's events, oldest first, as the database holds them."""
    return await rows(
        admin_engine,
        "SELECT event, actor_id::text AS actor, at, from_status, to_status, load_bearing,"
        " confirmed, reason FROM item_events WHERE item_id = :item ORDER BY at, id",
        item=item_id,
    )


@contextmanager
def counted(engine: AsyncEngine) -> Iterator[list[str]]:
    """Collect every statement the engine sends while the block runs."""
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)


@contextmanager
def peak_connections(engine: AsyncEngine) -> Iterator[list[int]]:
    """Track how many pooled connections were checked out at once while the block runs.

    Yields ``[now, peak]``; a peak above one proves requests really overlapped.
    """
    live = [0, 0]

    def checked_out(*_: Any) -> None:
        live[0] += 1
        live[1] = max(live[1], live[0])

    def checked_in(*_: Any) -> None:
        live[0] -= 1

    pool = engine.sync_engine.pool
    event.listen(pool, "checkout", checked_out)
    event.listen(pool, "checkin", checked_in)
    try:
        yield live
    finally:
        event.remove(pool, "checkout", checked_out)
        event.remove(pool, "checkin", checked_in)


def assert_human_required(error: dict[str, Any]) -> None:
    assert error["extensions"]["code"] == "FORBIDDEN", error
    assert error["extensions"]["reason"] == "HUMAN_REQUIRED", error


def assert_code(error: dict[str, Any], code: str) -> None:
    assert error["extensions"]["code"] == code, error


# --- GraphQL operations shared by the supersession, proposal and dispute tests ------------------

ITEM = """id statement status statusReason authority supersedesId supersessionReason
  loadBearing loadBearingSuggested assertedAt
  confirmation { by { id } at } provenance { assertedAt assertedBy { id } }"""

PROPOSAL = f"""id kind status reason replacementStatement proposedAt decidedAt decisionNote
  proposedBy {{ id }} decidedBy {{ id }} target {{ id status }} result {{ {ITEM} }}"""

SUPERSEDE = f"""mutation($i: SupersedeInput!) {{ supersedeItem(input: $i) {{
  __typename
  ... on Superseded {{ previous {{ {ITEM} }} replacement {{ {ITEM} }} }}
  ... on PendingConfirmation {{ proposal {{ {PROPOSAL} }} }} }} }}"""

DECIDE = f"""mutation($i: ID!, $a: Boolean!, $n: String) {{
  decideProposal(id: $i, accept: $a, note: $n) {{ {PROPOSAL} }} }}"""


def supersession(
    project_id: str, target_id: str, statement: str, reason: str, **fields: Any
) -> dict[str, Any]:
    """The variables of ``SUPERSEDE``: replace ``target_id`` by a FACT with ``statement``."""
    replacement = {"projectId": project_id, "kind": "FACT", "statement": statement, **fields}
    return {"i": {"targetId": target_id, "reason": reason, "replacement": replacement}}
