"""R12 with R11.1 and R11.2 over random projects, handoffs and budgets (hypothesis).

For a random project (test_rehydrate_property's), an agent's checkpoint with
random items of random scopes, and a random reader, task and budget:

- every ACTIVE load-bearing CONSTRAINT the reader can see is a GUARANTEED
  entry of the resumption's slice, however little the handoff left;
- ``overBudget`` is true exactly when the handoff, the heading and those
  constraints alone exceed the budget, and then the slice holds nothing else;
  otherwise ``tokensUsed <= tokenBudget``;
- ``tokensUsed`` is the token count of ``rendered``, which is the handoff's
  text, the heading and the slice's, and the handoff's ``tokens`` its own;
- the handoff shows the reader nothing it could not read with ``item(id:)``.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mneia.rehydration import handoff_text, render, tokens
from tests.graphql import Api
from tests.test_rehydrate_property import GUARANTEED_LIST, READABLE, VOCABULARY, Spec, build, specs

RESUME = """query($i: ResumeInput!) { resume(input: $i) {
  rendered tokenBudget tokensUsed overBudget
  handoff { tokens rendered itemsAsserted { id } supersessions { previous { id } replacement { id } }
    pendingConfirmations { target { id } } disputes { item { id } contested { id } } }
  slice { tokenBudget tokensUsed overBudget rendered entries { reason tokens item { id } }
    supersessions { previous { id } } } } }"""
CHECKPOINT = "mutation($i: CheckpointInput!) { checkpoint(input: $i) { id } }"
START = 'mutation($p: ID!) { startSession(input: {projectId: $p, task: "refund the ledger"}) { id } }'

left_items = st.lists(
    st.tuples(
        st.sampled_from(["FACT", "CONSTRAINT", "DECISION"]),
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4).map(" ".join),
        st.sampled_from(["PROJECT", "PRIVATE", "WORKSPACE", "GRANTS"]),
    ),
    max_size=6,
)


@settings(
    max_examples=int(os.environ.get("HANDOFF_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    items=st.lists(specs, max_size=10),
    left=left_items,
    caller=st.sampled_from(["alice", "agent", "bob"]),
    task=st.lists(st.sampled_from((*VOCABULARY, "kafka")), min_size=1, max_size=3).map(" ".join),
    budget=st.one_of(st.just(1), st.integers(1, 200), st.integers(200, 2000)),
    summary=st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=80),
)
async def test_r11_1_2_r12_resume_holds_for_random_handoffs_and_budgets(
    api: Api,
    items: list[Spec],
    left: list[tuple[str, str, str]],
    caller: str,
    task: str,
    budget: int,
    summary: str,
) -> None:
    project, cast = await build(api, items)
    agent, bob = cast["agent"], cast["bob"]
    session = (await api.run(agent.token, START, p=project))["startSession"]["id"]
    written: list[dict[str, Any]] = []
    for kind, words, scope in left:
        extra: dict[str, Any] = {"grantActorIds": [bob.id]} if scope == "GRANTS" else {}
        written.append({"projectId": project, "kind": kind, "statement": words, "scope": scope, **extra})
    summary = summary if summary.strip() else "stopped"
    await api.run(
        agent.token,
        CHECKPOINT,
        i={"sessionId": session, "summary": summary, "items": written, "nextSteps": [task]},
    )

    who = cast[caller]
    found = (await api.run(who.token, RESUME, i={"projectId": project, "task": task, "tokenBudget": budget}))[
        "resume"
    ]
    left_by = found["handoff"]
    assert left_by is not None
    heading = handoff_text.for_task(task)
    assert found["rendered"] == left_by["rendered"] + heading + found["slice"]["rendered"]
    assert left_by["tokens"] == tokens.count(left_by["rendered"])
    assert found["tokensUsed"] == tokens.count(found["rendered"])
    spent = left_by["tokens"] + tokens.count(heading)
    assert found["slice"]["tokenBudget"] == max(0, budget - spent)

    # R11.1: the guarantee, whatever the handoff left.
    listed = await api.run(who.token, GUARANTEED_LIST, p=project)
    guaranteed = {node["id"] for node in listed["items"]["nodes"]}
    reasons = {e["item"]["id"]: e["reason"] for e in found["slice"]["entries"]}
    assert {i for i, reason in reasons.items() if reason == "GUARANTEED"} == guaranteed
    alone = sum(e["tokens"] for e in found["slice"]["entries"] if e["reason"] == "GUARANTEED")
    alone += tokens.count(render.heading("CONSTRAINT")) if guaranteed else 0
    assert found["overBudget"] == (spent + alone > budget)
    if found["overBudget"]:
        assert set(reasons) == guaranteed and found["slice"]["supersessions"] == []
    else:
        assert found["tokensUsed"] <= budget  # R11.2

    # R2: the handoff names nothing the reader could not read.
    named = {i["id"] for i in left_by["itemsAsserted"]}
    named |= {n[side]["id"] for n in left_by["supersessions"] for side in ("previous", "replacement")}
    named |= {p["target"]["id"] for p in left_by["pendingConfirmations"]}
    named |= {d[side]["id"] for d in left_by["disputes"] for side in ("item", "contested")}
    for item_id in named:
        assert (await api.run(who.token, READABLE, i=item_id))["item"] is not None, item_id

    def readable(scope: str) -> bool:
        return (
            caller == "agent" or scope not in ("PRIVATE", "GRANTS") or (scope == "GRANTS" and caller == "bob")
        )

    for kind, words, scope in left:
        if not readable(scope):
            # Its line may show only for another item of the same words the caller may read.
            line = f"{kind}: {words}\n"
            assert line not in left_by["rendered"] or any(
                other[1] == words and other[0] == kind and readable(other[2]) for other in left
            )
