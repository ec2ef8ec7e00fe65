"""The database refuses what the API refuses, whatever the statement (R3, R5, R6, R7, R8).

Every test here runs raw SQL as the server's role (``mneia_app``), bound to a
caller by its token exactly as the server binds a request, and proves that a
write the API would refuse is refused by the database itself: by the
authority guards of storage/sql/authority.sql or the policies of
visibility.sql. Each refusal stands beside a control, the closest write that
is allowed, so that a test fails when its guard is removed (checked by hand
for each guard, by dropping it in a scratch database).

The forging and shadowing attempts (an unsealed context, temporary tables
standing in for ours) are in tests/test_context.py.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from mneia.authority import keeps_audience
from mneia.config import OWNER_ROLE
from mneia.storage.ids import new_id
from mneia.storage.item import NewItem
from mneia.vocabulary import ItemKind, Scope
from tests.graphql import Api, Who, World
from tests.support import (
    CHECK_VIOLATION,
    INSUFFICIENT_PRIVILEGE,
    MAKE_LOAD_BEARING,
    as_caller,
    as_owner,
    authenticate,
    confirmed_item,
    constraint_of,
    item_record,
    node_engine,
    rows,
    sqlstate,
)


@dataclass(frozen=True)
class Ground:
    """A world with one item of each kind of authority."""

    world: World
    confirmed: str  # the human's own assertion: HUMAN_CONFIRMED
    agents: str  # the agent's, unconfirmed
    load_bearing: str  # the agent's, unconfirmed, made load-bearing by the human
    disputed: str  # the agent's, contradicting ``confirmed``: DISPUTED, with an open dispute


@pytest.fixture
async def ground(api: Api, world: World) -> Ground:
    confirmed = await confirmed_item(api, world, "Money is integer cents", agent_asserted=False)
    agents = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Retry 3 times")
    load_bearing = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="p99 < 200ms"
    )
    await api.run(world.human.token, MAKE_LOAD_BEARING, i=load_bearing["id"])
    disputed = await api.assert_item(
        world.agent.token,
        projectId=world.project_id,
        statement="Money is float",
        contradicts=[confirmed["id"]],
    )
    return Ground(world, confirmed["id"], agents["id"], load_bearing["id"], disputed["id"])


async def run(engine: AsyncEngine, who: Who, sql: str, **params: Any) -> int:
    """Run one statement as ``who``; it must go through (rolled back afterwards). Returns the row count."""
    async with as_caller(engine, who) as connection:
        return (await connection.execute(text(sql), params)).rowcount


async def refusal(engine: AsyncEngine, who: Who, sql: str, **params: Any) -> DBAPIError:
    """Run one statement as ``who``; it must fail. Returns the error."""
    async with as_caller(engine, who) as connection:
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(text(sql), params)
    return caught.value


async def assert_refused(
    engine: AsyncEngine, who: Who, sql: str, *, human: bool = False, **params: Any
) -> None:
    error = await refusal(engine, who, sql, **params)
    assert sqlstate(error) == INSUFFICIENT_PRIVILEGE, error
    if human:
        assert "HUMAN_REQUIRED" in str(error.orig), error


async def assert_disallowed(engine: AsyncEngine, who: Who, sql: str, rule: str, **params: Any) -> None:
    """Refused as a transition the data does not allow, naming ``rule`` as the constraint."""
    error = await refusal(engine, who, sql, **params)
    assert sqlstate(error) == CHECK_VIOLATION, error
    assert constraint_of(error) == rule, error


RETIRE = "UPDATE items SET status = 'RETIRED', status_reason = 'gone' WHERE id = :item"
SUPERSEDE_MARK = "UPDATE items SET status = 'SUPERSEDED', status_reason = 'replaced' WHERE id = :item"
REACTIVATE = "UPDATE items SET status = 'ACTIVE' WHERE id = :item"
DISPUTE_MARK = (
    "UPDATE items SET status = 'DISPUTED', status_reason = 'contradicts something' WHERE id = :item"
)
INSERT_ITEM = (
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, scope, asserted_by, asserted_at,"
    " supersedes_id, supersession_reason, confirmed_by, confirmed_at)"
    " VALUES (:ws, :id, :project, 'FACT', :statement, :scope, :by, coalesce(CAST(:at AS timestamptz), now()),"
    " :replaces, :reason, :confirmer, CASE WHEN CAST(:confirmer AS uuid) IS NULL THEN NULL ELSE now() END)"
)


def new_item(ground: Ground, by: str, **fields: Any) -> dict[str, Any]:
    """The parameters of INSERT_ITEM: a FACT by ``by``; ``at`` (ISO text) backdates it."""
    world = ground.world
    if isinstance(fields.get("at"), str):
        fields["at"] = datetime.fromisoformat(fields["at"])
    values = {
        "ws": world.workspace_id,
        "id": new_id(),
        "project": world.project_id,
        "statement": "raw",
        "by": by,
    }
    defaults = {"at": None, "replaces": None, "reason": None, "confirmer": None, "scope": "PROJECT"}
    return {**defaults, **values, **fields}


# --- status changes -------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["confirmed", "load_bearing"])
async def test_r3_r5_an_agent_cannot_retire_an_item_a_human_ruled_on(
    engine: AsyncEngine, ground: Ground, target: str
) -> None:
    item = getattr(ground, target)
    await assert_refused(engine, ground.world.agent, RETIRE, human=True, item=item)
    # Controls: the human may; the agent may retire its own unruled item.
    assert await run(engine, ground.world.human, RETIRE, item=item) == 1
    assert await run(engine, ground.world.agent, RETIRE, item=ground.agents) == 1


@pytest.mark.parametrize("target", ["confirmed", "load_bearing"])
async def test_r7_an_agent_cannot_mark_an_item_a_human_ruled_on_superseded(
    engine: AsyncEngine, ground: Ground, target: str
) -> None:
    await assert_refused(engine, ground.world.agent, SUPERSEDE_MARK, human=True, item=getattr(ground, target))


@pytest.mark.parametrize("target", ["confirmed", "load_bearing"])
async def test_r8_an_agent_cannot_mark_an_item_a_human_ruled_on_disputed(
    engine: AsyncEngine, ground: Ground, target: str
) -> None:
    await assert_refused(engine, ground.world.agent, DISPUTE_MARK, human=True, item=getattr(ground, target))
    assert await run(engine, ground.world.agent, DISPUTE_MARK, item=ground.agents) == 1  # control


async def test_r7_superseded_needs_the_replacement(engine: AsyncEngine, ground: Ground) -> None:
    """Even on its own unruled item, nobody marks SUPERSEDED without writing what replaces it."""
    agent = ground.world.agent
    await assert_disallowed(
        engine, agent, SUPERSEDE_MARK, "items_superseded_by_replacement", item=ground.agents
    )
    # Control: with the replacement written first, in the same transaction, it goes through.
    async with as_caller(engine, agent) as connection:
        replacing = new_item(ground, agent.id, replaces=ground.agents, reason="v2")
        await connection.execute(text(INSERT_ITEM), replacing)
        marked = await connection.execute(text(SUPERSEDE_MARK), {"item": ground.agents})
        assert marked.rowcount == 1


@pytest.mark.parametrize("who", ["agent", "human"])
async def test_r8_disputed_becomes_active_only_through_a_humans_resolution(
    engine: AsyncEngine, ground: Ground, who: str
) -> None:
    caller = getattr(ground.world, who)
    await assert_refused(engine, caller, REACTIVATE, human=who == "agent", item=ground.disputed)
    # Control: resolving the dispute first (keeping the disputed item) lets the human reactivate it.
    resolve = (
        "UPDATE disputes SET status = 'RESOLVED', resolved_by = mneia_actor(), resolved_at = now(),"
        " kept_item_id = item_id WHERE item_id = :item"
    )
    async with as_caller(engine, ground.world.human) as connection:
        assert (await connection.execute(text(resolve), {"item": ground.disputed})).rowcount == 1
        assert (await connection.execute(text(REACTIVATE), {"item": ground.disputed})).rowcount == 1


async def test_r6_retired_and_superseded_are_final(engine: AsyncEngine, ground: Ground) -> None:
    human = ground.world.human
    async with as_caller(engine, human) as connection:
        await connection.execute(text(RETIRE), {"item": ground.agents})
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(text(REACTIVATE), {"item": ground.agents})
    assert sqlstate(caught.value) == CHECK_VIOLATION, caught.value


async def test_r3_an_agent_cannot_rewrite_why_an_item_changed(engine: AsyncEngine, ground: Ground) -> None:
    note = "UPDATE items SET status_reason = 'nothing happened' WHERE id = :item"
    await assert_refused(engine, ground.world.agent, note, human=True, item=ground.disputed)
    assert await run(engine, ground.world.human, note, item=ground.disputed) == 1  # control


async def test_r5_an_agent_cannot_settle_a_load_bearing_suggestion(
    engine: AsyncEngine, ground: Ground
) -> None:
    suggest = "UPDATE items SET load_bearing_suggested = true WHERE id = :item"
    settle = "UPDATE items SET load_bearing_suggested = false WHERE id = :item"
    agent = ground.world.agent
    async with as_caller(engine, agent) as connection:
        assert (await connection.execute(text(suggest), {"item": ground.agents})).rowcount == 1  # control
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(text(settle), {"item": ground.agents})
    assert "HUMAN_REQUIRED" in str(caught.value.orig)


# --- assertions and replacements -------------------------------------------------------------------


async def test_r3_an_item_is_asserted_by_the_actor_making_the_request(
    engine: AsyncEngine, ground: Ground
) -> None:
    world = ground.world
    # A human's context cannot write an agent's words, nor an agent's a human's.
    await assert_refused(engine, world.human, INSERT_ITEM, **new_item(ground, world.agent.id))
    await assert_refused(engine, world.agent, INSERT_ITEM, **new_item(ground, world.human.id))
    # Not even with a confirmation attached, outside the acceptance of a proposal.
    await assert_refused(
        engine, world.human, INSERT_ITEM, **new_item(ground, world.agent.id, confirmer=world.human.id)
    )
    assert await run(engine, world.agent, INSERT_ITEM, **new_item(ground, world.agent.id)) == 1  # control


@pytest.mark.parametrize("who", ["agent", "human"])
async def test_r9_asserted_at_is_the_servers_time(engine: AsyncEngine, ground: Ground, who: str) -> None:
    caller = getattr(ground.world, who)
    backdated = new_item(ground, caller.id, at="2020-01-01T00:00:00Z")
    await assert_refused(engine, caller, INSERT_ITEM, **backdated)
    future = new_item(ground, caller.id, at="2999-01-01T00:00:00Z")
    await assert_refused(engine, caller, INSERT_ITEM, **future)


@pytest.mark.parametrize("target", ["confirmed", "load_bearing"])
async def test_r7_an_agent_cannot_write_a_successor_of_an_item_a_human_ruled_on(
    engine: AsyncEngine, ground: Ground, target: str
) -> None:
    agent = ground.world.agent
    successor = new_item(ground, agent.id, replaces=getattr(ground, target), reason="mine now")
    await assert_refused(engine, agent, INSERT_ITEM, human=True, **successor)
    # Control: a successor of its own unruled item goes through.
    assert (
        await run(
            engine, agent, INSERT_ITEM, **new_item(ground, agent.id, replaces=ground.agents, reason="v2")
        )
        == 1
    )


async def test_r7_nobody_replaces_what_they_cannot_see(api: Api, engine: AsyncEngine, ground: Ground) -> None:
    world = ground.world
    private = await api.assert_item(
        world.human.token, projectId=world.project_id, statement="mine", scope="PRIVATE"
    )
    successor = new_item(ground, world.agent.id, replaces=private["id"], reason="found it")
    await assert_refused(engine, world.agent, INSERT_ITEM, **successor)


async def test_r2_r7_a_successor_keeps_the_audience_and_the_project(
    api: Api, engine: AsyncEngine, ground: Ground
) -> None:
    """A narrower replacement would hide the chain's head from those who saw what it replaced."""
    agent, world = ground.world.agent, ground.world
    narrower = new_item(ground, agent.id, replaces=ground.agents, reason="mine", scope="PRIVATE")
    await assert_disallowed(engine, agent, INSERT_ITEM, "items_replacement_keeps_audience", **narrower)
    elsewhere_id = await api.project(world.human.token, "elsewhere")
    await api.add_member(world.human.token, elsewhere_id, agent.id)
    elsewhere = new_item(ground, agent.id, replaces=ground.agents, reason="moved", project=elsewhere_id)
    await assert_disallowed(engine, agent, INSERT_ITEM, "items_replacement_keeps_audience", **elsewhere)
    wider = new_item(ground, agent.id, replaces=ground.agents, reason="for all", scope="WORKSPACE")
    assert await run(engine, agent, INSERT_ITEM, **wider) == 1  # control


