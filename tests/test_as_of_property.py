"""R9 and R10 as a property: at every moment of a random timeline, an as-of read is that moment's.

Hypothesis draws a timeline of up to a dozen steps over a fresh world (a
human, an agent, a project): assertions by either, confirmations, load-bearing
suggestions settled directly or by deciding the proposal, supersessions made
directly or proposed and then accepted or rejected, contradictions and their
resolutions, retirements and verifications. Each step is one request, so one
transaction with its own instant; the instant it recorded is read back from
the database (the newest time the step wrote), never guessed from the client's
clock. ``Timeline`` is the same history in plain Python, one snapshot per step.

Then, at the midpoint between every two instants (and before the first, and
after the last), one document reads every item the timeline ever made with
``asOf`` that moment: the page must list exactly the items that existed then,
each item must be what the snapshot says (status, authority, load-bearing and
its suggestion, confirmation, last verification, stale judged at that moment,
its chain both ways, its disputes with their status then), and an item made
later must be null.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from tests.graphql import Api, World

DECAY = timedelta(milliseconds=400)
DECAY_TEXT = "PT0.4S"

STEPS = (
    "assert",
    "confirm",
    "suggest",
    "settle",
    "decide_load_bearing",
    "supersede",
    "decide_supersession",
    "contradict",
    "resolve",
    "retire",
    "verify",
)

# The newest time the workspace's writes recorded: each step writes at least one of them (an
# unchanged item's state is implied by its row, from its assertion).
NEWEST = text(
    "SELECT greatest((SELECT max(since) FROM item_states WHERE workspace_id = :ws),"
    " (SELECT max(asserted_at) FROM items WHERE workspace_id = :ws),"
    " (SELECT max(raised_at) FROM disputes WHERE workspace_id = :ws),"
    " (SELECT max(resolved_at) FROM disputes WHERE workspace_id = :ws),"
    " (SELECT max(proposed_at) FROM proposals WHERE workspace_id = :ws),"
    " (SELECT max(decided_at) FROM proposals WHERE workspace_id = :ws))"
)

FIELDS = """id status authority loadBearing loadBearingSuggested lastVerifiedAt stale
  confirmation { by { id } } supersedes { id } supersededBy { id } chain { id } disputes { id status }"""


@dataclass
class It:
    id: str
    born: datetime  # recorded: from then on it exists
    asserted_at: datetime  # said: an accepted replacement carries its proposal's time
    status: str = "ACTIVE"
    confirmed_by: str | None = None
    load_bearing: bool = False
    suggested: bool = False
    last_verified: datetime | None = None
    supersedes: str | None = None

    @property
    def ruled(self) -> bool:
        return self.confirmed_by is not None or self.load_bearing


@dataclass
class Disp:
    id: str
    item: str
    contested: str
    status: str = "OPEN"


@dataclass
class Prop:
    id: str
    kind: str
    target: str
    proposed_at: datetime
    status: str = "PENDING"


@dataclass
class Timeline:
    """The history in plain Python: what each item, dispute and proposal is after each step."""

    items: dict[str, It] = field(default_factory=dict)
    disputes: dict[str, Disp] = field(default_factory=dict)
    proposals: dict[str, Prop] = field(default_factory=dict)

    def chain(self, item_id: str) -> list[str]:
        older, current = [], self.items[item_id].supersedes
        while current is not None:
            older.append(current)
            current = self.items[current].supersedes
        newer, current = [], self.successor(item_id)
        while current is not None:
            newer.append(current)
            current = self.successor(current)
        return [*reversed(older), item_id, *newer]

    def successor(self, item_id: str) -> str | None:
        return next((i.id for i in self.items.values() if i.supersedes == item_id), None)

    def expected(self, item_id: str, moment: datetime) -> dict[str, Any]:
        it = self.items[item_id]
        authority = (
            "DISPUTED"
            if it.status == "DISPUTED"
            else "HUMAN_CONFIRMED"
            if it.confirmed_by
            else "AGENT_ASSERTED"
        )
        successor = self.successor(item_id)
        return {
            "id": item_id,
            "status": it.status,
            "authority": authority,
            "loadBearing": it.load_bearing,
            "loadBearingSuggested": it.suggested,
            "lastVerifiedAt": it.last_verified,
            "stale": moment - (it.last_verified or it.asserted_at) > DECAY,
            "confirmation": {"by": {"id": it.confirmed_by}} if it.confirmed_by else None,
            "supersedes": {"id": it.supersedes} if it.supersedes else None,
            "supersededBy": {"id": successor} if successor else None,
            "chain": [{"id": link} for link in self.chain(item_id)],
            "disputes": sorted(
                (d.id, d.status) for d in self.disputes.values() if item_id in (d.item, d.contested)
            ),
        }


def answered(node: dict[str, Any]) -> dict[str, Any]:
    """The API's answer in the model's terms: times parsed, disputes as a sorted list of pairs."""
    verified = node["lastVerifiedAt"]
    return {
        **node,
        "lastVerifiedAt": datetime.fromisoformat(verified) if verified else None,
        "disputes": sorted((d["id"], d["status"]) for d in node["disputes"]),
    }


def pick(candidates: list[Any], n: int) -> Any:
    return candidates[n % len(candidates)] if candidates else None


ASSERT = """mutation($i: AssertItemInput!) { assertItem(input: $i) { id disputes { id } } }"""
CONFIRM = "mutation($i: ID!) { confirmItem(id: $i) { id } }"
SUGGEST = "mutation($i: ID!) { suggestLoadBearing(id: $i) { id } }"
SETTLE = "mutation($i: ID!, $v: Boolean!) { setLoadBearing(id: $i, loadBearing: $v) { id } }"
DECIDE = "mutation($i: ID!, $a: Boolean!) { decideProposal(id: $i, accept: $a) { status result { id } } }"
SUPERSEDE = """mutation($i: SupersedeInput!) { supersedeItem(input: $i) {
  __typename ... on Superseded { replacement { id } } ... on PendingConfirmation { proposal { id } } } }"""
RESOLVE = "mutation($d: ID!, $k: ID!) { resolveDispute(id: $d, keepItemId: $k) { id } }"
RETIRE = 'mutation($i: ID!) { retireItem(id: $i, reason: "no longer true") { id } }'
VERIFY = "mutation($i: ID!) { verifyItem(id: $i) { id } }"


class Run:
    """Plays a timeline through the API and into the model, recording each step's instant."""

    def __init__(self, api: Api, world: World) -> None:
        self.api, self.world = api, world
        self.model = Timeline()
        self.history: list[tuple[datetime, Timeline]] = []
        self.counter = 0

    def who(self, human: bool) -> str:
        return self.world.human.token if human else self.world.agent.token

    def actor(self, human: bool) -> str:
        return self.world.human.id if human else self.world.agent.id

    def content(self) -> dict[str, Any]:
        self.counter += 1
        return {
            "projectId": self.world.project_id,
            "kind": "FACT",
            "statement": f"fact {self.counter}",
            "decayAfter": DECAY_TEXT,
        }

    async def instant(self) -> datetime:
        async with self.api.admin_engine.connect() as connection:
            found = (await connection.execute(NEWEST, {"ws": self.world.workspace_id})).scalar_one()
        assert found is not None
        return found

    async def step(self, kind: str, n: int, flag: bool) -> None:
        """One step if the model has something it applies to; the API must accept it."""
        m, api, world = self.model, self.api, self.world
        items = list(m.items.values())
        active = [i for i in items if i.status == "ACTIVE"]
        change: Any = None
        if kind == "assert":
            data = await api.run(self.who(flag), ASSERT, i=self.content())
            new_id = data["assertItem"]["id"]

            def change(at: datetime) -> None:
                m.items[new_id] = It(new_id, at, at, confirmed_by=world.human.id if flag else None)

        elif kind == "confirm":
            if (target := pick([i for i in active if not i.confirmed_by], n)) is None:
                return
            await api.run(world.human.token, CONFIRM, i=target.id)

            def change(at: datetime) -> None:
                target.confirmed_by = world.human.id

        elif kind == "suggest":
            if (target := pick([i for i in active if not i.load_bearing and not i.suggested], n)) is None:
                return
            proposal = (await api.run(world.agent.token, SUGGEST, i=target.id))["suggestLoadBearing"]["id"]

            def change(at: datetime) -> None:
                target.suggested = True
                m.proposals[proposal] = Prop(proposal, "LOAD_BEARING", target.id, at)

        elif kind == "settle":
            if (target := pick([i for i in active if i.load_bearing != flag or i.suggested], n)) is None:
                return
            await api.run(world.human.token, SETTLE, i=target.id, v=flag)

            def change(at: datetime) -> None:
                target.load_bearing, target.suggested = flag, False
                for p in m.proposals.values():
                    if p.kind == "LOAD_BEARING" and p.target == target.id and p.status == "PENDING":
                        p.status = "ACCEPTED" if flag else "REJECTED"

        elif kind == "decide_load_bearing":
            pending = [p for p in m.proposals.values() if p.kind == "LOAD_BEARING" and p.status == "PENDING"]
            if (chosen := pick(pending, n)) is None:
                return
            await api.run(world.human.token, DECIDE, i=chosen.id, a=flag)

            def change(at: datetime) -> None:
                target = m.items[chosen.target]
                chosen.status = "ACCEPTED" if flag else "REJECTED"
                target.suggested = False
                target.load_bearing = target.load_bearing or flag

        elif kind == "supersede":
            if (target := pick(active, n)) is None:
                return
            data = await api.run(
                self.who(flag),
                SUPERSEDE,
                i={"targetId": target.id, "reason": "better", "replacement": self.content()},
            )
            result = data["supersedeItem"]
            if result["__typename"] == "PendingConfirmation":
                assert not flag and target.ruled, result
                proposal = result["proposal"]["id"]

                def change(at: datetime) -> None:
                    m.proposals[proposal] = Prop(proposal, "SUPERSESSION", target.id, at)

            else:
                assert flag or not target.ruled, result
                new_id = result["replacement"]["id"]

                def change(at: datetime) -> None:
                    m.items[new_id] = It(
                        new_id,
                        at,
                        at,
                        confirmed_by=world.human.id if flag else None,
                        load_bearing=target.load_bearing,
                        supersedes=target.id,
                    )
                    target.status = "SUPERSEDED"

        elif kind == "decide_supersession":
            pending = [
                p
                for p in m.proposals.values()
                if p.kind == "SUPERSESSION"
                and p.status == "PENDING"
                and (not flag or m.items[p.target].status == "ACTIVE")
            ]
            if (chosen := pick(pending, n)) is None:
                return
            decided = (await api.run(world.human.token, DECIDE, i=chosen.id, a=flag))["decideProposal"]

            def change(at: datetime) -> None:
                chosen.status = "ACCEPTED" if flag else "REJECTED"
                if flag:
                    target, new_id = m.items[chosen.target], decided["result"]["id"]
                    m.items[new_id] = It(
                        new_id,
                        at,
                        chosen.proposed_at,
                        confirmed_by=world.human.id,
                        load_bearing=target.load_bearing,
                        supersedes=target.id,
                    )
                    target.status = "SUPERSEDED"

        elif kind == "contradict":
            if (target := pick(active, n)) is None:
                return
            data = await api.run(
                world.agent.token,
                ASSERT,
                i={**self.content(), "contradicts": [target.id]},
            )
            new_id, dispute_id = data["assertItem"]["id"], data["assertItem"]["disputes"][0]["id"]

            def change(at: datetime) -> None:
                m.items[new_id] = It(new_id, at, at, status="DISPUTED")
                m.disputes[dispute_id] = Disp(dispute_id, new_id, target.id)

        elif kind == "resolve":
            if (chosen := pick([d for d in m.disputes.values() if d.status == "OPEN"], n)) is None:
                return
            keep, drop = (chosen.item, chosen.contested) if flag else (chosen.contested, chosen.item)
            await api.run(world.human.token, RESOLVE, d=chosen.id, k=keep)

            def change(at: datetime) -> None:
                chosen.status = "RESOLVED"
                kept, dropped = m.items[keep], m.items[drop]
                contesting = any(d.status == "OPEN" and d.item == keep for d in m.disputes.values())
                reactivate = kept.status == "DISPUTED" and not contesting
                if reactivate:
                    kept.status = "ACTIVE"
                if kept.status == "ACTIVE" and kept.confirmed_by is None:
                    kept.confirmed_by = world.human.id
                if dropped.status in ("ACTIVE", "DISPUTED"):
                    dropped.status = "RETIRED"

        elif kind == "retire":
            changeable = [i for i in items if i.status in ("ACTIVE", "DISPUTED") and (flag or not i.ruled)]
            if (target := pick(changeable, n)) is None:
                return
            await api.run(self.who(flag), RETIRE, i=target.id)

            def change(at: datetime) -> None:
                target.status = "RETIRED"

        elif kind == "verify":
            if (target := pick(items, n)) is None:
                return
            await api.run(self.who(flag), VERIFY, i=target.id)

            def change(at: datetime) -> None:
                target.last_verified = at

        at = await self.instant()
        assert not self.history or at > self.history[-1][0], "each step is its own instant"
        change(at)
        self.history.append((at, copy.deepcopy(m)))
        event(kind)  # --hypothesis-show-statistics: how often each kind of step ran

    async def read(self, moment: datetime) -> dict[str, Any]:
        """Every item the timeline made, and the page, as of ``moment``: one document."""
        ids = list(self.model.items)
        aliases = "\n".join(
            f'i{n}: item(id: "{item_id}", asOf: $t) {{ {FIELDS} }}' for n, item_id in enumerate(ids)
        )
        document = f"""query($p: ID!, $t: DateTime) {{
          items(projectId: $p, asOf: $t, first: 100) {{ totalCount nodes {{ id }} }}
          {aliases}
        }}"""
        data = await self.api.run(
            self.world.agent.token, document, p=self.world.project_id, t=moment.isoformat()
        )
        return {"page": data["items"], **{item_id: data[f"i{n}"] for n, item_id in enumerate(ids)}}

    async def check(self, moment: datetime, then: Timeline) -> None:
        found = await self.read(moment)
        existing = set(then.items)
        assert {node["id"] for node in found["page"]["nodes"]} == existing, moment
        assert found["page"]["totalCount"] == len(existing), moment
        for item_id in self.model.items:
            if item_id not in existing:
                assert found[item_id] is None, (moment, item_id)
                continue
            assert answered(found[item_id]) == then.expected(item_id, moment), (moment, item_id)


steps = st.lists(
    st.tuples(st.sampled_from(STEPS), st.integers(min_value=0, max_value=7), st.booleans()),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=int(os.environ.get("AS_OF_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(timeline=steps)
async def test_r9_r10_every_moment_of_a_timeline_reads_as_that_moment(
    api: Api, timeline: list[tuple[str, int, bool]]
) -> None:
    run = Run(api, await api.world())
    await run.step("assert", 0, False)  # something to act on
    for kind, n, flag in timeline:
        await run.step(kind, n, flag)

    first = run.history[0][0]
    await run.check(first - timedelta(milliseconds=1), Timeline())
    for (at, then), (later, _) in zip(run.history, run.history[1:], strict=False):
        await run.check(at + (later - at) / 2, then)
    last, final = run.history[-1]
    await run.check(last + timedelta(seconds=1), final)
