"""Helpers shared by the tests: snapshots of the whole database, raw SQL as a given role, counters.

Three ways in, each for one purpose:
- ``database_state`` reads every table through the admin engine (a superuser,
  past every policy), so comparing two snapshots proves that nothing at all
  was inserted, updated or deleted;
- ``as_caller`` runs raw SQL as the server's role (``mneia_app``) bound to a
  caller by that caller's token, exactly as the server binds a request
  (``as_nobody``: bound to no one), always rolled back, to prove what the
  database itself refuses (``refused``, ``denied``);
- ``as_owner`` writes as the migrations' owner role bound to a caller (still
  under row-level security, which is FORCEd, but trusted by the authority
  guards, as an administrator loading data is), for bulk fixtures.

The GraphQL operations more than one test module sends stand at the end, with
``refused_as_bad_input`` (R14's answer to wrong input, checked on the whole database)
and ``confirmed_item`` (a human's ruling, made either way R3 allows).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import Engine, Executable, Text, cast, event, func, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from mneia.config import OWNER_ROLE
from mneia.storage import database, failures
from mneia.storage.event import of_items
from mneia.storage.item import ItemRecord
from mneia.storage.node import Nodes
from mneia.storage.tables import items, metadata
from mneia.storage.token import PREFIX, digest, mint, workspace_of
from mneia.storage.workspace import Bootstrap
from mneia.vocabulary import ItemKind, ItemStatus, Scope
from tests.graphql import Who

SHARED = Path(os.environ.get("MNEIA_SHARED") or Path(__file__).resolve().parents[2] / "shared")
"""The project's shared directory (the contract, the client samples): ``MNEIA_SHARED``, which
.ci/run sets for a clone made anywhere, else ``../shared`` beside this checkout."""

ROUTED: Nodes | None = None
"""On a Citus cluster (conftest's ``MNEIA_TEST_CITUS``): where each workspace lives, for ``as_caller``."""
ROUTED_ADMIN: Nodes | None = None
"""The same, with the administrator's pools, for ``as_owner``."""

if TYPE_CHECKING:
    from tests.graphql import Api, World

AUTHENTICATE = text("SELECT id FROM mneia_authenticate(:digest, CAST(:workspace AS uuid))")
# What a forger would try: the context's settings, written by hand.
SET_CONTEXT = text(
    "SELECT set_config('mneia.workspace_id', :ws, true), set_config('mneia.actor_id', :actor, true)"
)
INSUFFICIENT_PRIVILEGE = "42501"  # both a row-level security refusal and a missing grant
UNIQUE_VIOLATION = "23505"
CHECK_VIOLATION = "23514"  # a transition the data does not allow (the authority guards' DISALLOWED)

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
    """The constraint a database error names, as declared (on Citus, without the shard's id)."""
    return failures.constraint_name(error)


async def node_engine(engine: AsyncEngine, who: Who, *, admin: bool = False) -> AsyncEngine:
    """``engine``, or on Citus the server's engine (``ROUTED``; ``admin``: the administrator's,
    ``ROUTED_ADMIN``) on the node of ``who``'s workspace."""
    named, routed = workspace_of(who.token), ROUTED_ADMIN if admin else ROUTED
    return await routed.engine(named) if routed is not None and named is not None else engine


@asynccontextmanager
async def as_nobody(engine: AsyncEngine, near: Who | None = None) -> AsyncIterator[AsyncConnection]:
    """A transaction as the server's role (mneia_app) with no caller set; always rolled back.

    Every policy must fail closed here: an unset context is nobody. On Citus (``ROUTED``), on the
    node that holds ``near``'s workspace: where a forged context would have rows to show.
    """
    if near is not None:
        engine = await node_engine(engine, near)
    async with engine.connect() as connection:
        await connection.begin()
        try:
            yield connection
        finally:
            await connection.rollback()


async def authenticate(connection: AsyncConnection, who: Who) -> None:
    """Bind the connection's transaction to ``who``, by its token, as the server does."""
    named = workspace_of(who.token)
    found = await connection.execute(AUTHENTICATE, {"digest": digest(who.token), "workspace": named})
    bound = found.scalar_one_or_none()
    assert bound == uuid.UUID(who.id), "the token authenticates its actor"


@asynccontextmanager
async def as_caller(engine: AsyncEngine, who: Who) -> AsyncIterator[AsyncConnection]:
    """A transaction as the server's role (mneia_app) bound to ``who``; always rolled back.

    On Citus (``ROUTED``), on the node that holds ``who``'s workspace, as the server would run it.
    """
    async with as_nobody(engine, near=who) as connection:
        await authenticate(connection, who)
        yield connection


async def refused(connection: AsyncConnection, statement: str | Executable, **params: Any) -> DBAPIError:
    """Run one statement the database must refuse with insufficient_privilege; return the error.

    The connection's transaction is aborted afterwards: refuse once per ``as_caller`` block.
    """
    with pytest.raises(DBAPIError) as caught:
        await connection.execute(text(statement) if isinstance(statement, str) else statement, params)
    assert sqlstate(caught.value) == INSUFFICIENT_PRIVILEGE, caught.value
    return caught.value


async def denied(connection: AsyncConnection, statement: str, **params: Any) -> DBAPIError:
    """Like ``refused``, for want of a grant ("permission denied"), not by a policy or a trigger."""
    error = await refused(connection, statement, **params)
    assert "permission denied" in str(error.orig), error
    return error


async def denied_on_a_visible_row(
    engine: AsyncEngine, admin_engine: AsyncEngine, who: Who, table: str, row_id: str, statement: str
) -> None:
    """``statement`` (``:id`` is ``row_id``) is ``denied`` to a caller who sees the row; nothing changes.

    The control runs first, in the same transaction: the caller sees the row, so the
    refusal is the missing privilege, not a policy hiding it.
    """
    rows_of = metadata.tables[table]
    before = await database_state(admin_engine)
    async with as_caller(engine, who) as connection:
        seen = select(func.count()).select_from(rows_of).where(rows_of.c.id == uuid.UUID(row_id))
        assert (await connection.execute(seen)).scalar_one() == 1
        await denied(connection, statement, id=row_id)
    assert await database_state(admin_engine) == before


async def visible_item_ids(engine: AsyncEngine, who: Who) -> set[str]:
    """R1/R2: the ids ``SELECT id FROM items`` returns as mneia_app for that actor."""
    async with as_caller(engine, who) as connection:
        found = await connection.execute(select(items.c.id))
        return {str(row.id) for row in found}


@asynccontextmanager
async def as_owner(admin_engine: AsyncEngine, who: Who) -> AsyncIterator[AsyncConnection]:
    """A committed transaction as the owner role bound to ``who`` (for bulk fixtures); on Citus on
    the node of ``who``'s workspace."""
    named = workspace_of(who.token)
    if ROUTED_ADMIN is not None and named is not None:
        admin_engine = await ROUTED_ADMIN.engine(named)
    async with admin_engine.connect() as connection, connection.begin():
        await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
        await authenticate(connection, who)
        yield connection


async def rows(admin_engine: AsyncEngine, sql: str, **params: Any) -> list[dict[str, Any]]:
    """Run a query as the administrator (past every policy) and return its rows as dicts."""
    async with admin_engine.connect() as connection:
        result = await connection.execute(text(sql), params)
        return [dict(row._mapping) for row in result]


async def item_row(admin_engine: AsyncEngine, item_id: str) -> dict[str, Any]:
    """An item's status and authority columns as the database holds them (ids as text)."""
    (found,) = await rows(
        admin_engine,
        "SELECT status, load_bearing, load_bearing_suggested,"
        " load_bearing_set_by::text AS load_bearing_set_by, load_bearing_set_at,"
        " confirmed_by::text AS confirmed_by, confirmed_at, asserted_at, last_verified_at"
        " FROM items WHERE id = :item",
        item=item_id,
    )
    return found


async def successors_of(admin_engine: AsyncEngine, item_id: str) -> list[dict[str, Any]]:
    """The items that replace ``item_id`` (a chain that never forks has at most one)."""
    return await rows(
        admin_engine, "SELECT id::text AS id FROM items WHERE supersedes_id = :item", item=item_id
    )


async def events_of(admin_engine: AsyncEngine, item_id: str) -> list[dict[str, Any]]:
    """An item's events, oldest first (events of one instant in the order they happened), as
    storage.event reads them past every policy: the written ones and the assertion its row implies."""
    async with database.transaction(admin_engine, read=True) as tx:
        # The statement states its workspace, as the server's do (issue 25): the item's.
        tx.workspace_id = (
            await tx.execute(select(items.c.workspace_id).where(items.c.id == item_id))
        ).scalar()
        (log,) = (await of_items(tx, [uuid.UUID(item_id)])).values()
    return [
        {
            "event": record.event.value,
            "actor": str(record.actor_id),
            "at": record.at,
            "from_status": record.from_status and record.from_status.value,
            "to_status": record.to_status.value,
            "load_bearing": record.load_bearing,
            "confirmed": record.confirmed,
            "reason": record.reason,
        }
        for record in log
    ]


@contextmanager
def _observed(engine: AsyncEngine, keep: Callable[[str, Sequence[Any]], None]) -> Iterator[None]:
    """Call ``keep`` with each statement the engine sends while the block runs, and its parameters as
    the driver gets them: SQLAlchemy's (``before_cursor_execute``) and the driver's (``Driven``). On
    Citus, what the routed application sends through each node's pool counts as the engine's."""

    def ours(sender: Engine) -> bool:
        """``engine`` itself, or on Citus (``ROUTED`` over it) the pool of a node it routed to."""
        if sender is engine.sync_engine:
            return True
        routed = ROUTED if ROUTED is not None and ROUTED.coordinator is engine else None
        return routed is not None and any(sender is pool.sync_engine for pool in routed.pools())

    def record(conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool) -> None:
        if ours(conn.engine):
            keep(statement, parameters[0] if many else parameters)

    def driven(sender: Engine, statement: str, arguments: Sequence[Any]) -> None:
        if ours(sender):
            keep(statement, arguments)

    event.listen(Engine, "before_cursor_execute", record)
    database.DRIVEN_OBSERVERS.append(driven)
    try:
        yield
    finally:
        database.DRIVEN_OBSERVERS.remove(driven)
        event.remove(Engine, "before_cursor_execute", record)


@contextmanager
def counted(engine: AsyncEngine) -> Iterator[list[str]]:
    """Collect every statement the engine sends while the block runs (SQLAlchemy's and the driver's)."""
    statements: list[str] = []
    with _observed(engine, lambda statement, _: statements.append(statement)):
        yield statements


@contextmanager
def sent(engine: AsyncEngine) -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    """``counted``, each statement with its parameters: what it takes to run it again (or EXPLAIN it)."""
    statements: list[tuple[str, tuple[Any, ...]]] = []
    with _observed(engine, lambda statement, parameters: statements.append((statement, tuple(parameters)))):
        yield statements


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


async def confirmed_item(api: Api, world: World, statement: str, *, agent_asserted: bool) -> dict[str, Any]:
    """A HUMAN_CONFIRMED item of the world's project: the human's own word, or the agent's it confirmed."""
    if not agent_asserted:
        return await api.assert_item(world.human.token, projectId=world.project_id, statement=statement)
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement=statement)
    await api.run(world.human.token, CONFIRM_ITEM, i=item["id"])
    return item


