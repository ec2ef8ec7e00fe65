"""R5 and R7 through proposals: an agent's change that waits for a human's ``decideProposal``.

Accepting a SUPERSESSION writes the agent's replacement (asserted by the agent
at the time it proposed, confirmed by the deciding human); accepting a
LOAD_BEARING suggestion settles it. Rejecting writes only the decision. Every
refusal is checked against a snapshot of the whole database.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.graphql import Api, Who, World
from tests.support import (
    DECIDE,
    SUPERSEDE,
    assert_code,
    assert_human_required,
    changed_tables,
    database_state,
    denied_on_a_visible_row,
    events_of,
    item_row,
    peak_connections,
    refused_as_bad_input,
    rows,
    successors_of,
    supersession,
)

STEP = 0.05  # seconds, so that a decision's now() is later than the proposal's

SUGGEST = "mutation($i: ID!, $r: String) { suggestLoadBearing(id: $i, reason: $r) { id kind status } }"
SET_LOAD_BEARING = "mutation($i: ID!) { setLoadBearing(id: $i, loadBearing: true) { id loadBearing } }"
LIST = """query($p: ID!, $s: ProposalStatus) { proposals(projectId: $p, status: $s) {
  id kind status proposedBy { id } target { id } } }"""


async def propose_replacement(
    api: Api, world: World, statement: str = "Use local time", **fields: Any
) -> tuple[str, dict[str, Any]]:
    """A human-confirmed item and an agent's pending SUPERSESSION proposal for it."""
    target = await api.assert_item(world.human.token, projectId=world.project_id, statement="Use UTC")
    data = await api.run(
        world.agent.token,
        SUPERSEDE,
        **supersession(world.project_id, target["id"], statement, "users asked", **fields),
    )
    assert data["supersedeItem"]["__typename"] == "PendingConfirmation"
    return target["id"], data["supersedeItem"]["proposal"]


async def decide(api: Api, token: str, proposal_id: str, accept: bool, note: str | None = None) -> Any:
    await asyncio.sleep(STEP)
    return (await api.run(token, DECIDE, i=proposal_id, a=accept, n=note))["decideProposal"]


async def reject(api: Api, world: World, proposal_id: str, note: str) -> Any:
    """The human rejects the proposal: REJECTED, with that note and no result."""
    decided = await decide(api, world.human.token, proposal_id, False, note)
    assert (decided["status"], decided["decisionNote"], decided["result"]) == ("REJECTED", note, None)
    return decided


def moment(value: str) -> datetime:
    return datetime.fromisoformat(value)


async def proposal_row(api: Api, proposal_id: str) -> dict[str, Any]:
    found = await rows(
        api.admin_engine,
        "SELECT status, decided_by::text AS decided_by, decision_note, result_id::text AS result_id"
        " FROM proposals WHERE id = :p",
        p=proposal_id,
    )
    return found[0]


async def read(api: Api, token: str, item_id: str) -> dict[str, Any]:
    query = """query($i: ID!) { item(id: $i) { id status loadBearing loadBearingSuggested
      supersededBy { id } } }"""
    return (await api.run(token, query, i=item_id))["item"]


# --- SUPERSESSION proposals (R7) -----------------------------------------------------------------


async def test_r7_accepting_a_supersession_writes_the_agents_replacement(api: Api, world: World) -> None:
    target_id, proposal = await propose_replacement(api, world)

    decided = await decide(api, world.human.token, proposal["id"], True, "fine by me")

    assert (decided["status"], decided["decisionNote"]) == ("ACCEPTED", "fine by me")
    assert decided["decidedBy"] == {"id": world.human.id}
    assert decided["decidedAt"] is not None
    result = decided["result"]
    assert result["statement"] == "Use local time"
    assert (result["supersedesId"], result["supersessionReason"]) == (target_id, "users asked")
    assert (result["status"], result["authority"]) == ("ACTIVE", "HUMAN_CONFIRMED")
    # Asserted by the agent, when it proposed; confirmed by the deciding human, when deciding.
    assert result["provenance"]["assertedBy"] == {"id": world.agent.id}
    assert result["provenance"]["assertedAt"] == proposal["proposedAt"]
    assert result["confirmation"]["by"] == {"id": world.human.id}
    assert moment(result["confirmation"]["at"]) > moment(proposal["proposedAt"])
    assert decided["target"] == {"id": target_id, "status": "SUPERSEDED"}
    assert (await read(api, world.human.token, target_id))["supersededBy"] == {"id": result["id"]}

    # R6: the replacement's history says who said it when, and who ruled when.
    events = await events_of(api.admin_engine, result["id"])
    assert [(e["event"], e["actor"], e["confirmed"]) for e in events] == [
        ("ASSERTED", world.agent.id, False),
        ("CONFIRMED", world.human.id, True),
    ]
    target_events = await events_of(api.admin_engine, target_id)
    assert [(e["event"], e["actor"], e["to_status"], e["reason"]) for e in target_events][-1] == (
        "STATUS_CHANGED",
        world.human.id,
        "SUPERSEDED",
        "users asked",
    )