async def test_r7_a_successor_replaces_an_active_item(api: Api, engine: AsyncEngine, ground: Ground) -> None:
    agent = ground.world.agent
    async with as_caller(engine, agent) as connection:
        await connection.execute(text(RETIRE), {"item": ground.agents})
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(
                text(INSERT_ITEM), new_item(ground, agent.id, replaces=ground.agents, reason="v2")
            )
    assert sqlstate(caught.value) == CHECK_VIOLATION, caught.value


PROPOSE = """mutation($i: SupersedeInput!) { supersedeItem(input: $i) {
  ... on PendingConfirmation { proposal { id proposedAt } } } }"""


async def test_r7_a_human_accepting_a_proposal_writes_exactly_what_was_proposed(
    api: Api, engine: AsyncEngine, ground: Ground
) -> None:
    """The one write in another actor's name: the agent's words, at its time, confirmed by the human."""
    world = ground.world
    replacement = {"projectId": world.project_id, "kind": "FACT", "statement": "Money is integer cents, USD"}
    variables = {"targetId": ground.confirmed, "reason": "currency", "replacement": replacement}
    proposal = (await api.run(world.agent.token, PROPOSE, i=variables))["supersedeItem"]["proposal"]
    faithful = new_item(
        ground,
        world.agent.id,
        statement="Money is integer cents, USD",
        at=proposal["proposedAt"],
        replaces=ground.confirmed,
        reason="currency",
        confirmer=world.human.id,
    )
    for forged in (
        {"statement": "Money is whatever the human says"},  # words the agent never proposed
        {"at": datetime(2020, 1, 1, tzinfo=UTC)},  # another time
        {"reason": "another reason"},
        {"confirmer": None},  # unconfirmed: not an acceptance
    ):
        await assert_refused(engine, world.human, INSERT_ITEM, **{**faithful, **forged})
    await assert_refused(engine, world.agent, INSERT_ITEM, **{**faithful, "confirmer": world.agent.id})
    assert await run(engine, world.human, INSERT_ITEM, **faithful) == 1  # control