async def refused_as_bad_input(
    api: Api, token: str, query: str, field: str, **variables: Any
) -> dict[str, Any]:
    """Run an operation that must fail with BAD_USER_INPUT naming ``field``, writing nothing (R14)."""
    before = await database_state(api.admin_engine)
    error = await api.fail(token, query, **variables)
    assert_code(error, "BAD_USER_INPUT")
    assert field in error["message"], error
    assert await database_state(api.admin_engine) == before
    return error


# --- GraphQL operations sent by several test modules -------------------------------------------

ASSERT_ITEM = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id } }"
CONFIRM_ITEM = "mutation($i: ID!) { confirmItem(id: $i) { id } }"
VERIFY_ITEM = "mutation($i: ID!) { verifyItem(id: $i) { id } }"
RETIRE_ITEM = "mutation($i: ID!, $r: String!) { retireItem(id: $i, reason: $r) { id status } }"
MAKE_LOAD_BEARING = "mutation($i: ID!) { setLoadBearing(id: $i, loadBearing: true) { id } }"
SUGGEST_LOAD_BEARING = "mutation($i: ID!) { suggestLoadBearing(id: $i) { id } }"
ADD_TEAM_MEMBER = "mutation($t: ID!, $a: ID!) { addTeamMember(teamId: $t, actorId: $a) { id } }"
ADD_PROJECT_MEMBER = "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }"
COUNT_ITEMS = "query($p: ID!) { items(projectId: $p) { totalCount } }"


