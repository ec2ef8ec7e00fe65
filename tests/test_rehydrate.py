"""R11 by example: one named test per clause of rehydration, and who may see what is in a slice.

Random projects drive clauses 1, 2, 3, 6 and 8 in test_rehydrate_property.py;
the packer and the token arithmetic alone are in test_rehydrate_packing.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import uuid
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.config import app_url
from mneia.rehydration import candidates, profile, render, slice, tokens
from mneia.storage import database
from mneia.storage.database import Driven, Tx, create_engine
from mneia.storage.node import Nodes
from mneia.vocabulary import ItemKind
from tests import support
from tests.citus import ON_CLUSTER
from tests.graphql import Api, World
from tests.support import (
    MAKE_LOAD_BEARING,
    REHYDRATE,
    RETIRE_ITEM,
    SUPERSEDE,
    as_caller,
    as_owner,
    assert_code,
    authenticate,
    entry_ids,
    refused_as_bad_input,
    rehydrate,
    supersession,
)

UNRELATED_TASK = "Tune the Kafka consumer backoff"


async def load_bearing(api: Api, world: World, statement: str, **fields: Any) -> str:
    """A human's constraint, made load-bearing."""
    made = await api.assert_item(
        world.human.token, projectId=world.project_id, kind="CONSTRAINT", statement=statement, **fields
    )
    await api.run(world.human.token, MAKE_LOAD_BEARING, i=made["id"])
    return str(made["id"])


async def item(api: Api, token: str, world: World, statement: str, kind: str = "FACT", **fields: Any) -> str:
    made = await api.assert_item(token, projectId=world.project_id, kind=kind, statement=statement, **fields)
    return str(made["id"])


async def replace(api: Api, world: World, target: str, statement: str, reason: str, **fields: Any) -> str:
    done = await api.run(
        world.human.token, SUPERSEDE, **supersession(world.project_id, target, statement, reason, **fields)
    )
    return str(done["supersedeItem"]["replacement"]["id"])


def scored_tokens(found: dict[str, Any], kind: str) -> int:
    return sum(e["tokens"] for e in found["entries"] if e["reason"] == "SCORED" and e["item"]["kind"] == kind)


def omitted(found: dict[str, Any], kind: str) -> int:
    return next(c["count"] for c in found["omitted"] if c["kind"] == kind)


# --- R11.1 the guarantee -------------------------------------------------------------------------


async def test_r11_1_every_active_load_bearing_constraint_is_guaranteed_at_budget_1(
    api: Api, world: World
) -> None:
    """Whatever the task, the budget (1) and the quotas (CONSTRAINT 0): every ACTIVE load-bearing
    CONSTRAINT is an entry, GUARANTEED; one that was retired or replaced is not, its replacement is."""
    kept = {await load_bearing(api, world, f"Rule {n}: never skip the ledger audit") for n in range(3)}
    await item(api, world.human.token, world, "A constraint nobody made load-bearing", kind="CONSTRAINT")
    retired = await load_bearing(api, world, "Old rule about the audit")
    await api.run(world.human.token, RETIRE_ITEM, i=retired, r="obsolete")
    replaced = await load_bearing(api, world, "Audit weekly")
    kept.add(await replace(api, world, replaced, "Audit daily", "weekly missed fraud", kind="CONSTRAINT"))
    await item(api, world.agent.token, world, "The Kafka consumer backoff is exponential")

    found = await rehydrate(
        api,
        world.agent.token,
        world.project_id,
        UNRELATED_TASK,
        1,
        quotas=[{"kind": "CONSTRAINT", "maxShare": 0.0}],
    )
    assert entry_ids(found, "GUARANTEED") == kept
    assert entry_ids(found) == kept, "nothing else fits: the guaranteed alone exceed the budget"
    assert found["overBudget"] is True
    assert all(e["item"]["loadBearing"] and e["item"]["status"] == "ACTIVE" for e in found["entries"])


async def test_r11_1_a_constraint_sharing_no_word_with_the_task_is_in_at_the_smallest_budget(
    api: Api, world: World
) -> None:
    """Search would drop it: not one word in common with the task, and many items that share some."""
    rule = await load_bearing(api, world, "Never store card numbers in plain text")
    for n in range(12):
        await item(api, world.agent.token, world, f"Kafka consumer backoff setting {n} tuned", confidence=0.9)
    found = await rehydrate(api, world.agent.token, world.project_id, UNRELATED_TASK, 1)
    (entry,) = found["entries"]
    assert (entry["item"]["id"], entry["reason"], entry["score"]) == (rule, "GUARANTEED", 0.0)
    assert found["rendered"].count("\n[") == 1


async def test_r11_1_over_budget_only_when_the_guaranteed_alone_exceed_it(api: Api, world: World) -> None:
    await load_bearing(api, world, "Refunds never exceed the captured amount")
    await item(api, world.agent.token, world, "Refunds are issued through the ledger", confidence=0.9)
    alone = (await rehydrate(api, world.agent.token, world.project_id, "refunds", 1))["tokensUsed"]

    exact = await rehydrate(api, world.agent.token, world.project_id, "refunds", alone)
    assert (exact["overBudget"], exact["tokensUsed"], len(exact["entries"])) == (False, alone, 1)
    short = await rehydrate(api, world.agent.token, world.project_id, "refunds", alone - 1)
    assert (short["overBudget"], short["tokensUsed"], len(short["entries"])) == (True, alone, 1)
    roomy = await rehydrate(api, world.agent.token, world.project_id, "refunds", alone + 200)
    assert roomy["overBudget"] is False and len(roomy["entries"]) == 2


