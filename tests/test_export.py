"""``mneia export`` and ``mneia import mneia FILE`` (capture.export, capture.restore) against a served app.

An export holds what its reader may see and nothing else (R1, R2); restored into a fresh workspace and
exported again it reads the same, field by field, once ids, actors, server times and the basis's note
are set aside; importing it twice writes nothing the second time; an agent's import mints no authority
(R3, R4, R5); a file that is not an export is refused with one line and nothing is written (R14).
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.capture.export import END, FORMAT, ITEMS, run_export
from mneia.capture.importer import ImportFailed
from mneia.capture.restore import run_import
from tests.graphql import Api, Who, World
from tests.live import uvicorn_serving
from tests.support import CONFIRM_ITEM, MAKE_LOAD_BEARING, RETIRE_ITEM, changed_tables, database_state

LOAD_BEARING = "A refund never exceeds the capture it refunds"
PROPOSED = "Refunds go through our own ledger first"
PRIVATE = "The agent's private hunch about the PSP's sandbox"
SESSION = """mutation($i: StartSessionInput!) { startSession(input: $i) { id } }"""
ASSERT = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id status } }"
SUPERSEDE = """mutation($i: SupersedeInput!) { supersedeItem(input: $i) {
  __typename ... on Superseded { replacement { id } } } }"""
RESOLVE = (
    """mutation($d: ID!, $k: ID!, $n: String) { resolveDispute(id: $d, keepItemId: $k, note: $n) { id } }"""
)
DISPUTES = "query($p: ID!) { disputes(projectId: $p) { id status } }"
CHECKPOINT = "mutation($i: CheckpointInput!) { checkpoint(input: $i) { id } }"
END_SESSION = "mutation($id: ID!) { endSession(id: $id) { id } }"
IMPORT = "mutation($i: ImportInput!) { importItems(input: $i) { written } }"
COUNT = "query($p: ID!) { items(projectId: $p) { totalCount } }"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
NOTE = re.compile(r" ?\(exported from (?:(?! \(exported from ).)*\)$")


@dataclass(frozen=True)
class Served:
    base: str


@pytest.fixture(scope="module")
async def served(engine: AsyncEngine) -> AsyncIterator[Served]:
    async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
        yield Served(f"http://127.0.0.1:{port}")


def _env(monkeypatch: pytest.MonkeyPatch, served: Served, token: str, project: str | None) -> None:
    monkeypatch.setenv("MNEIA_URL", served.base)
    monkeypatch.setenv("MNEIA_TOKEN", token)
    if project is None:
        monkeypatch.delenv("MNEIA_PROJECT", raising=False)
    else:
        monkeypatch.setenv("MNEIA_PROJECT", project)


async def export_as(
    monkeypatch: pytest.MonkeyPatch, served: Served, token: str, project: str, tmp: Path, name: str
) -> Path:
    _env(monkeypatch, served, token, project)
    out = io.StringIO()
    status = await asyncio.to_thread(
        lambda: run_export(project=None, workspace=False, out=out, as_json_summary=False)
    )
    assert status == 0
    path = tmp / name
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


async def import_as(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    served: Served,
    token: str,
    project: str | None,
    path: Path,
) -> dict[str, Any]:
    _env(monkeypatch, served, token, project)
    capsys.readouterr()
    assert await asyncio.to_thread(lambda: run_import(path, as_json=True)) == 0
    summary: dict[str, Any] = json.loads(capsys.readouterr().out)
    return summary


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def build(api: Api, world: World) -> None:
    """The first workspace: every kind of record the export carries, and one it must not."""
    human, agent, project = world.human.token, world.agent.token, world.project_id

    async def said(token: str, **fields: Any) -> str:
        data = await api.run(token, ASSERT, i={"projectId": project, "kind": "FACT", **fields})
        return str(data["assertItem"]["id"])

    session = (
        await api.run(
            agent,
            SESSION,
            i={
                "projectId": project,
                "task": "Add partial refunds",
                "client": {"tool": "claude-code", "version": "1.0.98"},
                "externalId": "1af7fc5e",
                "deepLink": "claude --resume 1af7fc5e",
            },
        )
    )["startSession"]["id"]
    decision = await said(
        agent, kind="DECISION", sessionId=session, statement="Refunds go through the PSP's refund API",
        basis="payments/refund.py", confidence=0.9,
    )  # fmt: skip
    await api.run(human, CONFIRM_ITEM, i=decision)
    # An agent's replacement of a ruling waits for a human: a proposal, never an item.
    pending = {"projectId": project, "kind": "DECISION", "statement": PROPOSED}
    await api.run(agent, SUPERSEDE, i={"targetId": decision, "reason": "cheaper", "replacement": pending})
    await said(
        agent, sessionId=session, statement="The PSP sandbox rejects partial captures", basis="a test run",
        confidence=0.6, validFrom="2026-01-01T00:00:00+00:00", validTo="2027-01-01T00:00:00+00:00",
        decayAfter="P90D",
    )  # fmt: skip
    constraint = await said(
        agent, kind="CONSTRAINT", sessionId=session, statement="A refund never exceeds its capture",
        suggestLoadBearing=True,
    )  # fmt: skip
    await api.run(human, CONFIRM_ITEM, i=constraint)
    await api.run(human, MAKE_LOAD_BEARING, i=constraint)
    # A human's replacement of a load-bearing rule stays load-bearing; the old one keeps its flag.
    await api.run(
        human,
        SUPERSEDE,
        i={
            "targetId": constraint,
            "reason": "Partial captures",
            "replacement": {"projectId": project, "kind": "CONSTRAINT", "statement": LOAD_BEARING},
        },
    )
    head = await said(agent, sessionId=session, statement="Refunds settle in 5 days", basis="PSP docs v1")
    for version in ("Refunds settle in 3 days", "Refunds settle in 2 days"):
        head = (
            await api.run(
                agent,
                SUPERSEDE,
                i={
                    "targetId": head,
                    "reason": f"PSP changed it: {version.split()[-2]} now",
                    "replacement": {
                        "projectId": project, "sessionId": session, "kind": "FACT", "statement": version,
                    },
                },
            )
        )["supersedeItem"]["replacement"]["id"]  # fmt: skip
    # A session that ended without a handoff, whose client gave only its tool.
    quiet = (await api.run(agent, SESSION, i={"projectId": project, "client": {"tool": "codex"}}))[
        "startSession"
    ]["id"]
    # An agent's suggestion that no human settled yet.
    await said(
        agent, sessionId=quiet, statement="Refund webhooks arrive out of order", suggestLoadBearing=True
    )
    await api.run(agent, END_SESSION, id=quiet)
    task = await said(agent, kind="TASK", statement="Backfill old refunds")
    await api.run(agent, RETIRE_ITEM, i=task, r="done by the data team instead")
    question = await said(agent, kind="QUESTION", statement="Refund shipping separately?")
    await said(agent, statement="Shipping is never refunded", contradicts=[question], basis="ticket #4411")
    ruling = await said(human, kind="CONSTRAINT", statement="Refunds need a reason code")
    await said(agent, kind="CONSTRAINT", statement="Reason codes are optional", contradicts=[ruling])
    disputes = (await api.run(human, DISPUTES, p=project))["disputes"]
    resolved = next(d for d in disputes if d["status"] == "OPEN")  # newest first: the ruling's
    await api.run(human, RESOLVE, d=resolved["id"], k=ruling, n="Finance needs them")
    await said(agent, statement="The team lead sees refunds", scope="GRANTS", grantActorIds=[world.human.id])
    await said(agent, statement=PRIVATE, scope="PRIVATE")
    await api.run(
        agent,
        CHECKPOINT,
        i={
            "sessionId": session,
            "summary": "Refund endpoint drafted; the ledger entries are not written yet.",
            "nextSteps": ["Write the ledger entries"],
            "openQuestions": ["May support refund shipping on its own?"],
            "idempotencyKey": "stop-1",
        },
    )


def unnoted(basis: str | None) -> str | None:
    """The basis without the notes of every export it went through."""
    while basis and NOTE.search(basis):
        basis = NOTE.sub("", basis)
    return basis or None


def normalized(path: Path) -> dict[str, Any]:
    """What an export says, without ids, actors, server times or the basis's note: what must round-trip."""
    found = records(path)
    items = {r["id"]: r for r in found if r["type"] == "item"}
    sessions = {r["id"]: r for r in found if r["type"] == "session"}

    def statement(ref: dict[str, Any] | str | None) -> str | None:
        key = ref["id"] if isinstance(ref, dict) else ref
        return items[key]["statement"] if key in items else None

    def instant(value: str | None) -> datetime | None:
        return datetime.fromisoformat(value) if value else None

    def session(key: str | None) -> dict[str, Any] | None:
        if key not in sessions:
            return None
        s = sessions[key]
        return {
            "client": {"tool": s["client"]["tool"], "version": s["client"]["version"]}
            if s["client"]
            else None,
            "externalId": s["externalId"],
            "deepLink": s["deepLink"],
            "task": s["task"],
            "startedAt": instant(s["transcriptStartedAt"] or s["startedAt"]),
            "provenanceMissing": s["provenanceMissing"],
            "endedAt": instant(s["transcriptEndedAt"] or s["endedAt"]),
            "ended": s["endedAt"] is not None,
        }

    def item(r: dict[str, Any]) -> dict[str, Any]:
        provenance = r["provenance"]
        return {
            "kind": r["kind"],
            "statement": r["statement"],
            "details": r["details"],
            "basis": unnoted(provenance["basis"]),
            "confidence": r["confidence"],
            "status": r["status"],
            "authority": r["authority"],
            "scope": "PRIVATE" if r["scope"] == "GRANTS" else r["scope"],
            "loadBearing": r["loadBearing"],
            "loadBearingSuggested": r["loadBearingSuggested"],
            "validFrom": instant(r["validFrom"]),
            "validTo": instant(r["validTo"]),
            "decayAfter": r["decayAfter"],
            "saidAt": instant(provenance["saidAt"] or r["assertedAt"]),
            "redacted": provenance["redacted"],
            "supersedes": statement(r["supersedesId"]),
            "supersessionReason": r["supersessionReason"],
            "confirmed": r["confirmation"] is not None,
            "retiredReason": UUID.sub("<id>", r["statusReason"] or "") if r["status"] == "RETIRED" else None,
            "session": session((provenance["session"] or {}).get("id")),
        }

    return {
        "items": sorted((item(r) for r in items.values()), key=lambda one: one["statement"]),
        "disputes": sorted(
            (
                (
                    statement(r["item"]),
                    statement(r["contested"]),
                    r["status"],
                    statement(r["keptItem"]),
                    r["reason"] or "disputed (exported)",
                    r["resolutionNote"],
                )
                for r in found
                if r["type"] == "dispute"
            ),
            key=str,
        ),
        "handoffs": [
            (
                r["summary"],
                r["nextSteps"],
                r["openQuestions"],
                r["draft"],
                session(r["session"]["id"]),
                sorted(str(statement(i)) for i in r["itemsAsserted"]),
            )
            for r in found
            if r["type"] == "handoff"
        ],
    }


