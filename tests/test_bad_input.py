"""R14: wrong input answers BAD_USER_INPUT, the message names the field, and nothing is written.

"Nothing is written" is checked on the whole database, read as a superuser:
every table's row count and a hash of its rows are the same before and after.
Every mutation is one transaction, so a request whose later part fails leaves
no trace of its earlier part either.
"""

from __future__ import annotations

import dataclasses
import json
import random
import string
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from graphql import GraphQLObjectType, get_named_type, is_leaf_type, is_required_argument
from mneia.resolvers.root import build_schema
from mneia.storage.ids import new_id
from mneia.storage.item import ItemRecord
from tests.graphql import Api, World
from tests.support import (
    ASSERT_ITEM,
    CHECK_VIOLATION,
    CONFIRM_ITEM,
    RETIRE_ITEM,
    as_owner,
    assert_code,
    constraint_of,
    database_state,
    refused_as_bad_input,
    sqlstate,
)

SCHEMA = build_schema()._schema


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
    # F4's value: stored before, it broke every listing with stale or rendered for every reader.
    "f4-duration-beyond-100-years": ({"decayAfter": "P3000000D"}, "decayAfter"),
    "duration-beyond-100-years-in-hours": ({"decayAfter": "PT876601H"}, "decayAfter"),
    "duration-past-timedelta": ({"decayAfter": "P9999999999D"}, "decayAfter"),
    "f9-datetime-before-year-1-in-utc": ({"validFrom": "0001-01-01T00:00:00+01:00"}, "validFrom"),
    "f9-datetime-after-year-9999-in-utc": ({"validTo": "9999-12-31T23:00:00-05:00"}, "validTo"),
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
    [
        ('decayAfter: "P1M"', "input.decayAfter"),
        ('validFrom: "2026-03-03T10:00:00"', "input.validFrom"),
        ('decayAfter: "P3000000D"', "input.decayAfter"),
        ('validFrom: "0001-01-01T00:00:00+01:00"', "input.validFrom"),
        ('details: "a\\u0000b"', "input.details"),
    ],
    ids=["duration", "datetime", "f4-huge-duration", "f9-overflowing-datetime", "f9-nul"],
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


# Text PostgreSQL cannot hold, refused for the whole request before any resolver
# (resolvers.request.execution).
TEXT_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "f9-nul-in-statement": ({"statement": "Deploys\x00 go through CI"}, "input.statement"),
    "f9-lone-surrogate-in-details": ({"details": "emoji half \ud83d"}, "input.details"),
    "f9-lone-low-surrogate-in-basis": ({"basis": "\udc00"}, "input.basis"),
    "f9-nul-in-a-listed-id": ({"contradicts": ["ok", "x\x00"]}, "input.contradicts[1]"),
    "f9-overlong-statement": ({"statement": "x" * 20_001}, "input.statement"),
}