# --- R11.2 the budget ----------------------------------------------------------------------------


async def test_r11_2_tokens_used_never_exceed_the_budget(api: Api, world: World) -> None:
    kinds = ["FACT", "DECISION", "PREFERENCE", "QUESTION", "TASK", "CONSTRAINT"]
    for n in range(18):
        await item(
            api,
            world.agent.token,
            world,
            f"Refund rounding note {n}: " + "cents " * (n % 5),
            kind=kinds[n % 6],
        )
    for budget in (1, 3, 10, 25, 60, 150, 400, 2000):
        found = await rehydrate(api, world.human.token, world.project_id, "refund rounding", budget)
        assert found["overBudget"] is False
        assert found["tokensUsed"] <= budget, budget
        assert found["tokensUsed"] == tokens.count(found["rendered"])
    assert found["tokensUsed"] < 2000 and len(found["entries"]) == 18


# --- R11.3 quotas --------------------------------------------------------------------------------


async def test_r11_3_scored_entries_of_one_kind_stay_within_their_share(api: Api, world: World) -> None:
    """A pile of similar facts cannot crowd out the decisions."""
    for n in range(15):
        await item(api, world.agent.token, world, f"Refund fact {n} about partial captures", confidence=1.0)
    for n in range(4):
        await item(api, world.agent.token, world, f"Refund decision {n}", kind="DECISION", confidence=0.3)
    budget = 400
    found = await rehydrate(
        api, world.human.token, world.project_id, "refund", budget, quotas=[{"kind": "FACT", "maxShare": 0.2}]
    )
    assert 0 < scored_tokens(found, "FACT") <= 0.2 * budget
    assert omitted(found, "FACT") > 0
    assert {e["item"]["kind"] for e in found["entries"]} == {"FACT", "DECISION"}
    assert next(q for q in found["quotas"] if q["kind"] == "FACT")["maxShare"] == 0.2

    none = await rehydrate(
        api, world.human.token, world.project_id, "refund", budget, quotas=[{"kind": "FACT", "maxShare": 0}]
    )
    assert scored_tokens(none, "FACT") == 0 and omitted(none, "FACT") == 15


async def test_r11_3_the_team_function_supplies_the_default_weights_and_quotas(
    api: Api, world: World
) -> None:
    team = await api.run(
        world.human.token, 'mutation { createTeam(name: "Helpdesk", function: "Customer Support") { id } }'
    )
    project = await api.project(world.human.token, "tickets", team["createTeam"]["id"])
    await api.assert_item(
        world.human.token, projectId=project, kind="PREFERENCE", statement="Refund by email"
    )
    support = profile.profile_for("Customer Support")

    found = await rehydrate(api, world.human.token, project, "refund", 500)
    assert found["profile"] == "support"
    assert {q["kind"]: (q["maxShare"], q["weight"]) for q in found["quotas"]} == {
        kind.value: (support.quotas[kind], support.weights[kind]) for kind in ItemKind
    }
    (entry,) = found["entries"]
    assert entry["score"] == support.weights[ItemKind.PREFERENCE]  # the best match, a human's, fresh

    general = await rehydrate(api, world.human.token, world.project_id, "refund", 500)
    assert general["profile"] == "general"
    assert {q["kind"]: q["maxShare"] for q in general["quotas"]} == {
        kind.value: profile.GENERAL.quotas[kind] for kind in ItemKind
    }


# --- R11.4 what was ruled out --------------------------------------------------------------------


async def test_r11_4_recent_supersessions_name_what_was_ruled_out_and_why(api: Api, world: World) -> None:
    floats = await item(api, world.human.token, world, "Store refund amounts as floats", kind="DECISION")
    cents = await replace(
        api, world, floats, "Store refund amounts as integer cents", "floats lost cents", kind="DECISION"
    )
    found = await rehydrate(api, world.agent.token, world.project_id, "Add partial refunds", 1000)
    (note,) = found["supersessions"]
    assert note["previous"]["id"] == floats and note["previous"]["status"] == "SUPERSEDED"
    assert note["replacement"]["id"] == cents and note["reason"] == "floats lost cents"
    assert datetime.fromisoformat(note["at"]) <= datetime.now().astimezone()
    ruled_out = found["rendered"].split("## Ruled out recently (do not propose again)\n")[1]
    assert "DECISION: Store refund amounts as floats" in ruled_out
    assert "because: floats lost cents" in ruled_out and "integer cents" in ruled_out
    assert floats not in entry_ids(found), "what was ruled out is named, never an entry"
    assert cents in entry_ids(found)

    await asyncio.sleep(0.3)
    old = await rehydrate(
        api, world.agent.token, world.project_id, "Add partial refunds", 1000, recent="PT0.2S"
    )
    assert old["supersessions"] == []
    assert "Ruled out" not in old["rendered"]


