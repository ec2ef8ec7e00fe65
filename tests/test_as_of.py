"""R9: one moment per read, an item's log through the API (R6), and freshness (R10), by example.

The random timelines are in test_as_of_property.py; these are the cases worth
naming: the issue's own example, what a proposal or a dispute looked like
before it was decided, a replacement that waited for a human, two changes in
one transaction, the log and its redaction, pages of the past, freshness.
Moments are read back from what the database recorded (``events { at }``),
never from the client's clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from mneia.freshness import AT_DECAY, freshness
from tests.graphql import Api, World
from tests.support import CONFIRM_ITEM, MAKE_LOAD_BEARING, SUPERSEDE, supersession

AT = "query($i: ID!) { item(id: $i) { events { at } } }"


async def instants(api: Api, token: str, item_id: str) -> list[datetime]:
    events = (await api.run(token, AT, i=item_id))["item"]["events"]
    return [datetime.fromisoformat(event["at"]) for event in events]


def middle(earlier: datetime, later: datetime) -> str:
    assert earlier < later
    return (earlier + (later - earlier) / 2).isoformat()


async def test_r9_a_replacement_made_after_the_moment_is_not_its_superseded_by(
    api: Api, world: World
) -> None:
    """The issue's example: at T the item was ACTIVE and nothing had replaced it."""
    made = await api.assert_item(world.agent.token, projectId=world.project_id, statement="PSP SDK is 4.2")
    (asserted,) = await instants(api, world.agent.token, made["id"])
    await api.run(
        world.agent.token,
        SUPERSEDE,
        **supersession(world.project_id, made["id"], "PSP SDK is 4.3", "new SDK"),
    )
    superseded = (await instants(api, world.agent.token, made["id"]))[-1]

    query = "query($id: ID!, $t: DateTime) { item(id: $id, asOf: $t) { status supersededBy { id } } }"
    then = await api.run(world.agent.token, query, id=made["id"], t=middle(asserted, superseded))
    assert then["item"] == {"status": "ACTIVE", "supersededBy": None}
    now = await api.run(world.agent.token, query, id=made["id"], t=None)
    assert now["item"]["status"] == "SUPERSEDED" and now["item"]["supersededBy"] is not None


PENDING_THEN = """query($i: ID!, $r: ID!, $t: DateTime) {
  target: item(id: $i, asOf: $t) {
    status supersededBy { id } chain { id } proposals { kind status result { id } }
  }
  replacement: item(id: $r, asOf: $t) { id }
}"""


async def test_r9_a_replacement_waiting_for_a_human_did_not_exist_before_it_was_accepted(
    api: Api, world: World
) -> None:
    """Accepted, a replacement carries the time the agent proposed it, but is believed only once accepted."""
    made = await api.assert_item(world.human.token, projectId=world.project_id, statement="Fees in cents")
    proposed = await api.run(
        world.agent.token,
        SUPERSEDE,
        **supersession(world.project_id, made["id"], "Fees in mills", "precision"),
    )
    proposal = proposed["supersedeItem"]["proposal"]["id"]
    decided = await api.run(
        world.human.token,
        "mutation($p: ID!) { decideProposal(id: $p, accept: true) {"
        " proposedAt decidedAt result { id assertedAt } } }",
        p=proposal,
    )
    result = decided["decideProposal"]
    proposed_at, decided_at = (datetime.fromisoformat(result[key]) for key in ("proposedAt", "decidedAt"))
    assert result["result"]["assertedAt"] == result["proposedAt"]  # said when proposed (R7)

    replacement = result["result"]["id"]
    waiting = await api.run(
        world.agent.token, PENDING_THEN, i=made["id"], r=replacement, t=middle(proposed_at, decided_at)
    )
    assert waiting["replacement"] is None
    assert waiting["target"] == {
        "status": "ACTIVE",
        "supersededBy": None,
        "chain": [{"id": made["id"]}],
        "proposals": [{"kind": "SUPERSESSION", "status": "PENDING", "result": None}],
    }
    accepted = await api.run(
        world.agent.token, PENDING_THEN, i=made["id"], r=replacement, t=decided_at.isoformat()
    )
    assert accepted["replacement"] == {"id": replacement}
    assert accepted["target"]["status"] == "SUPERSEDED"
    assert accepted["target"]["chain"] == [{"id": made["id"]}, {"id": replacement}]
    assert accepted["target"]["proposals"][0]["result"] == {"id": replacement}