async def fresh(api: Api, human: str = "carol") -> tuple[Who, str]:
    _, person = await api.bootstrap(human)
    return person, await api.project(person.token, "payments")


@pytest.fixture
async def exported(
    api: Api, world: World, served: Served, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[World, Path]:
    await build(api, world)
    return world, await export_as(
        monkeypatch, served, world.human.token, world.project_id, tmp_path, "a.jsonl"
    )


async def test_r2_export_holds_what_its_reader_sees_and_only_that(exported: tuple[World, Path]) -> None:
    world, path = exported
    found = records(path)
    assert found[0]["type"] == FORMAT and found[0]["version"] == 1
    assert found[0]["exportedBy"]["kind"] == "HUMAN"
    assert [p["id"] for p in found[0]["projects"]] == [world.project_id]
    assert found[-1]["type"] == END
    assert found[-1]["records"] == {
        kind: sum(1 for r in found if r["type"] == kind)
        for kind in ("project", "session", "item", "proposal", "dispute", "handoff")
    }
    assert PRIVATE not in path.read_text(encoding="utf-8")  # another actor's PRIVATE item (R2)
    pending = [r for r in found if r["type"] == "proposal" and r["status"] == "PENDING"]
    assert sorted(r["kind"] for r in pending) == ["LOAD_BEARING", "SUPERSESSION"]
    items = [r for r in found if r["type"] == "item"]
    assert len(items) == 14
    position = {r["id"]: n for n, r in enumerate(items)}
    for r in items:
        if r["supersedesId"]:
            assert position[r["supersedesId"]] < position[r["id"]]
        assert r["events"] and r["events"][0]["kind"] == "ASSERTED"  # each item's log, oldest first
    session, quiet = (r for r in found if r["type"] == "session")  # oldest first
    assert session["client"]["tool"] == "claude-code" and session["externalId"] == "1af7fc5e"
    assert quiet["provenanceMissing"] == ["client.version", "externalId", "deepLink"] and quiet["endedAt"]
    assert {r["status"] for r in found if r["type"] == "dispute"} == {"OPEN", "RESOLVED"}
    assert any(r["type"] == "handoff" for r in found)


async def test_r4_round_trip_reads_the_same_and_a_second_import_writes_nothing(
    api: Api,
    exported: tuple[World, Path],
    served: Served,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    admin_engine: AsyncEngine,
) -> None:
    _, first = exported
    carol, project = await fresh(api)
    summary = await import_as(monkeypatch, capsys, served, carol.token, None, first)
    assert summary["confirmed"] == summary["confirmedInExport"] == 4
    assert summary["loadBearing"]["set"] == 2
    assert summary["disputes"] == {"replayed": 2, "resolved": 1, "alreadyThere": 0, "notReplayed": 0}
    assert summary["handoffs"]["replayed"] == 1
    assert summary["narrowed"] == 1
    assert summary["pendingProposals"] == 1  # the supersession; the pending suggestion is carried as carol's
    assert summary["notes"] == []
    second = await export_as(monkeypatch, served, carol.token, project, tmp_path, "b.jsonl")
    assert normalized(second) == normalized(first)
    assert PROPOSED not in second.read_text(encoding="utf-8")
    # The basis names who said it in the first workspace, and when.
    by_statement = {r["statement"]: r for r in records(second) if r["type"] == "item"}
    basis = by_statement["Refunds go through the PSP's refund API"]["provenance"]["basis"]
    assert re.fullmatch(
        r"payments/refund\.py \(exported from ws-\w+: asserted by claude-code \(AGENT\) at \S+, "
        r"confirmed by alice at \S+\)",
        basis,
    ), basis

    # Exported again and restored again, it still reads the same: saidAt stays the first assertedAt.
    dave, third_project = await fresh(api, "dave")
    await import_as(monkeypatch, capsys, served, dave.token, third_project, second)
    third = await export_as(monkeypatch, served, dave.token, third_project, tmp_path, "c.jsonl")
    assert normalized(third) == normalized(first)

    before = await database_state(admin_engine)
    again = await import_as(monkeypatch, capsys, served, carol.token, project, first)
    assert changed_tables(before, await database_state(admin_engine)) == set()
    assert again["items"]["written"] == 0
    assert again["items"]["actions"] == {"UNCHANGED": 14}
    assert again["disputes"]["alreadyThere"] == 2 and again["handoffs"]["alreadyThere"] == 1
    assert again["loadBearing"]["set"] == 0


async def test_r3_an_agents_import_confirms_nothing(
    api: Api,
    exported: tuple[World, Path],
    served: Served,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    _, first = exported
    dave, project = await fresh(api, "dave")
    agent = await api.actor(dave.token, "AGENT", "codex")
    await api.add_member(dave.token, project, agent.id)
    summary = await import_as(monkeypatch, capsys, served, agent.token, project, first)
    assert summary["confirmed"] == 0 and summary["confirmedInExport"] == 4
    assert summary["loadBearing"] == {"set": 0, "suggested": 1}  # the superseded one is not suggested
    assert summary["disputes"]["resolved"] == 0
    _env(monkeypatch, served, agent.token, project)
    capsys.readouterr()
    await asyncio.to_thread(lambda: run_import(first, as_json=False))
    assert "an agent's import confirms nothing" in capsys.readouterr().out

    # The agent reads it back: the GRANTS item became its PRIVATE one, which dave does not see (R2).
    second = records(await export_as(monkeypatch, served, agent.token, project, tmp_path, "c.jsonl"))
    items = [r for r in second if r["type"] == "item"]
    assert len(items) == 14
    assert {r["authority"] for r in items if r["status"] != "DISPUTED"} == {"AGENT_ASSERTED"}
    assert all(r["confirmation"] is None and not r["loadBearing"] for r in items)
    lb = next(r for r in items if r["statement"] == LOAD_BEARING)
    assert lb["loadBearingSuggested"] is True
    # A resolution is a human's: the resolved dispute is replayed open, for a human here to rule on.
    assert sorted(r["status"] for r in second if r["type"] == "dispute") == ["OPEN", "OPEN"]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (lambda good: "hello\n", "not a Mneia export: line 1 is not JSON"),
        (lambda good: '{"type": "item"}\n' + good, "not a Mneia export: its first line"),
        (
            lambda good: good.replace('"version": 1', '"version": 2', 1),
            "a Mneia export of version 2; this mneia reads version 1",
        ),
        (lambda good: "\n".join(good.splitlines()[:-1]) + "\n", "it has no end record"),
        (lambda good: "\n".join(good.splitlines()[:-2] + good.splitlines()[-1:]), "its end record counts"),
    ],
    ids=["not-json-lines", "no-header", "version", "cut-short", "line-lost"],
)
async def test_r14_not_an_export_fails_with_one_line_and_writes_nothing(
    api: Api,
    exported: tuple[World, Path],
    served: Served,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    admin_engine: AsyncEngine,
    content: Callable[[str], str],
    why: str,
) -> None:
    _, good = exported
    erin, project = await fresh(api, "erin")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content(good.read_text(encoding="utf-8")), encoding="utf-8")
    _env(monkeypatch, served, erin.token, project)
    before = await database_state(admin_engine)
    with pytest.raises(ImportFailed) as refused:
        await asyncio.to_thread(lambda: run_import(bad, as_json=False))
    message = str(refused.value)
    assert message.startswith(f"{bad}: ") and why in message and "\n" not in message
    assert message.endswith("nothing was imported")
    assert changed_tables(before, await database_state(admin_engine)) == set()
    assert (await api.run(erin.token, COUNT, p=project))["items"]["totalCount"] == 0


