"""R14: wrong input answers BAD_USER_INPUT, the message names the field, and nothing is written.

"Nothing is written" is checked on the whole database, read as a superuser:
every table's row count and a hash of its rows are the same before and after.
Every mutation is one transaction, so a request whose later part fails leaves
no trace of its earlier part either.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.graphql import Api, World
from tests.support import (
    ASSERT_ITEM,
    CONFIRM_ITEM,
    RETIRE_ITEM,
    assert_code,
    database_state,
    refused_as_bad_input,
)


def item_input(world: World, **fields: Any) -> dict[str, Any]:
    return {"projectId": world.project_id, "kind": "FACT", "statement": "Deploys go through CI", **fields}


# Each case: the assertion's extra input and the field the message must name.
ASSERTION_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "empty-statement": ({"statement": ""}, "input.statement"),
    "blank-statement": ({"statement": "  \t\n "}, "input.statement"),
    "confidence-above-one": ({"confidence": 1.5}, "input.confidence"),
    "confidence-below-zero": ({"confidence": -0.1}, "input.confidence"),
    "valid-to-before-valid-from": (
        {"validFrom": "2026-03-03T10:00:00+00:00", "validTo": "2026-03-02T10:00:00+00:00"},
        "input.validTo",
    ),
    "malformed-project-id": ({"projectId": "not-a-uuid"}, "input.projectId"),
    "grants-without-actors": ({"scope": "GRANTS"}, "input.grantActorIds"),
    "grants-empty-actors": ({"scope": "GRANTS", "grantActorIds": []}, "input.grantActorIds"),
    "actors-without-grants": ({"scope": "PROJECT", "grantActorIds": ["GRANTEE"]}, "input.grantActorIds"),
}


@pytest.mark.parametrize("case", list(ASSERTION_CASES))
@pytest.mark.parametrize("who", ["agent", "human"])
async def test_r14_bad_assertion_names_the_field_and_writes_nothing(
    api: Api, world: World, case: str, who: str
) -> None:
    extra, field = ASSERTION_CASES[case]
    if "grantActorIds" in extra:
        extra = {**extra, "grantActorIds": [world.human.id for _ in extra["grantActorIds"]]}
    caller = world.agent if who == "agent" else world.human
    await refused_as_bad_input(api, caller.token, ASSERT_ITEM, field, i=item_input(world, **extra))


# Scalars that fail to parse are refused while coercing variables, before any resolver runs.
SCALAR_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "duration-in-months": ({"decayAfter": "P1M"}, "decayAfter"),
    "duration-not-iso": ({"decayAfter": "banana"}, "decayAfter"),
    "duration-zero": ({"decayAfter": "PT0S"}, "decayAfter"),
    "datetime-without-offset": ({"validFrom": "2026-03-03T10:00:00"}, "validFrom"),
    "datetime-not-a-date": ({"validTo": "tomorrow"}, "validTo"),
}


# graphql-core's variable error names the variable and the path to the bad field.
@pytest.mark.parametrize("case", list(SCALAR_CASES))
async def test_r14_unparsable_scalar_variable_names_the_field(api: Api, world: World, case: str) -> None:
    extra, field = SCALAR_CASES[case]
    await refused_as_bad_input(api, world.agent.token, ASSERT_ITEM, field, i=item_input(world, **extra))


# Inline, graphql-core's validation names only the type; the error boundary prefixes the
# enclosing argument path (input.decayAfter).
@pytest.mark.parametrize(
    ("literal", "field"),
    [('decayAfter: "P1M"', "decayAfter"), ('validFrom: "2026-03-03T10:00:00"', "validFrom")],
    ids=["duration", "datetime"],
)
async def test_r14_unparsable_scalar_literal_names_the_field(
    api: Api, world: World, literal: str, field: str
) -> None:
    query = (
        'mutation($p: ID!) { assertItem(input: {projectId: $p, kind: FACT, statement: "s", '
        + literal
        + "}) { id } }"
    )
    await refused_as_bad_input(api, world.agent.token, query, field, p=world.project_id)


ITEMS = """query($p: ID!, $first: Int, $after: String) {
  items(projectId: $p, first: $first, after: $after) { totalCount } }"""


@pytest.mark.parametrize(
    ("variables", "field"),
    [
        ({"first": 0}, "first"),
        ({"first": -1}, "first"),
        ({"first": 10000}, "first"),
        ({"after": "not-a-cursor"}, "after"),
        ({"after": "%%%"}, "after"),
    ],
    ids=["first-zero", "first-negative", "first-huge", "after-garbage", "after-not-base64"],
)
async def test_r14_bad_paging_names_the_argument(
    api: Api, world: World, variables: dict[str, Any], field: str
) -> None:
    await refused_as_bad_input(api, world.agent.token, ITEMS, field, p=world.project_id, **variables)


async def test_r14_bad_project_id_in_a_query_names_the_argument(api: Api, world: World) -> None:
    await refused_as_bad_input(api, world.agent.token, ITEMS, "projectId", p="not-a-uuid")


@pytest.mark.parametrize("name", ["", "   "], ids=["empty", "blank"])
async def test_r14_create_team_with_empty_name(api: Api, world: World, name: str) -> None:
    query = 'mutation($n: String!) { createTeam(name: $n, function: "backend") { id } }'
    await refused_as_bad_input(api, world.human.token, query, "name", n=name)


@pytest.mark.parametrize("reason", ["", "   "], ids=["empty", "blank"])
async def test_r14_retire_with_empty_reason(api: Api, world: World, reason: str) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Temp")
    await refused_as_bad_input(api, world.agent.token, RETIRE_ITEM, "reason", i=item["id"], r=reason)


async def test_r14_confirm_with_malformed_id(api: Api, world: World) -> None:
    await refused_as_bad_input(api, world.human.token, CONFIRM_ITEM, "id", i="not-a-uuid")


# --- one transaction per operation --------------------------------------------------------------

TWO_ASSERTIONS = """mutation($ok: AssertItemInput!, $bad: AssertItemInput!) {
  a: assertItem(input: $ok) { id }
  b: assertItem(input: $bad) { id } }"""


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        ({"statement": " "}, "BAD_USER_INPUT"),
        ({"confidence": 2.0}, "BAD_USER_INPUT"),
        ({"projectId": str(uuid.UUID(int=1))}, "NOT_FOUND"),
    ],
    ids=["blank-statement", "confidence", "unknown-project"],
)
async def test_r14_failed_second_mutation_undoes_the_first(
    api: Api, world: World, bad: dict[str, Any], code: str
) -> None:
    before = await database_state(api.admin_engine)
    body = await api.post(
        world.agent.token,
        TWO_ASSERTIONS,
        {"ok": item_input(world, statement="Kept?"), "bad": item_input(world, **bad)},
    )
    assert [error["extensions"]["code"] for error in body["errors"]] == [code]
    assert await database_state(api.admin_engine) == before


async def test_r14_refused_second_mutation_undoes_the_first(api: Api, world: World) -> None:
    """The second part fails on authority (HUMAN_REQUIRED), not on input: still nothing is kept."""
    before = await database_state(api.admin_engine)
    body = await api.post(
        world.agent.token,
        """mutation($p: ID!) {
             s: startSession(input: {projectId: $p, task: "t", client: {tool: "x", version: "1"}}) { id }
             a: assertItem(input: {projectId: $p, kind: FACT, statement: "one"}) { id }
             t: createTeam(name: "rogue", function: "none") { id } }""",
        {"p": world.project_id},
    )
    assert body["errors"][0]["extensions"]["reason"] == "HUMAN_REQUIRED"
    assert await database_state(api.admin_engine) == before


# --- NOT_FOUND -----------------------------------------------------------------------------------


async def test_r14_assert_into_unknown_project_is_not_found(api: Api, world: World) -> None:
    before = await database_state(api.admin_engine)
    error = await api.fail(world.agent.token, ASSERT_ITEM, i=item_input(world, projectId=str(uuid.uuid4())))
    assert_code(error, "NOT_FOUND")
    assert await database_state(api.admin_engine) == before


async def test_r14_confirm_unknown_item_is_not_found(api: Api, world: World) -> None:
    before = await database_state(api.admin_engine)
    error = await api.fail(world.human.token, CONFIRM_ITEM, i=str(uuid.uuid4()))
    assert_code(error, "NOT_FOUND")
    assert await database_state(api.admin_engine) == before