DISPUTE_THEN = """query($i: ID!, $t: DateTime) { item(id: $i, asOf: $t) {
  status authority statusReason
  disputes { status resolvedBy { id } keptItem { id } resolutionNote item { status } contested { status } }
} }"""


async def test_r9_a_dispute_resolved_later_is_open_as_of_before(api: Api, world: World) -> None:
    contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="Port 5432")
    newcomer = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Port 5433", contradicts=[contested["id"]]
    )
    dispute = (await api.run(world.agent.token, DISPUTE_THEN, i=newcomer["id"], t=None))["item"]
    await api.run(
        world.human.token,
        'mutation($d: ID!, $k: ID!) { resolveDispute(id: $d, keepItemId: $k, note: "checked") { id } }',
        d=(
            await api.run(
                world.agent.token, "query($i: ID!) { item(id: $i) { disputes { id } } }", i=newcomer["id"]
            )
        )["item"]["disputes"][0]["id"],
        k=contested["id"],
    )
    raised, resolved = (await instants(api, world.agent.token, newcomer["id"]))[-2:]
    before = (await api.run(world.agent.token, DISPUTE_THEN, i=newcomer["id"], t=middle(raised, resolved)))[
        "item"
    ]
    assert before == dispute
    assert before["status"] == "DISPUTED" and before["disputes"] == [
        {
            "status": "OPEN",
            "resolvedBy": None,
            "keptItem": None,
            "resolutionNote": None,
            "item": {"status": "DISPUTED"},
            "contested": {"status": "ACTIVE"},
        }
    ]
    after = (await api.run(world.agent.token, DISPUTE_THEN, i=newcomer["id"], t=resolved.isoformat()))["item"]
    assert after["status"] == "RETIRED"
    assert after["disputes"][0]["status"] == "RESOLVED" and after["disputes"][0]["keptItem"] == {
        "id": contested["id"]
    }


LOG = """query($i: ID!, $t: DateTime) { item(id: $i, asOf: $t) {
  events { kind actor { name } at fromStatus toStatus loadBearing confirmed reason }
} }"""


