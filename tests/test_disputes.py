"""R8: a contradiction is stored and flagged; only a human's ``resolveDispute`` picks a winner.

The contested item is untouched when a dispute opens (its row and its events
are compared before and after); a dispute stays open whatever else happens
until a human resolves it, and every refusal writes nothing anywhere.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.graphql import Api, World
from tests.support import (
    ASSERT_ITEM,
    CONFIRM_ITEM,
    RETIRE_ITEM,
    SUPERSEDE,
    assert_code,
    assert_human_required,
    changed_tables,
    database_state,
    denied_on_a_visible_row,
    events_of,
    refused_as_bad_input,
    rows,
    supersession,
)

DISPUTE = """id status reason raisedAt resolvedAt resolutionNote
  item { id status authority } contested { id status authority }
  raisedBy { id } resolvedBy { id } keptItem { id }"""

DISPUTE_ITEM = f"""mutation($i: ID!, $c: ID!, $r: String!) {{
  disputeItem(id: $i, contestedId: $c, reason: $r) {{ {DISPUTE} }} }}"""
RESOLVE = f"""mutation($d: ID!, $k: ID!, $n: String) {{
  resolveDispute(id: $d, keepItemId: $k, note: $n) {{ {DISPUTE} }} }}"""
LIST = f"""query($p: ID!, $s: DisputeStatus) {{
  disputes(projectId: $p, status: $s) {{ {DISPUTE} }} }}"""
READ = """query($i: ID!) { item(id: $i) { id status statusReason authority
  confirmation { by { id } } disputes { id status } } }"""

STEP = 0.05


async def snapshot(api: Api, item_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An item's whole row and its events, as the database holds them."""
    found = await rows(
        api.admin_engine,
        "SELECT to_jsonb(items) - 'search' AS row FROM items WHERE id = :i",
        i=item_id,
    )
    return found[0]["row"], await events_of(api.admin_engine, item_id)


async def read(api: Api, token: str, item_id: str) -> dict[str, Any]:
    return (await api.run(token, READ, i=item_id))["item"]


async def contradict(api: Api, token: str, world: World, contested_id: str, statement: str) -> dict[str, Any]:
    return await api.assert_item(
        token,
        projectId=world.project_id,
        statement=statement,
        basis="the runbook",
        contradicts=[contested_id],
    )


async def only_dispute(api: Api, world: World, status: str | None = None) -> dict[str, Any]:
    listed = (await api.run(world.human.token, LIST, p=world.project_id, s=status))["disputes"]
    assert len(listed) == 1, listed
    return listed[0]


def summary(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["event"], e["actor"], e["from_status"], e["to_status"]) for e in events]


# --- opening a dispute ---------------------------------------------------------------------------


async def test_r8_contradicting_assertion_is_disputed_and_opens_a_dispute(api: Api, world: World) -> None:
    contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="Port 5432")
    untouched = await snapshot(api, contested["id"])
    before = await database_state(api.admin_engine)

    newcomer = await contradict(api, world.agent.token, world, contested["id"], "Port 6432")

    assert (newcomer["status"], newcomer["authority"]) == ("DISPUTED", "DISPUTED")
    dispute = await only_dispute(api, world)
    assert dispute["status"] == "OPEN"
    assert dispute["item"] == {"id": newcomer["id"], "status": "DISPUTED", "authority": "DISPUTED"}
    assert dispute["contested"] == {
        "id": contested["id"],
        "status": "ACTIVE",
        "authority": "HUMAN_CONFIRMED",
    }
    assert dispute["raisedBy"] == {"id": world.agent.id}
    assert dispute["reason"] == "the runbook"
    assert (dispute["resolvedBy"], dispute["keptItem"], dispute["resolvedAt"]) == (None, None, None)

    # The contested item is untouched: same row (status, confirmation), same events.
    assert await snapshot(api, contested["id"]) == untouched
    # The newcomer's event and state are implied by its row (it has not changed since): no rows.
    assert changed_tables(before, await database_state(api.admin_engine)) == {
        "items",
        "item_counts",
        "disputes",
    }
    newcomer_read = await read(api, world.agent.token, newcomer["id"])
    assert contested["id"] in newcomer_read["statusReason"]
    assert newcomer_read["disputes"] == [{"id": dispute["id"], "status": "OPEN"}]
    assert (await read(api, world.agent.token, contested["id"]))["disputes"] == newcomer_read["disputes"]
    assert summary(await events_of(api.admin_engine, newcomer["id"])) == [
        ("ASSERTED", world.agent.id, None, "DISPUTED")
    ]