# --- times the server records ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "control"),
    [
        (
            "UPDATE items SET confirmed_by = mneia_actor(), confirmed_at = now() - interval '1 day'"
            " WHERE id = :item",
            "UPDATE items SET confirmed_by = mneia_actor(), confirmed_at = now() WHERE id = :item",
        ),
        (
            "UPDATE items SET last_verified_at = now() + interval '1 year' WHERE id = :item",
            "UPDATE items SET last_verified_at = now() WHERE id = :item",
        ),
        (
            "UPDATE items SET load_bearing = true, load_bearing_set_by = mneia_actor(),"
            " load_bearing_set_at = '2020-01-01' WHERE id = :item",
            "UPDATE items SET load_bearing = true, load_bearing_set_by = mneia_actor(),"
            " load_bearing_set_at = now() WHERE id = :item",
        ),
    ],
    ids=["confirmed-at", "last-verified-at", "load-bearing-set-at"],
)
async def test_r9_r10_item_times_are_the_servers(
    engine: AsyncEngine, ground: Ground, statement: str, control: str
) -> None:
    await assert_refused(engine, ground.world.human, statement, item=ground.agents)
    assert await run(engine, ground.world.human, control, item=ground.agents) == 1


@pytest.mark.parametrize(
    ("statement", "control"),
    [
        (
            "UPDATE sessions SET ended_at = now() - interval '1 hour' WHERE actor_id = mneia_actor()",
            "UPDATE sessions SET ended_at = now() WHERE actor_id = mneia_actor()",
        ),
        (
            "INSERT INTO sessions (workspace_id, id, project_id, actor_id, started_at)"
            " VALUES (:ws, gen_random_uuid(), :project, mneia_actor(), '2020-01-01')",
            "INSERT INTO sessions (workspace_id, id, project_id, actor_id)"
            " VALUES (:ws, gen_random_uuid(), :project, mneia_actor())",
        ),
        (
            "UPDATE api_tokens SET revoked_at = '2020-01-01' WHERE actor_id = mneia_actor()",
            "UPDATE api_tokens SET revoked_at = now() WHERE actor_id = mneia_actor()",
        ),
    ],
    ids=["session-ended", "session-started", "token-revoked"],
)
async def test_r9_recorded_times_are_the_servers(
    api: Api, engine: AsyncEngine, ground: Ground, statement: str, control: str
) -> None:
    world = ground.world
    await api.run(
        world.agent.token,
        "mutation($p: ID!) { startSession(input: {projectId: $p}) { id } }",
        p=world.project_id,
    )
    params = {"ws": world.workspace_id, "project": world.project_id}
    await assert_refused(engine, world.agent, statement, **params)
    assert await run(engine, world.agent, control, **params) >= 1