async def test_r6_an_items_events_are_its_whole_life_oldest_first(api: Api, world: World) -> None:
    made = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use UTC")
    await api.run(world.agent.token, "mutation($i: ID!) { suggestLoadBearing(id: $i) { id } }", i=made["id"])
    await api.run(
        world.human.token,
        "mutation($i: ID!) { setLoadBearing(id: $i, loadBearing: false) { id } }",
        i=made["id"],
    )
    # Two changes in one operation: one transaction, one instant, in the order they happened.
    await api.run(
        world.human.token,
        "mutation($i: ID!) { confirmItem(id: $i) { id } setLoadBearing(id: $i, loadBearing: true) { id } }",
        i=made["id"],
    )
    await api.run(world.agent.token, "mutation($i: ID!) { verifyItem(id: $i) { id } }", i=made["id"])
    await api.run(
        world.human.token,
        'mutation($i: ID!) { retireItem(id: $i, reason: "moved to the ADR") { id } }',
        i=made["id"],
    )
    events = (await api.run(world.agent.token, LOG, i=made["id"], t=None))["item"]["events"]
    assert [(e["kind"], e["actor"]["name"], e["fromStatus"], e["toStatus"]) for e in events] == [
        ("ASSERTED", "claude-code", None, "ACTIVE"),
        ("LOAD_BEARING_SUGGESTED", "claude-code", "ACTIVE", "ACTIVE"),
        ("LOAD_BEARING_DECLINED", "alice", "ACTIVE", "ACTIVE"),
        ("CONFIRMED", "alice", "ACTIVE", "ACTIVE"),
        ("LOAD_BEARING_SET", "alice", "ACTIVE", "ACTIVE"),
        ("VERIFIED", "claude-code", "ACTIVE", "ACTIVE"),
        ("STATUS_CHANGED", "alice", "ACTIVE", "RETIRED"),
    ]
    assert [(e["loadBearing"], e["confirmed"]) for e in events] == [
        (False, False),
        (False, False),
        (False, False),
        (False, True),
        (True, True),
        (True, True),
        (True, True),
    ]
    assert events[-1]["reason"] == "moved to the ADR"
    at = [datetime.fromisoformat(e["at"]) for e in events]
    assert at[3] == at[4] and len(set(at)) == 6 and at == sorted(at)

    # As of the instant of that one transaction: both of its changes, one state.
    then = await api.run(
        world.agent.token,
        "query($i: ID!, $t: DateTime) { item(id: $i, asOf: $t) { authority loadBearing events { kind } } }",
        i=made["id"],
        t=at[3].isoformat(),
    )
    assert then["item"]["authority"] == "HUMAN_CONFIRMED" and then["item"]["loadBearing"] is True
    assert [e["kind"] for e in then["item"]["events"]][-2:] == ["CONFIRMED", "LOAD_BEARING_SET"]
    just_before = await api.run(world.agent.token, LOG, i=made["id"], t=middle(at[2], at[3]))
    assert len(just_before["item"]["events"]) == 3


async def test_r6_r2_an_event_reason_hides_what_the_reader_cannot_see(api: Api, world: World) -> None:
    """A reason naming an item the reader cannot see reads [hidden] in the log, as in statusReason."""
    secret = await api.assert_item(
        world.human.token, projectId=world.project_id, statement="Vendor is Acme", scope="PRIVATE"
    )
    public = await api.assert_item(
        world.human.token,
        projectId=world.project_id,
        statement="Vendor is Initech",
        contradicts=[secret["id"]],
    )
    query = "query($i: ID!) { item(id: $i) { statusReason events { kind reason } } }"
    seen_by_human = (await api.run(world.human.token, query, i=public["id"]))["item"]
    seen_by_agent = (await api.run(world.agent.token, query, i=public["id"]))["item"]
    assert seen_by_human["events"] == [{"kind": "ASSERTED", "reason": f"contradicts {secret['id']}"}]
    assert seen_by_agent["events"] == [{"kind": "ASSERTED", "reason": "contradicts [hidden]"}]
    assert seen_by_agent["statusReason"] == "contradicts [hidden]"


async def test_r9_pages_of_the_past_follow_their_cursor_newest_first(api: Api, world: World) -> None:
    project = await api.project(world.human.token, "paging")
    made = [
        (await api.assert_item(world.human.token, projectId=project, statement=f"fact {n}"))["id"]
        for n in range(5)
    ]
    later = await api.assert_item(world.human.token, projectId=project, statement="said later")
    moment = middle(
        (await instants(api, world.human.token, made[-1]))[0],
        (await instants(api, world.human.token, later["id"]))[0],
    )
    page = """query($p: ID!, $t: DateTime, $a: String) {
      items(projectId: $p, asOf: $t, first: 2, after: $a) {
        totalCount pageInfo { hasNextPage endCursor } nodes { id }
      }
    }"""
    seen, after = [], None
    while True:
        found = (await api.run(world.human.token, page, p=project, t=moment, a=after))["items"]
        assert found["totalCount"] == 5
        seen += [node["id"] for node in found["nodes"]]
        if not found["pageInfo"]["hasNextPage"]:
            break
        after = found["pageInfo"]["endCursor"]
    assert seen == list(reversed(made))