async def test_r8_dispute_item_disputes_an_existing_item(api: Api, world: World) -> None:
    contested = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Node 20")
    await api.run(world.human.token, CONFIRM_ITEM, i=contested["id"])
    newcomer = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Node 22")
    untouched = await snapshot(api, contested["id"])

    opened = (
        await api.run(
            world.agent.token,
            DISPUTE_ITEM,
            i=newcomer["id"],
            c=contested["id"],
            r="lockfile says 22",
        )
    )["disputeItem"]

    assert (opened["status"], opened["reason"]) == ("OPEN", "lockfile says 22")
    assert opened["item"] == {"id": newcomer["id"], "status": "DISPUTED", "authority": "DISPUTED"}
    assert opened["contested"]["id"] == contested["id"]
    assert opened["raisedBy"] == {"id": world.agent.id}
    assert await snapshot(api, contested["id"]) == untouched
    events = await events_of(api.admin_engine, newcomer["id"])
    assert summary(events)[-1] == ("STATUS_CHANGED", world.agent.id, "ACTIVE", "DISPUTED")
    assert contested["id"] in events[-1]["reason"] and "lockfile says 22" in events[-1]["reason"]

    # Raising the same dispute again returns it and writes nothing.
    before = await database_state(api.admin_engine)
    again = await api.run(world.agent.token, DISPUTE_ITEM, i=newcomer["id"], c=contested["id"], r="again")
    assert again["disputeItem"]["id"] == opened["id"]
    assert await database_state(api.admin_engine) == before


async def test_r8_agent_cannot_raise_a_human_confirmed_item_as_the_contradicting_side(
    api: Api, world: World
) -> None:
    ruling = await api.assert_item(world.human.token, projectId=world.project_id, statement="Ship weekly")
    other = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Ship daily")
    before = await database_state(api.admin_engine)

    error = await api.fail(world.agent.token, DISPUTE_ITEM, i=ruling["id"], c=other["id"], r="flip it")

    assert_human_required(error)
    assert await database_state(api.admin_engine) == before
    # Control: a human may set their own ruling against another item.
    opened = await api.run(world.human.token, DISPUTE_ITEM, i=ruling["id"], c=other["id"], r="I said weekly")
    assert opened["disputeItem"]["item"]["status"] == "DISPUTED"


async def retired(api: Api, world: World) -> str:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use Redis")
    await api.run(world.agent.token, RETIRE_ITEM, i=item["id"], r="gone")
    return item["id"]


async def superseded(api: Api, world: World) -> str:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use Redis 6")
    await api.run(
        world.agent.token,
        SUPERSEDE,
        **supersession(world.project_id, item["id"], "Use Redis 7", "upgrade"),
    )
    return item["id"]


async def disputed(api: Api, world: World) -> str:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use Redis 8")
    other = await contradict(api, world.agent.token, world, item["id"], "Use Valkey")
    return other["id"]


@pytest.mark.parametrize("make", [retired, superseded, disputed], ids=["retired", "superseded", "disputed"])
@pytest.mark.parametrize("how", ["assertItem", "disputeItem"])
async def test_r8_contradicting_a_non_active_item_is_a_conflict(
    api: Api, world: World, make: Any, how: str
) -> None:
    target = await make(api, world)
    newcomer = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use memcached")
    before = await database_state(api.admin_engine)

    if how == "assertItem":
        error = await api.fail(
            world.agent.token,
            ASSERT_ITEM,
            i={
                "projectId": world.project_id,
                "kind": "FACT",
                "statement": "x",
                "contradicts": [target],
            },
        )
    else:
        error = await api.fail(world.agent.token, DISPUTE_ITEM, i=newcomer["id"], c=target, r="no")

    assert_code(error, "CONFLICT")
    assert target in error["message"]
    assert await database_state(api.admin_engine) == before


# --- nobody but a human resolves -----------------------------------------------------------------