async def test_r7_a_human_may_accept_any_of_an_agents_replacements_of_one_item(
    api: Api, world: World
) -> None:
    """The agent proposed two replacements of one ruling; the human accepts the second. The
    database's guard compared the row with the agent's first pending proposal only, and refused
    (FORBIDDEN): found by tests/test_as_of_property.py. The first then conflicts: it replaces an
    item no longer ACTIVE."""
    target_id, first = await propose_replacement(api, world, "Use local time")
    again = await api.run(
        world.agent.token,
        SUPERSEDE,
        **supersession(world.project_id, target_id, "Use the user's time zone", "users asked again"),
    )
    second = again["supersedeItem"]["proposal"]

    decided = await decide(api, world.human.token, second["id"], True)
    assert decided["status"] == "ACCEPTED"
    assert decided["result"]["statement"] == "Use the user's time zone"
    assert decided["result"]["provenance"]["assertedAt"] == second["proposedAt"]
    assert (await read(api, world.human.token, target_id))["supersededBy"] == {"id": decided["result"]["id"]}
    assert_code(await api.fail(world.human.token, DECIDE, i=first["id"], a=True, n=None), "CONFLICT")


async def test_r7_rejecting_a_supersession_writes_only_the_decision(api: Api, world: World) -> None:
    target_id, proposal = await propose_replacement(api, world)
    before = await database_state(api.admin_engine)

    decided = await reject(api, world, proposal["id"], "UTC is the rule")

    assert decided["decidedBy"] == {"id": world.human.id}
    assert await proposal_row(api, proposal["id"]) == {
        "status": "REJECTED",
        "decided_by": world.human.id,
        "decision_note": "UTC is the rule",
        "result_id": None,
    }
    after = await database_state(api.admin_engine)
    assert changed_tables(before, after) == {"proposals"}
    assert after["proposals"][0] == before["proposals"][0]
    assert (await read(api, world.human.token, target_id))["status"] == "ACTIVE"
    assert await successors_of(api.admin_engine, target_id) == []


@pytest.mark.parametrize("first", [True, False], ids=["accepted", "rejected"])
@pytest.mark.parametrize("second", [True, False], ids=["then-accept", "then-reject"])
async def test_r7_deciding_twice_is_a_conflict(api: Api, world: World, first: bool, second: bool) -> None:
    _, proposal = await propose_replacement(api, world)
    await decide(api, world.human.token, proposal["id"], first)
    before = await database_state(api.admin_engine)

    error = await api.fail(world.human.token, DECIDE, i=proposal["id"], a=second, n="again")

    assert_code(error, "CONFLICT")
    assert error["extensions"]["currentStatus"] == ("ACCEPTED" if first else "REJECTED")
    assert await database_state(api.admin_engine) == before


async def test_r7_accepting_after_a_human_replaced_the_target_is_a_conflict(api: Api, world: World) -> None:
    target_id, proposal = await propose_replacement(api, world)
    direct = await api.run(
        world.human.token,
        SUPERSEDE,
        **supersession(world.project_id, target_id, "Use TAI", "physics"),
    )
    head = direct["supersedeItem"]["replacement"]["id"]
    before = await database_state(api.admin_engine)

    error = await api.fail(world.human.token, DECIDE, i=proposal["id"], a=True, n=None)

    assert_code(error, "CONFLICT")
    assert error["extensions"]["currentHeadId"] == head
    assert head in error["message"]
    assert await database_state(api.admin_engine) == before
    assert (await proposal_row(api, proposal["id"]))["status"] == "PENDING"

    # The stale proposal can still be closed by rejecting it, which touches only the proposal.
    decided = await decide(api, world.human.token, proposal["id"], False, "overtaken")
    assert decided["status"] == "REJECTED"
    assert changed_tables(before, await database_state(api.admin_engine)) == {"proposals"}


async def test_r7_concurrent_decisions_write_one_replacement(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    """Two humans (a few times each) accept one proposal at once: one decision, one replacement."""
    other = await api.actor(world.human.token, "HUMAN", "bob")
    await api.add_member(world.human.token, world.project_id, other.id)
    target_id, proposal = await propose_replacement(api, world)
    tokens = [world.human.token, other.token] * 3

    with peak_connections(engine) as live:
        bodies = await asyncio.gather(
            *(api.post(token, DECIDE, {"i": proposal["id"], "a": True, "n": None}) for token in tokens)
        )
    assert live[1] > 1, "the decisions did not overlap"

    won = [body["data"]["decideProposal"] for body in bodies if not body.get("errors")]
    assert len(won) == 1, bodies
    assert {body["errors"][0]["extensions"]["code"] for body in bodies if body.get("errors")} == {"CONFLICT"}
    assert await successors_of(api.admin_engine, target_id) == [{"id": won[0]["result"]["id"]}]


# --- LOAD_BEARING proposals (R5) -----------------------------------------------------------------


async def suggested(api: Api, world: World) -> tuple[str, dict[str, Any]]:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="PCI scope")
    proposal = await api.run(world.agent.token, SUGGEST, i=item["id"], r="audits depend on it")
    return item["id"], proposal["suggestLoadBearing"]