# --- R11.5 the score -----------------------------------------------------------------------------

TWINS = "Refund webhooks retry with exponential backoff"
ITEM_TIMES = "query($i: ID!) { item(id: $i) { assertedAt } }"


async def test_r11_5_score_is_relevance_x_authority_x_freshness_with_a_disputed_penalty(
    api: Api, world: World
) -> None:
    """Five items saying the same thing (equal relevance) differ only by authority, dispute, freshness."""
    human = await item(api, world.human.token, world, TWINS)
    unsure = await item(api, world.agent.token, world, TWINS, confidence=0.5)
    sure = await item(api, world.agent.token, world, TWINS, confidence=1.0)
    disputed = await item(api, world.agent.token, world, TWINS, contradicts=[human])
    decaying = await item(api, world.human.token, world, TWINS, decayAfter="PT1S")
    said = (await api.run(world.human.token, ITEM_TIMES, i=decaying))["item"]["assertedAt"]
    at_decay = (datetime.fromisoformat(said) + timedelta(seconds=1)).isoformat()

    found = await rehydrate(api, world.human.token, world.project_id, "refund webhooks", 4000, asOf=at_decay)
    scores = {e["item"]["id"]: e["score"] for e in found["entries"]}
    expected = {human: 1.0, sure: 0.8, unsure: 0.6, decaying: 0.5, disputed: 0.6 * 0.25}
    assert scores.keys() == expected.keys()
    for item_id, score in expected.items():
        assert abs(scores[item_id] - score) < 1e-9, (item_id, scores[item_id], score)
    line = next(row for row in found["rendered"].splitlines() if row.startswith("[DISPUTED"))
    assert line.startswith("[DISPUTED · contradicts") and TWINS in line
    assert "stale" not in found["rendered"], "at exactly decayAfter it is not yet stale (R10)"


# --- R11.6 only what is still believed -----------------------------------------------------------


async def test_r11_6_superseded_and_retired_items_are_never_entries(api: Api, world: World) -> None:
    old = await item(api, world.human.token, world, "Refunds settle in two days")
    new = await replace(api, world, old, "Refunds settle in three days", "the PSP changed")
    retired = await item(api, world.agent.token, world, "Refunds settle instantly")
    await api.run(world.agent.token, RETIRE_ITEM, i=retired, r="wrong")
    lb_retired = await load_bearing(api, world, "Refunds need a second approver")
    await api.run(world.human.token, RETIRE_ITEM, i=lb_retired, r="dropped")

    found = await rehydrate(api, world.agent.token, world.project_id, "refunds settle", 4000)
    assert entry_ids(found) == {new}
    assert all(e["item"]["status"] in ("ACTIVE", "DISPUTED") for e in found["entries"])
    assert "settle instantly" not in found["rendered"]
    assert "second approver" not in found["rendered"]


# --- R11.7 tokens --------------------------------------------------------------------------------

LINES = """query($i: ID!) { item(id: $i) { rendered } }"""


async def test_r11_7_tokens_are_counted_with_tiktoken_on_the_text_rendered_shows(
    api: Api, world: World
) -> None:
    await load_bearing(api, world, "Refunds never exceed the captured amount")
    await item(api, world.agent.token, world, "Refund fees: the PSP keeps its fee", confidence=0.7)
    floats = await item(api, world.human.token, world, "Refunds use floats", kind="DECISION")
    await replace(api, world, floats, "Refunds use integer cents", "rounding", kind="DECISION")
    found = await rehydrate(api, world.agent.token, world.project_id, "refund fees", 4000)

    assert found["encoding"] == "cl100k_base"
    assert len(found["entries"]) == 3
    for entry in found["entries"]:
        line = (await api.run(world.agent.token, LINES, i=entry["item"]["id"]))["item"]["rendered"] + "\n"
        assert line in found["rendered"]
        assert entry["tokens"] == len(tokens.encoding().encode_ordinary(line))
    assert found["tokensUsed"] == len(tokens.encoding().encode_ordinary(found["rendered"]))


# --- R11.8 determinism ---------------------------------------------------------------------------


async def test_r11_8_the_same_inputs_give_the_same_slice(api: Api, world: World) -> None:
    for n in range(8):
        await item(api, world.agent.token, world, f"Refund note {n}", confidence=0.5, decayAfter="P1D")
    await load_bearing(api, world, "Refunds never exceed the captured amount")
    now = datetime.now().astimezone().isoformat()
    asked = {"quotas": [{"kind": "FACT", "maxShare": 0.5}], "asOf": now}
    first = await rehydrate(api, world.agent.token, world.project_id, "refund note", 150, **asked)
    tokens.cached()._entries.clear()  # recounted from scratch, the same
    second = await rehydrate(api, world.agent.token, world.project_id, "refund note", 150, **asked)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert 1 < len(first["entries"]) < 9


# --- R11.9 candidates in SQL, with indexes --------------------------------------------------------

