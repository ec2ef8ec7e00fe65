"""Privacy by controls (issue 23): retention as redaction (R16), legal holds (R17), erasure (R18).

The sweep takes its now from one clock (``mneia.clock``): these tests sweep at day 29 and day 31 of a
status change without waiting. The database refuses what matters for every role, the owner included:
writing text back into a redacted item, redacting a held one, a token for an erased actor.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage import privacy
from tests.graphql import Api, World
from tests.support import CHECK_VIOLATION, RETIRE_ITEM, assert_code, constraint_of, sqlstate

SECRET = "the Frankfurt datacentre lease ends in March"
SET_POLICY = """mutation($i: RetentionPolicyInput!) { setRetentionPolicy(input: $i) {
  id after statuses kinds project { id } createdBy { id } } }"""
ITEM = """query($id: ID!, $asOf: DateTime) { item(id: $id, asOf: $asOf) {
  id statement details status authority redacted redactedAt redactionReason legalHold
  provenance { basis } events { kind reason } chain { id statement redacted } } }"""
SEARCH = "query($p: ID!, $t: String!) { items(projectId: $p, filter: {text: $t}) { totalCount } }"
HOLD = """mutation($p: ID, $i: ID, $r: String!) { placeLegalHold(projectId: $p, itemId: $i, reason: $r) {
  id reason item { id } project { id } placedBy { id } } }"""
RELEASE = "mutation($h: ID!) { releaseLegalHold(id: $h) { id releasedAt releasedBy { id } } }"
ERASE = 'mutation($a: ID!) { eraseActor(id: $a, reason: "left the company") { id name erased } }'
DUE = """query($p: ID!, $w: Duration!) { redactionsDue(projectId: $p, within: $w) {
  item { id } dueAt policy { id } } }"""


async def policy(api: Api, world: World, after: str = "P30D", **more: Any) -> dict[str, Any]:
    given = {"statuses": ["RETIRED", "SUPERSEDED"], "after": after, **more}
    return (await api.run(world.human.token, SET_POLICY, i=given))["setRetentionPolicy"]


async def retired(api: Api, world: World, statement: str = SECRET) -> str:
    made = await api.assert_item(
        world.agent.token,
        projectId=world.project_id,
        statement=statement,
        details=f"details: {statement}",
        basis="ops channel",
    )
    await api.run(world.agent.token, RETIRE_ITEM, i=made["id"], r=f"no longer true: {statement}")
    return str(made["id"])


async def item(api: Api, world: World, item_id: str, as_of: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = (await api.run(world.human.token, ITEM, id=item_id, asOf=as_of))["item"]
    return found


async def sweep(admin: AsyncEngine, world: World, now: datetime) -> privacy.Swept:
    """The sweep, of this test's workspace only (the others' are other tests')."""
    return await privacy.sweep(admin, now, workspace=uuid.UUID(world.workspace_id))


def owner_in(world: World) -> Any:
    """Statements run as mneia_owner bound to the world's workspace, as the sweep runs."""
    return text("SELECT mneia_bind(CAST(:w AS uuid), CAST(:a AS uuid))").bindparams(
        w=world.workspace_id, a=world.human.id
    )


def days(n: int) -> datetime:
    return datetime.now(UTC) + timedelta(days=n)


async def test_r16_a_sweep_at_day_29_redacts_nothing_and_at_day_31_only_the_text(
    api: Api, world: World, admin_engine: AsyncEngine
) -> None:
    await policy(api, world)
    item_id = await retired(api, world)
    kept = await api.assert_item(world.agent.token, projectId=world.project_id, statement=f"active: {SECRET}")
    before = datetime.now(UTC).isoformat()

    assert (await sweep(admin_engine, world, days(29))).redacted == 0
    assert (await item(api, world, item_id))["statement"] == SECRET

    swept = await sweep(admin_engine, world, days(31))
    assert swept.redacted >= 1
    found = await item(api, world, item_id)
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert found["statement"] == f"[redacted by retention on {today}]"
    assert (found["details"], found["provenance"]["basis"]) == (None, None)
    assert (found["status"], found["authority"], found["redacted"], found["redactionReason"]) == (
        "RETIRED",
        "AGENT_ASSERTED",
        True,
        "retention",
    )
    events = found["events"]
    assert [e["kind"] for e in events][-1] == "REDACTED"
    assert all(SECRET not in (e["reason"] or "") for e in events), events
    # As of before the sweep, the item stands as it did, its text gone there too.
    then = await item(api, world, item_id, as_of=before)
    assert then["status"] == "RETIRED" and SECRET not in then["statement"]
    # The search index follows: the words are not found any more; an ACTIVE item is never redacted.
    hits = await api.run(world.human.token, SEARCH, p=world.project_id, t="Frankfurt")
    assert hits["items"]["totalCount"] == 1
    assert (await item(api, world, kept["id"]))["redacted"] is False


