"""assertItems (issue 24, bulk writes): a batch is exactly its items asserted one by one.

A batch goes through the one assertion path (resolvers.assertion) and one
INSERT (storage.bulk), and the database's triggers treat its rows as they
treat one: the same events and states (R6, R9), the same authority (R3, R4),
the same refusals (R1, R2, R14), the same notifications (R15). Each test
compares against single ``assertItem`` calls or against the database as a
superuser sees it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from graphql import parse
from mneia.resolvers.assertion import BATCH_LIMIT
from mneia.resolvers.request.cost import ASSERTION_WEIGHT, measure
from mneia.resolvers.request.limit import LIMITS
from mneia.resolvers.root import build_schema
from mneia.storage import bulk, token
from mneia.storage.database import transaction
from mneia.storage.item import NewItem
from mneia.vocabulary import ItemKind
from tests.graphql import Api, World
from tests.support import (
    INSUFFICIENT_PRIVILEGE,
    assert_code,
    counted,
    database_state,
    events_of,
    refused_as_bad_input,
    rows,
    sqlstate,
)
from tests.test_subscriptions import DISPUTE_RAISED, PROPOSAL_RAISED, SETTLE, Served, opened, serving, silent

ASSERT_ITEMS = """mutation($i: [AssertItemInput!]!) {
  assertItems(input: $i) { id statement status authority confirmation { by { id } } } }"""
ASSERT_ITEM = """mutation($i: AssertItemInput!) {
  assertItem(input: $i) { id statement status authority confirmation { by { id } } } }"""
START = "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }"

# What each item's rows hold, relative to its own assertion: ids and moments differ between two
# writes of the same words, nothing else may.
ITEM = """SELECT kind, statement, details, basis, confidence, status, status_reason, scope,
  grant_actor_ids::text AS grants, asserted_by::text AS asserted_by, session_id::text AS session,
  valid_from, valid_to, decay_after, load_bearing, load_bearing_suggested,
  confirmed_by::text AS confirmed_by, confirmed_at = asserted_at AS confirmed_then,
  redacted::text AS redacted,
  asserted_at = now() AS asserted_now FROM items WHERE id = :id"""
EVENTS = """SELECT e.event, e.actor_id::text AS actor, e.at = i.asserted_at AS at_assertion, e.from_status,
  e.to_status, e.load_bearing, e.confirmed, e.reason, e.data - 'supersedes' AS data,
  e.data -> 'supersedes' AS supersedes
  FROM item_events e JOIN items i ON i.workspace_id = e.workspace_id AND i.id = e.item_id
  WHERE e.item_id = :id ORDER BY e.at, e.seq"""
STATES = """SELECT s.since = i.asserted_at AS since_assertion, s.until, s.status, s.status_reason,
  s.load_bearing, s.load_bearing_suggested, s.confirmed_by::text AS confirmed_by,
  s.confirmed_at = i.asserted_at AS confirmed_then, s.last_verified_at
  FROM item_states s JOIN items i ON i.workspace_id = s.workspace_id AND i.id = s.item_id
  WHERE s.item_id = :id ORDER BY s.since"""
PROJECT_LOG = "query($p: ID!) { events(projectId: $p, first: 500) { nodes { kind item { id } } } }"
PROPOSALS = "SELECT kind, status, proposed_by::text AS by FROM proposals WHERE target_id = :id"
DISPUTES = "SELECT status, reason, contested_id::text AS contested FROM disputes WHERE item_id = :id"


async def written(api: Api, item_id: str) -> dict[str, Any]:
    """Everything the database holds of an item, as a superuser reads it, without ids and times."""
    found = {}
    for name, sql in (("item", ITEM), ("events", EVENTS), ("states", STATES)):
        found[name] = await rows(api.admin_engine, sql, id=item_id)
    found["proposals"] = await rows(api.admin_engine, PROPOSALS, id=item_id)
    found["disputes"] = await rows(api.admin_engine, DISPUTES, id=item_id)
    # The log as read, the events its row implies too, relative to its assertion.
    found["log"] = [{**event, "at": None} for event in await events_of(api.admin_engine, item_id)]
    found["item"][0].pop("asserted_now")  # read later than the write: only equal within it
    return found


async def one_by_one(api: Api, token_: str, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [(await api.run(token_, ASSERT_ITEM, i=given_))["assertItem"] for given_ in inputs]


async def batch(api: Api, token_: str, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    answered: list[dict[str, Any]] = (await api.run(token_, ASSERT_ITEMS, i=inputs))["assertItems"]
    return answered


def without_ids(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key != "id"}


async def test_r6_r9_a_batch_writes_the_events_and_states_of_as_many_single_assertions(
    api: Api, world: World
) -> None:
    """Each item of a batch: the same row, ASSERTED event, later events and states as when asserted
    alone, whatever it carries (a session, a suggestion, a contradiction, grants, a validity)."""
    session = (
        await api.run(
            world.agent.token,
            START,
            i={"projectId": world.project_id, "client": {"tool": "claude-code", "version": "1.0.98"}},
        )
    )["startSession"]["id"]
    contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="Port 5432")
    inputs = [
        {"projectId": world.project_id, "kind": "FACT", "statement": "Plain", "sessionId": session},
        {
            "projectId": world.project_id,
            "kind": "CONSTRAINT",
            "statement": "PCI scope",
            "basis": "the audit",
            "confidence": 0.8,
            "suggestLoadBearing": True,
            "decayAfter": "P30D",
        },
        {
            "projectId": world.project_id,
            "kind": "FACT",
            "statement": "Port 6432",
            "contradicts": [contested["id"]],
        },
        {
            "projectId": world.project_id,
            "kind": "DECISION",
            "statement": "For the two of us",
            "scope": "GRANTS",
            "grantActorIds": [world.human.id],
            "validFrom": "2026-01-01T00:00:00Z",
            "validTo": "2027-01-01T00:00:00Z",
        },
        {"projectId": world.project_id, "kind": "TASK", "statement": "Mine alone", "scope": "PRIVATE"},
    ]
    alone = await one_by_one(api, world.agent.token, inputs)
    together = await batch(api, world.agent.token, inputs)

    assert [without_ids(answer) for answer in together] == [without_ids(answer) for answer in alone]
    for single, many in zip(alone, together, strict=True):
        assert await written(api, many["id"]) == await written(api, single["id"])
    # One assertion each in the project's log, in the order given (newest first there).
    log = (await api.run(world.agent.token, PROJECT_LOG, p=world.project_id))["events"]["nodes"]
    batched = {answer["id"] for answer in together}
    order = [
        node["item"]["id"]
        for node in reversed(log)
        if node["item"]["id"] in batched and node["kind"] == "ASSERTED"
    ]
    assert order == [answer["id"] for answer in together]
    assert together[2]["status"] == "DISPUTED"


async def test_r9_a_batch_is_asserted_at_the_servers_time_in_one_transaction(api: Api, world: World) -> None:
    """Every row of a batch carries the same now(): its transaction's, never a caller's."""
    inputs = [{"projectId": world.project_id, "kind": "FACT", "statement": f"Fact {n}"} for n in range(5)]
    together = await batch(api, world.agent.token, inputs)
    moments = await rows(
        api.admin_engine,
        "SELECT DISTINCT asserted_at FROM items WHERE id = ANY(CAST(:ids AS uuid[]))",
        ids=[answer["id"] for answer in together],
    )
    assert len(moments) == 1


async def test_r4_a_humans_batch_is_human_confirmed_and_an_agents_is_not(api: Api, world: World) -> None:
    inputs = [{"projectId": world.project_id, "kind": "FACT", "statement": f"Rule {n}"} for n in range(3)]
    human = await batch(api, world.human.token, inputs)
    agent = await batch(api, world.agent.token, inputs)
    assert [(a["authority"], a["confirmation"]) for a in human] == [
        ("HUMAN_CONFIRMED", {"by": {"id": world.human.id}})
    ] * 3
    assert [(a["authority"], a["confirmation"]) for a in agent] == [("AGENT_ASSERTED", None)] * 3


async def test_r3_the_database_refuses_an_agents_batch_that_claims_a_confirmation(
    engine: AsyncEngine, api: Api, world: World
) -> None:
    """The bulk statement meets the same guard as one INSERT: an agent's row confirmed by itself is
    refused (HUMAN_REQUIRED) and the whole statement writes nothing. The control: unconfirmed, it goes."""
    news = [
        NewItem(project_id=uuid.UUID(world.project_id), kind=ItemKind.FACT, statement=f"F{n}")
        for n in range(3)
    ]
    before = await database_state(api.admin_engine)
    with pytest.raises(DBAPIError) as caught:
        async with transaction(engine) as tx:
            await token.authenticate(tx, world.agent.token)
            await bulk.create_many(tx, news, confirmed=[False, True, False])
    assert sqlstate(caught.value) == INSUFFICIENT_PRIVILEGE
    assert "HUMAN_REQUIRED" in str(caught.value.orig)
    assert await database_state(api.admin_engine) == before
    async with transaction(engine) as tx:
        await token.authenticate(tx, world.agent.token)
        made = await bulk.create_many(tx, news, confirmed=[False] * 3)
        tx.fail()
    assert [record.statement for record in made] == ["F0", "F1", "F2"]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"statement": "   "}, "input[3].statement"),
        ({"confidence": 1.5}, "input[3].confidence"),
        ({"scope": "GRANTS"}, "input[3].grantActorIds"),
        ({"grantActorIds": [str(uuid.uuid4())], "scope": "GRANTS"}, "input[3].grantActorIds"),
        ({"validFrom": "2026-02-01T00:00:00Z", "validTo": "2026-01-01T00:00:00Z"}, "input[3].validTo"),
        ({"projectId": "not-an-id"}, "input[3].projectId"),
        ({"redacted": ["no-such-kind"]}, "input[3].redacted"),
    ],
)
async def test_r14_a_bad_item_at_k_names_its_field_and_the_batch_writes_nothing(
    api: Api, world: World, bad: dict[str, Any], field: str
) -> None:
    inputs = [{"projectId": world.project_id, "kind": "FACT", "statement": f"Good {n}"} for n in range(5)]
    inputs[3] = {**inputs[3], **bad}
    await refused_as_bad_input(api, world.agent.token, ASSERT_ITEMS, field, i=inputs)


async def test_r14_r8_a_batch_contradicting_an_item_no_longer_active_writes_nothing(
    api: Api, world: World
) -> None:
    retired = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Old")
    await api.run(
        world.agent.token, 'mutation($i: ID!) { retireItem(id: $i, reason: "gone") { id } }', i=retired["id"]
    )
    inputs = [
        {"projectId": world.project_id, "kind": "FACT", "statement": "New"},
        {
            "projectId": world.project_id,
            "kind": "FACT",
            "statement": "Not old",
            "contradicts": [retired["id"]],
        },
    ]
    before = await database_state(api.admin_engine)
    error = await api.fail(world.agent.token, ASSERT_ITEMS, i=inputs)
    assert_code(error, "CONFLICT")
    assert "input[1].contradicts" in error["message"], error
    assert await database_state(api.admin_engine) == before


async def test_r14_a_session_of_another_project_in_a_batch_is_refused(api: Api, world: World) -> None:
    other = await api.project(world.human.token, "billing")
    await api.add_member(world.human.token, other, world.agent.id)
    session = (await api.run(world.agent.token, START, i={"projectId": other}))["startSession"]["id"]
    inputs = [
        {"projectId": other, "kind": "FACT", "statement": "There", "sessionId": session},
        {"projectId": world.project_id, "kind": "FACT", "statement": "Here", "sessionId": session},
    ]
    await refused_as_bad_input(api, world.agent.token, ASSERT_ITEMS, "input[1].sessionId", i=inputs)


async def test_r14_a_batch_over_the_limit_is_refused(api: Api, world: World) -> None:
    inputs = [{"projectId": world.project_id, "kind": "FACT", "statement": "x"}] * (BATCH_LIMIT + 1)
    error = await refused_as_bad_input(api, world.agent.token, ASSERT_ITEMS, "input", i=inputs)
    assert f"at most {BATCH_LIMIT}" in error["message"]


async def test_r14_an_empty_batch_writes_nothing_and_answers_nothing(api: Api, world: World) -> None:
    before = await database_state(api.admin_engine)
    assert await batch(api, world.agent.token, []) == []
    assert await database_state(api.admin_engine) == before


async def test_r1_r2_a_batch_into_a_project_the_caller_is_not_a_member_of_is_refused(
    engine: AsyncEngine, api: Api, world: World
) -> None:
    """Through the API (FORBIDDEN naming the item) and as raw SQL by the server's role: the policy
    item_assert refuses the whole statement, the member's rows with it."""
    secret = await api.project(world.human.token, "secret")  # the agent is no member
    inputs = [
        {"projectId": world.project_id, "kind": "FACT", "statement": "Mine to say"},
        {"projectId": secret, "kind": "FACT", "statement": "Not mine to say"},
    ]
    before = await database_state(api.admin_engine)
    error = await api.fail(world.agent.token, ASSERT_ITEMS, i=inputs)
    assert_code(error, "FORBIDDEN")
    assert "input[1].projectId" in error["message"], error
    assert await database_state(api.admin_engine) == before

    news = [
        NewItem(project_id=uuid.UUID(given_["projectId"]), kind=ItemKind.FACT, statement="x")
        for given_ in inputs
    ]
    with pytest.raises(DBAPIError) as caught:
        async with transaction(engine) as tx:
            await token.authenticate(tx, world.agent.token)
            await bulk.create_many(tx, news, confirmed=[False, False])
    assert sqlstate(caught.value) == INSUFFICIENT_PRIVILEGE
    assert await database_state(api.admin_engine) == before