async def test_r11_a_large_export_pages_past_the_cost_limit_and_imports_in_batches(
    api: Api,
    world: World,
    served: Served,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """700 items, half of them replacements: more than a page the server accepts, more than a batch."""
    human, project = world.human.token, world.project_id
    claims = [
        {
            "key": f"adr:{n}",
            "kind": "DECISION",
            "statement": f"Decision {n}",
            **({"supersedesKey": f"adr:{n - 1}", "supersessionReason": "revised"} if n % 2 else {}),
        }
        for n in range(700)
    ]
    for start in (0, 350):
        value = {
            "projectId": project,
            "source": "adr",
            "origin": "DOCUMENT",
            "items": claims[start : start + 350],
        }
        await api.run(human, IMPORT, i=value)
    # The page the export asks for first is refused for its cost: the export must ask again, smaller.
    refused = await api.fail(human, ITEMS, p=project, first=500, after=None)
    assert "(maxCost)" in refused["message"]

    first = await export_as(monkeypatch, served, human, project, tmp_path, "big.jsonl")
    items = [r for r in records(first) if r["type"] == "item"]
    assert len(items) == 700
    seen: set[str] = set()
    for r in items:
        assert r["supersedesId"] is None or r["supersedesId"] in seen
        seen.add(r["id"])

    carol, target = await fresh(api)
    summary = await import_as(monkeypatch, capsys, served, carol.token, target, first)
    assert summary["items"]["actions"] == {"ASSERTED": 350, "SUPERSEDED": 350}
    again = await import_as(monkeypatch, capsys, served, carol.token, target, first)
    assert again["items"]["actions"] == {"UNCHANGED": 700}
    second = await export_as(monkeypatch, served, carol.token, target, tmp_path, "big2.jsonl")
    assert normalized(second) == normalized(first)


async def test_a_workspace_export_restores_the_project_of_the_targets_name(
    api: Api,
    world: World,
    served: Served,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    other = await api.project(world.human.token, "ledger")
    await api.assert_item(world.human.token, projectId=world.project_id, statement="Refunds are in EUR")
    await api.assert_item(world.human.token, projectId=other, statement="The ledger is append-only")
    _env(monkeypatch, served, world.human.token, None)
    out = io.StringIO()
    capsys.readouterr()
    status = await asyncio.to_thread(
        lambda: run_export(project=None, workspace=True, out=out, as_json_summary=True)
    )
    assert status == 0
    said = json.loads(capsys.readouterr().err)
    assert sorted((p["name"], p["items"]) for p in said["projects"]) == [("ledger", 1), ("payments", 1)]
    path = tmp_path / "ws.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    names = [p["name"] for p in records(path)[0]["projects"]]
    assert sorted(names) == ["ledger", "payments"]

    carol, _ = await fresh(api)  # her project is named payments
    ledger = await api.project(carol.token, "ledger")
    summary = await import_as(monkeypatch, capsys, served, carol.token, ledger, path)
    assert summary["from"]["project"] == "ledger" and summary["items"]["actions"] == {"ASSERTED": 1}
    elsewhere = await api.project(carol.token, "billing")
    _env(monkeypatch, served, carol.token, elsewhere)
    with pytest.raises(
        ImportFailed, match=r"holds the projects (payments, ledger|ledger, payments): .*\(billing\)"
    ):
        await asyncio.to_thread(lambda: run_import(path, as_json=False))


async def test_r8_a_dispute_the_exporter_cannot_see_is_not_replayed_and_its_item_not_applied(
    api: Api,
    world: World,
    served: Served,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The agent contradicts its own PRIVATE note: the human sees the DISPUTED item, not the dispute (R2)."""
    note = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement=PRIVATE, scope="PRIVATE"
    )
    await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="The sandbox takes partial captures",
        contradicts=[note["id"]],
    )  # fmt: skip
    first = await export_as(monkeypatch, served, world.human.token, world.project_id, tmp_path, "d.jsonl")
    found = records(first)
    assert [r["status"] for r in found if r["type"] == "item"] == ["DISPUTED"]
    assert not [r for r in found if r["type"] == "dispute"]

    carol, project = await fresh(api)
    summary = await import_as(monkeypatch, capsys, served, carol.token, project, first)
    assert summary["disputedUnpaired"] == 1
    second = await export_as(monkeypatch, served, carol.token, project, tmp_path, "e.jsonl")
    (item,) = [r for r in records(second) if r["type"] == "item"]
    assert (item["status"], item["statusReason"]) == (
        "RETIRED",
        "disputed (exported status; its dispute is not in the export)",
    )
    assert item["provenance"]["basis"].startswith("(exported from ")  # no basis of its own: the note alone


async def test_a_missing_file_is_a_usage_error(
    served: Served, world: World, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _env(monkeypatch, served, world.human.token, world.project_id)
    with pytest.raises(ImportFailed) as refused:
        run_import(tmp_path / "nowhere.jsonl", as_json=False)
    assert refused.value.status == 2 and str(refused.value) == f"{tmp_path / 'nowhere.jsonl'}: no such file"


async def test_r12_a_handoff_of_a_session_without_items_is_replayed_in_a_session_started_for_it(
    api: Api,
    world: World,
    served: Served,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    client = {"tool": "gemini-cli", "version": "0.4.0"}
    start = {"projectId": world.project_id, "task": "Triage", "client": client, "externalId": "g-1"}
    session = (await api.run(world.agent.token, SESSION, i=start))["startSession"]["id"]
    stop = {"sessionId": session, "summary": "Nothing to keep yet", "draft": True, "nextSteps": ["Read logs"]}
    await api.run(world.agent.token, CHECKPOINT, i=stop)
    first = await export_as(monkeypatch, served, world.human.token, world.project_id, tmp_path, "h.jsonl")

    carol, project = await fresh(api)
    summary = await import_as(monkeypatch, capsys, served, carol.token, project, first)
    assert summary["sessions"]["started"] == 1 and summary["handoffs"]["replayed"] == 1
    again = await import_as(monkeypatch, capsys, served, carol.token, project, first)
    assert again["sessions"]["started"] == 0 and again["handoffs"]["alreadyThere"] == 1
    found = records(await export_as(monkeypatch, served, carol.token, project, tmp_path, "i.jsonl"))
    (handoff,) = [r for r in found if r["type"] == "handoff"]
    (restored,) = [r for r in found if r["type"] == "session"]
    assert (handoff["summary"], handoff["draft"], handoff["nextSteps"]) == (
        "Nothing to keep yet",
        True,
        ["Read logs"],
    )
    assert (restored["task"], restored["externalId"], restored["endedAt"] is not None) == (
        "Triage",
        "g-1",
        True,
    )
    assert {k: restored["client"][k] for k in client} == client


async def test_r13_a_session_without_external_id_split_across_calls_is_recreated_per_call(
    api: Api,
    world: World,
    served: Served,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """importItems finds a session again only by its tool and externalId (docs/export.md, Sessions)."""
    start = {"projectId": world.project_id, "client": {"tool": "claude-code", "version": "2.0.1"}}
    session = (await api.run(world.agent.token, SESSION, i=start))["startSession"]["id"]
    for statement in ("Refunds are idempotent", "Refunds are logged"):
        added = await api.assert_item(
            world.agent.token, projectId=world.project_id, sessionId=session, statement=statement
        )
    await api.run(world.human.token, CONFIRM_ITEM, i=added["id"])
    first = await export_as(monkeypatch, served, world.human.token, world.project_id, tmp_path, "s.jsonl")

    carol, project = await fresh(api)
    summary = await import_as(monkeypatch, capsys, served, carol.token, project, first)
    assert summary["items"]["actions"] == {"ASSERTED": 2} and summary["sessions"]["used"] == 1
    found = records(await export_as(monkeypatch, served, carol.token, project, tmp_path, "t.jsonl"))
    sessions = [r for r in found if r["type"] == "session"]
    assert len(sessions) == 2  # one per origin: the confirmed item's call and the other's
    assert {(r["client"]["tool"], r["client"]["version"]) for r in sessions} == {("claude-code", "2.0.1")}