async def test_r3_a_revoked_token_stays_revoked(engine: AsyncEngine, ground: Ground) -> None:
    agent = ground.world.agent
    async with as_caller(engine, agent) as connection:
        await connection.execute(
            text("UPDATE api_tokens SET revoked_at = now() WHERE actor_id = mneia_actor()")
        )
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(
                text("UPDATE api_tokens SET revoked_at = NULL WHERE actor_id = mneia_actor()")
            )
    assert sqlstate(caught.value) == INSUFFICIENT_PRIVILEGE


# --- proposals and disputes -----------------------------------------------------------------------


async def test_r2_an_items_audience_copied_onto_a_row_is_the_databases_never_the_callers(
    engine: AsyncEngine, ground: Ground
) -> None:
    """Proposals and disputes are shown to whoever sees their items, by the items' audience copied
    onto the row (docs/scale-out.md). A proposal claiming its target is WORKSPACE-wide and asserted
    by the human, and a dispute claiming the same of both sides, store the items' own audiences."""
    world = ground.world
    propose = (
        "INSERT INTO proposals (workspace_id, id, project_id, kind, target_id, proposed_by, target_scope,"
        " target_asserted_by)"
        " VALUES (:ws, :id, :project, 'LOAD_BEARING', :item, mneia_actor(), 'WORKSPACE', :human)"
        " RETURNING target_scope, target_asserted_by, target_grants"
    )
    dispute = (
        "INSERT INTO disputes (workspace_id, id, project_id, item_id, contested_id, raised_by, item_scope,"
        " item_asserted_by, contested_scope, contested_asserted_by)"
        " VALUES (:ws, :id, :project, :item, :contested, mneia_actor(),"
        " 'WORKSPACE', :human, 'WORKSPACE', :human)"
        " RETURNING item_scope, item_asserted_by, contested_scope, contested_asserted_by"
    )
    params = {"ws": world.workspace_id, "project": world.project_id, "human": world.human.id}
    async with as_caller(engine, world.agent) as connection:
        await connection.execute(text(DISPUTE_MARK), {"item": ground.agents})
        proposed = (
            await connection.execute(text(propose), {**params, "id": new_id(), "item": ground.load_bearing})
        ).one()
        disputed = (
            await connection.execute(
                text(dispute),
                {**params, "id": new_id(), "item": ground.agents, "contested": ground.confirmed},
            )
        ).one()
    assert tuple(proposed) == ("PROJECT", uuid.UUID(world.agent.id), None)
    assert tuple(disputed) == ("PROJECT", uuid.UUID(world.agent.id), "PROJECT", uuid.UUID(world.human.id))


AUDIENCE_DIFFERS = (
    "SELECT count(*) FILTER (WHERE (c.item_project_id, c.item_scope, c.item_asserted_by, c.item_grants)"
    "   IS DISTINCT FROM (i.project_id, i.scope, i.asserted_by,"
    "                     CASE WHEN i.scope = 'GRANTS' THEN i.grant_actor_ids END)) AS differ,"
    " count(*) FILTER (WHERE c.item_id = :granted AND c.item_grants = ARRAY[CAST(:agent AS uuid)]) AS granted"
    " FROM {table} c JOIN items i ON i.workspace_id = c.workspace_id AND i.id = c.item_id"
    " WHERE c.workspace_id = :ws"
)