async def test_r1_a_batch_naming_another_workspaces_project_finds_nothing(api: Api, world: World) -> None:
    _, stranger = await api.bootstrap("mallory")
    theirs = await api.project(stranger.token, "theirs")
    inputs = [{"projectId": theirs, "kind": "FACT", "statement": "planted"}]
    before = await database_state(api.admin_engine)
    error = await api.fail(world.agent.token, ASSERT_ITEMS, i=inputs)
    assert_code(error, "NOT_FOUND")
    assert await database_state(api.admin_engine) == before


async def test_issue_24_a_batch_costs_the_same_statements_for_2_items_as_for_50(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    """One statement per kind of lookup and one INSERT, never one per item (no N+1)."""
    other = await api.actor(world.human.token, "AGENT", "codex")
    session = (await api.run(world.agent.token, START, i={"projectId": world.project_id}))["startSession"][
        "id"
    ]

    def inputs(size: int) -> list[dict[str, Any]]:
        return [
            {
                "projectId": world.project_id,
                "kind": "FACT",
                "statement": f"Fact {n}",
                "sessionId": session,
                "scope": "GRANTS",
                "grantActorIds": [other.id],
            }
            for n in range(size)
        ]

    with counted(engine) as small:
        await batch(api, world.agent.token, inputs(2))
    with counted(engine) as large:
        await batch(api, world.agent.token, inputs(50))
    assert len(large) == len(small), (small, large)


def test_issue_24_a_batch_weighs_its_items_and_a_full_one_fits_the_cost_limit() -> None:
    """The cost estimate counts the list assertItems returns once per item it was given, and the
    items' writes, so aliases cannot multiply a batch past the limit unseen."""
    schema = build_schema()._schema
    document = parse("mutation($i: [AssertItemInput!]!) { assertItems(input: $i) { id } }")
    item = {"projectId": str(uuid.uuid4()), "kind": "FACT", "statement": "x"}

    def cost(count: int) -> int:
        return measure(schema, document, None, {"i": [item] * count}, LIMITS.list_size).cost

    assert cost(BATCH_LIMIT) - cost(0) == BATCH_LIMIT * (ASSERTION_WEIGHT + 1)
    assert cost(BATCH_LIMIT) <= LIMITS.max_cost
    aliased = parse(
        "mutation($i: [AssertItemInput!]!) { a: assertItems(input: $i) { id }"
        " b: assertItems(input: $i) { id } c: assertItems(input: $i) { id } }"
    )
    assert (
        measure(schema, aliased, None, {"i": [item] * BATCH_LIMIT}, LIMITS.list_size).cost > LIMITS.max_cost
    )


# --- R15: one notification per item ----------------------------------------------------------------


@pytest.fixture(scope="module")
async def live(admin_url: str) -> AsyncIterator[Served]:
    async with serving(admin_url) as served:
        yield served


async def test_r15_a_batch_announces_one_dispute_and_one_proposal_per_item(
    api: Api, world: World, live: Served
) -> None:
    await live.subscribed(0)
    contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="Port 5432")
    async with opened(live.url, world.human.token) as sock:
        disputes = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
        proposals = await sock.subscribe(PROPOSAL_RAISED, p=world.project_id)
        await live.subscribed(2)
        inputs = [
            {
                "projectId": world.project_id,
                "kind": "FACT",
                "statement": f"Port {port}",
                "contradicts": [contested["id"]],
            }
            for port in (6432, 7432)
        ] + [
            {
                "projectId": world.project_id,
                "kind": "CONSTRAINT",
                "statement": f"Rule {n}",
                "suggestLoadBearing": True,
            }
            for n in range(3)
        ]
        together = await batch(api, world.agent.token, inputs)
        raised = {(await sock.data(disputes))["disputeRaised"]["item"]["id"] for _ in range(2)}
        suggested = {(await sock.data(proposals))["proposalRaised"]["target"]["id"] for _ in range(3)}
        assert raised == {answer["id"] for answer in together[:2]}
        assert suggested == {answer["id"] for answer in together[2:]}
        await silent([sock], SETTLE)


