"""``mneia import claude-code|codex|gemini|adr|rules`` and ``mneia sync`` against a real ``mneia serve``
(issue 22), run as a user runs them: subprocesses with MNEIA_URL, MNEIA_TOKEN and MNEIA_PROJECT.

What must stay true: one Session per transcript with what the file says of its client (R13); items
only from explicit structure (a Mneia tool call that never reached the server, a person's marker);
importing the same file twice writes nothing and a grown file only what is new; a file that is not
what the importer reads writes nothing; credentials never reach memory and their kinds are recorded;
an ADR's date is when it was decided, never when Mneia learned it (R9); an edited rule supersedes the
old one and a removed one is retired (R6, R7); spooled session ends are sent once, never lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mneia.capture import spool
from tests.graphql import Api
from tests.live import PATIENCE, cli_env, serving
from tests.support import SHARED

pytestmark = pytest.mark.slow  # starts `mneia serve` and a process per command

MNEIA = [sys.executable, "-c", "from mneia.launch import main; main()"]
SAMPLES = SHARED / "clients"
ADRS = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "compliantkubernetes-adr" / "adrs.json"
AWS_KEY = "AKIA" + "Z7Q3XK2M4N6P8R0T"

ITEMS = """query($p: ID!) { items(projectId: $p, first: 500) { totalCount nodes {
  id kind statement status authority supersedesId supersessionReason validFrom validTo
  provenance { basis actorKind saidAt redacted session { externalId deepLink task client { tool version }
               transcriptStartedAt provenanceMissing } } } } }"""
SESSIONS = """query($p: ID!, $e: String) { sessions(projectId: $p, externalId: $e) {
  nodes { id externalId endedAt client { tool version } provenanceMissing } } }"""
LATEST = (
    """query($p: ID!) { latestHandoff(projectId: $p) { summary draft rendered session { externalId } } }"""
)


@pytest.fixture(scope="module")
def served(admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    logs = tmp_path_factory.mktemp("import-serve")
    with serving([], cli_env(logs, DATABASE_URL=admin_url), logs) as (_, base):
        yield base


def mneia(*args: str, env: dict[str, str], stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*MNEIA, *args],
        env=env,
        input=stdin.decode() if stdin else None,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def environment(served: str, token: str, project: str, state: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MNEIA_")}
    env.update(MNEIA_URL=served, MNEIA_TOKEN=token, MNEIA_PROJECT=project, MNEIA_STATE_DIR=str(state))
    return env


def imported(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    sources: list[dict[str, Any]] = json.loads(done.stdout)["sources"]
    return sources


async def items_of(api: Api, token: str, project: str) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = (await api.run(token, ITEMS, p=project))["items"]["nodes"]
    return nodes


# --- a transcript as Claude Code writes it ------------------------------------------------------------


def line(kind: str, at: str, message: dict[str, Any], uuid: str, session: str = "c0ffee-1") -> str:
    return json.dumps(
        {
            "type": kind,
            "timestamp": at,
            "sessionId": session,
            "version": "2.1.3",
            "cwd": "/work/shop",
            "uuid": uuid,
            "message": message,
        }
    )


def transcript(path: Path, *, grown: bool = False, session: str = "c0ffee-1") -> Path:
    lines = [
        line(
            "user",
            "2026-11-30T09:00:00.000Z",
            {"role": "user", "content": "Add partial refunds to the API"},
            "u1",
            session,
        ),
        line(
            "assistant",
            "2026-11-30T09:00:05.000Z",
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "mneia: decision: this prose line is the assistant's, never a marker",
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_live",
                        "name": "mcp__mneia__assert_item",
                        "input": {"kind": "FACT", "statement": "Already written live"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_lost",
                        "name": "mcp__mneia__assert_item",
                        "input": {
                            "kind": "FACT",
                            "statement": f"The PSP sandbox key is {AWS_KEY}",
                            "basis": "payments/psp.py",
                        },
                    },
                ],
            },
            "a1",
            session,
        ),
        line(
            "user",
            "2026-11-30T09:00:06.000Z",
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_live",
                        "content": "[agent-asserted] Already written",
                    },
                ],
            },
            "u2",
            session,
        ),
        line(
            "user",
            "2026-11-30T09:01:00.000Z",
            {
                "role": "user",
                "content": "Good.\n"
                "mneia: constraint: Refunds never exceed the captured amount !load-bearing\n"
                "```\nmneia: fact: inside a fence, not a marker\n```",
            },
            "u3",
            session,
        ),
        json.dumps({"type": "some-future-line", "timestamp": "2026-11-30T09:01:01.000Z"}),
    ]
    if grown:
        lines.append(
            line(
                "user",
                "2026-11-30T10:00:00.000Z",
                {
                    "role": "user",
                    "content": "mneia: decision: Partial refunds go through the PSP's refund API",
                },
                "u4",
                session,
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_a_claude_code_transcript_imports_once_with_its_provenance(
    api: Api, served: str, tmp_path: Path
) -> None:
    world = await api.world()
    env = environment(served, world.agent.token, world.project_id, tmp_path / "state")
    path = transcript(tmp_path / "c0ffee-1.jsonl")
    (first,) = imported(mneia("import", "claude-code", str(path), "--json", env=env))
    assert first["written"] == 2 and first["alreadyWritten"] == 1
    assert first["skipped"] == {"some-future-line": 1}
    assert [session["externalId"] for session in first["sessions"]] == ["c0ffee-1"]
    assert {each["action"] for each in first["items"]} == {"ASSERTED"}

    nodes = await items_of(api, world.human.token, world.project_id)
    by_statement = {node["statement"]: node for node in nodes}
    assert len(nodes) == 2
    fact = by_statement["The PSP sandbox key is AKIA…[redacted aws-access-key]"]
    assert AWS_KEY not in json.dumps(nodes)
    assert fact["provenance"]["redacted"] == ["aws-access-key"]
    assert fact["authority"] == "AGENT_ASSERTED"
    session = fact["provenance"]["session"]
    assert session["client"] == {"tool": "claude-code", "version": "2.1.3"}
    assert session["deepLink"] == "claude --resume c0ffee-1"
    assert session["task"] == "Add partial refunds to the API"
    assert session["transcriptStartedAt"] == "2026-11-30T09:00:00+00:00"
    assert session["provenanceMissing"] == []
    constraint = by_statement["Refunds never exceed the captured amount"]
    assert constraint["kind"] == "CONSTRAINT"
    assert constraint["provenance"]["saidAt"] == "2026-11-30T09:01:00+00:00"

    (again,) = imported(mneia("import", "claude-code", str(path), "--json", env=env))
    assert again["written"] == 0
    transcript(path, grown=True)
    (grown,) = imported(mneia("import", "claude-code", str(path), "--json", env=env))
    assert grown["written"] == 1
    assert [each["action"] for each in grown["items"]] == ["ASSERTED"]
    assert len(await items_of(api, world.human.token, world.project_id)) == 3
    sessions = (await api.run(world.human.token, SESSIONS, p=world.project_id, e="c0ffee-1"))["sessions"]
    assert len(sessions["nodes"]) == 1


@pytest.mark.parametrize(
    ("client", "folder"), [("claude-code", "claude-code"), ("codex", "codex-cli"), ("gemini", "gemini-cli")]
)
async def test_the_real_sample_transcripts_import(
    api: Api, served: str, tmp_path: Path, client: str, folder: str
) -> None:
    if not SAMPLES.is_dir():
        pytest.skip(f"the client samples are not at {SAMPLES}")
    world = await api.world()
    env = environment(served, world.agent.token, world.project_id, tmp_path / "state")
    sources = imported(mneia("import", client, str(SAMPLES / folder), "--json", env=env))
    assert sources, "each sample folder holds at least one transcript of its client"
    listed = (await api.run(world.human.token, SESSIONS, p=world.project_id, e=None))["sessions"]["nodes"]
    tools = {node["client"]["tool"] for node in listed if node["client"]}
    assert tools <= {"claude-code", "codex", "gemini-cli"}
    if client == "gemini":
        # Gemini CLI's files name no version: reported missing, never guessed (R13).
        assert all("client.version" in node["provenanceMissing"] for node in listed)
    again = imported(mneia("import", client, str(SAMPLES / folder), "--json", env=env))
    assert sum(source["written"] for source in again) == 0


async def test_a_file_that_is_not_a_transcript_writes_nothing(api: Api, served: str, tmp_path: Path) -> None:
    world = await api.world()
    env = environment(served, world.agent.token, world.project_id, tmp_path / "state")
    good = transcript(tmp_path / "good.jsonl")
    codex = SAMPLES / "codex-cli" / "agent-sessions_codex_small.jsonl"
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"hello": "world"}\n')
    done = mneia("import", "claude-code", str(good), str(bad), env=env)
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0 and str(bad) in done.stderr, done.stderr
    if codex.is_file():
        other = mneia("import", "claude-code", str(codex), env=env)
        assert other.returncode == 1 and str(codex) in other.stderr
    assert await items_of(api, world.human.token, world.project_id) == []
    assert (await api.run(world.human.token, SESSIONS, p=world.project_id, e=None))["sessions"]["nodes"] == []


# --- ADRs ----------------------------------------------------------------------------------------------


def write_adrs(directory: Path) -> list[dict[str, Any]]:
    """benchmarks/data's ADRs as MADR files, each supersession stated in the older one's status."""
    records: list[dict[str, Any]] = json.loads(ADRS.read_text())["records"]
    directory.mkdir(parents=True)
    for record in records:
        number = int(record["id"].split("-")[1])
        status = record["status"]  # e.g. "superseded by ADR-0019", as the record states it
        body = (
            f"---\nstatus: {status}\ndate: {record['date']}\ndeciders: Platform team\n---\n"
            f"# {record['title']}\n\n## Context and Problem Statement\n\n{record['context']}\n\n"
            f"## Decision Outcome\n\n{record['decision']}\n"
        )
        (directory / f"{number:04d}-x.md").write_text(body)
    return records


async def test_adrs_import_as_the_importers_decisions_dated_when_decided(
    api: Api, served: str, tmp_path: Path
) -> None:
    if not ADRS.is_file():
        pytest.skip(f"{ADRS} is missing")
    world = await api.world()
    env = environment(served, world.human.token, world.project_id, tmp_path / "state")
    before = datetime.now(UTC).isoformat()
    records = write_adrs(tmp_path / "adr")
    (summary,) = imported(mneia("import", "adr", str(tmp_path / "adr"), "--json", env=env))
    assert summary["written"] == len(records)
    nodes = await items_of(api, world.human.token, world.project_id)
    assert len(nodes) == len(records)
    assert {node["authority"] for node in nodes if node["status"] == "ACTIVE"} == {"HUMAN_CONFIRMED"}
    rook = next(node for node in nodes if node["statement"].startswith("Use Rook for Storage Orchestrator"))
    assert rook["validFrom"] == "2020-11-16T00:00:00+00:00"
    assert rook["provenance"]["saidAt"] == "2020-11-16T00:00:00+00:00"
    assert "0001-x.md" in rook["provenance"]["basis"]
    replaced = [node for node in nodes if node["supersedesId"]]
    assert replaced, "the records' own supersessions make chains"
    assert all(node["supersessionReason"] for node in replaced)
    superseded = {node["id"] for node in nodes if node["status"] == "SUPERSEDED"}
    assert {node["supersedesId"] for node in replaced} == superseded
    # R9: what Mneia believed before the import is what it believed then: nothing.
    then = await api.run(
        world.human.token,
        "query($p: ID!, $t: DateTime) { items(projectId: $p, asOf: $t) { totalCount } }",
        p=world.project_id,
        t=before,
    )
    assert then["items"]["totalCount"] == 0
    (again,) = imported(mneia("import", "adr", str(tmp_path / "adr"), "--json", env=env))
    assert again["written"] == 0


# --- rules files ------------------------------------------------------------------------------------


async def test_rules_edits_supersede_and_removals_retire(api: Api, served: str, tmp_path: Path) -> None:
    world = await api.world()
    env = environment(served, world.human.token, world.project_id, tmp_path / "state")
    rules = tmp_path / "CLAUDE.md"
    rules.write_text("# Rules\n\n- Never push to main\n- Prefer small commits\n- Run the tests with -x\n")
    (first,) = imported(mneia("import", "rules", str(rules), "--json", env=env))
    assert first["written"] == 3
    nodes = {node["statement"]: node for node in await items_of(api, world.human.token, world.project_id)}
    assert nodes["Never push to main"]["kind"] == "CONSTRAINT"
    assert nodes["Prefer small commits"]["kind"] == "PREFERENCE"
    assert nodes["Never push to main"]["authority"] == "HUMAN_CONFIRMED"

    rules.write_text("# Rules\n\n- Never force-push to main\n- Prefer small commits\n")
    (second,) = imported(mneia("import", "rules", str(rules), "--json", env=env))
    assert sorted(each["action"] for each in second["items"]) == ["RETIRED", "SUPERSEDED"]
    now = {node["statement"]: node for node in await items_of(api, world.human.token, world.project_id)}
    assert now["Never force-push to main"]["supersedesId"] == nodes["Never push to main"]["id"]
    assert now["Never force-push to main"]["supersessionReason"].startswith("edited in ")
    assert now["Run the tests with -x"]["status"] == "RETIRED"
    assert now["Prefer small commits"]["id"] == nodes["Prefer small commits"]["id"]
    (third,) = imported(mneia("import", "rules", str(rules), "--json", env=env))
    assert third["written"] == 0


# --- mneia sync ---------------------------------------------------------------------------------------


def hook(client: str, payload: dict[str, Any], env: dict[str, str]) -> None:
    done = mneia("hook", client, env=env, stdin=json.dumps(payload).encode())
    assert done.returncode == 0, done.stderr


async def test_sync_sends_a_spooled_end_once_with_a_handoff_of_facts(
    api: Api, served: str, tmp_path: Path
) -> None:
    world = await api.world()
    state = tmp_path / "state"
    env = environment(served, world.agent.token, world.project_id, state)
    path = transcript(tmp_path / "c0ffee-2.jsonl", session="c0ffee-2")
    end = {
        "session_id": "c0ffee-2",
        "transcript_path": str(path),
        "cwd": "/work/shop",
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    hook("claude-code", end, env)
    assert len(spool.pending({"MNEIA_STATE_DIR": str(state)})) == 1

    done = mneia("sync", "--json", env=env)
    assert done.returncode == 0, done.stderr
    (sent,) = json.loads(done.stdout)["sent"]
    assert sent["written"] == 2 and sent["handoff"]
    assert spool.pending({"MNEIA_STATE_DIR": str(state)}) == []
    latest = (await api.run(world.human.token, LATEST, p=world.project_id))["latestHandoff"]
    assert latest["session"]["externalId"] == "c0ffee-2"
    assert "without a checkpoint" in latest["summary"] and "claude --resume c0ffee-2" in latest["summary"]
    assert latest["draft"] is False

    again = mneia("sync", "--json", env=env)
    assert json.loads(again.stdout)["sent"] == []
    # The same end spooled again (a client that fired twice) writes nothing more.
    hook("claude-code", end, env)
    assert json.loads(mneia("sync", "--json", env=env).stdout)["sent"][0]["written"] == 0
    assert len(await items_of(api, world.human.token, world.project_id)) == 2


async def test_sync_keeps_a_compact_summary_as_a_draft_handoff(api: Api, served: str, tmp_path: Path) -> None:
    world = await api.world()
    env = environment(served, world.agent.token, world.project_id, tmp_path / "state")
    path = transcript(tmp_path / "c0ffee-3.jsonl", session="c0ffee-3")
    base = {"session_id": "c0ffee-3", "transcript_path": str(path), "cwd": "/work/shop"}
    summary = "Refund endpoint drafted; tests for partial captures still failing."
    hook(
        "claude-code",
        {**base, "hook_event_name": "PostCompact", "trigger": "auto", "compact_summary": summary},
        env,
    )
    done = mneia("sync", "--json", env=env)
    assert json.loads(done.stdout)["sent"] == [], "a draft waits for its session's end"
    hook("claude-code", {**base, "hook_event_name": "SessionEnd", "reason": "other"}, env)
    assert mneia("sync", env=env).returncode == 0
    latest = (await api.run(world.human.token, LATEST, p=world.project_id))["latestHandoff"]
    assert latest["summary"] == summary and latest["draft"] is True
    assert "Draft, agent-asserted" in latest["rendered"]


async def test_sync_with_the_server_down_keeps_everything(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = environment("http://127.0.0.1:9", "not-a-token", "p", state)
    hook(
        "codex",
        {
            "session_id": "s-9",
            "transcript_path": None,
            "cwd": "/w",
            "hook_event_name": "SessionEnd",
            "reason": "other",
        },
        env,
    )
    done = mneia("sync", env=env)
    assert done.returncode == 1 and "kept for later" in done.stderr
    assert len(spool.pending({"MNEIA_STATE_DIR": str(state)})) == 1


async def test_a_session_that_never_ended_is_sent_once_it_goes_quiet(
    api: Api, served: str, tmp_path: Path
) -> None:
    """A crashed client sends no SessionEnd: the start the hook spooled stands in for it, later."""
    world = await api.world()
    state = tmp_path / "state"
    env = environment(served, world.agent.token, world.project_id, state)
    path = transcript(tmp_path / "c0ffee-4.jsonl", session="c0ffee-4")
    start = {
        "session_id": "c0ffee-4",
        "transcript_path": str(path),
        "cwd": "/work/shop",
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    hook("claude-code", start, {**env, "MNEIA_HOOK_DEADLINE": "120"})
    waiting = spool.pending({"MNEIA_STATE_DIR": str(state)})
    assert [spool.read(entry)["kind"] for entry in waiting] == ["start"]
    # Still being written: it waits (the default quiet time is two hours).
    assert json.loads(mneia("sync", "--json", env=env).stdout)["sent"] == []
    quiet = {**env, "MNEIA_SYNC_QUIET": "60"}
    os.utime(path, (path.stat().st_atime - 3600, path.stat().st_mtime - 3600))
    (sent,) = json.loads(mneia("sync", "--json", env=quiet).stdout)["sent"]
    assert sent["written"] == 2 and sent["handoff"]
    assert spool.pending({"MNEIA_STATE_DIR": str(state)}) == []
    latest = (await api.run(world.human.token, LATEST, p=world.project_id))["latestHandoff"]
    assert "sent no end" in latest["summary"]
