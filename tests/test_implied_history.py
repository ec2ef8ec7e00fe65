"""R6 and R9 for an item whose assertion is its whole story: its row implies its history.

Such an item keeps no event and no state (storage/sql/events.sql); its log and
its past read the same as if it did (storage/event.py, storage/item.py), and
its first change, hold or redaction writes what its row implied, unchanged,
before its own event. Rows are counted through the admin engine, past every
policy; everything else is read through the API.
"""

from __future__ import annotations

from typing import Any

from tests.graphql import Api, World
from tests.support import (
    CONFIRM_ITEM,
    SUPERSEDE,
    events_of,
    rows,
    supersession,
)

LOG = """query($i: ID!) { item(id: $i) { events { id kind at actor { id } toStatus confirmed } } }"""
AS_OF = """query($p: ID!, $t: DateTime!) {
  items(projectId: $p, asOf: $t) { nodes { id authority } } }"""
EVENTS = """query($p: ID!, $first: Int, $after: String) {
  events(projectId: $p, first: $first, after: $after) {
    totalCount nodes { id kind item { id } } pageInfo { hasNextPage endCursor } } }"""
HOLD = 'mutation($i: ID!) { placeLegalHold(itemId: $i, reason: "audit") { id } }'


async def held_rows(api: Api, item_id: str) -> tuple[int, int]:
    """How many events and states the database holds for the item."""
    (found,) = await rows(
        api.admin_engine,
        "SELECT (SELECT count(*) FROM item_events WHERE item_id = CAST(:i AS uuid)) AS events,"
        " (SELECT count(*) FROM item_states WHERE item_id = CAST(:i AS uuid)) AS states",
        i=item_id,
    )
    return found["events"], found["states"]


async def log_of(api: Api, token: str, item_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = (await api.run(token, LOG, i=item_id))["item"]["events"]
    return events


async def as_of(api: Api, token: str, project: str, moment: str) -> dict[str, str]:
    found = (await api.run(token, AS_OF, p=project, t=moment))["items"]["nodes"]
    return {node["id"]: node["authority"] for node in found}


async def every_event(api: Api, token: str, project: str, first: int) -> list[tuple[str, str]]:
    """The project's whole log through pages of ``first``, checked against its totalCount."""
    seen: list[tuple[str, str]] = []
    after = None
    while True:
        page = (await api.run(token, EVENTS, p=project, first=first, after=after))["events"]
        seen += [(node["kind"], node["item"]["id"]) for node in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            assert page["totalCount"] == len(seen)
            return seen
        after = page["pageInfo"]["endCursor"]


async def test_r6_r9_an_unchanged_item_keeps_no_history_and_reads_whole(api: Api, world: World) -> None:
    agent = world.agent.token
    item = await api.assert_item(agent, projectId=world.project_id, statement="Prices are in cents")
    assert await held_rows(api, item["id"]) == (0, 0)

    (asserted,) = await log_of(api, agent, item["id"])
    assert asserted["kind"] == "ASSERTED" and asserted["actor"]["id"] == world.agent.id
    assert asserted["id"] == item["id"]  # an assertion's event has its item's id
    assert (asserted["toStatus"], asserted["confirmed"]) == ("ACTIVE", False)
    # R9: absent before it was said, as asserted from then on.
    assert item["id"] not in await as_of(api, agent, world.project_id, "2020-01-01T00:00:00Z")
    then = await as_of(api, agent, world.project_id, asserted["at"])
    assert then[item["id"]] == "AGENT_ASSERTED"


async def test_r6_r9_the_first_change_writes_what_the_row_implied(api: Api, world: World) -> None:
    agent, human = world.agent.token, world.human.token
    unchanged = await api.assert_item(agent, projectId=world.project_id, statement="Builds on Mondays")
    item = await api.assert_item(agent, projectId=world.project_id, statement="Deploys on Tuesdays")
    before = await events_of(api.admin_engine, item["id"])
    implied = await log_of(api, agent, item["id"])

    await api.run(human, CONFIRM_ITEM, i=item["id"])
    assert await held_rows(api, item["id"]) == (2, 2)
    after = await events_of(api.admin_engine, item["id"])
    assert after[:1] == before  # written exactly as the row implied it
    assert [event["event"] for event in after] == ["ASSERTED", "CONFIRMED"]
    log = await log_of(api, agent, item["id"])
    assert log[0] == implied[0]  # the same event, id and all
    # R9 over the written states: unconfirmed at its assertion, confirmed at the confirmation.
    assert (await as_of(api, agent, world.project_id, log[0]["at"]))[item["id"]] == "AGENT_ASSERTED"
    confirmed = await as_of(api, agent, world.project_id, log[1]["at"])
    assert confirmed[item["id"]] == "HUMAN_CONFIRMED"
    # Beside an item with its history written, one without is read from its row.
    assert confirmed[unchanged["id"]] == "AGENT_ASSERTED"


async def test_r6_a_hold_on_an_unchanged_item_writes_its_assertion_first(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Keep receipts")
    await api.run(world.human.token, HOLD, i=item["id"])
    assert [event["event"] for event in await events_of(api.admin_engine, item["id"])] == ["ASSERTED", "HELD"]
    assert await held_rows(api, item["id"]) == (2, 1)


async def test_r6_one_instants_events_page_in_one_order_written_or_implied(api: Api, world: World) -> None:
    """A supersession writes the replacement (implied: no row) and the target's change (a row) at one
    instant: the assertion comes first in it. Every page size walks the same whole log, counted."""
    agent, project = world.agent.token, world.project_id
    first = await api.assert_item(agent, projectId=project, statement="Cache for 60 seconds")
    target = await api.assert_item(agent, projectId=project, statement="Retry three times")
    replacing = supersession(project, target["id"], "Retry five times", "flaky")
    replacement = (await api.run(agent, SUPERSEDE, **replacing))["supersedeItem"]["replacement"]
    assert await held_rows(api, replacement["id"]) == (0, 0)
    assert await held_rows(api, target["id"]) == (2, 2)

    whole = await every_event(api, agent, project, 50)
    assert whole == [
        ("STATUS_CHANGED", target["id"]),
        ("ASSERTED", replacement["id"]),
        ("ASSERTED", target["id"]),
        ("ASSERTED", first["id"]),
    ]
    for size in (1, 2, 3):
        assert await every_event(api, agent, project, size) == whole