async def refused_as_json(api: Api, token: str, query: str, field: str, **variables: Any) -> dict[str, Any]:
    """``refused_as_bad_input`` for variables httpx will not encode: lone surrogates travel as \\u escapes."""
    before = await database_state(api.admin_engine)
    response = await api.http.post(
        "/graphql",
        content=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    (error,) = response.json()["errors"]
    assert_code(error, "BAD_USER_INPUT")
    assert field in error["message"], error
    assert await database_state(api.admin_engine) == before
    return error


@pytest.mark.parametrize("case", list(TEXT_CASES))
async def test_f9_text_postgresql_cannot_hold_names_the_field(api: Api, world: World, case: str) -> None:
    extra, field = TEXT_CASES[case]
    error = await refused_as_json(api, world.agent.token, ASSERT_ITEM, field, i=item_input(world, **extra))
    assert error["extensions"]["field"] == field
    assert "path" not in error, "refused before any resolver ran"


async def test_f9_nul_deep_in_a_nested_input_names_the_path(api: Api, world: World) -> None:
    query = "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }"
    session = {"projectId": world.project_id, "task": "t", "client": {"tool": "claude\x00", "version": "1"}}
    await refused_as_bad_input(api, world.agent.token, query, "input.client.tool", i=session)


async def test_f9_nul_in_a_variable_inside_a_literal_object_names_the_path(api: Api, world: World) -> None:
    query = """mutation($p: ID!, $s: String!) {
      assertItem(input: {projectId: $p, kind: FACT, statement: $s}) { id } }"""
    await refused_as_bad_input(
        api, world.agent.token, query, "input.statement", p=world.project_id, s="a\x00"
    )


async def test_f9_introspection_arguments_reach_no_database_and_are_left_to_graphql(
    api: Api, world: World
) -> None:
    """``__type(name:)`` stores nothing: a long or NUL-bearing name is an ordinary miss, while the same
    text in one of the schema's own arguments, in the same document, is still refused."""
    for name in ("x" * 30_000, "a\x00b"):
        body = await api.post(
            world.agent.token, "query($n: String!) { __type(name: $n) { name } }", {"n": name}
        )
        assert body == {"data": {"__type": None}}, body
    query = 'query($n: String!) { __type(name: $n) { name } item(id: "a\\u0000") { id } }'
    error = await api.fail(world.agent.token, query, n="a\x00b")
    assert (error["extensions"]["code"], error["extensions"]["field"]) == ("BAD_USER_INPUT", "id")


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


# --- F4: nothing the database holds breaks a read ----------------------------------------------


def every_field(type_name: str, depth: int = 2) -> str:
    """A selection of every field of a type that needs no argument, objects ``depth`` levels down.

    Read from the schema, so a field added later is read here too.
    """
    named = SCHEMA.type_map[type_name]
    assert isinstance(named, GraphQLObjectType)
    parts = []
    for name, field in named.fields.items():
        if any(is_required_argument(arg) for arg in field.args.values()):
            continue
        inner = get_named_type(field.type)
        if is_leaf_type(inner):
            parts.append(name)
        elif isinstance(inner, GraphQLObjectType) and depth > 0:
            parts.append(f"{name} {{ {every_field(inner.name, depth - 1)} }}")
        else:
            parts.append(f"{name} {{ __typename }}")
    return " ".join(parts)


# Within the document limits (resolvers.request.limit): every field of Item once, the rest what can fail.
MOMENTS = "id stale rendered decayAfter assertedAt validFrom validTo lastVerifiedAt"
READ_EVERYTHING = f"""query($p: ID!, $i: ID!, $t: DateTime!) {{
  items(projectId: $p, first: 10) {{ totalCount nodes {{ {every_field("Item", depth=1)} }} }}
  asOf: items(projectId: $p, asOf: $t, first: 10) {{ nodes {{ {MOMENTS} }} }}
  validAt: items(projectId: $p, validAt: $t, first: 10) {{ nodes {{ {MOMENTS} }} }}
  item(id: $i) {{ {MOMENTS} confirmation {{ at }} provenance {{ assertedAt }} }}
  itemThen: item(id: $i, asOf: $t) {{ {MOMENTS} }} }}"""


async def admin_write(api: Api, sql: str, **params: Any) -> None:
    """Write as an administrator at a psql prompt would: past the API, the policies and the guards."""
    async with api.admin_engine.connect() as connection, connection.begin():
        await connection.execute(text("SET LOCAL session_replication_role = replica"))
        await connection.execute(text(sql), params)


async def read_everything(api: Api, world: World, item_id: str) -> dict[str, Any]:
    """Every reader reads every field of the project's items without an error; the human's answer."""
    when = datetime.now(UTC).isoformat()
    answers = []
    for who in (world.human, world.agent):
        body = await api.post(who.token, READ_EVERYTHING, {"p": world.project_id, "i": item_id, "t": when})
        assert not body.get("errors"), body["errors"]
        answers.append(body["data"])
    return answers[0]


@pytest.mark.parametrize(
    "decay",
    ["3000000 days", "999999999 days", "36526 days", "1200 months"],
    ids=["f4-value", "timedelta-max", "past-100-years", "months"],
)
async def test_f4_a_decay_no_calendar_reaches_never_breaks_a_listing(
    api: Api, world: World, decay: str
) -> None:
    """F4: an item whose decayAfter lies past year 9999, written by the owner before the edge refused
    it, is read with stale and rendered by every reader: never stale, and the listing stays whole."""
    fresh = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Fresh neighbour")
    item_id = str(new_id())
    async with as_owner(api.admin_engine, world.agent) as connection:
        await connection.execute(
            text(
                "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by, decay_after)"
                " VALUES (:ws, :id, :project, 'FACT', 'SDK pinned', :agent,"
                " CAST(CAST(:decay AS text) AS interval))"
            ),
            {
                "ws": world.workspace_id,
                "id": item_id,
                "project": world.project_id,
                "agent": world.agent.id,
                "decay": decay,
            },
        )
    seen = await read_everything(api, world, item_id)
    assert {node["id"] for node in seen["items"]["nodes"]} == {item_id, fresh["id"]}
    assert seen["item"]["stale"] is False
    assert "SDK pinned" in seen["item"]["rendered"]
    # And it can still be retired (F4: "items cannot be deleted").
    retired = await api.run(world.agent.token, RETIRE_ITEM, i=item_id, r="obsolete")
    assert retired["retireItem"]["status"] == "RETIRED"


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("last_verified_at", "infinity"),
        ("last_verified_at", "-infinity"),
        ("last_verified_at", "0001-01-01 00:00:00+00"),
        ("asserted_at", "9999-12-31 23:59:59.999999+00"),
        ("valid_to", "9999-12-31 23:59:59.999999+00"),
    ],
)
async def test_f4_timestamps_at_the_ends_of_time_never_break_a_read(
    api: Api, world: World, column: str, value: str
) -> None:
    """Timestamps an administrator may write (PostgreSQL's ±infinity, the ends of Python's range) on an
    item that decays: every field, stale and rendered read cleanly, now and as of now."""
    made = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Edge", decayAfter="P1D"
    )
    assert column in {"valid_from", "valid_to", "last_verified_at", "asserted_at"}  # never user text
    await admin_write(
        api,
        f"UPDATE items SET {column} = CAST(CAST(:value AS text) AS timestamptz) WHERE id = :id",
        value=value,
        id=made["id"],
    )
    seen = await read_everything(api, world, made["id"])
    assert seen["item"]["id"] == made["id"]
    assert isinstance(seen["item"]["stale"], bool)


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("valid_from", "-infinity"),
        ("valid_to", "infinity"),
        ("valid_from", "10000-01-01 00:00:00+00"),
        ("decay_after", "1000000000 days"),
    ],
)
async def test_f4_the_database_refuses_what_a_caller_chooses_and_could_not_read_back(
    api: Api, world: World, column: str, value: str
) -> None:
    """Even an administrator's write cannot store a validity or decay the driver fails to decode."""
    made = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Edge")
    kind = "interval" if column == "decay_after" else "timestamptz"
    with pytest.raises(DBAPIError) as refused:
        await admin_write(
            api,
            f"UPDATE items SET {column} = CAST(CAST(:value AS text) AS {kind}) WHERE id = :id",
            value=value,
            id=made["id"],
        )
    assert sqlstate(refused.value) == CHECK_VIOLATION
    assert constraint_of(refused.value) in {"items_validity_readable", "items_decay_readable"}