BULK = text(
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by, confirmed_by,"
    " confirmed_at)"
    " SELECT CAST(:ws AS uuid), mneia_uuid7(), CAST(:project AS uuid),"
    " (ARRAY['FACT','DECISION','TASK','PREFERENCE','QUESTION','CONSTRAINT'])[1 + n % 6],"
    " 'Ledger entry ' || n || CASE WHEN n % 500 = 0 THEN ' mentions a chargeback' ELSE '' END,"
    " CAST(:actor AS uuid), CAST(:actor AS uuid), now()"
    " FROM generate_series(1, :count) AS n"
)


class Explaining(Tx):
    """Runs EXPLAIN of each candidate statement (planned for its values), then the statement."""

    def __init__(self, connection: Any, driver: Any) -> None:
        super().__init__(connection, driver)
        self.driver = driver
        self.plans: list[str] = []

    async def fetch(self, statement: Driven, params: Any) -> Any:
        if (
            statement.sql.lstrip().upper().startswith(("SELECT", "WITH", "("))
            and "set_config" not in statement.sql
        ):
            explained = await self.driver.fetch(f"EXPLAIN {statement.sql}", *statement.arguments(params))
            self.plans.append("\n".join(row[0] for row in explained))
        return await super().fetch(statement, params)


async def test_r11_9_candidates_are_chosen_in_sql_with_indexes_never_the_whole_project(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    async with as_owner(api.admin_engine, world.human) as connection:
        params = {"ws": world.workspace_id, "project": world.project_id, "actor": world.human.id}
        await connection.execute(BULK, {**params, "count": 6000})
    # Other tenants' rows beside it, as a shared table holds them: whatever else this database
    # holds (the modules run before, in this worker), reading the whole table is never the cheap
    # way to this project's candidates, as it is not in production.
    others = await api.world()
    async with as_owner(api.admin_engine, others.human) as connection:
        params = {"ws": others.workspace_id, "project": others.project_id, "actor": others.human.id}
        await connection.execute(BULK, {**params, "count": 30_000})
    async with api.admin_engine.begin() as connection:
        await connection.execute(text("ANALYZE items"))
    await load_bearing(api, world, "Never store card numbers")

    ask = slice.Ask(
        project_id=uuid.UUID(world.project_id),
        task="ledger entry",
        budget=100,
        quotas=profile.GENERAL.quotas,
        weights=profile.GENERAL.weights,
    )
    asked = slice.request(ask, datetime.now().astimezone(), 1)
    async with as_caller(engine, world.human) as connection:
        explaining = Explaining(connection, (await connection.get_raw_connection()).driver_connection)
        explaining.workspace_id = uuid.UUID(world.workspace_id)  # as storage.token.authenticate sets it
        found = await slice.find(explaining, ask, datetime.now().astimezone())
        rare_words = dataclasses.replace(ask, task="chargeback")
        rare = await slice.find(explaining, rare_words, datetime.now().astimezone())
    # Every one of the 6,000 items shares the task's words; only the pools came back.
    bound = sum(asked.pools.values()) + asked.every_word
    assert len(found.matched) <= bound < 6000
    assert [m.record.statement for m in found.guaranteed] == ["Never store card numbers"]
    chargebacks = {f"Ledger entry {n} mentions a chargeback" for n in range(500, 6001, 500)}
    assert {m.record.statement for m in rare.matched} == chargebacks
    # Which index serves which branch is the planner's choice, by its statistics; never a whole scan.
    plans = "\n".join(explaining.plans)
    assert "Seq Scan on items" not in plans, plans
    assert "Index" in plans, plans


def supersede_elsewhere(admin_url: str, world: World, target: str, statement: str) -> None:
    """``supersedeItem`` through another server (its own app, engine and event loop), committed
    before this returns: what another process does while a request reads."""

    async def write() -> None:
        engine = create_engine(app_url(admin_url), pool_size=1)
        nodes = Nodes(engine, pool_size=1) if support.ROUTED is not None else None  # on Citus, routed
        transport = httpx.ASGITransport(app=create_app(engine, dispose_engine=False, nodes=nodes))
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://elsewhere.test") as http:
                await Api(http, engine).run(
                    world.human.token, SUPERSEDE, **supersession(world.project_id, target, statement, "moved")
                )
        finally:
            if nodes is not None:
                await nodes.dispose()
            await engine.dispose()

    writer = threading.Thread(target=lambda: asyncio.run(write()))
    writer.start()
    writer.join()


async def test_r11_8_a_slice_is_read_in_one_snapshot_whatever_commits_meanwhile(
    api: Api, world: World
) -> None:
    """A query's statements read one snapshot (REPEATABLE READ, READ ONLY): a rule superseded by
    another process after the slice read its rules and before it read the recent replacements is
    neither half-seen (guaranteed and ruled out at once) nor half-missed. Under READ COMMITTED
    this slice listed the rule as GUARANTEED and, in the same text, as replaced."""
    rule = await load_bearing(api, world, "Refund batches settle overnight")
    admin_url = api.admin_engine.url.render_as_string(hide_password=False)
    meanwhile: list[str] = []

    def before(_sender: Any, statement: str, _arguments: Any) -> None:
        if candidates.name_of(statement) == "replacements" and not meanwhile:
            meanwhile.append(statement)
            supersede_elsewhere(admin_url, world, rule, "Refund batches settle hourly")

    database.DRIVEN_OBSERVERS.append(before)
    try:
        found = await rehydrate(api, world.agent.token, world.project_id, "refund batches settle", 2000)
    finally:
        database.DRIVEN_OBSERVERS.remove(before)
    assert meanwhile, "the other process wrote between the rules and the replacements"
    assert entry_ids(found, "GUARANTEED") == {rule}
    assert found["supersessions"] == [] and "Ruled out" not in found["rendered"]
    assert "settle hourly" not in found["rendered"]
    now = await rehydrate(api, world.agent.token, world.project_id, "refund batches settle", 2000)
    assert [note["previous"]["id"] for note in now["supersessions"]] == [rule]
    assert rule not in entry_ids(now)


NOT_LEAKPROOF = text("ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF")
RARE_WORD = text("EXPLAIN SELECT id FROM items WHERE search @@ to_tsquery('english', 'chargeback')")


async def test_r11_9_full_text_search_may_use_its_index_under_row_level_security(
    api: Api, world: World
) -> None:
    """Under the policies, a condition may serve as an index condition only if it is LEAKPROOF.

    Migration 0005 marks tsvector @@ tsquery so (a superuser migrates the test database). Whether
    the planner then prefers items_search depends on its statistics, which depend on what every
    other test wrote: so this checks the flag, and, with the flag taken off inside a transaction
    that is rolled back, that the match is then only ever a filter, never an index condition.
    (On a 100,000-item project, a rare word takes 52 ms by a sequential scan without the flag,
    0.3 ms through items_search with it: benchmarks/rehydrate.py runs with it.)
    """
    flag = text("SELECT proleakproof FROM pg_proc WHERE oid = 'pg_catalog.ts_match_vq'::regproc")
    async with api.admin_engine.connect() as connection:
        assert (await connection.execute(flag)).scalar_one() is True
        await connection.rollback()
        await connection.begin()
        try:
            await connection.execute(NOT_LEAKPROOF)
            await connection.execute(text("SET LOCAL ROLE mneia_app"))
            await authenticate(connection, world.human)
            plan = "\n".join(row[0] for row in await connection.execute(RARE_WORD))
        finally:
            await connection.rollback()
    matching = [line.strip() for line in plan.splitlines() if "search @@" in line]
    assert matching and all(line.startswith("Filter:") for line in matching), plan
    assert "items_search" not in plan, plan


# --- as of a moment (R9) ---------------------------------------------------------------------------


async def test_r9_r11_as_of_a_moment_rehydrates_what_was_believed_then(api: Api, world: World) -> None:
    floats = await item(api, world.human.token, world, "Store refunds as floats", kind="DECISION")
    then = (await api.run(world.human.token, ITEM_TIMES, i=floats))["item"]["assertedAt"]
    cents = await replace(api, world, floats, "Store refunds as cents", "rounding", kind="DECISION")

    past = await rehydrate(api, world.agent.token, world.project_id, "store refunds", 1000, asOf=then)
    assert entry_ids(past) == {floats} and past["supersessions"] == []
    assert past["entries"][0]["item"]["status"] == "ACTIVE" and past["asOf"] is not None
    now = await rehydrate(api, world.agent.token, world.project_id, "store refunds", 1000)
    assert entry_ids(now) == {cents}
    assert [n["previous"]["id"] for n in now["supersessions"]] == [floats]


# --- who sees what (R1, R2) -------------------------------------------------------------------------

READABLE = "query($i: ID!) { item(id: $i) { id } }"


async def readable(api: Api, token: str, item_id: str) -> bool:
    return (await api.run(token, READABLE, i=item_id))["item"] is not None


async def test_r2_a_slice_holds_only_what_the_caller_could_read_with_item(api: Api, world: World) -> None:
    bob = await api.actor(world.human.token, "AGENT", "bob")
    await api.add_member(world.human.token, world.project_id, bob.id)
    await load_bearing(api, world, "Alice's private refund rule", scope="PRIVATE")
    await item(api, world.human.token, world, "Refund secret for Bob", scope="GRANTS", grantActorIds=[bob.id])
    agent_draft = await item(api, world.agent.token, world, "Refund draft", scope="PRIVATE")
    done = await api.run(
        world.agent.token,
        SUPERSEDE,
        **supersession(world.project_id, agent_draft, "Refund plan", "drafted", scope="PROJECT"),
    )
    plan = done["supersedeItem"]["replacement"]["id"]
    await item(api, world.agent.token, world, "Refunds are public knowledge", scope="WORKSPACE")

    seen: dict[str, set[str]] = {}
    for name, who in (("alice", world.human), ("agent", world.agent), ("bob", bob)):
        found = await rehydrate(api, who.token, world.project_id, "refund", 4000)
        named = entry_ids(found)
        for note in found["supersessions"]:
            named |= {note["previous"]["id"], note["replacement"]["id"]}
        for item_id in named:
            assert await readable(api, who.token, item_id), (name, item_id)
        seen[name] = {e["item"]["statement"] for e in found["entries"]}
        if name == "alice":
            assert found["supersessions"] == [], "the replaced draft was the agent's own"
            assert plan in named
    assert "Alice's private refund rule" in seen["alice"]
    assert "Alice's private refund rule" not in seen["agent"] | seen["bob"]
    assert "Refund secret for Bob" in seen["bob"] and "Refund secret for Bob" not in seen["agent"]
    assert "Refunds are public knowledge" in seen["alice"] & seen["agent"] & seen["bob"]


async def test_r1_another_workspaces_project_is_not_found(api: Api, world: World) -> None:
    other = await api.world()
    await load_bearing(api, other, "Another tenant's rule")
    error = await api.fail(
        world.human.token,
        "query($i: RehydrateInput!) { rehydrate(input: $i) { tokensUsed } }",
        i={"projectId": other.project_id, "task": "rule", "tokenBudget": 100},
    )
    assert_code(error, "NOT_FOUND")


# --- bad input (R14) --------------------------------------------------------------------------------

ASK = "query($i: RehydrateInput!) { rehydrate(input: $i) { tokensUsed } }"


async def test_r14_a_bad_budget_quota_or_task_is_refused_naming_the_field(api: Api, world: World) -> None:
    base = {"projectId": world.project_id, "task": "refunds", "tokenBudget": 100}
    for change, field in (
        ({"tokenBudget": 0}, "input.tokenBudget"),
        ({"tokenBudget": -5}, "input.tokenBudget"),
        ({"task": "   "}, "input.task"),
        ({"quotas": [{"kind": "FACT", "maxShare": 1.5}]}, "input.quotas[0].maxShare"),
        (
            {"quotas": [{"kind": "FACT", "maxShare": 0.1}, {"kind": "TASK", "maxShare": -0.1}]},
            "input.quotas[1]",
        ),
        (
            {"quotas": [{"kind": "FACT", "maxShare": 0.1}, {"kind": "FACT", "maxShare": 0.2}]},
            "input.quotas[1].kind",
        ),
        ({"projectId": "not-an-id"}, "input.projectId"),
    ):
        await refused_as_bad_input(api, world.human.token, ASK, field, i={**base, **change})


def test_the_pools_bound_the_work_whatever_the_budget() -> None:
    assert slice.pool(0.0, 4000) == 0
    assert slice.pool(0.3, 1) == slice.POOL_MIN
    assert slice.pool(1.0, 10**9) == slice.POOL_MAX


async def test_r11_1_a_task_of_stop_words_or_punctuation_still_gets_the_guarantee(
    api: Api, world: World
) -> None:
    """A task PostgreSQL finds no word in matches nothing, and breaks nothing: the rule is guaranteed,
    and the rest of the budget goes to what shares no word with it (FILL, score 0)."""
    rule = await load_bearing(api, world, "Never log secrets")
    other = await item(api, world.human.token, world, "The and or")
    for task in ("the and of", "C++ & <-> ! 'quote' \\\\ :* |", "été über naïve 日本語"):
        found = await rehydrate(api, world.agent.token, world.project_id, task, 100)
        chosen = [(e["item"]["id"], e["reason"], e["score"]) for e in found["entries"]]
        assert chosen == [(rule, "GUARANTEED", 0.0), (other, "FILL", 0.0)], task


async def test_r2_a_ruled_out_reason_hides_the_ids_the_caller_cannot_see(api: Api, world: World) -> None:
    secret = await item(api, world.human.token, world, "Private refund note", scope="PRIVATE")
    floats = await item(api, world.human.token, world, "Refunds use floats", kind="DECISION")
    await replace(api, world, floats, "Refunds use cents", f"see {secret}", kind="DECISION")
    theirs = await rehydrate(api, world.agent.token, world.project_id, "refunds", 1000)
    (note,) = theirs["supersessions"]
    assert note["reason"] == "see [hidden]" and secret not in theirs["rendered"]
    mine = await rehydrate(api, world.human.token, world.project_id, "refunds", 1000)
    assert mine["supersessions"][0]["reason"] == f"see {secret}"


async def test_r9_r11_a_slice_as_of_the_earliest_and_latest_instants_answers_cleanly(
    api: Api, world: World
) -> None:
    """As of year 1 nothing existed (the recent window reaches before the first instant there is);
    as of year 9999 everything said so far did. Neither is an internal error."""
    rule = await load_bearing(api, world, "Never deploy on Fridays")
    for moment, expected in (("0001-01-01T00:00:00Z", set()), ("9999-12-31T23:59:59Z", {rule})):
        found = await rehydrate(
            api, world.agent.token, world.project_id, "deploy plan", 400, asOf=moment, recent="P36500D"
        )
        assert entry_ids(found, "GUARANTEED") == expected, moment


# --- R11 packing: the budget is spent (issue 20) ----------------------------------------------

DECISIONS = text(
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by, confirmed_by,"
    " confirmed_at)"
    " SELECT CAST(:ws AS uuid), mneia_uuid7(), CAST(:project AS uuid), 'DECISION',"
    " 'Ledger decision ' || n, CAST(:actor AS uuid), CAST(:actor AS uuid), now()"
    " FROM generate_series(1, :count) AS n"
)


async def test_r11_pools_refill_when_they_run_dry_before_the_budget(api: Api, world: World) -> None:
    """150 decisions match the task and the budget holds them all: the first read's pool (60)
    runs dry, is read again, and every one is in. Within its quota (0.4) they are SCORED; the rest
    FILL what no other kind wanted."""
    async with as_owner(api.admin_engine, world.human) as connection:
        params = {"ws": world.workspace_id, "project": world.project_id, "actor": world.human.id}
        await connection.execute(DECISIONS, {**params, "count": 150})
    found = await rehydrate(api, world.agent.token, world.project_id, "ledger decision", 6000)
    assert len(found["entries"]) == 150 and found["tokensUsed"] <= 6000
    assert scored_tokens(found, "DECISION") <= 0.4 * 6000
    assert {e["reason"] for e in found["entries"]} == {"SCORED", "FILL"}
    assert found["leftOut"] == [] and sum(c["count"] for c in found["omitted"]) == 0


SAME_FILLERS = text(
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by)"
    " SELECT CAST(:ws AS uuid), mneia_uuid7(), CAST(:project AS uuid), 'FACT', :statement,"
    " CAST(:actor AS uuid) FROM generate_series(1, :count)"
)