async def test_r2_the_event_log_copies_each_items_audience_onto_its_events_and_states(
    engine: AsyncEngine, admin_engine: AsyncEngine, ground: Ground
) -> None:
    """The row triggers do not copy the audience onto the rows the event log's triggers write
    (migration 0031): the log copies it from the item it logs. Every path of the log is taken: a
    GRANTS item loaded with a later confirmation (mneia_items_asserted_log), a note on it and the
    load-bearing rule (mneia_items_log: mneia_item_history, mneia_item_event, mneia_item_state),
    and each event and state carries exactly its item's audience, the grantee included."""
    world = ground.world
    granted = new_id()
    async with as_owner(admin_engine, world.human) as connection:  # trusted: history carries its times
        await connection.execute(
            text(
                "INSERT INTO items (workspace_id, id, project_id, kind, statement, scope, grant_actor_ids,"
                " asserted_by, asserted_at, confirmed_by, confirmed_at)"
                " VALUES (:ws, :id, :project, 'FACT', 'for the agent', 'GRANTS', ARRAY[CAST(:agent AS uuid)],"
                " :human, now() - interval '2 days', :human, now() - interval '1 day')"
            ),
            {
                "ws": world.workspace_id,
                "id": granted,
                "project": world.project_id,
                "agent": world.agent.id,
                "human": world.human.id,
            },
        )
    async with (
        (await node_engine(admin_engine, world.human, admin=True)).connect() as connection,
        connection.begin(),
    ):
        await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
        await authenticate(connection, world.human)
        await connection.execute(
            text("UPDATE items SET status_reason = 'checked' WHERE id = :i"), {"i": granted}
        )
    params = {"ws": world.workspace_id, "granted": granted, "agent": world.agent.id}
    events = await rows(admin_engine, AUDIENCE_DIFFERS.format(table="item_events"), **params)
    states = await rows(admin_engine, AUDIENCE_DIFFERS.format(table="item_states"), **params)
    # ASSERTED, CONFIRMED and NOTED; its states from each. Not vacuous: the load-bearing item's
    # history is there too (written by its first change).
    assert events == [{"differ": 0, "granted": 3}]
    assert states == [{"differ": 0, "granted": 3}]
    logged = await rows(
        admin_engine, "SELECT count(*) AS n FROM item_events WHERE item_id = :i", i=ground.load_bearing
    )
    assert logged[0]["n"] >= 2


async def test_r2_an_owners_own_event_or_state_gets_the_items_audience_not_its_word(
    admin_engine: AsyncEngine, ground: Ground
) -> None:
    """A statement of a session's own (the owner's: mneia_app may not INSERT events or states)
    that writes an event or a state claiming another audience stores the item's: the row triggers
    still copy it there (pg_trigger_depth() = 0)."""
    world = ground.world
    claimed = {
        "ws": world.workspace_id,
        "item": ground.agents,
        "human": world.human.id,
        "elsewhere": str(uuid.uuid4()),
    }
    async with (
        (await node_engine(admin_engine, world.human, admin=True)).connect() as connection,
        connection.begin() as transaction,
    ):
        await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
        await authenticate(connection, world.human)
        event = (
            await connection.execute(
                text(
                    "INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, to_status,"
                    " load_bearing, confirmed, item_project_id, item_scope, item_asserted_by, item_grants)"
                    " VALUES (:ws, :item, :human, now(), 'NOTED', 'ACTIVE', false, false, :elsewhere,"
                    " 'WORKSPACE', :human, ARRAY[CAST(:human AS uuid)])"
                    " RETURNING item_project_id::text, item_scope, item_asserted_by::text, item_grants"
                ),
                claimed,
            )
        ).one()
        state = (
            await connection.execute(
                text(
                    "INSERT INTO item_states (workspace_id, item_id, since, status, load_bearing,"
                    " load_bearing_suggested, item_project_id, item_scope, item_asserted_by, item_grants)"
                    " VALUES (:ws, :item, now() + interval '1 day', 'ACTIVE', false, false, :elsewhere,"
                    " 'WORKSPACE', :human, ARRAY[CAST(:human AS uuid)])"
                    " RETURNING item_project_id::text, item_scope, item_asserted_by::text, item_grants"
                ),
                claimed,
            )
        ).one()
        await transaction.rollback()
    expected = (world.project_id, "PROJECT", world.agent.id, None)
    assert tuple(event) == expected
    assert tuple(state) == expected


async def test_r2_when_the_owner_changes_an_items_audience_its_copies_follow(
    engine: AsyncEngine, admin_engine: AsyncEngine, ground: Ground
) -> None:
    """Not the server's to do (it may not UPDATE those columns), but an administrator may: the
    events, states and disputes shown with an item follow, and so do their readers. The agent's
    load-bearing item (with its history) and the human's contested one become PRIVATE."""
    world = ground.world
    count = text("SELECT count(*) FROM item_events WHERE item_id = :i")

    async def events_seen(who: Who) -> int:
        async with as_caller(engine, who) as connection:
            return (await connection.execute(count, {"i": ground.load_bearing})).scalar_one()

    assert await events_seen(world.human) > 0  # the control: a member sees a PROJECT item's history
    async with admin_engine.begin() as connection:
        await connection.execute(
            text("UPDATE items SET scope = 'PRIVATE' WHERE id = ANY (CAST(:items AS uuid[]))"),
            {"items": [ground.load_bearing, ground.confirmed]},
        )
    copies = await rows(
        admin_engine,
        "SELECT (SELECT array_agg(DISTINCT item_scope) FROM item_events WHERE item_id = :i) AS events,"
        " (SELECT array_agg(DISTINCT item_scope) FROM item_states WHERE item_id = :i) AS states,"
        " (SELECT array_agg(DISTINCT contested_scope) FROM disputes WHERE contested_id = :c) AS disputes",
        i=ground.load_bearing,
        c=ground.confirmed,
    )
    assert copies == [{"events": ["PRIVATE"], "states": ["PRIVATE"], "disputes": ["PRIVATE"]}]
    assert await events_seen(world.human) == 0
    assert await events_seen(world.agent) > 0  # its asserter still does