def record_decaying(since: datetime, decay: timedelta) -> ItemRecord:
    base = {field.name: None for field in dataclasses.fields(ItemRecord)}
    return ItemRecord(**{**base, "asserted_at": since, "decay_after": decay, "grant_actor_ids": []})


@given(
    since=st.datetimes(timezones=st.just(UTC)),
    decay=st.timedeltas(min_value=timedelta(microseconds=1)),
    now=st.datetimes(timezones=st.just(UTC)),
)
def test_f4_staleness_is_defined_for_every_datetime_and_decay(
    since: datetime, decay: timedelta, now: datetime
) -> None:
    """Any moment, any decay timedelta can hold: stale_at answers, and answers what the calendar says."""
    stale = record_decaying(since, decay).stale_at(now)
    microseconds = (now - since) // timedelta(microseconds=1)
    assert stale == (microseconds > decay // timedelta(microseconds=1))


async def test_r14_an_unused_variable_is_the_documents_fault_not_the_inputs(api: Api, world: World) -> None:
    """Validation errors about variables are GRAPHQL_VALIDATION_FAILED; only coercion is BAD_USER_INPUT."""
    unused = await api.fail(world.agent.token, "query($p: ID!) { me { id } }", p=world.project_id)
    assert_code(unused, "GRAPHQL_VALIDATION_FAILED")
    missing = await api.fail(world.agent.token, "query($p: ID!) { project(id: $p) { id } }")
    assert_code(missing, "BAD_USER_INPUT")


async def test_the_longest_details_the_api_accepts_are_stored_and_found(api: Api, world: World) -> None:
    """20,000 characters of distinct words: a search vector larger than any B-tree entry may be
    (an index that included it made this assertion an internal error)."""
    rng = random.Random(7)
    words = [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(6, 12))) for _ in range(3000)
    ]
    details = " ".join(words)[:19_990].rsplit(" ", 1)[0]
    item = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Long", details=details
    )
    found = await api.run(
        world.agent.token,
        "query($p: ID!, $t: String) { items(projectId: $p, filter: {text: $t}) { nodes { id } } }",
        p=world.project_id,
        t=words[1500],
    )
    assert [node["id"] for node in found["items"]["nodes"]] == [item["id"]]