async def test_r11_a_budget_left_shorter_than_most_lines_read_is_not_refilled(api: Api, world: World) -> None:
    """200 items share no word with the task and all say the same long line. The budget holds the
    match, six of them and a slack as long as the match's line, the shortest read: the first read
    of fillers (10) comes back full, six fit, and no more are read for a slack shorter than most
    lines (measured against the shortest line, a 1,000-item tenant's slice read 60, 120, 240 and
    480 fillers for 13 tokens more of 4,000)."""
    match = await item(api, world.human.token, world, "Ledger totals round half even")
    filler = "Archive note on the office plants, the coffee machine and the lift in the old east building"
    async with as_owner(api.admin_engine, world.human) as connection:
        params = {"ws": world.workspace_id, "project": world.project_id, "actor": world.human.id}
        await connection.execute(SAME_FILLERS, {**params, "statement": filler, "count": 200})
    roomy = await rehydrate(api, world.agent.token, world.project_id, "ledger totals", 1000)
    sizes = {e["reason"]: e["tokens"] for e in roomy["entries"]}
    line, long_line = sizes["SCORED"], sizes["FILL"]
    slack = max(slice.MIN_PIECE_TOKENS, line)
    assert slack < long_line, (line, long_line)
    budget = tokens.count(render.heading("FACT")) + line + 6 * long_line + slack

    read: list[str] = []

    def fillers(_sender: Any, statement: str, _arguments: Any) -> None:
        if candidates.name_of(statement) == "fillers":
            read.append(statement)

    database.DRIVEN_OBSERVERS.append(fillers)
    try:
        tight = await rehydrate(api, world.agent.token, world.project_id, "ledger totals", budget)
    finally:
        database.DRIVEN_OBSERVERS.remove(fillers)
    assert len(read) == 1
    assert [e["reason"] for e in tight["entries"]].count("FILL") == 6 and match in entry_ids(tight)
    assert tight["tokensUsed"] == budget - slack


