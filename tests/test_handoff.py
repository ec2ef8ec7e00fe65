"""R12 by example: checkpoint, handoff, latestHandoff and resume, end to end through the API.

The full stop→resume cycle across actors; a checkpoint's writes are
assertItem's and supersedeItem's (disputes, suggestions, an agent's
replacement of a human ruling pending); retries with an idempotency key,
also concurrent; what a reader is shown of a handoff (R1, R2); the guarantee
on resume under a tiny budget (R11.1); a project with no handoff yet; bad
input (R14). The random-budget property is in test_handoff_property.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.rehydration import handoff_text, tokens
from mneia.storage.tables import handoffs
from tests.graphql import Api, Who, World
from tests.support import (
    CONFIRM_ITEM,
    MAKE_LOAD_BEARING,
    as_caller,
    assert_code,
    counted,
    database_state,
    rehydrate,
    rows,
)

ITEM = "id statement status authority scope loadBearingSuggested provenance { session { id } }"
NOTE = f"previous {{ {ITEM} }} replacement {{ {ITEM} }} reason at"
HANDOFF = f"""id createdAt summary nextSteps openQuestions rendered tokens encoding idempotencyKey
  session {{ id endedAt task }} project {{ id }} createdBy {{ id name kind }}
  itemsAsserted {{ {ITEM} }}
  supersessions {{ {NOTE} }}
  pendingConfirmations {{ id kind status replacementStatement target {{ id statement }} }}
  disputes {{ id status item {{ id }} contested {{ id }} }}"""
CHECKPOINT = f"mutation($i: CheckpointInput!) {{ checkpoint(input: $i) {{ {HANDOFF} }} }}"
LATEST = f"query($p: ID!) {{ latestHandoff(projectId: $p) {{ {HANDOFF} }} }}"
BY_ID = f"query($h: ID!) {{ handoff(id: $h) {{ {HANDOFF} }} }}"
SLICE = """tokenBudget tokensUsed overBudget rendered
  entries { reason tokens item { id statement kind status } }
  supersessions { previous { id } replacement { id } }"""
RESUME = f"""query($i: ResumeInput!) {{ resume(input: $i) {{
  rendered tokenBudget tokensUsed overBudget encoding
  handoff {{ {HANDOFF} }}
  slice {{ {SLICE} }} }} }}"""
START = """mutation($p: ID!, $t: String) { startSession(input: {projectId: $p, task: $t,
  client: {tool: "claude-code", version: "1.0.98"}, externalId: "s-1", deepLink: "claude --resume s-1"})
  { id } }"""


async def start(api: Api, who: Who, project: str, task: str = "Add partial refunds") -> str:
    return str((await api.run(who.token, START, p=project, t=task))["startSession"]["id"])


async def checkpoint(api: Api, who: Who, session: str, **fields: Any) -> dict[str, Any]:
    data = await api.run(who.token, CHECKPOINT, i={"sessionId": session, "summary": "Stopped.", **fields})
    return data["checkpoint"]


async def resume(api: Api, who: Who, project: str, task: str, budget: int) -> dict[str, Any]:
    data = await api.run(who.token, RESUME, i={"projectId": project, "task": task, "tokenBudget": budget})
    return data["resume"]


def fact(project: str, statement: str, **fields: Any) -> dict[str, Any]:
    return {"projectId": project, "kind": "FACT", "statement": statement, **fields}


async def ruled(api: Api, world: World, statement: str, kind: str = "CONSTRAINT") -> str:
    """A human's ruling: confirmed (a person's own word), load-bearing for a CONSTRAINT."""
    made = await api.assert_item(
        world.human.token, projectId=world.project_id, kind=kind, statement=statement
    )
    if kind == "CONSTRAINT":
        await api.run(world.human.token, MAKE_LOAD_BEARING, i=made["id"])
    return str(made["id"])


async def handoff_count(admin_engine: AsyncEngine) -> int:
    (found,) = await rows(admin_engine, "SELECT count(*) AS n FROM handoffs")
    return int(found["n"])


# --- the cycle --------------------------------------------------------------------------------


async def test_r12_an_agent_stops_then_a_human_and_another_agent_resume(api: Api, world: World) -> None:
    """R12: the agent's checkpoint writes its items, ends the session and leaves the handoff; Alice,
    then another agent, resume with it and a slice for their own task, both in ``rendered``."""
    p = world.project_id
    rule = await ruled(api, world, "Refunds must never exceed the captured amount")
    human_fact = await ruled(api, world, "The PSP settles refunds in two days", kind="FACT")
    session = await start(api, world.agent, p)
    earlier = await api.assert_item(
        world.agent.token, projectId=p, sessionId=session, statement="Refund v1 API"
    )
    replaced = await api.assert_item(world.agent.token, projectId=p, statement="Refunds go through the queue")
    left = await checkpoint(
        api,
        world.agent,
        session,
        summary="Partial refunds: the endpoint is written.\nThe ledger entries are not.",
        nextSteps=["Write the ledger entries", "Test a refund of a partial capture"],
        openQuestions=["Does the PSP allow two refunds of one capture?"],
        items=[
            fact(p, "Partial refunds are POST /refunds with a capture id", confidence=0.9),
            {**fact(p, "Refunds are capped per capture"), "kind": "CONSTRAINT", "suggestLoadBearing": True},
            fact(p, "The PSP settles refunds the same day", contradicts=[human_fact]),
        ],
        supersessions=[
            {
                "targetId": replaced["id"],
                "reason": "The queue drops refunds over 10k",
                "replacement": fact(p, "Refunds are sent synchronously"),
            },
            {
                "targetId": rule,
                "reason": "Partial captures",
                "replacement": {**fact(p, "A refund never exceeds its capture"), "kind": "CONSTRAINT"},
            },
        ],
        idempotencyKey="stop-1",
    )

    # What the checkpoint wrote: as assertItem and supersedeItem would, tied to the session.
    assert left["session"] == {
        "id": session,
        "endedAt": left["session"]["endedAt"],
        "task": "Add partial refunds",
    }
    assert left["session"]["endedAt"] is not None
    assert left["createdBy"] == {"id": world.agent.id, "name": "claude-code", "kind": "AGENT"}
    asserted = {i["statement"]: i for i in left["itemsAsserted"]}
    assert list(asserted) == [
        "Refund v1 API",
        "Partial refunds are POST /refunds with a capture id",
        "Refunds are capped per capture",
        "The PSP settles refunds the same day",
        "Refunds are sent synchronously",
    ]
    assert all(i["provenance"]["session"] == {"id": session} for i in left["itemsAsserted"])
    assert all(i["authority"] in ("AGENT_ASSERTED", "DISPUTED") for i in left["itemsAsserted"])
    assert asserted["The PSP settles refunds the same day"]["status"] == "DISPUTED"
    assert asserted["Refunds are capped per capture"]["loadBearingSuggested"] is True
    assert earlier["id"] == asserted["Refund v1 API"]["id"]
    (note,) = left["supersessions"]
    assert (note["previous"]["id"], note["previous"]["status"]) == (replaced["id"], "SUPERSEDED")
    assert note["replacement"]["statement"] == "Refunds are sent synchronously"
    assert note["reason"] == "The queue drops refunds over 10k"
    # The agent's replacement of Alice's ruling waits for her; the rule is untouched.
    pending = {(c["kind"], c["target"]["id"]): c for c in left["pendingConfirmations"]}
    assert pending[("SUPERSESSION", rule)]["replacementStatement"] == "A refund never exceeds its capture"
    assert ("LOAD_BEARING", asserted["Refunds are capped per capture"]["id"]) in pending
    assert all(c["status"] == "PENDING" for c in left["pendingConfirmations"])
    assert [(d["status"], d["contested"]["id"]) for d in left["disputes"]] == [("OPEN", human_fact)]
    rule_now = await api.run(world.human.token, "query($i: ID!) { item(id: $i) { status } }", i=rule)
    assert rule_now["item"]["status"] == "ACTIVE"

    # The text: every section, the authority of every line (R4), counted with the slices' encoding.
    shown = left["rendered"]
    assert left["encoding"] == "cl100k_base" and left["tokens"] == tokens.count(shown)
    assert shown.startswith("# Handoff: payments\nLeft by claude-code 1.0.98 (agent claude-code) ")
    for heading in (handoff_text.WHERE, handoff_text.NEXT, handoff_text.QUESTIONS, handoff_text.ASSERTED):
        assert f"\n{heading}\n" in shown
    assert "Task: Add partial refunds\n" in shown and "Conversation: claude --resume s-1\n" in shown
    assert "> Partial refunds: the endpoint is written.\n> The ledger entries are not.\n" in shown
    assert "1. Write the ledger entries\n2. Test a refund of a partial capture\n" in shown
    assert "[agent-asserted · claude-code 1.0.98 · " in shown and "confidence 0.90" in shown
    assert "[DISPUTED · contradicts " in shown
    assert "because: The queue drops refunds over 10k" in shown
    assert "- PENDING: supersession proposed by claude-code " in shown
    assert '→ replace with: "A refund never exceeds its capture" because: Partial captures' in shown
    assert "- OPEN: dispute raised by claude-code " in shown
    assert "[human-confirmed · alice · " in shown  # the ruling the proposal is about, as a ruling

    # Alice resumes: the newest handoff she can see, then a slice for her task, in one budget.
    latest = (await api.run(world.human.token, LATEST, p=p))["latestHandoff"]
    assert latest["id"] == left["id"] and latest["rendered"] == shown
    task = "Review the partial refund ledger entries"
    back = await resume(api, world.human, p, task, 3000)
    assert back["handoff"]["id"] == left["id"]
    heading = handoff_text.for_task(task)
    assert back["rendered"] == back["handoff"]["rendered"] + heading + back["slice"]["rendered"]
    assert back["tokensUsed"] == tokens.count(back["rendered"])
    assert (
        back["tokensUsed"] == back["handoff"]["tokens"] + tokens.count(heading) + back["slice"]["tokensUsed"]
    )
    assert back["slice"]["tokenBudget"] == 3000 - back["handoff"]["tokens"] - tokens.count(heading)
    assert back["tokensUsed"] <= 3000 and back["overBudget"] is False
    guaranteed = [e["item"]["id"] for e in back["slice"]["entries"] if e["reason"] == "GUARANTEED"]
    assert guaranteed == [rule]

    # Alice decides; another agent resumes later and reads the decision in the same handoff.
    proposal = pending[("SUPERSESSION", rule)]["id"]
    decide = "mutation($i: ID!) { decideProposal(id: $i, accept: true) { status } }"
    await api.run(world.human.token, decide, i=proposal)
    capped = asserted["Refunds are capped per capture"]["id"]
    await api.run(world.human.token, MAKE_LOAD_BEARING, i=capped)
    other = await api.actor(world.human.token, "AGENT", "codex")
    await api.add_member(world.human.token, p, other.id)
    later = await resume(api, other, p, "Ship partial refunds", 4000)
    assert later["handoff"]["id"] == left["id"]
    decided = {(c["kind"], c["target"]["id"]): c["status"] for c in later["handoff"]["pendingConfirmations"]}
    assert decided == {("SUPERSESSION", rule): "ACCEPTED", ("LOAD_BEARING", capped): "ACCEPTED"}
    assert "- ACCEPTED: supersession proposed by claude-code " in later["rendered"]
    entries = {e["item"]["statement"]: e["reason"] for e in later["slice"]["entries"]}
    assert entries["A refund never exceeds its capture"] == "GUARANTEED"  # the accepted rule, load-bearing
    assert "Refunds must never exceed the captured amount" not in entries
    # What the handoff shows already is not spent twice: its items are no SCORED or FILL entries of the
    # slice, its replacement no note; a guaranteed constraint stays in whatever the handoff shows.
    assert entries["The PSP settles refunds in two days"] == "SCORED"
    assert {i["id"] for i in later["handoff"]["itemsAsserted"]} & {
        e["item"]["id"] for e in later["slice"]["entries"]
    } == {capped}
    assert entries["Refunds are capped per capture"] == "GUARANTEED"
    noted = [n["replacement"]["id"] for n in later["slice"]["supersessions"]]
    assert note["replacement"]["id"] not in noted


async def test_r12_latest_is_the_newest_and_a_human_may_checkpoint_too(api: Api, world: World) -> None:
    p = world.project_id
    first = await checkpoint(api, world.agent, await start(api, world.agent, p), summary="First stop")
    second = await checkpoint(api, world.human, await start(api, world.human, p, "Review"), summary="Second")
    assert first["id"] != second["id"]
    latest = (await api.run(world.agent.token, LATEST, p=p))["latestHandoff"]
    assert latest["id"] == second["id"]
    assert latest["rendered"].splitlines()[1].startswith("Left by alice (human) ")
    by_id = (await api.run(world.agent.token, BY_ID, h=first["id"]))["handoff"]
    assert by_id["summary"] == "First stop"


async def test_r12_a_project_with_no_handoff_resumes_with_rehydrates_slice(api: Api, world: World) -> None:
    rule = await ruled(api, world, "Never log card numbers")
    assert (await api.run(world.agent.token, LATEST, p=world.project_id))["latestHandoff"] is None
    back = await resume(api, world.agent, world.project_id, "Add refund logging", 500)
    assert back["handoff"] is None
    alone = await rehydrate(api, world.agent.token, world.project_id, "Add refund logging", 500)
    assert back["rendered"] == back["slice"]["rendered"] == alone["rendered"]
    assert back["tokensUsed"] == alone["tokensUsed"] and back["slice"]["tokenBudget"] == 500
    assert [e["item"]["id"] for e in back["slice"]["entries"]] == [rule]


async def test_r11_1_r12_resume_keeps_the_guarantee_at_budget_1(api: Api, world: World) -> None:
    """The handoff alone exceeds a budget of 1; every load-bearing constraint is still in (R11.1),
    and overBudget says so; nothing else is in the slice."""
    rules = {await ruled(api, world, f"Rule {n}: keep the audit trail") for n in range(3)}
    await api.assert_item(world.human.token, projectId=world.project_id, statement="The audit runs nightly")
    await checkpoint(api, world.agent, await start(api, world.agent, world.project_id), summary="Audited")
    back = await resume(api, world.agent, world.project_id, "Tune the audit trail", 1)
    assert back["handoff"] is not None and back["overBudget"] is True
    assert back["slice"]["tokenBudget"] == 0
    assert {e["item"]["id"] for e in back["slice"]["entries"]} == rules
    assert {e["reason"] for e in back["slice"]["entries"]} == {"GUARANTEED"}
    assert back["tokensUsed"] == tokens.count(back["rendered"])


# --- retries ------------------------------------------------------------------------------------


async def test_r12_a_retry_with_the_key_returns_the_same_handoff_and_writes_nothing(
    api: Api, world: World
) -> None:
    p = world.project_id
    session = await start(api, world.agent, p)
    body = {"items": [fact(p, "Refunds need a capture id")], "nextSteps": ["Ship"], "idempotencyKey": "k-1"}
    left = await checkpoint(api, world.agent, session, **body)
    before = await database_state(api.admin_engine)
    again = await checkpoint(api, world.agent, session, **body)
    assert again == left
    assert await database_state(api.admin_engine) == before

    # The same key with another body, or another checkpoint without the key: CONFLICT, nothing written.
    changed = {**body, "nextSteps": ["Ship it now"]}
    error = await api.fail(
        world.agent.token, CHECKPOINT, i={"sessionId": session, "summary": "Stopped.", **changed}
    )
    assert_code(error, "CONFLICT")
    assert "idempotencyKey" in error["message"] and error["extensions"]["handoffId"] == left["id"]
    error = await api.fail(world.agent.token, CHECKPOINT, i={"sessionId": session, "summary": "Stopped."})
    assert_code(error, "CONFLICT")
    assert error["extensions"]["handoffId"] == left["id"]
    assert await database_state(api.admin_engine) == before
    other = await start(api, world.agent, p)
    before = await database_state(api.admin_engine)
    error = await api.fail(
        world.agent.token, CHECKPOINT, i={"sessionId": other, "summary": "Stopped.", **body}
    )
    assert_code(error, "CONFLICT")  # the key is the agent's: another session's body differs
    assert await database_state(api.admin_engine) == before


async def test_r12_two_concurrent_retries_leave_one_handoff(api: Api, world: World) -> None:
    """A client that timed out retries while the first checkpoint still runs: the session's row lock
    queues the second, which then finds the first's handoff by its key; the items are written once."""
    p = world.project_id
    session = await start(api, world.agent, p)
    body = {
        "sessionId": session,
        "summary": "Stopped.",
        "items": [fact(p, f"Concurrent fact {n}") for n in range(5)],
        "idempotencyKey": "retry-me",
    }
    before = await handoff_count(api.admin_engine)
    answers = await asyncio.gather(*(api.post(world.agent.token, CHECKPOINT, {"i": body}) for _ in range(3)))
    assert all(not answer.get("errors") for answer in answers), answers
    ids = {answer["data"]["checkpoint"]["id"] for answer in answers}
    assert len(ids) == 1
    assert await handoff_count(api.admin_engine) == before + 1
    written = await rows(api.admin_engine, "SELECT count(*) AS n FROM items WHERE session_id = :s", s=session)
    assert written[0]["n"] == 5


