"""R6 (nothing is deleted; every change appends an event) and the event-built past of R9.

Events are read through the admin engine (a superuser, past every policy), so
these tests see exactly what the database holds. The privilege tests run as
the server's role (``engine`` connects as mneia_app) in a human's context: the
refusals come from missing grants, not from a policy that merely hides rows.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.graphql import Api, World
from tests.support import (
    CONFIRM_ITEM,
    MAKE_LOAD_BEARING,
    RETIRE_ITEM,
    SUGGEST_LOAD_BEARING,
    VERIFY_ITEM,
    as_caller,
    denied,
    events_of,
    item_row,
)

STEP = 0.05  # seconds between steps, so that each transaction's now() is distinct
REASON = "replaced by the new billing service"


async def mutate(api: Api, token: str, mutation: str, item_id: str, **variables: Any) -> None:
    await asyncio.sleep(STEP)
    await api.run(token, mutation, i=item_id, **variables)


def summary(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["event"], e["actor"], e["from_status"], e["to_status"], e["reason"]) for e in events]


async def test_r6_assertion_appends_an_asserted_event(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use UTC")
    events = await events_of(api.admin_engine, item["id"])
    assert summary(events) == [("ASSERTED", world.agent.id, None, "ACTIVE", None)]
    assert (events[0]["confirmed"], events[0]["load_bearing"]) == (False, False)
    assert events[0]["at"] == (await item_row(api.admin_engine, item["id"]))["asserted_at"]


async def test_r6_confirmation_appends_a_confirmed_event(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use UTC")
    await mutate(api, world.human.token, CONFIRM_ITEM, item["id"])
    events = await events_of(api.admin_engine, item["id"])
    assert summary(events) == [
        ("ASSERTED", world.agent.id, None, "ACTIVE", None),
        ("CONFIRMED", world.human.id, "ACTIVE", "ACTIVE", None),
    ]
    assert events[1]["confirmed"] is True
    times = await item_row(api.admin_engine, item["id"])
    assert events[0]["at"] < events[1]["at"] == times["confirmed_at"]


async def test_r6_load_bearing_setting_appends_an_event(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use UTC")
    await mutate(api, world.human.token, MAKE_LOAD_BEARING, item["id"])
    events = await events_of(api.admin_engine, item["id"])
    assert summary(events)[1:] == [("LOAD_BEARING_SET", world.human.id, "ACTIVE", "ACTIVE", None)]
    assert events[1]["load_bearing"] is True
    assert events[1]["at"] == (await item_row(api.admin_engine, item["id"]))["load_bearing_set_at"]


async def test_r6_retirement_appends_a_status_change_with_reason(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use UTC")
    await mutate(api, world.agent.token, RETIRE_ITEM, item["id"], r=REASON)
    events = await events_of(api.admin_engine, item["id"])
    assert summary(events)[1:] == [("STATUS_CHANGED", world.agent.id, "ACTIVE", "RETIRED", REASON)]
    assert events[0]["at"] < events[1]["at"]


async def test_r6_verification_appends_a_verified_event(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use UTC")
    await mutate(api, world.agent.token, VERIFY_ITEM, item["id"])
    events = await events_of(api.admin_engine, item["id"])
    assert summary(events)[1:] == [("VERIFIED", world.agent.id, "ACTIVE", "ACTIVE", None)]
    assert events[1]["at"] == (await item_row(api.admin_engine, item["id"]))["last_verified_at"]


async def test_r6_a_life_is_recorded_in_order(api: Api, world: World) -> None:
    """Every step of an item's life appends exactly one event: who, when, from, to, why."""
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use UTC")
    await mutate(api, world.human.token, CONFIRM_ITEM, item["id"])
    await mutate(api, world.human.token, MAKE_LOAD_BEARING, item["id"])
    await mutate(api, world.agent.token, VERIFY_ITEM, item["id"])
    await mutate(api, world.human.token, RETIRE_ITEM, item["id"], r=REASON)
    events = await events_of(api.admin_engine, item["id"])
    assert summary(events) == [
        ("ASSERTED", world.agent.id, None, "ACTIVE", None),
        ("CONFIRMED", world.human.id, "ACTIVE", "ACTIVE", None),
        ("LOAD_BEARING_SET", world.human.id, "ACTIVE", "ACTIVE", None),
        ("VERIFIED", world.agent.id, "ACTIVE", "ACTIVE", None),
        ("STATUS_CHANGED", world.human.id, "ACTIVE", "RETIRED", REASON),
    ]
    times = [event["at"] for event in events]
    assert times == sorted(times) and len(set(times)) == len(times)
    # The rows are still there: retiring deleted nothing.
    data = await api.run(world.human.token, "query($i: ID!) { item(id: $i) { status } }", i=item["id"])
    assert data["item"]["status"] == "RETIRED"


# --- the server's role cannot erase or rewrite history ------------------------------------------