async def test_r11_what_shares_no_word_with_the_task_fills_the_budget_left_best_standing_first(
    api: Api, world: World
) -> None:
    """Once every match is in, the items sharing no word fill the rest, by standing per token: a
    human's load-bearing decision before a human's fact before an agent's guess of the same
    length. What did not fit is counted NO_MATCH."""
    match = await item(api, world.human.token, world, "Refund batches settle overnight")
    guess = await item(api, world.agent.token, world, "Payouts run through the Berlin bank", confidence=0.4)
    fact = await item(api, world.human.token, world, "Payouts run through the Dublin bank")
    ruling = await item(api, world.human.token, world, "Payouts run through the Madrid bank", kind="DECISION")
    await api.run(world.human.token, MAKE_LOAD_BEARING, i=ruling)

    roomy = await rehydrate(api, world.agent.token, world.project_id, "refund batches", 2000)
    reasons = {e["item"]["id"]: (e["reason"], e["score"]) for e in roomy["entries"]}
    assert reasons[match][0] == "SCORED"
    assert {reasons[i] for i in (guess, fact, ruling)} == {("FILL", 0.0)}

    sizes = {e["item"]["id"]: e["tokens"] for e in roomy["entries"]}
    headings = tokens.count(render.heading("FACT")) + tokens.count(render.heading("DECISION"))
    room = sizes[match] + sizes[ruling] + headings
    tight = await rehydrate(api, world.agent.token, world.project_id, "refund batches", room + 2)
    assert entry_ids(tight) == {match, ruling}, tight["rendered"]
    assert tight["leftOut"] == [{"kind": "FACT", "reason": "NO_MATCH", "count": 2}]


