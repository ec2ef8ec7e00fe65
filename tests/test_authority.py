"""R3 (the actor's kind comes from its record; human-only operations) and R5 (load-bearing).

Authority is checked twice: by the resolvers (FORBIDDEN / HUMAN_REQUIRED before
anything is written) and by the database itself, as the server's role, so that
no application bug can mint a confirmation, a load-bearing setting, a decision,
an actor or a token for an agent. Each database refusal has a positive control
(the same statement in a human's context goes through), so the tests can fail.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.graphql import Api, Who, World
from tests.support import (
    ADD_PROJECT_MEMBER,
    ADD_TEAM_MEMBER,
    ASSERT_ITEM,
    CONFIRM_ITEM,
    MAKE_LOAD_BEARING,
    RETIRE_ITEM,
    SUGGEST_LOAD_BEARING,
    VERIFY_ITEM,
    as_caller,
    assert_code,
    assert_human_required,
    confirmed_item,
    database_state,
    item_row,
    refused,
    rows,
)

# --- helpers -----------------------------------------------------------------------------------


async def refused_to(engine: AsyncEngine, who: Who, sql: str, **params: Any) -> DBAPIError:
    """Run one statement as the server's role for this caller; it must be refused with 42501."""
    async with as_caller(engine, who) as connection:
        return await refused(connection, sql, **params)


async def accepted(engine: AsyncEngine, who: Who, sql: str, **params: Any) -> int:
    """Run one statement as the server's role for this caller; it must succeed (then roll back)."""
    async with as_caller(engine, who) as connection:
        result = await connection.execute(text(sql), params)
        return result.rowcount


ITEM_FIELDS = """id status authority loadBearing loadBearingSuggested
  confirmation { by { id kind } at }"""


async def read_item(api: Api, token: str, item_id: str) -> dict[str, Any]:
    data = await api.run(token, f"query($i: ID!) {{ item(id: $i) {{ {ITEM_FIELDS} }} }}", i=item_id)
    return data["item"]


async def proposal_rows(api: Api, item_id: str) -> list[dict[str, Any]]:
    return await rows(
        api.admin_engine,
        "SELECT id, kind, status, proposed_by, decided_by FROM proposals"
        " WHERE target_id = :item ORDER BY proposed_at, id",
        item=item_id,
    )


# --- R3 through the API: human-only mutations ----------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """A world plus what the human-only mutations act on."""

    world: World
    team_id: str
    outsider_id: str  # an actor in the workspace who is in neither the project nor the team
    item_id: str  # an agent's unconfirmed assertion with a pending load-bearing suggestion


@pytest.fixture
async def stage(api: Api, world: World) -> Stage:
    team = await api.run(
        world.human.token, 'mutation { createTeam(name: "core", function: "backend") { id } }'
    )
    outsider = await api.actor(world.human.token, "AGENT", "outsider")
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use Postgres 15")
    await api.run(world.agent.token, SUGGEST_LOAD_BEARING, i=item["id"])
    return Stage(world, team["createTeam"]["id"], outsider.id, item["id"])


HUMAN_ONLY: dict[str, tuple[str, Callable[[Stage], dict[str, Any]]]] = {
    "createTeam": ('mutation { createTeam(name: "ops", function: "operations") { id } }', lambda s: {}),
    "createProject": ('mutation { createProject(name: "rogue") { id } }', lambda s: {}),
    "createActor-HUMAN": (
        'mutation { createActor(kind: HUMAN, name: "mallory") { actor { id } token } }',
        lambda s: {},
    ),
    "createActor-AGENT": (
        'mutation { createActor(kind: AGENT, name: "minion") { actor { id } token } }',
        lambda s: {},
    ),
    "addProjectMember": (ADD_PROJECT_MEMBER, lambda s: {"p": s.world.project_id, "a": s.outsider_id}),
    "addTeamMember": (ADD_TEAM_MEMBER, lambda s: {"t": s.team_id, "a": s.world.agent.id}),
    "confirmItem": (CONFIRM_ITEM, lambda s: {"i": s.item_id}),
    "setLoadBearing-true": (MAKE_LOAD_BEARING, lambda s: {"i": s.item_id}),
    "setLoadBearing-false": (
        "mutation($i: ID!) { setLoadBearing(id: $i, loadBearing: false) { id } }",
        lambda s: {"i": s.item_id},
    ),
}