async def test_r16_a_redacted_items_text_is_never_written_back_not_even_by_the_owner(
    api: Api, world: World, admin_engine: AsyncEngine
) -> None:
    await policy(api, world)
    item_id = await retired(api, world)
    await sweep(admin_engine, world, days(31))
    for statement in (
        "UPDATE items SET statement = 'back again' WHERE id = CAST(:id AS uuid)",
        "UPDATE items SET redacted_at = NULL, redaction_reason = NULL WHERE id = CAST(:id AS uuid)",
    ):
        with pytest.raises(DBAPIError) as refused:
            async with admin_engine.begin() as connection:  # a superuser, and the owner below it
                await connection.execute(text("SET LOCAL ROLE mneia_owner"))
                await connection.execute(owner_in(world))
                await connection.execute(text(statement), {"id": item_id})
        assert sqlstate(refused.value) == CHECK_VIOLATION
        assert constraint_of(refused.value) == "items_redacted_for_good"
    assert (await item(api, world, item_id))["redacted"] is True


async def test_r16_only_the_owner_redacts_and_policies_are_a_humans_of_at_least_30_days(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    error = await api.fail(world.human.token, SET_POLICY, i={"statuses": ["RETIRED"], "after": "P29D"})
    assert_code(error, "BAD_USER_INPUT") and "input.after" in error["message"]
    error = await api.fail(world.human.token, SET_POLICY, i={"statuses": ["ACTIVE"], "after": "P90D"})
    assert "input.statuses" in error["message"]
    error = await api.fail(world.agent.token, SET_POLICY, i={"statuses": ["RETIRED"], "after": "P90D"})
    assert error["extensions"]["reason"] == "HUMAN_REQUIRED"
    async with engine.connect() as connection:  # the server's own role may not call the redaction
        with pytest.raises(DBAPIError) as refused:
            await connection.execute(text("SELECT mneia_redact(ARRAY[]::uuid[], 'retention')"))
        assert "permission denied" in str(refused.value)


async def test_r16_redactions_due_gives_notice_and_the_project_policy_wins(
    api: Api, world: World, admin_engine: AsyncEngine
) -> None:
    await policy(api, world, after="P365D")
    short = await policy(api, world, after="P30D", projectId=world.project_id, kinds=["FACT"])
    item_id = await retired(api, world)
    soon = (await api.run(world.human.token, DUE, p=world.project_id, w="P31D"))["redactionsDue"]
    assert [(n["item"]["id"], n["policy"]["id"]) for n in soon] == [(item_id, short["id"])]
    assert (await api.run(world.human.token, DUE, p=world.project_id, w="P29D"))["redactionsDue"] == []


async def test_r16_a_superseded_item_keeps_its_place_in_the_chain_without_text(
    api: Api, world: World, admin_engine: AsyncEngine
) -> None:
    await policy(api, world, statuses=["SUPERSEDED"])
    old = await api.assert_item(world.human.token, projectId=world.project_id, statement=SECRET)
    replace = """mutation($t: ID!, $p: ID!) { supersedeItem(input: {targetId: $t, reason: "moved",
      replacement: {projectId: $p, kind: FACT, statement: "the lease moved to Berlin"}}) { __typename } }"""
    await api.run(world.human.token, replace, t=old["id"], p=world.project_id)
    await sweep(admin_engine, world, days(31))
    found = await item(api, world, old["id"])
    assert [(c["redacted"], c["statement"].startswith("[redacted")) for c in found["chain"]] == [
        (True, True),
        (False, False),
    ]
    assert found["authority"] == "HUMAN_CONFIRMED" and found["status"] == "SUPERSEDED"


async def test_r17_a_held_item_is_never_redacted_and_the_sweep_says_so(
    api: Api, world: World, admin_engine: AsyncEngine
) -> None:
    await policy(api, world)
    item_id = await retired(api, world)
    hold = (await api.run(world.human.token, HOLD, p=None, i=item_id, r="litigation 2026-14"))[
        "placeLegalHold"
    ]
    swept = await sweep(admin_engine, world, days(31))
    assert swept.held == 1 and swept.redacted == 0
    found = await item(api, world, item_id)
    assert (found["statement"], found["legalHold"]) == (SECRET, True)
    assert found["events"][-1] == {"kind": "HELD", "reason": "litigation 2026-14"}
    # The database refuses it too, whoever asks.
    with pytest.raises(DBAPIError) as refused:
        async with admin_engine.begin() as connection:
            await connection.execute(text("SET LOCAL ROLE mneia_owner"))
            await connection.execute(owner_in(world))
            await connection.execute(
                text(
                    "UPDATE items SET statement = '', details = NULL, basis = NULL, status_reason = NULL,"
                    " redacted_at = now(), redaction_reason = 'retention' WHERE id = CAST(:id AS uuid)"
                ),
                {"id": item_id},
            )
    assert constraint_of(refused.value) == "items_held"
    await api.run(world.human.token, RELEASE, h=hold["id"])
    assert (await sweep(admin_engine, world, days(31))).redacted == 1
    events = [e["kind"] for e in (await item(api, world, item_id))["events"]]
    assert events[-3:] == ["HELD", "RELEASED", "REDACTED"]


async def test_r17_a_project_hold_keeps_every_item_and_only_a_human_places_it(
    api: Api, world: World, admin_engine: AsyncEngine
) -> None:
    await policy(api, world)
    item_id = await retired(api, world)
    error = await api.fail(world.agent.token, HOLD, p=world.project_id, i=None, r="x")
    assert error["extensions"]["reason"] == "HUMAN_REQUIRED"
    await api.run(world.human.token, HOLD, p=world.project_id, i=None, r="audit")
    assert (await sweep(admin_engine, world, days(400))).held == 1
    assert (await item(api, world, item_id))["redacted"] is False


async def test_r18_erasure_revokes_pseudonymises_and_redacts_private_items(
    api: Api, world: World, admin_engine: AsyncEngine
) -> None:
    private = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement=SECRET, scope="PRIVATE"
    )
    shared = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="retries are idempotent"
    )
    error = await api.fail(world.agent.token, ERASE, a=world.human.id)
    assert error["extensions"]["reason"] == "HUMAN_REQUIRED"

    erased = (await api.run(world.human.token, ERASE, a=world.agent.id))["eraseActor"]
    assert erased["erased"] is True and erased["name"].startswith("erased actor ")
    refused = await api.post(world.agent.token, "{ me { id } }", None)
    assert refused["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    # Its assertions in the project stay, the project's memory, under the pseudonym.
    kept = await api.run(
        world.human.token,
        "query($i: ID!) { item(id: $i) { statement provenance { assertedBy { name } } } }",
        i=shared["id"],
    )
    assert kept["item"]["statement"] == "retries are idempotent"
    assert kept["item"]["provenance"]["assertedBy"]["name"] == erased["name"]
    # Its PRIVATE items lose their text (the owner reads every row).
    async with admin_engine.connect() as connection:
        row = (
            await connection.execute(
                text("SELECT statement, redaction_reason FROM items WHERE id = CAST(:id AS uuid)"),
                {"id": private["id"]},
            )
        ).one()
    assert (row.statement, row.redaction_reason) == ("", "erasure")
    # No token is ever written for it again, not even by a human.
    again = await api.fail(
        world.human.token, "mutation($a: ID!) { createToken(actorId: $a) { token } }", a=world.agent.id
    )
    assert again["extensions"]["code"] == "BAD_USER_INPUT" and "erased" in again["message"]
    async with admin_engine.connect() as connection:  # and the database refuses it whoever writes it
        with pytest.raises(DBAPIError) as refused:
            await connection.execute(
                text(
                    "INSERT INTO api_tokens (workspace_id, id, actor_id, token_hash)"
                    " VALUES (CAST(:w AS uuid), gen_random_uuid(), CAST(:a AS uuid), 'planted')"
                ),
                {"w": world.workspace_id, "a": world.agent.id},
            )
    assert constraint_of(refused.value) == "api_tokens_not_erased"


def test_r16_the_servers_sweep_runs_every_hour_unless_told_otherwise() -> None:
    from mneia.sweeper import DEFAULT, every

    assert every({}) == DEFAULT == timedelta(hours=1)
    assert every({"MNEIA_SWEEP_EVERY": "PT15M"}) == timedelta(minutes=15)
    assert every({"MNEIA_SWEEP_EVERY": "off"}) is None and every({"MNEIA_SWEEP_EVERY": "0"}) is None
    for bad in ("hourly", "PT10S", "P1M"):
        with pytest.raises(ValueError, match="MNEIA_SWEEP_EVERY"):
            every({"MNEIA_SWEEP_EVERY": bad})


def test_r16_mneia_admin_sweep_takes_its_now(api: Api, tmp_path: Any, admin_url: str) -> None:
    """The command, as an operator runs it (its clock given with --now), in one line or JSON."""
    import json
    import subprocess
    import sys

    from tests.live import PATIENCE, cli_env

    env = cli_env(tmp_path, DATABASE_URL=admin_url)
    later = (datetime.now(UTC) + timedelta(days=31)).isoformat()
    done = subprocess.run(
        [sys.executable, "-m", "mneia.cli", "admin", "sweep", "--now", later, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == {"redacted", "held", "workspaces", "now"}
    wrong = subprocess.run(
        [sys.executable, "-m", "mneia.cli", "admin", "sweep", "--now", "2027-01-01"],
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert wrong.returncode == 2 and "UTC offset" in wrong.stderr