async def test_r5_accepting_a_load_bearing_suggestion_settles_it(api: Api, world: World) -> None:
    item_id, proposal = await suggested(api, world)
    assert (proposal["kind"], proposal["status"]) == ("LOAD_BEARING", "PENDING")

    decided = await decide(api, world.human.token, proposal["id"], True)

    assert decided["status"] == "ACCEPTED"
    assert decided["result"]["id"] == item_id
    assert decided["decidedBy"] == {"id": world.human.id}
    found = await read(api, world.agent.token, item_id)
    assert (found["loadBearing"], found["loadBearingSuggested"]) == (True, False)
    row = await item_row(api.admin_engine, item_id)
    assert (row["load_bearing"], row["load_bearing_set_by"]) == (True, world.human.id)
    events = await events_of(api.admin_engine, item_id)
    assert [(e["event"], e["actor"]) for e in events][-1] == ("LOAD_BEARING_SET", world.human.id)


async def test_r5_rejecting_a_load_bearing_suggestion_clears_it(api: Api, world: World) -> None:
    item_id, proposal = await suggested(api, world)
    before = await database_state(api.admin_engine)

    await reject(api, world, proposal["id"], "not yet")

    found = await read(api, world.agent.token, item_id)
    assert (found["loadBearing"], found["loadBearingSuggested"]) == (False, False)
    assert (await item_row(api.admin_engine, item_id))["load_bearing_set_by"] is None
    # The item's log says a human declined it (R6), and its state from then on is recorded (R9).
    assert changed_tables(before, await database_state(api.admin_engine)) == {
        "proposals",
        "items",
        "item_events",
        "item_states",
    }
    events = await events_of(api.admin_engine, item_id)
    assert [(e["event"], e["actor"]) for e in events][-1] == ("LOAD_BEARING_DECLINED", world.human.id)


@pytest.mark.parametrize("kind", ["SUPERSESSION", "LOAD_BEARING"])
@pytest.mark.parametrize("accept", [True, False], ids=["accept", "reject"])
async def test_r5_agent_cannot_decide_a_proposal(api: Api, world: World, kind: str, accept: bool) -> None:
    if kind == "SUPERSESSION":
        _, proposal = await propose_replacement(api, world)
    else:
        _, proposal = await suggested(api, world)
    before = await database_state(api.admin_engine)

    error = await api.fail(world.agent.token, DECIDE, i=proposal["id"], a=accept, n="self-approved")

    assert_human_required(error)
    assert await database_state(api.admin_engine) == before
    assert (await proposal_row(api, proposal["id"]))["status"] == "PENDING"


# --- replacing a load-bearing item (R5 with R7) --------------------------------------------------


async def supersede_load_bearing(
    api: Api, world: World, asserter: Who, replacer: Who, statements: tuple[str, str], reason: str
) -> Any:
    """``asserter``'s item, made load-bearing by the human, then ``replacer``'s ``supersedeItem`` answer."""
    old = await api.assert_item(asserter.token, projectId=world.project_id, statement=statements[0])
    await api.run(world.human.token, SET_LOAD_BEARING, i=old["id"])
    replacing = supersession(world.project_id, old["id"], statements[1], reason)
    return (await api.run(replacer.token, SUPERSEDE, **replacing))["supersedeItem"]


async def test_r5_human_replacement_of_a_load_bearing_item_stays_load_bearing(api: Api, world: World) -> None:
    statements = ("PCI: no card data", "PCI: tokenised card data only")
    result = await supersede_load_bearing(api, world, world.human, world.human, statements, "new vault")

    replacement = result["replacement"]
    assert (replacement["loadBearing"], replacement["loadBearingSuggested"]) == (True, False)
    assert (await item_row(api.admin_engine, replacement["id"]))["load_bearing_set_by"] == world.human.id
    pending = await api.run(world.human.token, LIST, p=world.project_id, s="PENDING")
    assert pending["proposals"] == []