# --- a batch is a sequence of single assertions, for any valid inputs -------------------------------

KINDS = ["FACT", "DECISION", "TASK", "CONSTRAINT", "PREFERENCE", "QUESTION"]
MOMENTS = st.datetimes(datetime(2020, 1, 1), datetime(2030, 1, 1), timezones=st.just(UTC))
one_input = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(KINDS),
        "statement": st.text("abc xyz", min_size=1, max_size=20).filter(str.strip),
    },
    optional={
        "details": st.text("de f", max_size=30),
        "basis": st.text("gh i", max_size=30),
        "confidence": st.floats(0, 1),
        "scope": st.sampled_from(["PROJECT", "WORKSPACE", "PRIVATE"]),
        "decayAfter": st.sampled_from(["P1D", "PT12H", "P90D"]),
        "validFrom": MOMENTS.map(lambda moment: moment.isoformat()),
        "suggestLoadBearing": st.booleans(),
    },
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inputs=st.lists(one_input, min_size=1, max_size=6), human=st.booleans())
async def test_r4_r6_r9_a_batch_is_the_sequence_of_its_single_assertions(
    api: Api, world: World, inputs: list[dict[str, Any]], human: bool
) -> None:
    who = world.human if human else world.agent
    placed = [{**given_, "projectId": world.project_id} for given_ in inputs]
    alone = await one_by_one(api, who.token, placed)
    together = await batch(api, who.token, placed)
    assert [without_ids(answer) for answer in together] == [without_ids(answer) for answer in alone]
    for single, many in zip(alone, together, strict=True):
        assert await written(api, many["id"]) == await written(api, single["id"])