# --- who sees what ------------------------------------------------------------------------------


async def test_r2_r12_a_reader_sees_only_what_it_may_of_a_handoff(api: Api, world: World) -> None:
    """The stored handoff keeps references; each reader sees them under its own row-level security:
    the author's PRIVATE item, a GRANTS item for someone else, and a dispute of it reach no one else,
    in the lists or in the text; its id in the summary reads [hidden]."""
    p = world.project_id
    bob = await api.actor(world.human.token, "AGENT", "bob")
    await api.add_member(world.human.token, p, bob.id)
    shared = await api.assert_item(world.human.token, projectId=p, statement="Refunds are in cents")
    session = await start(api, world.agent, p)
    left = await checkpoint(
        api,
        world.agent,
        session,
        items=[
            fact(p, "My private hunch about refunds", scope="PRIVATE"),
            fact(p, "Only bob may read this", scope="GRANTS", grantActorIds=[bob.id]),
            fact(p, "Refunds are in euros", scope="PRIVATE", contradicts=[shared["id"]]),
            fact(p, "Everyone may read this"),
        ],
    )
    private_id = next(i["id"] for i in left["itemsAsserted"] if i["statement"].startswith("My private"))
    assert len(left["itemsAsserted"]) == 4 and len(left["disputes"]) == 1  # the author sees its own

    readers = {"alice": world.human, "bob": bob}
    for name, reader in readers.items():
        seen = (await api.run(reader.token, BY_ID, h=left["id"]))["handoff"]
        statements = {i["statement"] for i in seen["itemsAsserted"]}
        assert "My private hunch about refunds" not in statements, name
        assert "Refunds are in euros" not in statements and seen["disputes"] == [], name
        assert ("Only bob may read this" in statements) == (name == "bob")
        assert "Everyone may read this" in statements
        for hidden in ("private hunch", "in euros", *(["bob may read"] if name == "alice" else [])):
            assert hidden not in seen["rendered"], (name, hidden)
        assert seen["tokens"] == tokens.count(seen["rendered"])

    # An id in the author's own text is hidden from who cannot see the item.
    s2 = await start(api, world.agent, p)
    named = await checkpoint(api, world.agent, s2, summary=f"See {private_id} for the hunch")
    seen = (await api.run(world.human.token, BY_ID, h=named["id"]))["handoff"]
    assert seen["summary"] == "See [hidden] for the hunch" and private_id not in seen["rendered"]
    assert named["summary"] == f"See {private_id} for the hunch"