# --- supersession, shared by the supersession, proposal, dispute and render tests ---------------

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


def item_record(**changes: Any) -> ItemRecord:
    """An ACTIVE, unruled item as storage reads it, for the rules asked of records directly."""
    record = ItemRecord(
        id=uuid.uuid4(),
        project_id=uuid.uuid4(),
        kind=ItemKind.FACT,
        statement="x",
        details=None,
        basis=None,
        confidence=None,
        status=ItemStatus.ACTIVE,
        status_reason=None,
        scope=Scope.PROJECT,
        grant_actor_ids=[],
        asserted_by=uuid.uuid4(),
        asserted_at=datetime.now(UTC),
        session_id=None,
        valid_from=None,
        valid_to=None,
        decay_after=None,
        last_verified_at=None,
        load_bearing=False,
        load_bearing_suggested=False,
        confirmed_by=None,
        confirmed_at=None,
        supersedes_id=None,
        supersession_reason=None,
        said_at=None,
        redacted=[],
        redacted_at=None,
        redaction_reason=None,
    )
    return dataclasses.replace(record, **changes)


# --- rehydration, shared by the rehydration tests ---------------------------------------------

SLICE_ITEM = "id kind status authority loadBearing statement"
REHYDRATE = f"""query($i: RehydrateInput!) {{ rehydrate(input: $i) {{
  task tokenBudget tokensUsed overBudget encoding rendered profile asOf
  entries {{ item {{ {SLICE_ITEM} }} reason score tokens }}
  supersessions {{ previous {{ {SLICE_ITEM} }} replacement {{ {SLICE_ITEM} }} reason at }}
  omitted {{ kind count }} leftOut {{ kind reason count }} supersessionsLeftOut
  quotas {{ kind maxShare weight }} }} }}"""