async def test_r8_dispute_between_two_humans_waits_for_a_human(api: Api, world: World) -> None:
    bob = await api.actor(world.human.token, "HUMAN", "bob")
    await api.add_member(world.human.token, world.project_id, bob.id)
    alices = await api.assert_item(
        world.human.token, projectId=world.project_id, statement="Freeze on Dec 15"
    )
    bobs = await contradict(api, bob.token, world, alices["id"], "Freeze on Dec 20")
    dispute = await only_dispute(api, world)

    # Nothing but a resolution closes it: not more assertions, by either side or by an agent,
    # not a confirmation attempt, not time passing.
    await api.assert_item(world.human.token, projectId=world.project_id, statement="Freeze on Dec 15")
    await api.assert_item(bob.token, projectId=world.project_id, statement="Freeze on Dec 20, really")
    await api.assert_item(world.agent.token, projectId=world.project_id, statement="Freeze on Dec 15")
    error = await api.fail(world.human.token, CONFIRM_ITEM, i=bobs["id"])
    assert_code(error, "CONFLICT")
    await asyncio.sleep(0.3)
    still = await only_dispute(api, world)
    assert still["status"] == "OPEN" and still["id"] == dispute["id"]
    assert still["item"]["status"] == "DISPUTED" and still["contested"]["status"] == "ACTIVE"
    assert [d["id"] for d in (await api.run(bob.token, LIST, p=world.project_id, s="OPEN"))["disputes"]] == [
        dispute["id"]
    ]

    # Bob concedes: he keeps Alice's item.
    await asyncio.sleep(STEP)
    resolved = (await api.run(bob.token, RESOLVE, d=dispute["id"], k=alices["id"], n="Alice is right"))[
        "resolveDispute"
    ]

    assert resolved["status"] == "RESOLVED"
    assert (resolved["resolvedBy"], resolved["keptItem"]) == ({"id": bob.id}, {"id": alices["id"]})
    assert resolved["resolutionNote"] == "Alice is right" and resolved["resolvedAt"] is not None
    kept, dropped = await read(api, bob.token, alices["id"]), await read(api, bob.token, bobs["id"])
    assert (kept["status"], kept["authority"]) == ("ACTIVE", "HUMAN_CONFIRMED")
    assert kept["confirmation"]["by"] == {"id": world.human.id}  # an existing ruling is not rewritten
    assert "Alice is right" in kept["statusReason"]
    assert (dropped["status"], dropped["authority"]) == ("RETIRED", "HUMAN_CONFIRMED")
    assert "Alice is right" in dropped["statusReason"]
    # R6: both sides have an event by the resolver.
    assert summary(await events_of(api.admin_engine, alices["id"]))[-1] == (
        "NOTED",
        bob.id,
        "ACTIVE",
        "ACTIVE",
    )
    assert summary(await events_of(api.admin_engine, bobs["id"]))[-1] == (
        "STATUS_CHANGED",
        bob.id,
        "DISPUTED",
        "RETIRED",
    )


async def test_r8_keeping_the_agents_assertion_makes_it_a_human_ruling(api: Api, world: World) -> None:
    contested = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Timeout 30s")
    newcomer = await contradict(api, world.agent.token, world, contested["id"], "Timeout 60s")
    dispute = await only_dispute(api, world)

    resolved = (await api.run(world.human.token, RESOLVE, d=dispute["id"], k=newcomer["id"], n=None))[
        "resolveDispute"
    ]

    assert (resolved["status"], resolved["keptItem"]) == ("RESOLVED", {"id": newcomer["id"]})
    assert resolved["resolutionNote"] is None
    kept, dropped = (
        await read(api, world.agent.token, newcomer["id"]),
        await read(api, world.agent.token, contested["id"]),
    )
    assert (kept["status"], kept["authority"], kept["confirmation"]) == (
        "ACTIVE",
        "HUMAN_CONFIRMED",
        {"by": {"id": world.human.id}},
    )
    assert (dropped["status"], dropped["authority"]) == ("RETIRED", "AGENT_ASSERTED")
    # One UPDATE, two events at the same instant (their order within it is not defined).
    kept_events = await events_of(api.admin_engine, newcomer["id"])
    assert sorted(summary(kept_events)[1:]) == [
        ("CONFIRMED", world.human.id, "DISPUTED", "ACTIVE"),
        ("STATUS_CHANGED", world.human.id, "DISPUTED", "ACTIVE"),
    ]
    assert kept_events[1]["at"] == kept_events[2]["at"]
    assert summary(await events_of(api.admin_engine, contested["id"]))[1:] == [
        ("STATUS_CHANGED", world.human.id, "ACTIVE", "RETIRED")
    ]


async def test_r8_an_item_stays_disputed_while_another_dispute_against_it_is_open(
    api: Api, world: World
) -> None:
    first = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Region eu-west-1")
    second = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Region eu-west-1a"
    )
    newcomer = await api.assert_item(
        world.agent.token,
        projectId=world.project_id,
        statement="Region eu-central-1",
        contradicts=[first["id"], second["id"]],
    )
    listed = (await api.run(world.human.token, LIST, p=world.project_id, s="OPEN"))["disputes"]
    by_contested = {d["contested"]["id"]: d["id"] for d in listed}
    assert set(by_contested) == {first["id"], second["id"]}

    await api.run(world.human.token, RESOLVE, d=by_contested[first["id"]], k=newcomer["id"], n=None)
    assert (await read(api, world.human.token, newcomer["id"]))["status"] == "DISPUTED"
    await api.run(world.human.token, RESOLVE, d=by_contested[second["id"]], k=newcomer["id"], n=None)
    assert (await read(api, world.human.token, newcomer["id"]))["status"] == "ACTIVE"
    assert [(await read(api, world.human.token, i["id"]))["status"] for i in (first, second)] == [
        "RETIRED",
        "RETIRED",
    ]