# --- the batch path's users and parts ---------------------------------------------------------------

IMPORT = (
    """mutation($i: ImportInput!) { importItems(input: $i) { written writes { key action item { id } } } }"""
)


async def test_r6_an_imports_new_items_are_written_by_one_insert_in_their_order(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    """importItems writes each run of new items as one batch; an item that replaces another is
    written where it stands, so what the source says stays in its order (issue 22's semantics)."""
    items = [{"key": f"adr:{n}", "kind": "DECISION", "statement": f"Decision {n}"} for n in range(20)]
    items[10] = {**items[10], "supersedesKey": "adr:3", "supersessionReason": "revisited"}
    given_ = {"projectId": world.project_id, "source": "docs/adr", "origin": "DOCUMENT", "items": items}
    with counted(engine) as statements:
        done = (await api.run(world.human.token, IMPORT, i=given_))["importItems"]
    assert done["written"] == 20
    assert [write["action"] for write in done["writes"]] == ["ASSERTED"] * 10 + ["SUPERSEDED"] + [
        "ASSERTED"
    ] * 9
    inserts = [sql for sql in statements if sql.lstrip().upper().startswith("INSERT INTO ITEMS")]
    assert len(inserts) == 3, inserts  # the first ten, the replacement, the last nine
    ids = [write["item"]["id"] for write in done["writes"]]
    assert ids == sorted(ids)  # minted in the source's order


def test_issue_24_a_flat_input_is_what_strawberrys_own_conversion_builds() -> None:
    """AssertItemInput built by schema.conversion.flat equals the one Strawberry builds field by field."""
    from strawberry.types.arguments import convert_argument

    from mneia.schema.item import AssertItemInput
    from mneia.vocabulary import Scope

    schema = build_schema()
    config, scalars = schema.config, schema.schema_converter.scalar_registry
    value = {
        "projectId": "p",
        "kind": ItemKind.FACT,
        "statement": "s",
        "grantActorIds": ["a", "b"],
        "scope": Scope.GRANTS,
        "contradicts": None,
        "confidence": 0.5,
    }
    definition = AssertItemInput.__strawberry_definition__  # type: ignore[attr-defined]
    flat_built = convert_argument(value, AssertItemInput, scalars, config)
    hook, definition.from_input = definition.from_input, None
    try:
        strawberrys = convert_argument(value, AssertItemInput, scalars, config)
    finally:
        definition.from_input = hook
    assert flat_built == strawberrys
    assert flat_built.grant_actor_ids is not value["grantActorIds"]  # a copy, as Strawberry makes


def test_issue_24_a_batch_of_ids_keeps_its_order_and_the_clocks_time() -> None:
    """A thousand ids minted at once are each greater than the last and carry the millisecond they
    were minted in, not one millisecond more each (storage.ids)."""
    from mneia.storage.ids import new_id, new_ids

    before = datetime.now(UTC)
    minted = new_ids(1000) + [new_id()] + new_ids(1000)
    after = datetime.now(UTC)
    assert all(earlier < later for earlier, later in zip(minted, minted[1:], strict=False))
    assert all(one.version == 7 for one in minted)
    moments = [datetime.fromtimestamp((one.int >> 80) / 1000, UTC) for one in minted]
    slack = timedelta(milliseconds=2)
    assert before - slack <= min(moments) and max(moments) <= after + slack
