"""R7: replacing an item keeps its authority, never forks the chain, and walks both ways.

Every branch of ``supersedeItem`` is driven through the real API; what must
not have been written is checked in the database itself (row counts and a hash
of every table, read past every policy). The race is run with real concurrency
(the app's pool has ten connections), and the unique index that makes it safe
is proven to be the enforcer with raw SQL as the server's role.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage.ids import new_id
from tests.graphql import Api, World
from tests.support import (
    RETIRE_ITEM,
    SUPERSEDE,
    UNIQUE_VIOLATION,
    as_caller,
    as_owner,
    assert_code,
    changed_tables,
    confirmed_item,
    constraint_of,
    counted,
    database_state,
    events_of,
    item_row,
    peak_connections,
    refused_as_bad_input,
    rows,
    sqlstate,
    successors_of,
    supersession,
)

RACERS = 10
ROUNDS = 3
LONG_CHAIN = 1000

WALK = """query($i: ID!) { item(id: $i) {
  id chain { id } supersedes { id } supersededBy { id } } }"""


async def supersede(api: Api, token: str, world: World, target_id: str, statement: str, reason: str) -> Any:
    data = await api.run(token, SUPERSEDE, **supersession(world.project_id, target_id, statement, reason))
    return data["supersedeItem"]


async def status_of(api: Api, item_id: str) -> str:
    return (await item_row(api.admin_engine, item_id))["status"]


# --- the branches --------------------------------------------------------------------------------


async def test_r7_agent_supersedes_an_unconfirmed_item(api: Api, world: World) -> None:
    old = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Port 5432")
    result = await supersede(api, world.agent.token, world, old["id"], "Port 6432", "pgbouncer in front")

    assert result["__typename"] == "Superseded"
    previous, replacement = result["previous"], result["replacement"]
    assert previous["id"] == old["id"]
    assert (previous["status"], previous["statusReason"]) == ("SUPERSEDED", "pgbouncer in front")
    assert replacement["supersedesId"] == old["id"]
    assert replacement["supersessionReason"] == "pgbouncer in front"
    assert (replacement["status"], replacement["authority"]) == ("ACTIVE", "AGENT_ASSERTED")
    assert replacement["confirmation"] is None
    assert replacement["provenance"]["assertedBy"]["id"] == world.agent.id

    # R6: the previous item's change is an event: who, when (the replacement's), from, to, why.
    events = await events_of(api.admin_engine, old["id"])
    assert [(e["event"], e["actor"], e["from_status"], e["to_status"], e["reason"]) for e in events] == [
        ("ASSERTED", world.agent.id, None, "ACTIVE", None),
        ("STATUS_CHANGED", world.agent.id, "ACTIVE", "SUPERSEDED", "pgbouncer in front"),
    ]
    assert events[1]["at"] == datetime.fromisoformat(replacement["assertedAt"])
    new_events = await events_of(api.admin_engine, replacement["id"])
    assert [(e["event"], e["actor"], e["reason"]) for e in new_events] == [
        ("ASSERTED", world.agent.id, "pgbouncer in front")
    ]


async def test_r7_human_supersedes_a_human_confirmed_item_directly(api: Api, world: World) -> None:
    old = await api.assert_item(world.human.token, projectId=world.project_id, statement="Deploy on Fridays")
    assert old["authority"] == "HUMAN_CONFIRMED"
    before = await database_state(api.admin_engine)

    result = await supersede(api, world.human.token, world, old["id"], "Never deploy on Fridays", "outage")

    assert result["__typename"] == "Superseded"
    replacement = result["replacement"]
    assert (replacement["authority"], replacement["status"]) == ("HUMAN_CONFIRMED", "ACTIVE")
    assert replacement["confirmation"]["by"]["id"] == world.human.id
    assert replacement["supersedesId"] == old["id"]
    assert result["previous"]["status"] == "SUPERSEDED"
    # Applied directly: items and their events changed, no proposal was raised.
    assert changed_tables(before, await database_state(api.admin_engine)) == {
        "items",
        "item_events",
        "item_states",
        "item_counts",
    }


@pytest.mark.parametrize("confirmed", ["asserted-by-human", "confirmed-agent-assertion"])
async def test_r7_agent_on_a_human_confirmed_target_only_proposes(
    api: Api, world: World, confirmed: str
) -> None:
    old = await confirmed_item(api, world, "Use UTC", agent_asserted=confirmed != "asserted-by-human")
    before = await database_state(api.admin_engine)

    result = await supersede(api, world.agent.token, world, old["id"], "Use local time", "users asked")

    assert result["__typename"] == "PendingConfirmation"
    proposal = result["proposal"]
    assert (proposal["kind"], proposal["status"]) == ("SUPERSESSION", "PENDING")
    assert proposal["replacementStatement"] == "Use local time"
    assert proposal["reason"] == "users asked"
    assert proposal["proposedBy"]["id"] == world.agent.id
    assert proposal["target"] == {"id": old["id"], "status": "ACTIVE"}
    assert proposal["result"] is None and proposal["decidedBy"] is None

    # Nothing was written to the chain: one proposal row, and nothing else anywhere.
    after = await database_state(api.admin_engine)
    assert changed_tables(before, after) == {"proposals"}
    assert after["proposals"][0] == before["proposals"][0] + 1
    assert await status_of(api, old["id"]) == "ACTIVE"
    assert await successors_of(api.admin_engine, old["id"]) == []


async def test_r7_no_longer_active_target_is_a_conflict_naming_the_head(api: Api, world: World) -> None:
    first = await api.assert_item(world.agent.token, projectId=world.project_id, statement="v1")
    second = (await supersede(api, world.agent.token, world, first["id"], "v2", "bump"))["replacement"]

    before = await database_state(api.admin_engine)
    variables = supersession(world.project_id, first["id"], "v2 again", "bump again")
    error = await api.fail(world.agent.token, SUPERSEDE, **variables)
    assert_code(error, "CONFLICT")
    assert error["extensions"]["currentHeadId"] == second["id"]
    assert error["extensions"]["currentStatus"] == "SUPERSEDED"
    assert second["id"] in error["message"]

    # Superseded twice: the head named is the newest, from any older member of the chain.
    third = (await supersede(api, world.human.token, world, second["id"], "v3", "bump"))["replacement"]
    before = await database_state(api.admin_engine)
    for stale in (first["id"], second["id"]):
        for token in (world.agent.token, world.human.token):
            variables = supersession(world.project_id, stale, "v3 again", "bump again")
            error = await api.fail(token, SUPERSEDE, **variables)
            assert_code(error, "CONFLICT")
            assert error["extensions"]["currentHeadId"] == third["id"]
    assert await database_state(api.admin_engine) == before
    assert [await status_of(api, i["id"]) for i in (first, second, third)] == [
        "SUPERSEDED",
        "SUPERSEDED",
        "ACTIVE",
    ]


async def test_r7_retired_target_is_a_conflict_naming_itself_as_head(api: Api, world: World) -> None:
    retired = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use Redis")
    await api.run(world.agent.token, RETIRE_ITEM, i=retired["id"], r="dropped")
    before = await database_state(api.admin_engine)
    error = await api.fail(
        world.human.token,
        SUPERSEDE,
        **supersession(world.project_id, retired["id"], "Use Valkey", "fork"),
    )
    assert_code(error, "CONFLICT")
    assert error["extensions"]["currentHeadId"] == retired["id"]
    assert error["extensions"]["currentStatus"] == "RETIRED"
    assert await database_state(api.admin_engine) == before


async def test_r7_chain_walks_both_ways(api: Api, world: World) -> None:
    first = await api.assert_item(world.agent.token, projectId=world.project_id, statement="v1")
    second = (await supersede(api, world.agent.token, world, first["id"], "v2", "r1"))["replacement"]
    third = (await supersede(api, world.agent.token, world, second["id"], "v3", "r2"))["replacement"]
    ids = [first["id"], second["id"], third["id"]]

    walks = {i: (await api.run(world.human.token, WALK, i=i))["item"] for i in ids}
    for walked in walks.values():
        assert [link["id"] for link in walked["chain"]] == ids
    assert (walks[ids[0]]["supersedes"], walks[ids[0]]["supersededBy"]) == (None, {"id": ids[1]})
    assert (walks[ids[1]]["supersedes"], walks[ids[1]]["supersededBy"]) == (
        {"id": ids[0]},
        {"id": ids[2]},
    )
    assert (walks[ids[2]]["supersedes"], walks[ids[2]]["supersededBy"]) == ({"id": ids[1]}, None)


# --- the race ------------------------------------------------------------------------------------


async def test_r7_concurrent_supersessions_one_winner(api: Api, engine: AsyncEngine, world: World) -> None:
    """Of RACERS simultaneous supersessions exactly one wins; the others get CONFLICT; no fork."""
    for round_number in range(ROUNDS):
        target = await api.assert_item(
            world.agent.token, projectId=world.project_id, statement=f"race target {round_number}"
        )
        calls = [
            api.post(
                world.agent.token,
                SUPERSEDE,
                supersession(world.project_id, target["id"], f"winner {n}", f"racer {n}"),
            )
            for n in range(RACERS)
        ]
        with peak_connections(engine) as live:
            bodies = await asyncio.gather(*calls)
        assert live[1] > 1, "the supersessions did not overlap; the race was not run"

        won = [body for body in bodies if not body.get("errors")]
        lost = [body for body in bodies if body.get("errors")]
        assert len(won) == 1, bodies
        assert won[0]["data"]["supersedeItem"]["__typename"] == "Superseded"
        winner = won[0]["data"]["supersedeItem"]["replacement"]["id"]
        assert {body["errors"][0]["extensions"]["code"] for body in lost} == {"CONFLICT"}, lost
        assert len(lost) == RACERS - 1
        # The losers queued on the row lock, then saw the winner's commit and name it as the head.
        assert {body["errors"][0]["extensions"].get("currentHeadId") for body in lost} == {winner}

        assert await successors_of(api.admin_engine, target["id"]) == [{"id": winner}]
        assert await status_of(api, target["id"]) == "SUPERSEDED"
        racers = await rows(
            api.admin_engine,
            "SELECT count(*) AS n FROM items WHERE project_id = :p AND statement LIKE 'winner %'"
            " AND supersedes_id = :t",
            p=world.project_id,
            t=target["id"],
        )
        assert racers == [{"n": 1}]


INSERT_SUCCESSOR = text(
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by,"
    " supersedes_id, supersession_reason)"
    " VALUES (:ws, :id, :project, 'FACT', 'a second successor', :actor, :target, 'fork')"
)


async def test_r7_unique_index_forbids_a_second_successor(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    """Without any application code, the server's role cannot fork a chain (items_one_successor).

    The authority guard already refuses a successor of an item that is no longer
    ACTIVE; the unique index is what holds while the first replacement's
    transaction has not yet marked the target SUPERSEDED.
    """
    free = await api.assert_item(world.agent.token, projectId=world.project_id, statement="free")
    params = {"ws": world.workspace_id, "project": world.project_id, "actor": world.agent.id}
    before = await database_state(api.admin_engine)

    async with as_caller(engine, world.agent) as connection:
        # Control: the first successor goes through.
        inserted = await connection.execute(
            INSERT_SUCCESSOR, {**params, "id": new_id(), "target": free["id"]}
        )
        assert inserted.rowcount == 1
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(INSERT_SUCCESSOR, {**params, "id": new_id(), "target": free["id"]})
    assert sqlstate(caught.value) == UNIQUE_VIOLATION, caught.value
    assert constraint_of(caught.value) == "items_one_successor"
    assert await database_state(api.admin_engine) == before


# --- long chains ---------------------------------------------------------------------------------


async def bulk_chain(api: Api, world: World, length: int) -> list[str]:
    """A chain of ``length`` agent assertions, each replacing the previous, in one statement.

    Written as the owner role in the agent's context, so the insert policy and the
    triggers (events) still apply; only the newest item is ACTIVE.
    """
    ids = [new_id() for _ in range(length)]
    values = [
        {
            "ws": world.workspace_id,
            "id": item_id,
            "project": world.project_id,
            "statement": f"version {number}",
            "actor": world.agent.id,
            "status": "ACTIVE" if number == length - 1 else "SUPERSEDED",
            "supersedes": ids[number - 1] if number else None,
            "reason": f"bump {number}" if number else None,
        }
        for number, item_id in enumerate(ids)
    ]
    async with as_owner(api.admin_engine, world.agent) as connection:
        await connection.execute(
            text(
                "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by,"
                " status, supersedes_id, supersession_reason)"
                " VALUES (:ws, :id, :project, 'FACT', :statement, :actor, :status, :supersedes,"
                " :reason)"
            ),
            values,
        )
    # A bulk load leaves the planner's statistics stale (as autovacuum would, soon, fix):
    # refresh them so the walk below runs on the index plan production would use.
    async with api.admin_engine.connect() as connection:
        await connection.execute(text("ANALYZE items"))
        await connection.commit()
    return [str(item_id) for item_id in ids]


def recursive(statements: list[str]) -> list[str]:
    return [statement for statement in statements if "RECURSIVE" in statement.upper()]


async def test_r7_a_chain_of_a_thousand_walks_in_one_statement(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    ids = await bulk_chain(api, world, LONG_CHAIN)
    short = await bulk_chain(api, world, 3)
    middle = ids[LONG_CHAIN // 2]

    with counted(engine) as statements:
        walked = (await api.run(world.human.token, WALK, i=middle))["item"]
    assert [link["id"] for link in walked["chain"]] == ids
    assert walked["supersedes"] == {"id": ids[LONG_CHAIN // 2 - 1]}
    assert walked["supersededBy"] == {"id": ids[LONG_CHAIN // 2 + 1]}
    assert len(recursive(statements)) == 1, statements

    # The cost does not grow with the chain: the same query on a chain of 3 costs as many.
    with counted(engine) as few:
        small = (await api.run(world.human.token, WALK, i=short[1]))["item"]
    assert [link["id"] for link in small["chain"]] == short
    assert len(statements) == len(few), (statements, few)


async def test_r7_long_chain_visible_from_either_end(api: Api, world: World) -> None:
    ids = await bulk_chain(api, world, LONG_CHAIN)
    for end in (ids[0], ids[-1]):
        walked = (await api.run(world.agent.token, WALK, i=end))["item"]
        assert [link["id"] for link in walked["chain"]] == ids
    # The head of the chain is what a stale supersession names.
    error = await api.fail(
        world.agent.token, SUPERSEDE, **supersession(world.project_id, ids[10], "again", "late")
    )
    assert_code(error, "CONFLICT")
    assert error["extensions"]["currentHeadId"] == ids[-1]


# --- a replacement must not hide the chain -------------------------------------------------------


@pytest.mark.parametrize("scope", ["PRIVATE", "GRANTS"])
async def test_r7_a_replacement_never_hides_the_head_from_those_who_saw_the_target(
    api: Api, world: World, scope: str
) -> None:
    """Whoever sees the target sees its replacement; a CONFLICT names a readable, live head.

    An agent that replaced a PROJECT item with a PRIVATE (or GRANTS-to-itself) one
    would otherwise leave every other member with a SUPERSEDED item, no successor,
    and a CONFLICT that names the superseded item itself as the head.
    """
    old = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Port 5432")
    grants = {"grantActorIds": [world.agent.id]} if scope == "GRANTS" else {}
    replacing = supersession(world.project_id, old["id"], "Port 6432", "pooler", scope=scope, **grants)
    # A narrower replacement is refused up front, with nothing written.
    await refused_as_bad_input(api, world.agent.token, SUPERSEDE, "input.replacement.scope", **replacing)