async def test_r5_r7_agent_replacement_of_an_unconfirmed_load_bearing_item_waits_for_a_human(
    api: Api, world: World
) -> None:
    """Load-bearing is a human's ruling even on an item nobody confirmed: an agent only proposes."""
    old = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Rate limit 100/s")
    await api.run(world.human.token, SET_LOAD_BEARING, i=old["id"])
    before = await database_state(api.admin_engine)
    replacing = supersession(world.project_id, old["id"], "Rate limit 200/s", "new hardware")

    result = (await api.run(world.agent.token, SUPERSEDE, **replacing))["supersedeItem"]

    assert result["__typename"] == "PendingConfirmation"
    assert changed_tables(before, await database_state(api.admin_engine)) == {"proposals"}
    untouched = await read(api, world.agent.token, old["id"])
    assert (untouched["status"], untouched["loadBearing"]) == ("ACTIVE", True)

    # The human accepts it: the replacement is the agent's, confirmed, and keeps the guarantee.
    decided = await decide(api, world.human.token, result["proposal"]["id"], True)
    replacement = decided["result"]
    assert (replacement["loadBearing"], replacement["authority"]) == (True, "HUMAN_CONFIRMED")
    assert replacement["provenance"]["assertedBy"]["id"] == world.agent.id
    assert (await read(api, world.agent.token, old["id"]))["status"] == "SUPERSEDED"


async def test_r5_accepted_supersession_of_a_load_bearing_item_is_load_bearing(
    api: Api, world: World
) -> None:
    """The human who accepts the agent's replacement settles the guarantee for it too."""
    statements = ("Keep 7 years", "Keep 10 years")
    result = await supersede_load_bearing(api, world, world.human, world.agent, statements, "new regulation")
    proposal = result["proposal"]

    decided = await decide(api, world.human.token, proposal["id"], True)

    replacement = decided["result"]
    assert (replacement["loadBearing"], replacement["loadBearingSuggested"]) == (True, False)
    row = await item_row(api.admin_engine, replacement["id"])
    assert row["load_bearing_set_by"] == world.human.id


# --- listing -------------------------------------------------------------------------------------


async def test_r5_proposals_list_newest_first_and_filter_by_status(api: Api, world: World) -> None:
    made = []
    for _ in range(3):
        _, proposal = await suggested(api, world)
        made.append(proposal["id"])
    _, supersession_proposal = await propose_replacement(api, world)
    made.append(supersession_proposal["id"])
    await decide(api, world.human.token, made[1], False)
    await decide(api, world.human.token, made[2], True)

    listed = (await api.run(world.agent.token, LIST, p=world.project_id, s=None))["proposals"]
    assert [p["id"] for p in listed] == made[::-1]
    assert [p["kind"] for p in listed] == [
        "SUPERSESSION",
        "LOAD_BEARING",
        "LOAD_BEARING",
        "LOAD_BEARING",
    ]
    for status, expected in (
        ("PENDING", [made[3], made[0]]),
        ("REJECTED", [made[1]]),
        ("ACCEPTED", [made[2]]),
    ):
        found = (await api.run(world.agent.token, LIST, p=world.project_id, s=status))["proposals"]
        assert [p["id"] for p in found] == expected, status
        assert {p["status"] for p in found} == {status}


# --- R6: the server's role cannot erase or rewrite a proposal -----------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM proposals WHERE id = :id",
        "UPDATE proposals SET replacement = '{}'::jsonb WHERE id = :id",
        "UPDATE proposals SET proposed_by = decided_by WHERE id = :id",
        "UPDATE proposals SET target_id = result_id WHERE id = :id",
        "UPDATE proposals SET proposed_at = now() - interval '1 day' WHERE id = :id",
    ],
    ids=["delete", "replacement", "proposed-by", "target", "proposed-at"],
)
async def test_r6_server_role_cannot_erase_or_rewrite_a_proposal(
    api: Api, engine: AsyncEngine, world: World, statement: str
) -> None:
    _, proposal = await propose_replacement(api, world)
    await decide(api, world.human.token, proposal["id"], True)
    await denied_on_a_visible_row(
        engine, api.admin_engine, world.human, "proposals", proposal["id"], statement
    )


@pytest.mark.parametrize("scope", ["PRIVATE", "GRANTS"])
async def test_r7_a_replacement_no_human_could_accept_is_refused(api: Api, world: World, scope: str) -> None:
    """A proposal a human is asked to decide must be one the human can accept and then read.

    Otherwise an agent could park a replacement (PRIVATE to itself, or GRANTS that
    leave the human out) that no human can ever accept: the insert's RETURNING row
    is invisible to the deciding human and the database refuses it.
    """
    target = await api.assert_item(world.human.token, projectId=world.project_id, statement="Use UTC")
    grants = {"grantActorIds": [world.agent.id]} if scope == "GRANTS" else {}
    proposing = supersession(
        world.project_id, target["id"], "Use local time", "users asked", scope=scope, **grants
    )
    # A narrower replacement is refused up front, with nothing written.
    await refused_as_bad_input(api, world.agent.token, SUPERSEDE, "input.replacement.scope", **proposing)