@pytest.fixture
async def history(api: Api, world: World) -> dict[str, str]:
    """An item with events, a proposal and a dispute, so every table has rows to attack."""
    base = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Port 5432")
    await api.run(world.agent.token, SUGGEST_LOAD_BEARING, i=base["id"])
    other = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Port 5433", contradicts=[base["id"]]
    )
    return {"item": base["id"], "other": other["id"]}


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM items WHERE id = :item",
        "DELETE FROM items",
        "DELETE FROM item_events WHERE item_id = :item",
        "DELETE FROM proposals WHERE target_id = :item",
        "DELETE FROM disputes WHERE contested_id = :item",
        "TRUNCATE items CASCADE",
        "UPDATE item_events SET reason = 'rewritten' WHERE item_id = :item",
        # A fixed time: Citus refuses a STABLE operator on a column (at - interval) in an UPDATE
        # before PostgreSQL's privilege check, and this test is about the privilege.
        "UPDATE item_events SET at = '2000-01-01T00:00:00Z' WHERE item_id = :item",
        "UPDATE items SET statement = 'rewritten' WHERE id = :item",
        "UPDATE items SET asserted_by = asserted_by, asserted_at = now() WHERE id = :item",
        "UPDATE items SET project_id = project_id WHERE id = :item",
        "INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, to_status,"
        " load_bearing, confirmed) SELECT workspace_id, id, asserted_by, now(), 'CONFIRMED',"
        " 'ACTIVE', false, true FROM items WHERE id = :item",
    ],
    ids=[
        "delete-item",
        "delete-all-items",
        "delete-events",
        "delete-proposals",
        "delete-disputes",
        "truncate-items",
        "update-event-reason",
        "update-event-time",
        "update-statement",
        "update-asserted",
        "update-project",
        "insert-event",
    ],
)
async def test_r6_server_role_cannot_erase_or_rewrite(
    api: Api, engine: AsyncEngine, world: World, history: dict[str, str], statement: str
) -> None:
    before = await events_of(api.admin_engine, history["item"])
    # In the human's context, the most powerful caller there is.
    async with as_caller(engine, world.human) as connection:
        await denied(connection, statement, item=history["item"])
    assert await events_of(api.admin_engine, history["item"]) == before


async def test_r6_server_role_may_change_what_it_is_granted(
    api: Api, engine: AsyncEngine, world: World, history: dict[str, str]
) -> None:
    """The control: the same connection and context may make a granted, logged change."""
    async with as_caller(engine, world.human) as connection:
        result = await connection.execute(
            text("UPDATE items SET last_verified_at = now() WHERE id = :item"), {"item": history["item"]}
        )
        assert result.rowcount == 1
        logged = await connection.execute(
            text("SELECT count(*) FROM item_events WHERE item_id = :item AND event = 'VERIFIED'"),
            {"item": history["item"]},
        )
        assert logged.scalar_one() == 1


# --- R9: the past is rebuilt from events ---------------------------------------------------------

AS_OF_ITEM = """query($i: ID!, $t: DateTime) { item(id: $i, asOf: $t) {
  id status authority loadBearing confirmation { by { id } } } }"""
AS_OF_ITEMS = """query($p: ID!, $t: DateTime) { items(projectId: $p, asOf: $t) {
  totalCount nodes { id status authority } } }"""


def between(earlier: datetime, later: datetime) -> str:
    assert earlier < later
    return (earlier + (later - earlier) / 2).isoformat()


async def test_r9_as_of_rebuilds_status_and_authority_from_events(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use UTC")
    await mutate(api, world.human.token, CONFIRM_ITEM, item["id"])
    await mutate(api, world.human.token, RETIRE_ITEM, item["id"], r=REASON)
    events = await events_of(api.admin_engine, item["id"])
    assert [event["event"] for event in events] == ["ASSERTED", "CONFIRMED", "STATUS_CHANGED"]
    t1, t2, t3 = (event["at"] for event in events)

    expected = {
        (t1 - timedelta(milliseconds=1)).isoformat(): None,
        t1.isoformat(): ("ACTIVE", "AGENT_ASSERTED", None),
        between(t1, t2): ("ACTIVE", "AGENT_ASSERTED", None),
        between(t2, t3): ("ACTIVE", "HUMAN_CONFIRMED", world.human.id),
        (t3 + timedelta(milliseconds=1)).isoformat(): ("RETIRED", "HUMAN_CONFIRMED", world.human.id),
    }
    for as_of, then in expected.items():
        found = (await api.run(world.agent.token, AS_OF_ITEM, i=item["id"], t=as_of))["item"]
        listed = (await api.run(world.agent.token, AS_OF_ITEMS, p=world.project_id, t=as_of))["items"]
        if then is None:
            assert found is None, as_of
            assert listed == {"totalCount": 0, "nodes": []}, as_of
            continue
        status, authority, confirmer = then
        assert (found["status"], found["authority"]) == (status, authority), as_of
        assert (found["confirmation"] or {}).get("by", {}).get("id") == confirmer, as_of
        assert listed == {
            "totalCount": 1,
            "nodes": [{"id": item["id"], "status": status, "authority": authority}],
        }, as_of

    now = (await api.run(world.agent.token, AS_OF_ITEM, i=item["id"], t=None))["item"]
    assert (now["status"], now["authority"]) == ("RETIRED", "HUMAN_CONFIRMED")


async def test_r9_as_of_rebuilds_load_bearing_from_events(api: Api, world: World) -> None:
    item = await api.assert_item(world.human.token, projectId=world.project_id, statement="No PII")
    await mutate(api, world.human.token, MAKE_LOAD_BEARING, item["id"])
    t1, t2 = (event["at"] for event in await events_of(api.admin_engine, item["id"]))
    before = (await api.run(world.agent.token, AS_OF_ITEM, i=item["id"], t=between(t1, t2)))["item"]
    after = (await api.run(world.agent.token, AS_OF_ITEM, i=item["id"], t=t2.isoformat()))["item"]
    assert (before["loadBearing"], after["loadBearing"]) == (False, True)
    assert before["authority"] == after["authority"] == "HUMAN_CONFIRMED"