FRESH = "query($i: ID!, $t: DateTime) { item(id: $i, asOf: $t) { stale freshness } }"


@pytest.mark.parametrize(("age", "stale"), [(0.5, False), (1.0, False), (2.0, True)])
async def test_r10_freshness_is_judged_at_the_moment_read(
    api: Api, world: World, age: float, stale: bool
) -> None:
    made = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="SDK 4.2", decayAfter="PT1H"
    )
    (asserted,) = await instants(api, world.agent.token, made["id"])
    moment = asserted + timedelta(hours=age)
    then = (await api.run(world.agent.token, FRESH, i=made["id"], t=moment.isoformat()))["item"]
    assert then == {
        "stale": stale,
        "freshness": pytest.approx(freshness(timedelta(hours=age), timedelta(hours=1))),
    }
    if age == 1.0:
        assert then["freshness"] == pytest.approx(AT_DECAY)
    now = (await api.run(world.agent.token, FRESH, i=made["id"], t=None))["item"]
    assert now["stale"] is False and now["freshness"] > 0.99


async def test_r10_an_item_that_does_not_decay_is_always_fresh(api: Api, world: World) -> None:
    made = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Money in cents")
    (asserted,) = await instants(api, world.agent.token, made["id"])
    far = (asserted + timedelta(days=3650)).isoformat()
    assert (await api.run(world.agent.token, FRESH, i=made["id"], t=far))["item"] == {
        "stale": False,
        "freshness": 1.0,
    }


async def test_r9_a_session_ended_later_was_open_then(api: Api, world: World) -> None:
    session = (
        await api.run(
            world.agent.token,
            "mutation($p: ID!) { startSession(input: {projectId: $p}) { id } }",
            p=world.project_id,
        )
    )["startSession"]["id"]
    made = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="x", sessionId=session
    )
    (asserted,) = await instants(api, world.agent.token, made["id"])
    await api.run(world.agent.token, "mutation($s: ID!) { endSession(id: $s) { id } }", s=session)
    query = "query($i: ID!, $t: DateTime) { item(id: $i, asOf: $t) { provenance { session { endedAt } } } }"
    then = await api.run(world.agent.token, query, i=made["id"], t=asserted.isoformat())
    assert then["item"]["provenance"]["session"]["endedAt"] is None
    now = await api.run(world.agent.token, query, i=made["id"], t=None)
    assert now["item"]["provenance"]["session"]["endedAt"] is not None


async def test_r9_confirmation_and_load_bearing_then_are_the_states_not_the_rows(
    api: Api, world: World
) -> None:
    """The moment's own confirmation and load-bearing flag: a later human ruling is not seen before it."""
    made = await api.assert_item(world.agent.token, projectId=world.project_id, statement="No PII in logs")
    await api.run(world.human.token, CONFIRM_ITEM, i=made["id"])
    await api.run(world.human.token, MAKE_LOAD_BEARING, i=made["id"])
    asserted, confirmed, settled = await instants(api, world.agent.token, made["id"])
    query = """query($i: ID!, $t: DateTime) { item(id: $i, asOf: $t) {
      authority loadBearing confirmation { by { name } } rendered } }"""
    first = (await api.run(world.agent.token, query, i=made["id"], t=middle(asserted, confirmed)))["item"]
    assert (first["authority"], first["loadBearing"], first["confirmation"]) == (
        "AGENT_ASSERTED",
        False,
        None,
    )
    assert first["rendered"].startswith("[agent-asserted")
    second = (await api.run(world.agent.token, query, i=made["id"], t=middle(confirmed, settled)))["item"]
    assert (second["authority"], second["loadBearing"]) == ("HUMAN_CONFIRMED", False)
    assert second["confirmation"] == {"by": {"name": "alice"}}
    assert second["rendered"].startswith("[human-confirmed · alice")
