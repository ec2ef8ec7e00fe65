"""R11 as a property over random projects, through the API: clauses 1, 2, 3, 6 and 8, and R2.

Hypothesis draws a project: up to 16 items of every kind, each asserted by
Alice (human) or an agent, at a scope (PRIVATE, PROJECT, WORKSPACE, or
GRANTS to Bob, a second agent), some constraints made load-bearing, and a
fate for each: left ACTIVE, retired, replaced (a replacement keeps what a
load-bearing item guaranteed), or contradicted by an agent (a DISPUTED
newcomer). Statements draw from a small vocabulary, so that some share words
with the task and some share none. Then one of the three actors asks for a
slice with a random task, budget (down to 1) and quotas, twice. Checked:

1. every ACTIVE load-bearing CONSTRAINT the caller can list is an entry,
   GUARANTEED; ``overBudget`` exactly when they alone (with their heading)
   cost more than the budget, and then nothing else is in;
2. otherwise ``tokensUsed <= tokenBudget``, and it is the token count of
   ``rendered``;
3. SCORED entries of each kind within ``maxShare x budget``;
6. no entry is SUPERSEDED or RETIRED;
8. the second answer equals the first (``asOf`` fixed);
and R2: every entry, and both sides of every supersession note, are items
the caller can read with ``item(id:)``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mneia.rehydration import profile, render, tokens
from mneia.vocabulary import ItemKind
from tests.graphql import Api, Who
from tests.support import MAKE_LOAD_BEARING, RETIRE_ITEM, SUPERSEDE, rehydrate

VOCABULARY = ("refund", "ledger", "cents", "webhook", "retry", "tenant", "invoice", "audit", "cache", "queue")
KINDS = [kind.value for kind in ItemKind]
FATES = ("active", "retired", "replaced", "contradicted")
SCOPES = ("PROJECT", "PROJECT", "PRIVATE", "WORKSPACE", "GRANTS")
GUARANTEED_LIST = """query($p: ID!) { items(projectId: $p, first: 500,
  filter: {kinds: [CONSTRAINT], statuses: [ACTIVE], loadBearing: true}) { nodes { id } } }"""
READABLE = "query($i: ID!) { item(id: $i) { id } }"


@dataclass(frozen=True)
class Spec:
    kind: str
    words: tuple[str, ...]
    human: bool
    scope: str
    load_bearing: bool
    fate: str


specs = st.builds(
    Spec,
    kind=st.sampled_from(KINDS),
    words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5).map(tuple),
    human=st.booleans(),
    scope=st.sampled_from(SCOPES),
    load_bearing=st.booleans(),
    fate=st.sampled_from(FATES),
)
quotas = st.dictionaries(st.sampled_from(KINDS), st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.6, 1.0]), max_size=3)


async def build(api: Api, items: list[Spec]) -> tuple[str, dict[str, Who]]:
    world = await api.world()
    bob = await api.actor(world.human.token, "AGENT", "bob")
    await api.add_member(world.human.token, world.project_id, bob.id)
    cast = {"alice": world.human, "agent": world.agent, "bob": bob}
    p = world.project_id
    for n, spec in enumerate(items):
        asserter = world.human if spec.human else world.agent
        fields: dict[str, Any] = {"scope": spec.scope}
        if spec.scope == "GRANTS":
            fields["grantActorIds"] = [bob.id]
        statement = f"{spec.kind.lower()} {n}: " + " ".join(spec.words)
        made = await api.assert_item(
            asserter.token, projectId=p, kind=spec.kind, statement=statement, **fields
        )
        # Only what Alice can see can she rule on: an agent's PRIVATE item, or one it granted Bob, not.
        alice_sees = spec.human or spec.scope in ("PROJECT", "WORKSPACE")
        if spec.load_bearing and spec.kind == "CONSTRAINT" and alice_sees:
            await api.run(world.human.token, MAKE_LOAD_BEARING, i=made["id"])
        ruled = spec.human or (spec.load_bearing and spec.kind == "CONSTRAINT" and alice_sees)
        if spec.fate == "retired" and (alice_sees or not ruled):
            await api.run((world.human if ruled else asserter).token, RETIRE_ITEM, i=made["id"], r="gone")
        elif spec.fate == "replaced" and spec.human:
            replacement = {"projectId": p, "kind": spec.kind, "statement": f"{statement} (revised)", **fields}
            variables = {"targetId": made["id"], "reason": "revised", "replacement": replacement}
            await api.run(world.human.token, SUPERSEDE, i=variables)
        elif spec.fate == "contradicted" and (not spec.human or spec.scope not in ("PRIVATE", "GRANTS")):
            await api.assert_item(
                world.agent.token,
                projectId=p,
                kind=spec.kind,
                statement=f"not {statement}",
                contradicts=[made["id"]],
            )
    return p, cast


@settings(
    max_examples=int(os.environ.get("REHYDRATE_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    items=st.lists(specs, max_size=16),
    caller=st.sampled_from(["alice", "agent", "bob"]),
    task=st.lists(st.sampled_from((*VOCABULARY, "kafka", "backoff")), min_size=1, max_size=4).map(" ".join),
    budget=st.one_of(st.just(1), st.integers(1, 60), st.integers(60, 1500)),
    chosen=quotas,
)
async def test_r11_1_2_3_6_8_hold_for_random_projects(
    api: Api, items: list[Spec], caller: str, task: str, budget: int, chosen: dict[str, float]
) -> None:
    project, cast = await build(api, items)
    who = cast[caller]
    asked = {
        "quotas": [{"kind": kind, "maxShare": share} for kind, share in chosen.items()],
        "asOf": datetime.now().astimezone().isoformat(),
    }
    found = await rehydrate(api, who.token, project, task, budget, **asked)
    reasons = {e["item"]["id"]: e["reason"] for e in found["entries"]}

    # 1. The guarantee, and over budget only because of it.
    listed = await api.run(who.token, GUARANTEED_LIST, p=project)
    guaranteed = {node["id"] for node in listed["items"]["nodes"]}
    assert {i for i, reason in reasons.items() if reason == "GUARANTEED"} == guaranteed
    alone = sum(e["tokens"] for e in found["entries"] if e["reason"] == "GUARANTEED")
    alone += tokens.count(render.heading("CONSTRAINT")) if guaranteed else 0
    assert found["overBudget"] == (alone > budget)
    if found["overBudget"]:
        assert set(reasons) == guaranteed and found["supersessions"] == []
    else:
        assert found["tokensUsed"] <= budget  # 2.
    assert found["tokensUsed"] == tokens.count(found["rendered"])

    # 3. Each kind's SCORED entries within its share.
    shares = {**{k.value: v for k, v in profile.GENERAL.quotas.items()}, **chosen}
    for kind in KINDS:
        used = sum(
            e["tokens"] for e in found["entries"] if e["reason"] == "SCORED" and e["item"]["kind"] == kind
        )
        assert used <= shares[kind] * budget, (kind, used)

    # 6. Only what is still believed.
    assert all(e["item"]["status"] in ("ACTIVE", "DISPUTED") for e in found["entries"])

    # R2: nothing the caller could not read with item(id:).
    named = set(reasons) | {
        i for n in found["supersessions"] for i in (n["previous"]["id"], n["replacement"]["id"])
    }
    for item_id in named:
        assert (await api.run(who.token, READABLE, i=item_id))["item"] is not None, item_id

    # 8. The same inputs, the same slice.
    again = await rehydrate(api, who.token, project, task, budget, **asked)
    assert json.dumps(again, sort_keys=True) == json.dumps(found, sort_keys=True)