@pytest.mark.parametrize("operation", list(HUMAN_ONLY))
async def test_r3_human_only_mutation_refuses_agent_and_writes_nothing(
    api: Api, stage: Stage, operation: str
) -> None:
    query, variables = HUMAN_ONLY[operation]
    before = await database_state(api.admin_engine)
    error = await api.fail(stage.world.agent.token, query, **variables(stage))
    assert_human_required(error)
    assert await database_state(api.admin_engine) == before


@pytest.mark.parametrize("operation", list(HUMAN_ONLY))
async def test_r3_human_only_mutation_works_for_a_human(api: Api, stage: Stage, operation: str) -> None:
    """The control for the test above: the same operation by a human succeeds."""
    query, variables = HUMAN_ONLY[operation]
    data = await api.run(stage.world.human.token, query, **variables(stage))
    assert data and all(value is not None for value in data.values())


async def test_r3_no_header_or_variable_can_claim_a_kind(api: Api, stage: Stage) -> None:
    agent = stage.world.agent
    claims = {
        "Authorization": f"Bearer {agent.token}",
        "X-Actor-Kind": "HUMAN",
        "X-Mneia-Actor-Kind": "HUMAN",
    }
    before = await database_state(api.admin_engine)
    response = await api.http.post(
        "/graphql",
        json={
            "query": "mutation($i: ID!) { confirmItem(id: $i) { id authority } }",
            "variables": {"i": stage.item_id, "kind": "HUMAN", "actorKind": "HUMAN"},
            "extensions": {"kind": "HUMAN"},
        },
        headers=claims,
    )
    body = response.json()
    assert body.get("errors"), body
    assert_human_required(body["errors"][0])
    assert await database_state(api.admin_engine) == before

    response = await api.http.post(
        "/graphql",
        json={"query": "{ me { id kind } }", "variables": {"kind": "HUMAN"}},
        headers=claims,
    )
    assert response.json() == {"data": {"me": {"id": agent.id, "kind": "AGENT"}}}
    human = await api.run(stage.world.human.token, "{ me { id kind } }")
    assert human["me"] == {"id": stage.world.human.id, "kind": "HUMAN"}


# --- R3 in the database, as the server's role ---------------------------------------------------

CONFIRM_SQL = "UPDATE items SET confirmed_by = :by, confirmed_at = now() WHERE id = :item"
LOAD_BEARING_SQL = (
    "UPDATE items SET load_bearing = true, load_bearing_set_by = :by, load_bearing_set_at = now()"
    " WHERE id = :item"
)
INSERT_CONFIRMED_ITEM = (
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by,"
    " confirmed_by, confirmed_at) VALUES (:ws, gen_random_uuid(), :project, 'FACT', 'minted',"
    " :asserter, :by, now())"
)
INSERT_ACTOR = (
    "INSERT INTO actors (workspace_id, id, kind, name, created_by)"
    " VALUES (:ws, gen_random_uuid(), :kind, 'minted', :by)"
)
INSERT_TOKEN = (
    "INSERT INTO api_tokens (workspace_id, id, actor_id, token_hash, created_by)"
    " VALUES (:ws, gen_random_uuid(), :owner, :hash, :by)"
)