async def test_r11_4_a_supersession_matches_the_task_through_any_item_of_its_chain(
    api: Api, world: World
) -> None:
    """Kafka → Redis streams → NATS: the task names Kafka, only the first item of the chain says it.
    The second replacement (Redis streams → NATS) is on the task all the same, so it is listed
    before a newer replacement that shares nothing with the task."""
    kafka = await item(api, world.human.token, world, "Events go through Kafka", kind="DECISION")
    streams = await replace(api, world, kafka, "Events go through Redis streams", "ops cost", kind="DECISION")
    nats = await replace(api, world, streams, "Events go through NATS", "persistence", kind="DECISION")
    cron = await item(api, world.human.token, world, "Invoices export at midnight", kind="DECISION")
    await replace(api, world, cron, "Invoices export hourly", "too late for finance", kind="DECISION")

    found = await rehydrate(api, world.agent.token, world.project_id, "Tune the Kafka consumer", 4000)
    order = [n["previous"]["id"] for n in found["supersessions"]]
    assert set(order[:2]) == {kafka, streams} and order[2] == cron, order
    assert nats in entry_ids(found)


async def test_r2_r11_4_an_item_of_the_chain_the_caller_cannot_see_does_not_make_a_note_match(
    api: Api, world: World
) -> None:
    """The chain is walked under the caller's policies: Alice's private "Kafka" item makes the
    note after it match her task, and only hers. For the agent, who cannot see it, the same note
    shares no word with the task and comes after a newer one (newest first among those)."""
    kafka = await item(
        api, world.human.token, world, "Events go through Kafka", kind="DECISION", scope="PRIVATE"
    )
    streams = await replace(api, world, kafka, "Events go through Redis streams", "ops cost", kind="DECISION")
    await replace(api, world, streams, "Events go through NATS", "persistence", kind="DECISION")
    cron = await item(api, world.human.token, world, "Invoices export at midnight", kind="DECISION")
    await replace(api, world, cron, "Invoices export hourly", "too late for finance", kind="DECISION")

    def order(found: dict[str, Any]) -> list[str]:
        return [n["previous"]["id"] for n in found["supersessions"]]

    task = "Tune the Kafka consumer"
    assert order(await rehydrate(api, world.agent.token, world.project_id, task, 4000)) == [cron, streams]
    mine = order(await rehydrate(api, world.human.token, world.project_id, task, 4000))
    assert set(mine[:2]) == {kafka, streams} and mine[2] == cron, mine