# --- refusals ------------------------------------------------------------------------------------


@pytest.fixture
async def open_dispute(api: Api, world: World) -> dict[str, str]:
    contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="Python 3.11")
    newcomer = await contradict(api, world.agent.token, world, contested["id"], "Python 3.12")
    dispute = await only_dispute(api, world)
    return {"id": dispute["id"], "contested": contested["id"], "newcomer": newcomer["id"]}


@pytest.mark.parametrize("side", ["contested", "newcomer"])
async def test_r8_agent_cannot_resolve_a_dispute(
    api: Api, world: World, open_dispute: dict[str, str], side: str
) -> None:
    before = await database_state(api.admin_engine)
    error = await api.fail(world.agent.token, RESOLVE, d=open_dispute["id"], k=open_dispute[side], n="mine")
    assert_human_required(error)
    assert await database_state(api.admin_engine) == before


async def test_r8_kept_item_must_be_one_of_the_two(
    api: Api, world: World, open_dispute: dict[str, str]
) -> None:
    bystander = await api.assert_item(world.human.token, projectId=world.project_id, statement="Python 3.13")
    error = await refused_as_bad_input(
        api, world.human.token, RESOLVE, "keepItemId", d=open_dispute["id"], k=bystander["id"], n=None
    )
    assert error["extensions"]["field"] == "keepItemId"


async def test_r8_resolving_twice_is_a_conflict(api: Api, world: World, open_dispute: dict[str, str]) -> None:
    await api.run(world.human.token, RESOLVE, d=open_dispute["id"], k=open_dispute["contested"], n=None)
    before = await database_state(api.admin_engine)
    for keep in (open_dispute["contested"], open_dispute["newcomer"]):
        error = await api.fail(world.human.token, RESOLVE, d=open_dispute["id"], k=keep, n="again")
        assert_code(error, "CONFLICT")
    assert await database_state(api.admin_engine) == before


# --- listing -------------------------------------------------------------------------------------


async def test_r8_disputes_list_newest_first_and_filter_by_status(api: Api, world: World) -> None:
    made = []
    for number in range(3):
        contested = await api.assert_item(
            world.agent.token, projectId=world.project_id, statement=f"a{number}"
        )
        await contradict(api, world.agent.token, world, contested["id"], f"b{number}")
        made.append((await api.run(world.human.token, LIST, p=world.project_id, s=None))["disputes"][0])
    await api.run(world.human.token, RESOLVE, d=made[1]["id"], k=made[1]["contested"]["id"], n=None)

    listed = (await api.run(world.agent.token, LIST, p=world.project_id, s=None))["disputes"]
    assert [d["id"] for d in listed] == [d["id"] for d in made[::-1]]
    opened = (await api.run(world.agent.token, LIST, p=world.project_id, s="OPEN"))["disputes"]
    assert [d["id"] for d in opened] == [made[2]["id"], made[0]["id"]]
    closed = (await api.run(world.agent.token, LIST, p=world.project_id, s="RESOLVED"))["disputes"]
    assert [(d["id"], d["status"]) for d in closed] == [(made[1]["id"], "RESOLVED")]


# --- R6: the server's role cannot erase or rewrite a dispute ------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM disputes WHERE id = :id",
        "UPDATE disputes SET item_id = contested_id WHERE id = :id",
        "UPDATE disputes SET raised_by = resolved_by WHERE id = :id",
        "UPDATE disputes SET reason = 'rewritten' WHERE id = :id",
        "UPDATE disputes SET raised_at = now() - interval '1 day' WHERE id = :id",
    ],
    ids=["delete", "item", "raised-by", "reason", "raised-at"],
)
async def test_r6_server_role_cannot_erase_or_rewrite_a_dispute(
    api: Api, engine: AsyncEngine, world: World, open_dispute: dict[str, str], statement: str
) -> None:
    await api.run(world.human.token, RESOLVE, d=open_dispute["id"], k=open_dispute["contested"], n=None)
    await denied_on_a_visible_row(
        engine,
        api.admin_engine,
        world.human,
        "disputes",
        open_dispute["id"],
        statement,
    )