async def test_r1_r2_handoffs_are_invisible_outside_the_project_and_the_workspace(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    """A handoff is read by who works in its project (and its author), enforced by the policy: raw
    SQL as the server's role, bound to an actor of another workspace or a non-member, counts none."""
    left = await checkpoint(api, world.agent, await start(api, world.agent, world.project_id))
    outsider = await api.actor(world.human.token, "AGENT", "outsider")  # same workspace, no project
    assert (await api.run(outsider.token, BY_ID, h=left["id"]))["handoff"] is None
    assert (await api.run(outsider.token, LATEST, p=world.project_id))["latestHandoff"] is None
    other = await api.world()
    error = await api.fail(other.human.token, LATEST, p=world.project_id)
    assert_code(error, "NOT_FOUND")
    assert (await api.run(other.human.token, BY_ID, h=left["id"]))["handoff"] is None
    count = select(func.count()).select_from(handoffs)
    for who, expected in ((outsider, 0), (other.human, 0), (other.agent, 0), (world.human, 1)):
        async with as_caller(engine, who) as connection:
            seen = (
                await connection.execute(count.where(handoffs.c.project_id == world.project_id))
            ).scalar_one()
            assert seen == expected, who


# --- bad input and refusals ---------------------------------------------------------------------


async def test_r14_bad_checkpoints_name_the_field_and_write_nothing(api: Api, world: World) -> None:
    p = world.project_id
    session = await start(api, world.agent, p)
    other_project = await api.project(world.human.token, "other")
    await api.add_member(world.human.token, other_project, world.agent.id)
    other_session = await start(api, world.agent, p)
    good = fact(p, "A good fact that must not be written")
    cases = [
        ({"summary": "  "}, "input.summary"),
        ({"summary": "x" * 4001}, "input.summary"),
        ({"nextSteps": ["ok", ""]}, "input.nextSteps[1]"),
        ({"openQuestions": ["two\nlines"]}, "input.openQuestions[0]"),
        ({"items": [good, fact(other_project, "x")]}, "input.items[1].projectId"),
        ({"items": [good, fact(p, "x", sessionId=other_session)]}, "input.items[1].sessionId"),
        ({"items": [good, fact(p, " ")]}, "input.items[1].statement"),
        ({"items": [good, fact(p, "x", confidence=2.0)]}, "input.items[1].confidence"),
        (
            {"items": [good], "supersessions": [{"targetId": "nope", "reason": "r", "replacement": good}]},
            "input.supersessions[0].targetId",
        ),
        ({"idempotencyKey": "x" * 201}, "input.idempotencyKey"),
    ]
    for fields, field in cases:
        before = await database_state(api.admin_engine)
        error = await api.fail(
            world.agent.token, CHECKPOINT, i={"sessionId": session, "summary": "Stopped.", **fields}
        )
        assert_code(error, "BAD_USER_INPUT")
        assert field in error["message"], (field, error)
        assert await database_state(api.admin_engine) == before, field
    bad_budget = {"projectId": p, "task": "t", "tokenBudget": 0}
    error = await api.fail(world.agent.token, RESUME, i=bad_budget)
    assert_code(error, "BAD_USER_INPUT")
    assert "input.tokenBudget" in error["message"]


async def test_r12_only_the_sessions_actor_checkpoints_it(api: Api, world: World) -> None:
    session = await start(api, world.agent, world.project_id)
    other = await api.world()
    before = await database_state(api.admin_engine)
    error = await api.fail(world.human.token, CHECKPOINT, i={"sessionId": session, "summary": "Mine now"})
    assert_code(error, "FORBIDDEN")
    error = await api.fail(other.agent.token, CHECKPOINT, i={"sessionId": session, "summary": "x"})
    assert_code(error, "NOT_FOUND")
    assert await database_state(api.admin_engine) == before


async def test_r3_r7_a_checkpoint_by_an_agent_cannot_overrule_a_person(api: Api, world: World) -> None:
    """The same path as supersedeItem: an agent's replacement of an item a human confirmed is a
    pending proposal; nothing touches the chain, and the handoff lists it as awaiting a human."""
    p = world.project_id
    made = await api.assert_item(world.agent.token, projectId=p, statement="Refund webhooks retry 3 times")
    await api.run(world.human.token, CONFIRM_ITEM, i=made["id"])
    change = {
        "targetId": made["id"],
        "reason": "It is 5",
        "replacement": fact(p, "Refund webhooks retry 5 times"),
    }
    left = await checkpoint(api, world.agent, await start(api, world.agent, p), supersessions=[change])
    assert left["supersessions"] == [] and left["itemsAsserted"] == []
    (pending,) = left["pendingConfirmations"]
    assert (pending["kind"], pending["status"], pending["target"]["id"]) == (
        "SUPERSESSION",
        "PENDING",
        made["id"],
    )
    found = await rows(
        api.admin_engine, "SELECT count(*) AS n FROM items WHERE supersedes_id = :i", i=made["id"]
    )
    assert found[0]["n"] == 0


async def test_r12_a_handoff_names_a_bounded_share_of_what_awaits_and_counts_the_rest(
    api: Api, world: World
) -> None:
    """A session of 23 items: all listed, 20 lines shown; 22 open disputes in the project: the
    newest 20 named, 3 shown, the rest counted in the text."""
    p = world.project_id
    contested = await api.assert_item(world.human.token, projectId=p, statement="Refunds are in cents")
    for n in range(22):
        await api.assert_item(
            world.agent.token,
            projectId=p,
            statement=f"Refunds are in units {n}",
            contradicts=[contested["id"]],
        )
    session = await start(api, world.agent, p)
    left = await checkpoint(
        api, world.agent, session, items=[fact(p, f"Session fact {n}") for n in range(23)]
    )
    assert len(left["itemsAsserted"]) == 23
    assert len(left["disputes"]) == 20
    shown = left["rendered"]
    assert shown.count("FACT: Session fact") == 20 and "FACT: Session fact 19\n… and 3 more\n" in shown
    assert shown.count("- OPEN: dispute raised by claude-code") == 3
    assert "… and 17 more: proposals(projectId) and disputes(projectId)\n" in shown
    assert "units 21" in shown and "units 1 " not in shown  # the newest first


async def test_r12_reading_a_handoff_costs_the_same_statements_whatever_it_names(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    """No N+1: handoffs naming 1 and 6 of each (items, replacements, disputes, pending proposals)
    are read with the same number of statements."""
    p = world.project_id

    async def left_with(n: int) -> dict[str, Any]:
        session = await start(api, world.agent, p)
        olds = [
            await api.assert_item(world.agent.token, projectId=p, sessionId=session, statement=f"old {k}")
            for k in range(n)
        ]
        rulings = [await ruled(api, world, f"Rule {n} {k}", kind="FACT") for k in range(n)]
        return await checkpoint(
            api,
            world.agent,
            session,
            items=[fact(p, f"fact {k}", suggestLoadBearing=True) for k in range(n)]
            + [fact(p, f"not rule {k}", contradicts=[rulings[k]]) for k in range(n)],
            supersessions=[
                {"targetId": old["id"], "reason": "newer", "replacement": fact(p, f"new {k}")}
                for k, old in enumerate(olds)
            ],
        )

    small, large = await left_with(1), await left_with(6)
    assert len(large["supersessions"]) == 6 and len(large["disputes"]) == 7
    counts = []
    for left in (small, large):
        with counted(engine) as statements:
            await api.run(world.human.token, BY_ID, h=left["id"])
        counts.append(len(statements))
    assert counts[0] == counts[1], counts