async def rehydrate(
    api: Api, token: str, project_id: str, task: str, budget: int, **more: Any
) -> dict[str, Any]:
    """A slice, as ``token``'s actor asks for it."""
    data = await api.run(
        token, REHYDRATE, i={"projectId": project_id, "task": task, "tokenBudget": budget, **more}
    )
    return data["rehydrate"]


def entry_ids(slice_: dict[str, Any], reason: str | None = None) -> set[str]:
    return {e["item"]["id"] for e in slice_["entries"] if reason is None or e["reason"] == reason}


async def bootstrapped_before_0024(admin: AsyncEngine) -> Bootstrap:
    """A workspace made as releases before 0024 made it: the database chose its id, and its first
    token (``mneia_`` and 43 characters) names no workspace."""
    secret = PREFIX + secrets.token_urlsafe(32)
    async with admin.begin() as connection:
        made = (
            await connection.execute(
                text("SELECT workspace_id, actor_id FROM mneia_bootstrap('legacy', 'alice', :digest)"),
                {"digest": digest(secret)},
            )
        ).one()
    return Bootstrap(made.workspace_id, made.actor_id, secret)


async def bootstrapped_before_0029(admin: AsyncEngine, name: str = "before") -> Bootstrap:
    """A workspace made as releases from 0024 to 0028 made it: no region, a token naming its workspace."""
    workspace_id = uuid.uuid4()
    secret = mint(workspace_id)
    async with admin.begin() as connection:
        made = (
            await connection.execute(
                text(
                    "SELECT workspace_id, actor_id"
                    " FROM mneia_bootstrap(CAST(:id AS uuid), :name, 'alice', :digest)"
                ),
                {"id": str(workspace_id), "name": name, "digest": digest(secret)},
            )
        ).one()
    return Bootstrap(made.workspace_id, made.actor_id, secret)