async def test_r5_a_decided_proposal_stays_decided(api: Api, engine: AsyncEngine, ground: Ground) -> None:
    world = ground.world
    await api.run(
        world.agent.token, "mutation($i: ID!) { suggestLoadBearing(id: $i) { id } }", i=ground.agents
    )
    reject = (
        "UPDATE proposals SET status = 'REJECTED', decided_by = mneia_actor(), decided_at = now()"
        " WHERE target_id = :item"
    )
    accept_empty = (
        "UPDATE proposals SET status = 'ACCEPTED', decided_by = mneia_actor(), decided_at = now()"
        " WHERE target_id = :item"
    )
    # An acceptance must name what it produced; a decision is made once.
    await assert_disallowed(
        engine, world.human, accept_empty, "proposals_accepted_result", item=ground.agents
    )
    async with as_caller(engine, world.human) as connection:
        assert (await connection.execute(text(reject), {"item": ground.agents})).rowcount == 1  # control
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(text(reject.replace("REJECTED", "ACCEPTED")), {"item": ground.agents})
    assert sqlstate(caught.value) == CHECK_VIOLATION


async def test_r8_a_resolved_dispute_stays_resolved(engine: AsyncEngine, ground: Ground) -> None:
    resolve = (
        "UPDATE disputes SET status = 'RESOLVED', resolved_by = mneia_actor(), resolved_at = now(),"
        " kept_item_id = {kept} WHERE item_id = :item"
    )
    async with as_caller(engine, ground.world.human) as connection:
        kept_newcomer = await connection.execute(
            text(resolve.format(kept="item_id")), {"item": ground.disputed}
        )
        assert kept_newcomer.rowcount == 1  # control
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(text(resolve.format(kept="contested_id")), {"item": ground.disputed})
    assert sqlstate(caught.value) == CHECK_VIOLATION


async def test_r8_a_dispute_is_raised_by_its_items_disputed_side(engine: AsyncEngine, ground: Ground) -> None:
    """A dispute between two ACTIVE items, with no newcomer marked DISPUTED, is refused."""
    world = ground.world
    raise_dispute = (
        "INSERT INTO disputes (workspace_id, id, project_id, item_id, contested_id, raised_by)"
        " VALUES (:ws, gen_random_uuid(), :project, :item, :contested, mneia_actor())"
    )
    params = {"ws": world.workspace_id, "project": world.project_id, "contested": ground.confirmed}
    await assert_refused(engine, world.agent, raise_dispute, item=ground.agents, **params)
    async with as_caller(engine, world.agent) as connection:  # control: mark it first, as disputeItem does
        await connection.execute(text(DISPUTE_MARK), {"item": ground.agents})
        assert (
            await connection.execute(text(raise_dispute), {**params, "item": ground.agents})
        ).rowcount == 1


# --- actors and tokens ----------------------------------------------------------------------------


