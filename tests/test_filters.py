"""The items filter by authority (R4), staleness (R10) and load-bearing suggestion (R5), the
orders the inbox reads, and ``events(projectId, kinds)``: through the API, under R1/R2.

A filter narrows what the reader sees and never widens it: every test below
compares the filtered page with the unfiltered one, whose visibility the
scope tests already prove, and checks another actor's PRIVATE item and
another workspace's project stay out of sight.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Boolean, Text, Uuid, literal, select
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage.item import authority_condition, authority_of
from mneia.vocabulary import Authority, ItemStatus
from tests.graphql import Api, World
from tests.support import (
    CONFIRM_ITEM,
    RETIRE_ITEM,
    SUGGEST_LOAD_BEARING,
    VERIFY_ITEM,
    assert_code,
    refused_as_bad_input,
)

ITEMS = """query($p: ID!, $f: ItemFilter, $o: ItemOrder, $first: Int, $after: String, $asOf: DateTime) {
  items(projectId: $p, filter: $f, orderBy: $o, first: $first, after: $after, asOf: $asOf) {
    totalCount nodes { id authority stale loadBearingSuggested confidence }
    pageInfo { hasNextPage endCursor }
  }
}"""

EVENTS = """query($p: ID!, $k: [ItemEventKind!], $first: Int, $after: String) {
  events(projectId: $p, kinds: $k, first: $first, after: $after) {
    totalCount nodes { id kind at actor { id } item { id authority } }
    pageInfo { hasNextPage endCursor }
  }
}"""


async def page(api: Api, token: str, project: str, **variables: Any) -> dict[str, Any]:
    found: dict[str, Any] = (await api.run(token, ITEMS, p=project, first=500, **variables))["items"]
    return found


async def ids(api: Api, token: str, project: str, **variables: Any) -> list[str]:
    return [node["id"] for node in (await page(api, token, project, **variables))["nodes"]]


# --- R4: one rule for authority, in Python and in SQL --------------------------------------------


async def test_r4_sql_and_python_agree_on_authority_for_every_status_and_confirmation(
    admin_engine: AsyncEngine,
) -> None:
    """Every status, confirmed or not, against every set of authorities: the database's answer to
    ``authority_condition`` is exactly whether ``authority_of`` is in the set."""
    sets = [[a] for a in Authority] + [list(Authority), [Authority.DISPUTED, Authority.HUMAN_CONFIRMED]]
    async with admin_engine.connect() as connection:
        for status in ItemStatus:
            for confirmed in (True, False):
                by = literal(uuid.uuid4() if confirmed else None, Uuid)
                # As the items hold it (who confirmed) and as the counters do (whether confirmed).
                for held in (by.is_not(None), literal(confirmed, Boolean)):
                    for wanted in sets:
                        condition = authority_condition(wanted, literal(str(status), Text), held)
                        answer = (await connection.execute(select(condition))).scalar_one()
                        expected = authority_of(status, confirmed) in wanted
                        assert answer is expected, (status, confirmed, wanted)


# --- R4 + R2 as a property -----------------------------------------------------------------------

STATES = ("agent", "human", "agent-confirmed", "agent-disputing", "agent-private", "human-private")


async def make(api: Api, world: World, state: str, n: int, anchor: str) -> str:
    token = world.human.token if state.startswith("human") else world.agent.token
    fields: dict[str, Any] = {"projectId": world.project_id, "statement": f"{state} {n}"}
    if state.endswith("private"):
        fields["scope"] = "PRIVATE"
    if state == "agent-disputing":
        fields["contradicts"] = [anchor]
    made = await api.assert_item(token, **fields)
    if state == "agent-confirmed":
        await api.run(world.human.token, CONFIRM_ITEM, i=made["id"])
    return str(made["id"])


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    states=st.lists(st.sampled_from(STATES), min_size=1, max_size=7),
    reader=st.sampled_from(["human", "agent"]),
)
async def test_r4_r2_authority_filter_returns_exactly_the_visible_items_of_that_authority(
    api: Api, states: list[str], reader: str
) -> None:
    """items(filter: {authorities: [X]}) is exactly the items, among those the reader sees, whose
    ``authority`` field is X; a PRIVATE item of the other actor never appears (R2)."""
    world = await api.world()
    anchor = await make(api, world, "human", -1, "")
    made = {await make(api, world, state, n, anchor): state for n, state in enumerate(states)}
    token = world.human.token if reader == "human" else world.agent.token
    everything = (await page(api, token, world.project_id))["nodes"]
    hidden = {
        item for item, state in made.items() if state.endswith("private") and not state.startswith(reader)
    }
    assert hidden.isdisjoint(node["id"] for node in everything)
    for authority in Authority:
        filtered = await page(api, token, world.project_id, f={"authorities": [authority.name]})
        expected = [node["id"] for node in everything if node["authority"] == authority.name]
        assert [node["id"] for node in filtered["nodes"]] == expected
        assert filtered["totalCount"] == len(expected)
    both = await ids(api, token, world.project_id, f={"authorities": ["DISPUTED", "AGENT_ASSERTED"]})
    assert both == [node["id"] for node in everything if node["authority"] != "HUMAN_CONFIRMED"]


# --- R10: staleness, judged at the read's moment ---------------------------------------------------


async def test_r10_stale_filter_matches_the_stale_field_now_and_as_of(api: Api, world: World) -> None:
    agent, project = world.agent.token, world.project_id
    fresh = await api.assert_item(agent, projectId=project, statement="never decays")
    decaying = await api.assert_item(agent, projectId=project, statement="decays", decayAfter="PT0.3S")
    long = await api.assert_item(agent, projectId=project, statement="decays later", decayAfter="P30D")
    assert not any(node["stale"] for node in (await page(api, agent, project))["nodes"])
    then = (await api.run(agent, "query($i: ID!) { item(id: $i) { assertedAt } }", i=long["id"]))["item"]
    await asyncio.sleep(0.5)
    assert await ids(api, agent, project, f={"stale": True}) == [decaying["id"]]
    assert set(await ids(api, agent, project, f={"stale": False})) == {fresh["id"], long["id"]}
    everything = (await page(api, agent, project))["nodes"]
    assert [node["id"] for node in everything if node["stale"]] == [decaying["id"]]
    # As of a moment before it decayed, it was not stale then (R9 + R10).
    assert await ids(api, agent, project, f={"stale": True}, asOf=then["assertedAt"]) == []
    # Verifying makes it fresh again.
    await api.run(agent, VERIFY_ITEM, i=decaying["id"])
    assert await ids(api, agent, project, f={"stale": True}) == []


async def test_r5_load_bearing_suggested_filter(api: Api, world: World) -> None:
    agent, project = world.agent.token, world.project_id
    plain = await api.assert_item(agent, projectId=project, statement="plain")
    suggested = await api.assert_item(agent, projectId=project, statement="suggested")
    await api.run(agent, SUGGEST_LOAD_BEARING, i=suggested["id"])
    assert await ids(api, agent, project, f={"loadBearingSuggested": True}) == [suggested["id"]]
    assert await ids(api, agent, project, f={"loadBearingSuggested": False}) == [plain["id"]]


# --- orders ----------------------------------------------------------------------------------------


async def test_suggested_then_confidence_order_pages_with_a_cursor(api: Api, world: World) -> None:
    """Load-bearing suggestions first, then confidence highest first (none last), then oldest; the
    cursor continues the same order."""
    agent, project = world.agent.token, world.project_id
    made = []
    for n, confidence in enumerate([0.5, None, 0.9, 0.5, 0.2]):
        fields: dict[str, Any] = {"projectId": project, "statement": f"item {n}"}
        if confidence is not None:
            fields["confidence"] = confidence
        made.append((await api.assert_item(agent, **fields))["id"])
    await api.run(agent, SUGGEST_LOAD_BEARING, i=made[4])
    expected = [made[4], made[2], made[0], made[3], made[1]]
    order = {"o": "SUGGESTED_THEN_CONFIDENCE", "f": {"authorities": ["AGENT_ASSERTED"]}}
    assert await ids(api, agent, project, **order) == expected
    seen: list[str] = []
    after = None
    while True:
        found = (await api.run(agent, ITEMS, p=project, first=2, after=after, **order))["items"]
        seen += [node["id"] for node in found["nodes"]]
        if not found["pageInfo"]["hasNextPage"]:
            break
        after = found["pageInfo"]["endCursor"]
    assert seen == expected


async def test_longest_unchecked_order(api: Api, world: World) -> None:
    agent, project = world.agent.token, world.project_id
    first = await api.assert_item(agent, projectId=project, statement="first", decayAfter="P1D")
    second = await api.assert_item(agent, projectId=project, statement="second", decayAfter="P1D")
    await api.run(agent, VERIFY_ITEM, i=first["id"])
    assert await ids(api, agent, project, o="LONGEST_UNCHECKED") == [second["id"], first["id"]]


async def test_r14_an_order_other_than_newest_with_as_of_is_bad_input_naming_order_by(
    api: Api, world: World
) -> None:
    await refused_as_bad_input(
        api,
        world.agent.token,
        ITEMS,
        "orderBy",
        p=world.project_id,
        o="LONGEST_UNCHECKED",
        asOf="2026-01-01T00:00:00Z",
    )


async def test_r14_an_unknown_authority_is_refused_naming_the_field(api: Api, world: World) -> None:
    error = await api.fail(world.agent.token, ITEMS, p=world.project_id, f={"authorities": ["BOSS"]})
    assert "authorities" in error["message"], error


# --- events(projectId, kinds) ----------------------------------------------------------------------


async def test_r6_r2_project_events_newest_first_by_kind_and_only_what_the_reader_sees(
    api: Api, world: World
) -> None:
    human, agent, project = world.human.token, world.agent.token, world.project_id
    shared = await api.assert_item(agent, projectId=project, statement="shared")
    private = await api.assert_item(agent, projectId=project, statement="mine", scope="PRIVATE")
    await api.run(human, CONFIRM_ITEM, i=shared["id"])
    await api.run(agent, VERIFY_ITEM, i=private["id"])
    await api.run(agent, RETIRE_ITEM, i=private["id"], r="wrong")

    as_agent = (await api.run(agent, EVENTS, p=project))["events"]
    kinds = [(node["kind"], node["item"]["id"]) for node in as_agent["nodes"]]
    assert kinds == [
        ("STATUS_CHANGED", private["id"]),
        ("VERIFIED", private["id"]),
        ("CONFIRMED", shared["id"]),
        ("ASSERTED", private["id"]),
        ("ASSERTED", shared["id"]),
    ]
    assert as_agent["totalCount"] == 5

    # R2: the human cannot see the agent's PRIVATE item, nor any of its events.
    as_human = (await api.run(human, EVENTS, p=project))["events"]
    assert {node["item"]["id"] for node in as_human["nodes"]} == {shared["id"]}
    assert as_human["totalCount"] == 2

    decisions = (await api.run(agent, EVENTS, p=project, k=["CONFIRMED", "VERIFIED"]))["events"]
    assert [node["kind"] for node in decisions["nodes"]] == ["VERIFIED", "CONFIRMED"]
    assert decisions["nodes"][1]["actor"]["id"] == world.human.id

    # Pages continue where the cursor left off.
    seen, after = [], None
    while True:
        found = (await api.run(agent, EVENTS, p=project, first=2, after=after))["events"]
        seen += [node["id"] for node in found["nodes"]]
        if not found["pageInfo"]["hasNextPage"]:
            break
        after = found["pageInfo"]["endCursor"]
    assert seen == [node["id"] for node in as_agent["nodes"]]


async def test_r1_events_of_another_workspace_project_are_not_found(api: Api, world: World) -> None:
    other = await api.world()
    await api.assert_item(other.agent.token, projectId=other.project_id, statement="theirs")
    assert_code(await api.fail(world.human.token, EVENTS, p=other.project_id), "NOT_FOUND")


@pytest.mark.parametrize(
    ("field", "variables"), [("first", {"first": 0}), ("first", {"first": 501}), ("after", {"after": "%%"})]
)
async def test_r14_events_bad_page_input_names_the_field(
    api: Api, world: World, field: str, variables: dict[str, Any]
) -> None:
    await refused_as_bad_input(api, world.agent.token, EVENTS, field, p=world.project_id, **variables)