HALF_WRITTEN = text(
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by, supersedes_id,"
    " supersession_reason)"
    " VALUES (CAST(:ws AS uuid), mneia_uuid7(), CAST(:project AS uuid), 'FACT', 'Refunds settle hourly',"
    " CAST(:actor AS uuid), CAST(:target AS uuid), 'faster')"
)


async def test_r11_a_half_written_supersession_never_breaks_a_slice(api: Api, world: World) -> None:
    """Issue 21's row: a successor written straight to the table, its target left ACTIVE (no
    instant it became SUPERSEDED). Every slice of the project answered INTERNAL_SERVER_ERROR; now
    the pair is no ruled-out option (nothing was ruled out), and both items are still candidates."""
    target = await item(api, world.agent.token, world, "Refunds settle nightly")
    async with api.admin_engine.begin() as connection:  # past every guard, as a broken writer would be
        await connection.execute(text("SET LOCAL session_replication_role = replica"))
        params = {"ws": world.workspace_id, "project": world.project_id, "actor": world.agent.id}
        await connection.execute(HALF_WRITTEN, {**params, "target": target})
    for token in (world.agent.token, world.human.token):
        found = await rehydrate(api, token, world.project_id, "refunds settle", 2000)
        assert found["supersessions"] == []
        assert {e["item"]["statement"] for e in found["entries"]} == {
            "Refunds settle nightly",
            "Refunds settle hourly",
        }
    # Then marked SUPERSEDED the same way: no state row says when. The note is named, dated by
    # the replacement's own instant.
    async with api.admin_engine.begin() as connection:
        await connection.execute(text("SET LOCAL session_replication_role = replica"))
        await connection.execute(
            text("UPDATE items SET status = 'SUPERSEDED' WHERE id = CAST(:target AS uuid)"),
            {"target": target},
        )
    found = await rehydrate(api, world.agent.token, world.project_id, "refunds settle", 2000)
    (note,) = found["supersessions"]
    said = (await api.run(world.agent.token, ITEM_TIMES, i=note["replacement"]["id"]))["item"]["assertedAt"]
    assert note["previous"]["id"] == target and note["at"] == said


@pytest.mark.skipif(
    not ON_CLUSTER, reason="reads a Citus shard on its node: MNEIA_TEST_CITUS=1 (.ci/run's Citus stage)"
)
async def test_on_citus_a_slice_whose_shards_are_gone_fails_once_then_reads_them_again(
    api: Api, world: World, nodes: Nodes
) -> None:
    """A slice reads its workspace's shards by the names the server cached (Driven.on). After a
    split, a name no longer exists: that request fails, as the database's absence does (nothing
    written, a retry invited), and the names are read again, so the next slice is whole."""
    rule = await load_bearing(api, world, "Refund batches settle overnight")
    workspace_id = uuid.UUID(world.workspace_id)
    real = await nodes.shards(workspace_id)
    nodes._shards[workspace_id] = {**real, "items": "items_1"}  # as after a split: a shard gone
    failed = await api.fail(
        world.agent.token, REHYDRATE, i={"projectId": world.project_id, "task": "refunds", "tokenBudget": 500}
    )
    assert failed["extensions"]["code"] == "SERVICE_UNAVAILABLE", failed
    again = await rehydrate(api, world.agent.token, world.project_id, "refund batches settle", 2000)
    assert entry_ids(again, "GUARANTEED") == {rule}
    assert await nodes.shards(workspace_id) == real