@pytest.mark.parametrize("statement", [CONFIRM_SQL, LOAD_BEARING_SQL], ids=["confirm", "load-bearing"])
async def test_r3_database_refuses_authority_attributed_to_an_agent(
    api: Api, engine: AsyncEngine, world: World, statement: str
) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Cache for 5 min")
    agent, human = world.agent.id, world.human.id

    error = await refused_to(engine, world.agent, statement, by=agent, item=item["id"])
    assert "HUMAN_REQUIRED" in str(error.orig)
    # An agent cannot launder it by naming a human as the author either.
    error = await refused_to(engine, world.agent, statement, by=human, item=item["id"])
    assert "HUMAN_REQUIRED" in str(error.orig)
    # Nor can anyone attribute it to an agent from a human's context.
    error = await refused_to(engine, world.human, statement, by=agent, item=item["id"])
    assert "HUMAN_REQUIRED" in str(error.orig)
    # Control: the human, in their own name, may.
    assert await accepted(engine, world.human, statement, by=human, item=item["id"]) == 1
    assert (await item_row(api.admin_engine, item["id"]))["confirmed_by"] is None  # all rolled back


async def test_r3_database_refuses_an_agent_inserting_a_confirmed_item(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    ws, agent, human, project = world.workspace_id, world.agent.id, world.human.id, world.project_id
    for by in (agent, human):
        error = await refused_to(
            engine, world.agent, INSERT_CONFIRMED_ITEM, ws=ws, project=project, asserter=agent, by=by
        )
        assert "HUMAN_REQUIRED" in str(error.orig)
    inserted = await accepted(
        engine, world.human, INSERT_CONFIRMED_ITEM, ws=ws, project=project, asserter=human, by=human
    )
    assert inserted == 1


async def test_r3_database_refuses_an_agent_creating_actors_or_tokens(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    ws, agent, human = world.workspace_id, world.agent.id, world.human.id
    for kind in ("HUMAN", "AGENT"):
        await refused_to(engine, world.agent, INSERT_ACTOR, ws=ws, kind=kind, by=agent)
    await refused_to(engine, world.agent, INSERT_TOKEN, ws=ws, owner=agent, hash=uuid.uuid4().hex, by=agent)
    await refused_to(engine, world.agent, INSERT_TOKEN, ws=ws, owner=human, hash=uuid.uuid4().hex, by=agent)
    # Controls: a human may do both.
    assert await accepted(engine, world.human, INSERT_ACTOR, ws=ws, kind="AGENT", by=human) == 1
    token_hash = uuid.uuid4().hex
    assert (
        await accepted(engine, world.human, INSERT_TOKEN, ws=ws, owner=agent, hash=token_hash, by=human) == 1
    )


async def test_r3_database_refuses_a_proposal_decision_by_an_agent(
    api: Api, engine: AsyncEngine, stage: Stage
) -> None:
    world = stage.world
    agent, human = world.agent.id, world.human.id
    (pending,) = await proposal_rows(api, stage.item_id)
    decide = "UPDATE proposals SET status = 'REJECTED', decided_by = :by, decided_at = now() WHERE id = :p"
    error = await refused_to(engine, world.agent, decide, by=agent, p=str(pending["id"]))
    assert "HUMAN_REQUIRED" in str(error.orig)
    error = await refused_to(engine, world.agent, decide, by=human, p=str(pending["id"]))
    assert "HUMAN_REQUIRED" in str(error.orig)
    assert await accepted(engine, world.human, decide, by=human, p=str(pending["id"])) == 1
    assert (await proposal_rows(api, stage.item_id))[0]["status"] == "PENDING"


# --- R3: authentication --------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "mneia_not-a-real-token", "garbage"])
async def test_r3_absent_or_unknown_token_is_unauthenticated(api: Api, token: str | None) -> None:
    error = await api.fail(token, "{ me { id } }")
    assert_code(error, "UNAUTHENTICATED")


async def test_r3_revoked_token_is_unauthenticated(api: Api, world: World) -> None:
    assert (await api.run(world.agent.token, "{ me { id } }"))["me"]["id"] == world.agent.id
    async with api.admin_engine.begin() as connection:
        await connection.execute(
            # By its workspace: on Citus one shard (a write to several, through a trigger that
            # notifies, is a two-phase commit, which NOTIFY forbids).
            text("UPDATE api_tokens SET revoked_at = now() WHERE workspace_id = :w AND actor_id = :a"),
            {"w": world.workspace_id, "a": world.agent.id},
        )
    error = await api.fail(world.agent.token, "{ me { id } }")
    assert_code(error, "UNAUTHENTICATED")
    # The human's token is untouched.
    assert (await api.run(world.human.token, "{ me { id } }"))["me"]["id"] == world.human.id


async def test_r3_introspection_needs_no_token(api: Api) -> None:
    data = await api.run(None, "{ __schema { queryType { name } } }")
    assert data == {"__schema": {"queryType": {"name": "Query"}}}


# --- R3: authority of assertions, confirmation, retirement --------------------------------------


async def test_r3_human_assertion_is_human_confirmed_by_that_human(api: Api, world: World) -> None:
    item = await api.assert_item(world.human.token, projectId=world.project_id, statement="Ship Fridays")
    found = await read_item(api, world.agent.token, item["id"])
    assert found["authority"] == "HUMAN_CONFIRMED"
    assert found["confirmation"]["by"] == {"id": world.human.id, "kind": "HUMAN"}
    assert found["confirmation"]["at"]


async def test_r3_agent_assertion_stays_agent_asserted_until_a_human_confirms(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Tests use pytest")
    found = await read_item(api, world.human.token, item["id"])
    assert (found["authority"], found["confirmation"]) == ("AGENT_ASSERTED", None)

    data = await api.run(
        world.human.token, f"mutation($i: ID!) {{ confirmItem(id: $i) {{ {ITEM_FIELDS} }} }}", i=item["id"]
    )
    confirmed = data["confirmItem"]
    assert confirmed["authority"] == "HUMAN_CONFIRMED"
    assert confirmed["confirmation"]["by"] == {"id": world.human.id, "kind": "HUMAN"}
    assert await read_item(api, world.agent.token, item["id"]) == confirmed


RETIRE = 'mutation($i: ID!) { retireItem(id: $i, reason: "obsolete") { id status } }'


async def test_r3_agent_may_retire_an_unconfirmed_agent_assertion(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Temp note")
    data = await api.run(world.agent.token, RETIRE, i=item["id"])
    assert data["retireItem"] == {"id": item["id"], "status": "RETIRED"}


@pytest.mark.parametrize("asserter", ["human", "agent-then-confirmed"])
async def test_r3_agent_may_not_retire_a_human_confirmed_item(api: Api, world: World, asserter: str) -> None:
    item = await confirmed_item(api, world, "Rule", agent_asserted=asserter != "human")
    before = await database_state(api.admin_engine)
    assert_human_required(await api.fail(world.agent.token, RETIRE, i=item["id"]))
    assert await database_state(api.admin_engine) == before
    assert (await item_row(api.admin_engine, item["id"]))["status"] == "ACTIVE"


# --- R5: load-bearing ----------------------------------------------------------------------------

SUGGEST = """mutation($i: ID!) { suggestLoadBearing(id: $i, reason: "everything depends on it") {
  id kind status reason proposedBy { id } target { id loadBearing loadBearingSuggested } } }"""
SET_LOAD_BEARING = f"""mutation($i: ID!, $lb: Boolean!) {{
  setLoadBearing(id: $i, loadBearing: $lb) {{ {ITEM_FIELDS} }} }}"""


async def test_r5_agent_suggestion_is_a_pending_proposal(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Money in cents")
    proposal = (await api.run(world.agent.token, SUGGEST, i=item["id"]))["suggestLoadBearing"]
    assert (proposal["kind"], proposal["status"]) == ("LOAD_BEARING", "PENDING")
    assert proposal["proposedBy"]["id"] == world.agent.id
    assert proposal["target"] == {"id": item["id"], "loadBearing": False, "loadBearingSuggested": True}
    found = await read_item(api, world.human.token, item["id"])
    assert (found["loadBearing"], found["loadBearingSuggested"]) == (False, True)
    found = await proposal_rows(api, item["id"])
    assert [(str(r["id"]), r["status"]) for r in found] == [(proposal["id"], "PENDING")]


async def test_r5_assertion_with_suggestion_opens_a_pending_proposal(api: Api, world: World) -> None:
    data = await api.run(
        world.agent.token,
        "mutation($i: AssertItemInput!) { assertItem(input: $i) { id loadBearing loadBearingSuggested } }",
        i={
            "projectId": world.project_id,
            "kind": "CONSTRAINT",
            "statement": "No PII in logs",
            "suggestLoadBearing": True,
        },
    )
    item = data["assertItem"]
    assert (item["loadBearing"], item["loadBearingSuggested"]) == (False, True)
    found = await proposal_rows(api, item["id"])
    assert [(r["kind"], r["status"], str(r["proposed_by"])) for r in found] == [
        ("LOAD_BEARING", "PENDING", world.agent.id)
    ]


async def test_r5_suggesting_twice_returns_the_same_pending_proposal(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="UTC everywhere")
    first = (await api.run(world.agent.token, SUGGEST, i=item["id"]))["suggestLoadBearing"]
    again = (await api.run(world.agent.token, SUGGEST, i=item["id"]))["suggestLoadBearing"]
    by_human = (await api.run(world.human.token, SUGGEST, i=item["id"]))["suggestLoadBearing"]
    assert first["id"] == again["id"] == by_human["id"]
    assert len(await proposal_rows(api, item["id"])) == 1


async def test_r5_suggestions_concurrently_leave_one_pending_proposal(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Idempotent jobs")
    bodies = await asyncio.gather(
        *(api.post(world.agent.token, SUGGEST, {"i": item["id"]}) for _ in range(4))
    )
    # Suggesting is idempotent, also under a race: every caller gets the one pending proposal.
    assert not any(body.get("errors") for body in bodies), bodies
    ids = {body["data"]["suggestLoadBearing"]["id"] for body in bodies}
    assert len(ids) == 1, bodies
    assert [r["status"] for r in await proposal_rows(api, item["id"])] == ["PENDING"]


async def settle(api: Api, world: World, statement: str, load_bearing: bool) -> dict[str, Any]:
    """An agent's item with its suggestion pending, then the human's ``setLoadBearing`` answer."""
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement=statement)
    await api.run(world.agent.token, SUGGEST, i=item["id"])
    data = await api.run(world.human.token, SET_LOAD_BEARING, i=item["id"], lb=load_bearing)
    return data["setLoadBearing"]


async def test_r5_human_setting_load_bearing_settles_the_suggestion(api: Api, world: World) -> None:
    settled = await settle(api, world, "Idempotency keys", True)
    assert (settled["loadBearing"], settled["loadBearingSuggested"]) == (True, False)
    assert await read_item(api, world.agent.token, settled["id"]) == settled
    (closed,) = await proposal_rows(api, settled["id"])
    assert (closed["status"], str(closed["decided_by"])) == ("ACCEPTED", world.human.id)
    assert (await item_row(api.admin_engine, settled["id"]))["load_bearing_set_by"] == world.human.id


async def test_r5_human_clearing_load_bearing_rejects_the_suggestion(api: Api, world: World) -> None:
    settled = await settle(api, world, "Retry thrice", False)
    assert (settled["loadBearing"], settled["loadBearingSuggested"]) == (False, False)
    (closed,) = await proposal_rows(api, settled["id"])
    assert (closed["status"], str(closed["decided_by"])) == ("REJECTED", world.human.id)


async def test_r5_agent_can_never_make_an_item_load_bearing(api: Api, world: World) -> None:
    """Every mutation an agent can aim at an item's load-bearing flag leaves it false."""
    agent = world.agent.token
    data = await api.run(
        agent,
        "mutation($i: AssertItemInput!) { assertItem(input: $i) { id loadBearing } }",
        i={
            "projectId": world.project_id,
            "kind": "CONSTRAINT",
            "statement": "Never drop tables",
            "suggestLoadBearing": True,
        },
    )
    item_id = data["assertItem"]["id"]
    assert data["assertItem"]["loadBearing"] is False
    await api.run(agent, SUGGEST, i=item_id)
    assert_human_required(await api.fail(agent, SET_LOAD_BEARING, i=item_id, lb=True))
    await api.run(agent, VERIFY_ITEM, i=item_id)
    # Aliases and repeated fields in one operation do not help either.
    body = await api.post(
        agent,
        """mutation($i: ID!) { a: suggestLoadBearing(id: $i) { id }
             b: setLoadBearing(id: $i, loadBearing: true) { id } }""",
        {"i": item_id},
    )
    assert body.get("errors")
    row = await item_row(api.admin_engine, item_id)
    assert (row["load_bearing"], row["load_bearing_set_by"]) == (False, None)
    assert (await read_item(api, world.human.token, item_id))["loadBearing"] is False


DISPUTE_ITEM = 'mutation($i: ID!, $c: ID!) { disputeItem(id: $i, contestedId: $c, reason: "no") { id } }'


async def test_r5_an_agent_cannot_retire_or_dispute_a_load_bearing_item(api: Api, world: World) -> None:
    """Load-bearing is a human's ruling, confirmed or not: only a human changes such an item's status."""
    ruled = await api.assert_item(world.agent.token, projectId=world.project_id, statement="p99 under 200 ms")
    await api.run(world.human.token, MAKE_LOAD_BEARING, i=ruled["id"])
    other = await api.assert_item(world.agent.token, projectId=world.project_id, statement="p99 under 1 s")
    before = await database_state(api.admin_engine)

    assert_human_required(await api.fail(world.agent.token, RETIRE_ITEM, i=ruled["id"], r="too strict"))
    assert_human_required(await api.fail(world.agent.token, DISPUTE_ITEM, i=ruled["id"], c=other["id"]))

    assert await database_state(api.admin_engine) == before
    # Control: the human may retire it.
    retired = await api.run(world.human.token, RETIRE_ITEM, i=ruled["id"], r="too strict")
    assert retired["retireItem"]["status"] == "RETIRED"


def test_r3_every_human_only_field_carries_the_permission_and_says_so() -> None:
    """Declared once: the permission on the field is what refuses agents, and the schema's
    description follows from it; the refusals above cover every such mutation."""
    from strawberry.permission import PermissionExtension

    from mneia.resolvers.request.permission import HUMAN_ONLY as SAID
    from mneia.resolvers.request.permission import HumanOnly
    from mneia.resolvers.root import Mutation, build_schema

    name = build_schema().config.name_converter.get_graphql_name
    fields = Mutation.__strawberry_definition__.fields
    guarded = {
        name(field)
        for field in fields
        for extension in field.extensions
        if isinstance(extension, PermissionExtension)
        and any(isinstance(p, HumanOnly) for p in extension.permissions)
    }
    described = {name(field) for field in fields if field.description == SAID}
    tested = {operation.split("-")[0] for operation in HUMAN_ONLY}
    assert guarded == described
    assert tested <= guarded


START_SESSION = "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }"


async def test_r2_only_members_work_in_a_project_and_nothing_is_written(api: Api, world: World) -> None:
    """Seeing a project (everyone in the workspace does) is not working in it: asserting and
    starting a session take membership. The refusal names the field; a member then succeeds."""
    outsider = await api.actor(world.human.token, "AGENT", "outsider")
    before = await database_state(api.admin_engine)
    refused = [
        await api.fail(
            outsider.token,
            ASSERT_ITEM,
            i={"projectId": world.project_id, "kind": "FACT", "statement": "s", "basis": "b"},
        ),
        await api.fail(outsider.token, START_SESSION, i={"projectId": world.project_id}),
    ]
    for error in refused:
        assert_code(error, "FORBIDDEN")
        assert "input.projectId: you are not a member of this project" in error["message"], error
    assert await database_state(api.admin_engine) == before

    await api.run(world.human.token, ADD_PROJECT_MEMBER, p=world.project_id, a=outsider.id)
    await api.run(outsider.token, START_SESSION, i={"projectId": world.project_id})
    await api.assert_item(outsider.token, projectId=world.project_id, statement="now a member")