async def test_r3_a_human_cannot_mint_a_token_for_another_person(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    colleague = await api.actor(world.human.token, "HUMAN", "bob")
    insert_token = (
        "INSERT INTO api_tokens (workspace_id, id, actor_id, token_hash, created_by)"
        " VALUES (:ws, gen_random_uuid(), :owner, :hash, mneia_actor())"
    )
    params = {"ws": world.workspace_id, "hash": uuid.uuid4().hex}
    # bob created no one and may not become alice; the agent's creator (alice) may mint for it.
    await assert_refused(engine, colleague, insert_token, owner=world.human.id, **params)
    await assert_refused(engine, colleague, insert_token, owner=world.agent.id, **params)
    assert await run(engine, world.human, insert_token, owner=world.agent.id, **params) == 1


async def test_r3_a_creator_copied_onto_a_row_is_the_databases_never_the_callers(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    """The token and membership policies read the creator of the token's actor, team or project
    from the row itself (docs/scale-out.md); a trigger writes it from the records, whatever the
    INSERT says. Bob, who created nothing, claims to be the creator: refused each time; Alice, who
    created them, adds the same rows (the controls)."""
    bob = await api.actor(world.human.token, "HUMAN", "bob")
    team = await api.run(world.human.token, 'mutation { createTeam(name: "core", function: "eng") { id } }')
    team_id = team["createTeam"]["id"]
    newcomer = await api.actor(world.human.token, "AGENT", "newcomer")
    claims = {
        "INSERT INTO api_tokens (workspace_id, id, actor_id, token_hash, created_by, actor_created_by)"
        " VALUES (:ws, gen_random_uuid(), :agent, :hash, mneia_actor(), mneia_actor())": {
            "agent": world.agent.id,
            "hash": uuid.uuid4().hex,
        },
        "INSERT INTO team_members (workspace_id, team_id, actor_id, added_by, team_created_by)"
        " VALUES (:ws, :team, :member, mneia_actor(), mneia_actor())": {
            "team": team_id,
            "member": newcomer.id,
        },
        "INSERT INTO project_members (workspace_id, project_id, actor_id, added_by, project_created_by)"
        " VALUES (:ws, :project, :member, mneia_actor(), mneia_actor())": {
            "project": world.project_id,
            "member": newcomer.id,
        },
    }
    for statement, params in claims.items():
        await assert_refused(engine, bob, statement, ws=world.workspace_id, **params)
        assert await run(engine, world.human, statement, ws=world.workspace_id, **params) == 1
    copied = await rows(
        api.admin_engine,
        "SELECT DISTINCT actor_created_by FROM api_tokens WHERE actor_id = :a",
        a=world.agent.id,
    )
    assert [str(row["actor_created_by"]) for row in copied] == [world.human.id]  # from actors


async def test_issue_21_an_expiring_token_mints_nothing_that_outlives_it_whatever_the_sql(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    """The API refuses it (tests/test_api_tokens.py); so does the database, for raw SQL as mneia_app
    bound by a 60-second token: its expiry is sealed in the context, and a token written in the
    transaction that expires later, or never, is refused. A sooner one goes through (the control),
    and a token without an expiry mints as before."""
    minted = await api.run(
        world.human.token,
        'mutation($a: ID!) { createToken(actorId: $a, expiresIn: "PT60S") { token issued { expiresAt } } }',
        a=world.human.id,
    )
    short = Who(world.human.id, minted["createToken"]["token"])
    insert_token = (
        "INSERT INTO api_tokens (workspace_id, id, actor_id, token_hash, created_by, expires_at)"
        " VALUES (:ws, gen_random_uuid(), :owner, :hash, mneia_actor(), now() + CAST(:lasts AS interval))"
    )
    forever = insert_token.replace("now() + CAST(:lasts AS interval)", "NULL")
    params = {"ws": world.workspace_id, "owner": world.agent.id, "hash": uuid.uuid4().hex}
    await assert_refused(engine, short, forever, **params)
    await assert_refused(engine, short, insert_token, lasts=timedelta(days=1), **params)
    assert await run(engine, short, insert_token, lasts=timedelta(seconds=10), **params) == 1
    assert await run(engine, world.human, forever, **params) == 1


async def test_r1_an_actor_cannot_be_linked_to_another_workspaces_person(
    engine: AsyncEngine, admin_engine: AsyncEngine, world: World
) -> None:
    """Linking an identity would show that person's name to this workspace: the administrator's act only."""
    (linked,) = await rows(admin_engine, "SELECT identity_id FROM actors WHERE id = :a", a=world.human.id)
    link = (
        "INSERT INTO actors (workspace_id, id, kind, name, identity_id, created_by)"
        " VALUES (:ws, gen_random_uuid(), 'HUMAN', 'impostor', :identity, mneia_actor())"
    )
    await assert_refused(engine, world.human, link, ws=world.workspace_id, identity=linked["identity_id"])
    assert await run(engine, world.human, link, ws=world.workspace_id, identity=None) == 1  # control


# --- the invariant, for any write ----------------------------------------------------------------

UPDATABLE = {
    "status": st.sampled_from(["ACTIVE", "SUPERSEDED", "DISPUTED", "RETIRED"]),
    "status_reason": st.sampled_from([None, "because", "contradicts nothing"]),
    "load_bearing": st.booleans(),
    "load_bearing_set_by": st.sampled_from(["agent", "human", None]),
    "load_bearing_suggested": st.booleans(),
    "confirmed_by": st.sampled_from(["agent", "human", None]),
    "last_verified_at": st.sampled_from(["now", None]),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    target=st.sampled_from(["confirmed", "load_bearing"]),
    change=st.dictionaries(st.sampled_from(sorted(UPDATABLE)), st.none(), min_size=1).flatmap(
        lambda chosen: st.fixed_dictionaries({name: UPDATABLE[name] for name in chosen})
    ),
)
async def test_r3_no_update_by_an_agent_changes_a_ruled_items_authority(
    engine: AsyncEngine, ground: Ground, target: str, change: dict[str, Any]
) -> None:
    """Whatever columns an agent's raw UPDATE sets, an item a human ruled on keeps its authority."""
    item = getattr(ground, target)
    world = ground.world
    ids = {"agent": world.agent.id, "human": world.human.id, None: None}
    assignments, params = [], {"item": item}
    for column, value in change.items():
        if column in ("load_bearing_set_by", "confirmed_by"):
            params[column] = ids[value]
            assignments.append(f"{column} = CAST(:{column} AS uuid)")
            stamp = "load_bearing_set_at" if column == "load_bearing_set_by" else "confirmed_at"
            assignments.append(f"{stamp} = CASE WHEN :{column} IS NULL THEN NULL ELSE now() END")
        elif column == "last_verified_at":
            assignments.append("last_verified_at = now()" if value else "last_verified_at = NULL")
        else:
            params[column] = value
            assignments.append(f"{column} = :{column}")
    statement = f"UPDATE items SET {', '.join(assignments)} WHERE id = :item"
    async with as_caller(engine, world.agent) as connection:
        before = await authority_of(connection, item)
        try:
            await connection.execute(text(statement), params)
        except DBAPIError:
            return  # refused: nothing changed
        assert await authority_of(connection, item) == before, statement


async def authority_of(connection: AsyncConnection, item: str) -> tuple[Any, ...]:
    found = await connection.execute(
        text(
            "SELECT status, confirmed_by, load_bearing, load_bearing_set_by, status_reason"
            " FROM items WHERE id = :i"
        ),
        {"i": item},
    )
    return tuple(found.one())


# --- one rule, asked twice ------------------------------------------------------------------------

ACTORS = [uuid.UUID(int=n) for n in range(1, 5)]
SCOPES = st.sampled_from([scope.value for scope in Scope])


@settings(max_examples=150, deadline=None)
@given(
    before=st.tuples(SCOPES, st.sets(st.sampled_from(ACTORS)), st.sampled_from(ACTORS)),
    after=st.tuples(SCOPES, st.sets(st.sampled_from(ACTORS)), st.sampled_from(ACTORS)),
)
async def test_r2_r7_the_audience_rule_is_the_same_in_python_and_in_the_database(
    admin_engine: AsyncEngine,
    before: tuple[str, set[uuid.UUID], uuid.UUID],
    after: tuple[str, set[uuid.UUID], uuid.UUID],
) -> None:
    """mneia.authority.keeps_audience (asked before a proposal) and mneia_keeps_audience (asked of
    every replacement written) agree on every pair of scopes, grant lists and asserters."""

    def row(scope: str, grants: set[uuid.UUID], asserter: uuid.UUID) -> str:
        return json.dumps(
            {"scope": scope, "grant_actor_ids": sorted(map(str, grants)), "asserted_by": str(asserter)}
        )

    target = item_record(scope=Scope(before[0]), grant_actor_ids=sorted(before[1]), asserted_by=before[2])
    replacement = NewItem(
        project_id=target.project_id,
        kind=ItemKind.FACT,
        statement="y",
        scope=Scope(after[0]),
        grant_actor_ids=tuple(sorted(after[1])),
    )
    async with admin_engine.connect() as connection:
        in_database = await connection.scalar(
            text(
                "SELECT mneia_keeps_audience(jsonb_populate_record(NULL::items, CAST(:before AS jsonb)),"
                " jsonb_populate_record(NULL::items, CAST(:after AS jsonb)))"
            ),
            {"before": row(*before), "after": row(*after)},
        )
    assert in_database is keeps_audience(target, replacement, after[2])


# --- no half-written structure survives a transaction (issue 21) --------------------------------


async def commit_as(
    engine: AsyncEngine, who: Who, *statements: tuple[str, dict[str, Any]]
) -> DBAPIError | None:
    """Run ``statements`` as ``who`` and commit; the error the commit (or a statement) raised, if any."""
    async with (await node_engine(engine, who)).connect() as connection:
        await connection.begin()
        try:
            await authenticate(connection, who)
            for sql, params in statements:
                await connection.execute(text(sql), params)
            await connection.commit()
        except DBAPIError as error:
            await connection.rollback()
            return error
    return None


async def status_of(api: Api, item_id: str) -> str:
    return str(
        (await rows(api.admin_engine, "SELECT status FROM items WHERE id = :i", i=item_id))[0]["status"]
    )


async def test_issue_21_a_successor_commits_only_with_its_item_superseded(
    api: Api, engine: AsyncEngine, ground: Ground
) -> None:
    """The reproduction: as mneia_app bound to its own token, an agent wrote a successor of its own
    ACTIVE item and left the item ACTIVE; every rehydrate of the project then failed. Refused at
    commit now, naming the rule, and nothing is written; with the item marked in the same
    transaction, it commits (the control)."""
    agent = ground.world.agent
    half = new_item(ground, agent.id, replaces=ground.agents, reason="v2")
    error = await commit_as(engine, agent, (INSERT_ITEM, half))
    assert error is not None and sqlstate(error) == CHECK_VIOLATION, error
    assert constraint_of(error) == "items_successor_supersedes", error
    assert await rows(api.admin_engine, "SELECT id FROM items WHERE id = :i", i=half["id"]) == []
    whole = new_item(ground, agent.id, replaces=ground.agents, reason="v2")
    assert (
        await commit_as(engine, agent, (INSERT_ITEM, whole), (SUPERSEDE_MARK, {"item": ground.agents}))
        is None
    )
    assert await status_of(api, ground.agents) == "SUPERSEDED"


async def test_issue_21_a_disputed_item_commits_only_with_an_open_dispute_naming_it(
    api: Api, engine: AsyncEngine, ground: Ground
) -> None:
    """An agent set its own item DISPUTED with no dispute, after which nobody could confirm or
    resolve it; a human resolving the dispute by hand could leave its item DISPUTED with none open.
    Both are refused at commit; the controls (the mark with its dispute; a resolution that settles
    the item) commit."""
    world = ground.world
    error = await commit_as(engine, world.agent, (DISPUTE_MARK, {"item": ground.agents}))
    assert error is not None and constraint_of(error) == "items_disputed_by_dispute", error
    assert await status_of(api, ground.agents) == "ACTIVE"
    raise_dispute = (
        "INSERT INTO disputes (workspace_id, id, project_id, item_id, contested_id, raised_by)"
        " VALUES (:ws, gen_random_uuid(), :project, :item, :contested, mneia_actor())"
    )
    params = {"ws": world.workspace_id, "project": world.project_id, "contested": ground.confirmed}
    marked = (DISPUTE_MARK, {"item": ground.agents}), (raise_dispute, {**params, "item": ground.agents})
    assert await commit_as(engine, world.agent, *marked) is None
    assert await status_of(api, ground.agents) == "DISPUTED"

    resolve = (
        "UPDATE disputes SET status = 'RESOLVED', resolved_by = mneia_actor(), resolved_at = now(),"
        " kept_item_id = contested_id WHERE item_id = :item"
    )
    error = await commit_as(engine, world.human, (resolve, {"item": ground.disputed}))
    assert error is not None and constraint_of(error) == "items_disputed_by_dispute", error
    settled = (resolve, {"item": ground.disputed}), (RETIRE, {"item": ground.disputed})
    assert await commit_as(engine, world.human, *settled) is None
    assert await status_of(api, ground.disputed) == "RETIRED"
