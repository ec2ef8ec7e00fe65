"""The transcript readers of ``mneia.capture.transcript``, on the real samples in ``../shared/clients``
and on small synthetic files for what the samples do not show. Pure: no database, no server."""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mneia.capture.record import Capture, Checkpoint, Claim, NotASource, Origin
from mneia.capture.transcript import READERS, claude_code, codex, files, gemini
from tests.support import SHARED

CLIENTS = SHARED / "clients"
CLAUDE_ID = "1af7fc5e-8455-4414-9ccd-011d40f70b2a"


def sample(*parts: str) -> Path:
    path = CLIENTS.joinpath(*parts)
    if not path.is_file():
        pytest.skip(
            f"sample transcript {path} is absent (the shared client samples live in ../shared/clients)"
        )
    return path


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def keys(capture: Capture) -> list[str]:
    return [claim.key for claim in capture.claims]


# --- the samples -------------------------------------------------------------------------------


def test_claude_code_real_session_provenance() -> None:
    capture = claude_code.read(sample("claude-code", f"{CLAUDE_ID}.jsonl"), shown="~/demo.jsonl")
    assert capture.source == "~/demo.jsonl"
    assert capture.origin is Origin.TRANSCRIPT
    session = capture.session
    assert session is not None
    assert session.tool == "claude-code"
    assert session.external_id == CLAUDE_ID
    assert session.version == "1.0.98"
    assert session.deep_link == f"claude --resume {CLAUDE_ID}"
    assert session.cwd == "/path/to/Demo"
    assert session.started_at == at("2025-09-03T00:47:19.293+00:00")
    assert session.ended_at == at("2025-09-03T00:47:52.264+00:00")
    assert session.started_at.tzinfo is not None
    # the person typed only /init; its expansion is an isMeta line written by Claude Code
    assert session.task is None
    assert capture.claims == [] and capture.checkpoints == []
    assert capture.skipped == Counter() and capture.already_written == 0


def test_claude_code_first_prompt_and_title_line() -> None:
    capture = claude_code.read(sample("claude-code", "sample_session.jsonl"))
    session = capture.session
    assert session is not None
    assert session.task == "Create a hello world function"
    assert session.external_id == "test-session-id"
    assert session.version is None  # no line carries one
    assert session.cwd == "/project"
    assert (session.started_at, session.ended_at) == (
        at("2025-12-24T10:00:00+00:00"),
        at("2025-12-24T10:01:05+00:00"),
    )
    assert capture.skipped == Counter()  # the summary (title) line is read for nothing, not counted
    assert capture.checkpoints == []


def test_claude_code_schema_catalog_compact_summary_and_known_types() -> None:
    capture = claude_code.read(sample("claude-code", "agent-sessions_claude_small.jsonl"))
    session = capture.session
    assert session is not None
    assert (session.external_id, session.version, session.cwd) == ("ses_stage0_small", "2.1.80", "/tmp")
    assert capture.checkpoints == [
        Checkpoint(
            key="claude-code:ses_stage0_small:compact:u3", summary="Summary of prior context.", draft=True
        )
    ]
    assert capture.skipped == Counter()
    # "Hello" is a sidechain turn (a subagent's prompt): the first person's turn is a trimmed one
    assert session.task == "[trimmed for fixture]"
    # the earliest and latest timestamps, not those of the first and last lines
    assert session.started_at == at("2025-12-16T00:00:00+00:00")
    assert session.ended_at == at("2026-04-16T20:10:42.522+00:00")


def test_claude_code_subagent_file_has_no_task() -> None:
    session = claude_code.read(sample("claude-code", "agent-test-hash-123.jsonl")).session
    assert session is not None
    assert session.external_id == "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    assert session.version == "2.0.28"
    assert session.task is None  # its only user turn is isSidechain: the parent agent wrote it


def test_codex_rollout_provenance_and_compactions() -> None:
    path = sample("codex-cli", "agent-sessions_codex_small.jsonl")
    started = time.perf_counter()
    capture = codex.read(path)
    assert time.perf_counter() - started < 0.25  # 145 KB: milliseconds, with room for a slow machine
    session = capture.session
    assert session is not None
    assert session.tool == "codex"
    assert session.external_id == "019fc8be-3658-7ca3-9e29-000000000000"
    assert session.version == "0.146.0"
    assert session.deep_link == "codex resume 019fc8be-3658-7ca3-9e29-000000000000"
    assert session.cwd == "/tmp/repo"
    assert session.task == "List the files"
    assert session.started_at == session.ended_at == at("2026-08-03T10:48:56+00:00")
    # the five compacted lines with a message; the remote compaction (empty message) is none
    assert [c.key for c in capture.checkpoints] == [
        f"codex:019fc8be-3658-7ca3-9e29-000000000000:compact:{line}" for line in (47, 69, 81, 89, 111)
    ]
    assert all(c.draft for c in capture.checkpoints)
    assert capture.claims == [] and capture.already_written == 0  # its MCP calls are another server's
    assert capture.skipped == Counter()


def test_codex_sanitized_sample_is_partial_provenance() -> None:
    """Not a faithful rollout (no event_msg at all, assistant parts typed "text"/"reasoning"): the
    task comes from the response_item fallback, and what it says is taken as it says it."""
    capture = codex.read(sample("codex-cli", "sample_codex_session.sanitized.jsonl"))
    session = capture.session
    assert session is not None
    assert session.external_id == "test-session"
    assert session.version == "0.0.0"
    assert session.cwd == "/project"
    assert session.task == "Write a hello world function"
    assert (session.started_at, session.ended_at) == (
        at("2025-01-01T00:00:00+00:00"),
        at("2025-01-01T00:00:02+00:00"),
    )
    assert capture.claims == [] and capture.checkpoints == [] and capture.skipped == Counter()


def test_codex_session_meta_lacking_facts_leaves_them_none(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "r.jsonl", [{"type": "session_meta", "payload": {"originator": "codex_cli_rs"}}])
    session = codex.read(path).session
    assert session is not None
    assert (session.external_id, session.version, session.cwd, session.deep_link, session.task) == (None,) * 5
    assert session.started_at is None and session.ended_at is None


def test_gemini_session_provenance() -> None:
    capture = gemini.read(sample("gemini-cli", "jsonl_v040.jsonl"))
    session = capture.session
    assert session is not None
    assert session.tool == "gemini-cli"
    assert session.external_id == "gemini_stage0_jsonl"
    assert session.version is None and session.cwd is None  # Gemini records neither
    assert session.deep_link == "gemini --resume gemini_stage0_jsonl"
    assert session.task == "Say hello and list files."
    assert session.started_at == at("2026-04-29T21:39:22.319+00:00")
    assert session.ended_at == at("2026-04-29T21:39:45.996+00:00")
    assert capture.claims == [] and capture.already_written == 0 and capture.skipped == Counter()


# --- not a source ------------------------------------------------------------------------------

OTHERS = {
    "claude-code": [("codex-cli", "agent-sessions_codex_small.jsonl"), ("gemini-cli", "jsonl_v040.jsonl")],
    "codex": [("claude-code", f"{CLAUDE_ID}.jsonl"), ("gemini-cli", "jsonl_v040.jsonl")],
    "gemini": [("claude-code", f"{CLAUDE_ID}.jsonl"), ("codex-cli", "agent-sessions_codex_small.jsonl")],
}
NAMES = {"claude-code": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}


@pytest.mark.parametrize(
    ("tool", "other"), [(tool, other) for tool, others in OTHERS.items() for other in others]
)
def test_another_clients_transcript_is_not_a_source(tool: str, other: tuple[str, str]) -> None:
    path = sample(*other)
    with pytest.raises(NotASource, match=f"not a {NAMES[tool]} transcript: ") as raised:
        READERS[tool](path)
    assert raised.value.path == str(path)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("tool", sorted(READERS))
def test_readme_empty_file_and_a_foreign_json_are_not_sources(tool: str, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Notes\n\nmneia: decision: not a transcript\n", encoding="utf-8")
    with pytest.raises(NotASource, match="none of its 2 non-blank lines is a JSON object"):
        READERS[tool](readme)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    with pytest.raises(NotASource, match="the file is empty"):
        READERS[tool](tmp_path / "empty.jsonl")
    stray = jsonl(tmp_path / "stray.jsonl", [{"type": "result", "value": 1}, {"hello": "world"}])
    with pytest.raises(NotASource, match=f"none of its 2 JSON lines is a {NAMES[tool]} record"):
        READERS[tool](stray)


def test_gemini_reader_refuses_a_chatgpt_export() -> None:
    with pytest.raises(NotASource, match="not a Gemini CLI transcript"):
        gemini.read(sample("chatgpt-export", "example-conversation.json"))


# --- robustness --------------------------------------------------------------------------------

CUT = {
    "claude-code": ("claude-code", f"{CLAUDE_ID}.jsonl"),
    "codex": ("codex-cli", "agent-sessions_codex_small.jsonl"),
    "gemini": ("gemini-cli", "jsonl_v040.jsonl"),
}


@pytest.mark.parametrize("tool", sorted(READERS))
def test_truncated_last_line_is_counted_not_fatal(tool: str, tmp_path: Path) -> None:
    original = sample(*CUT[tool])
    whole = READERS[tool](original)
    text = original.read_bytes()
    being_written = tmp_path / original.name
    being_written.write_bytes(text + text.splitlines(keepends=True)[1][:40])
    cut = READERS[tool](being_written)
    assert cut.skipped == whole.skipped + Counter({"truncated last line": 1})
    assert (cut.session, cut.claims, cut.checkpoints) == (whole.session, whole.claims, whole.checkpoints)


def test_unknown_types_and_non_json_lines_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        json.dumps(user("hello", uuid="u1")),
        json.dumps({"type": "brand-new-thing", "sessionId": "S"}),
        json.dumps({"type": "brand-new-thing"}),
        "this is not json",
        json.dumps([1, 2]),
        json.dumps({"no": "type"}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capture = claude_code.read(path)
    assert capture.skipped == Counter(
        {"brand-new-thing": 2, "not JSON": 1, "not a JSON object": 1, "no type": 1}
    )
    assert capture.session is not None and capture.session.task == "hello"


def test_codex_and_gemini_count_unknown_records(tmp_path: Path) -> None:
    rollout = jsonl(
        tmp_path / "r.jsonl",
        [{"type": "session_meta", "payload": {"id": "C"}}, {"type": "future_line", "payload": {}}],
    )
    assert codex.read(rollout).skipped == Counter({"future_line": 1})
    chat = jsonl(
        tmp_path / "g.jsonl",
        [{"sessionId": "G", "projectHash": "h"}, {"id": "m", "type": "hologram"}, {"what": 1}],
    )
    assert gemini.read(chat).skipped == Counter({"hologram": 1, "unrecognized record": 1})


# --- Claude Code: Mneia calls and markers ------------------------------------------------------

SID = "sess-1"


def line(
    kind: str, content: Any, *, uuid: str, ts: str = "2026-05-01T10:00:00Z", **extra: Any
) -> dict[str, Any]:
    record = {
        "type": kind,
        "sessionId": SID,
        "version": "2.1.0",
        "cwd": "/repo",
        "uuid": uuid,
        "timestamp": ts,
        "isSidechain": False,
        "message": {"role": kind, "content": content},
    }
    return record | extra


def user(text: Any, *, uuid: str, ts: str = "2026-05-01T10:00:00Z", **extra: Any) -> dict[str, Any]:
    return line("user", text, uuid=uuid, ts=ts, **extra)


def tool_use(call_id: str, name: str, arguments: dict[str, Any], *, uuid: str, ts: str) -> dict[str, Any]:
    return line(
        "assistant", [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}], uuid=uuid, ts=ts
    )


def tool_result(call_id: str, *, uuid: str, error: bool | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}
    if error is not None:
        block["is_error"] = error
    return user([block], uuid=uuid, ts="2026-05-01T10:00:09Z", toolUseResult="ok")


ASSERTED = {
    "kind": "DECISION",
    "statement": "Tenancy is enforced by row-level security",
    "details": "policies read mneia.workspace_id",
    "basis": "alembic/versions/0003",
    "confidence": 0.9,
    "suggest_load_bearing": True,
    "scope": "PROJECT",
    "decay_after": "P90D",
}


def test_assert_item_without_result_is_a_claim(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            user("go", uuid="u1"),
            tool_use("toolu_1", "mcp__mneia__assert_item", ASSERTED, uuid="a1", ts="2026-05-01T10:00:05Z"),
        ],
    )
    capture = claude_code.read(path)
    assert capture.claims == [
        Claim(
            key=f"claude-code:{SID}:toolu_1",
            kind="DECISION",
            statement="Tenancy is enforced by row-level security",
            details="policies read mneia.workspace_id",
            basis="alembic/versions/0003",
            said_at=at("2026-05-01T10:00:05+00:00"),
            confidence=0.9,
            suggest_load_bearing=True,
            scope="PROJECT",
        )
    ]
    assert capture.already_written == 0


def test_assert_item_with_successful_result_was_written_live(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            tool_use("toolu_1", "mcp__mneia__assert_item", ASSERTED, uuid="a1", ts="2026-05-01T10:00:05Z"),
            tool_result("toolu_1", uuid="r1", error=False),
        ],
    )
    capture = claude_code.read(path)
    assert capture.claims == [] and capture.already_written == 1


def test_assert_item_with_error_result_is_a_claim(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            tool_use("toolu_1", "mcp__mneia__assert_item", ASSERTED, uuid="a1", ts="2026-05-01T10:00:05Z"),
            tool_result("toolu_1", uuid="r1", error=True),
        ],
    )
    capture = claude_code.read(path)
    assert keys(capture) == [f"claude-code:{SID}:toolu_1"] and capture.already_written == 0


def test_result_found_through_source_tool_use_id(tmp_path: Path) -> None:
    denied = user(
        [{"type": "tool_result", "content": "The user doesn't want to proceed", "is_error": True}],
        uuid="r1",
        sourceToolUseID="toolu_1",
    )
    granted = user([{"type": "tool_result", "content": "ok"}], uuid="r2", sourceToolUseID="toolu_2")
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            tool_use("toolu_1", "mcp__mneia__assert_item", ASSERTED, uuid="a1", ts="2026-05-01T10:00:05Z"),
            denied,
            tool_use("toolu_2", "mcp__mneia__assert_item", ASSERTED, uuid="a2", ts="2026-05-01T10:00:06Z"),
            granted,
        ],
    )
    capture = claude_code.read(path)
    assert keys(capture) == [f"claude-code:{SID}:toolu_1"] and capture.already_written == 1


def test_other_servers_and_tools_are_not_mneia(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            tool_use("t1", "mcp__github__assert_item", ASSERTED, uuid="a1", ts="2026-05-01T10:00:05Z"),
            tool_use("t2", "mcp__mneia__search_items", {"text": "x"}, uuid="a2", ts="2026-05-01T10:00:05Z"),
            tool_use("t3", "assert_item", ASSERTED, uuid="a3", ts="2026-05-01T10:00:05Z"),
            tool_use(
                "t4", "mcp__plugin_mneia_mneia__assert_item", ASSERTED, uuid="a4", ts="2026-05-01T10:00:05Z"
            ),
        ],
    )
    assert keys(claude_code.read(path)) == [f"claude-code:{SID}:t4"]


def test_supersede_dispute_and_checkpoint_calls(tmp_path: Path) -> None:
    ts = "2026-05-01T10:00:05Z"
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            tool_use(
                "s1",
                "mcp__mneia__supersede_item",
                {"target_id": "01HX", "statement": "Use v2", "reason": "v1 is gone", "kind": "decision"},
                uuid="a1",
                ts=ts,
            ),
            tool_use(
                "s2",
                "mcp__mneia__supersede_item",
                {"target_id": "01HY", "statement": "x", "reason": "y"},
                uuid="a2",
                ts=ts,
            ),
            tool_use(
                "d1",
                "mcp__mneia__dispute_item",
                {"contested_id": "01HZ", "reason": "no", "statement": "z"},
                uuid="a3",
                ts=ts,
            ),
            tool_use(
                "c1",
                "mcp__mneia__checkpoint",
                {
                    "summary": "Done with tenancy",
                    "next_steps": ["write the migration"],
                    "open_questions": ["who owns billing?"],
                    "items": [
                        {"kind": "FACT", "statement": "RLS is on"},
                        {"kind": "WISH", "statement": "not a kind"},
                        {"kind": "TASK", "statement": "Drop the filter", "suggest_load_bearing": True},
                    ],
                },
                uuid="a4",
                ts=ts,
            ),
        ],
    )
    capture = claude_code.read(path)
    said = at("2026-05-01T10:00:05+00:00")
    assert capture.claims == [
        Claim(
            key=f"claude-code:{SID}:s1",
            kind="DECISION",
            statement="Use v2",
            said_at=said,
            supersedes="id:01HX",
            reason="v1 is gone",
        ),
        Claim(key=f"claude-code:{SID}:c1:0", kind="FACT", statement="RLS is on", said_at=said),
        Claim(
            key=f"claude-code:{SID}:c1:2",
            kind="TASK",
            statement="Drop the filter",
            said_at=said,
            suggest_load_bearing=True,
        ),
    ]
    assert capture.checkpoints == [
        Checkpoint(
            key=f"claude-code:{SID}:c1",
            summary="Done with tenancy",
            next_steps=("write the migration",),
            open_questions=("who owns billing?",),
        )
    ]
    assert capture.skipped == Counter(
        {"supersede_item without kind": 1, "dispute_item": 1, "checkpoint item with unknown kind": 1}
    )


def test_successful_checkpoint_counts_once(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            tool_use(
                "c1",
                "mcp__mneia__checkpoint",
                {"summary": "s", "items": [{"kind": "FACT", "statement": "a"}]},
                uuid="a1",
                ts="2026-05-01T10:00:05Z",
            ),
            tool_result("c1", uuid="r1"),
        ],
    )
    capture = claude_code.read(path)
    assert (capture.claims, capture.checkpoints, capture.already_written) == ([], [], 1)


def test_user_marker_is_a_claim(tmp_path: Path) -> None:
    typed = "Some context first.\nmneia: decision: We use PostgreSQL row-level security for tenancy\n"
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            user(
                [{"type": "text", "text": typed}],
                uuid="u-77",
                ts="2026-05-01T10:02:00Z",
                origin={"kind": "human"},
            )
        ],
    )
    assert claude_code.read(path).claims == [
        Claim(
            key=f"claude-code:{SID}:u-77:0",
            kind="DECISION",
            statement="We use PostgreSQL row-level security for tenancy",
            basis=f"typed by the user in claude-code session {SID}, turn u-77",
            said_at=at("2026-05-01T10:02:00+00:00"),
        )
    ]


def test_markers_outside_a_persons_turn_are_nothing(tmp_path: Path) -> None:
    marker = "mneia: fact: nobody typed this"
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            line("assistant", [{"type": "text", "text": marker}], uuid="a1"),
            user(f"look:\n```\n{marker}\n```\n> {marker}", uuid="u1"),
            user([{"type": "tool_result", "tool_use_id": "t", "content": marker}], uuid="u2"),
            user(marker, uuid="u3", isMeta=True),
            user(marker, uuid="u4", isSidechain=True),
            user(marker, uuid="u5", origin={"kind": "peer"}),
            user(f"<system-reminder>\n{marker}\n</system-reminder>", uuid="u6"),
            user(f"<local-command-stdout>{marker}\n</local-command-stdout>", uuid="u7"),
            user(marker, uuid="u8", isCompactSummary=True),
        ],
    )
    capture = claude_code.read(path)
    assert capture.claims == []
    assert (
        capture.session is not None
        and capture.session.task
        == "look: ``` mneia: fact: nobody typed this ``` > mneia: fact: nobody typed this"
    )
    assert [c.key for c in capture.checkpoints] == [f"claude-code:{SID}:compact:u8"]


def test_task_skips_client_wrappers_and_is_shortened(tmp_path: Path) -> None:
    long = "Refactor   the\n\nledger " + "x" * 300
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            user("<command-message>init</command-message>\n<command-name>/init</command-name>", uuid="u1"),
            user("[Request interrupted by user]", uuid="u2"),
            user("   ", uuid="u3"),
            user(long, uuid="u4"),
        ],
    )
    session = claude_code.read(path).session
    assert session is not None and session.task is not None
    task = session.task
    assert len(task) == 200 and task.endswith("…")
    assert task.startswith("Refactor the ledger xxx")


def test_span_is_the_earliest_and_latest_timestamp(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "s.jsonl",
        [
            user("second", uuid="u2", ts="2026-05-01T10:00:02Z"),
            user("first", uuid="u1", ts="2026-05-01T10:00:01+00:00"),
            user("last", uuid="u3", ts="2026-05-01T12:00:03+02:00"),  # 10:00:03 UTC
            user("naive", uuid="u4", ts="2026-05-01T23:00:00"),  # no offset: not a moment
            user("garbled", uuid="u5", ts="[trimmed for fixture]"),
        ],
    )
    session = claude_code.read(path).session
    assert session is not None
    assert (session.started_at, session.ended_at) == (
        at("2026-05-01T10:00:01+00:00"),
        at("2026-05-01T10:00:03+00:00"),
    )
    assert session.task == "second"


def test_no_session_id_keys_by_first_line(tmp_path: Path) -> None:
    record = user("mneia: task: ship it", uuid="u1")
    del record["sessionId"]
    capture = claude_code.read(jsonl(tmp_path / "s.jsonl", [record]))
    assert capture.session is not None and capture.session.external_id is None
    assert capture.session.deep_link is None
    (claim,) = capture.claims
    assert claim.key.startswith("claude-code:sha256-") and claim.key.endswith(":u1:0")
    assert claim.basis == "typed by the user in a claude-code session with no recorded id, turn u1"


# --- keys: stable across reads and growth ------------------------------------------------------


def growing_session() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    first = [
        user("mneia: constraint: Never log bodies !load-bearing", uuid="u1"),
        tool_use("toolu_1", "mcp__mneia__assert_item", ASSERTED, uuid="a1", ts="2026-05-01T10:00:05Z"),
    ]
    later = [
        user("mneia: question: Who owns billing?\nmneia: task: Ask finance", uuid="u2"),
        tool_use(
            "toolu_2",
            "mcp__mneia__checkpoint",
            {"summary": "s", "items": [ASSERTED]},
            uuid="a2",
            ts="2026-05-01T11:00:00Z",
        ),
    ]
    return first, later


def test_reading_twice_gives_equal_claims(tmp_path: Path) -> None:
    first, later = growing_session()
    path = jsonl(tmp_path / "s.jsonl", first + later)
    once, twice = claude_code.read(path), claude_code.read(path)
    assert once.claims == twice.claims and once.checkpoints == twice.checkpoints
    assert len(once.claims) == 5


def test_a_grown_file_yields_a_superset_with_the_same_keys(tmp_path: Path) -> None:
    first, later = growing_session()
    path = jsonl(tmp_path / "s.jsonl", first)
    before = claude_code.read(path)
    jsonl(path, first + later)
    after = claude_code.read(path)
    assert set(before.claims) < set(after.claims)
    assert keys(after)[: len(before.claims)] == keys(before)
    assert keys(before) == [f"claude-code:{SID}:u1:0", f"claude-code:{SID}:toolu_1"]


def test_codex_and_gemini_keys_survive_growth(tmp_path: Path) -> None:
    meta = {"timestamp": "2026-05-01T10:00:00Z", "type": "session_meta", "payload": {"id": "C"}}
    typed = [codex_user("mneia: fact: one", ts="2026-05-01T10:00:01Z"), codex_user("mneia: fact: two")]
    path = jsonl(tmp_path / "r.jsonl", [meta, typed[0]])
    before = codex.read(path)
    jsonl(path, [meta, *typed])
    assert set(before.claims) < set(codex.read(path).claims)
    chat = [{"sessionId": "G", "projectHash": "h"}, gemini_user("m1", "mneia: fact: one")]
    path = jsonl(tmp_path / "g.jsonl", chat)
    before = gemini.read(path)
    jsonl(path, [*chat, gemini_user("m2", "mneia: fact: two")])
    assert set(before.claims) < set(gemini.read(path).claims)


# --- Codex: Mneia calls and markers ------------------------------------------------------------


def codex_user(text: str, *, ts: str = "2026-05-01T10:00:02Z", kind: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"type": "user_message", "message": text}
    if kind is not None:
        payload["kind"] = kind
    return {"timestamp": ts, "type": "event_msg", "payload": payload}


def codex_call(
    call_id: str, *, name: str, namespace: str | None = None, arguments: Any = None
) -> dict[str, Any]:
    payload = {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "namespace": namespace,
        "arguments": json.dumps(ASSERTED) if arguments is None else arguments,
    }
    return {"timestamp": "2026-05-01T10:00:05Z", "type": "response_item", "payload": payload}


def codex_output(call_id: str) -> dict[str, Any]:
    payload = {"type": "function_call_output", "call_id": call_id, "output": "asserted — id 01HX"}
    return {"timestamp": "2026-05-01T10:00:06Z", "type": "response_item", "payload": payload}


def codex_end(call_id: str, result: Any) -> dict[str, Any]:
    invocation = {"server": "mneia", "tool": "assert_item", "arguments": ASSERTED}
    payload = {"type": "mcp_tool_call_end", "call_id": call_id, "invocation": invocation, "result": result}
    return {"timestamp": "2026-05-01T10:00:06Z", "type": "event_msg", "payload": payload}


def test_codex_mneia_calls(tmp_path: Path) -> None:
    meta = {
        "timestamp": "2026-05-01T10:00:00Z",
        "type": "session_meta",
        "payload": {"id": "C", "cli_version": "0.146.0"},
    }
    path = jsonl(
        tmp_path / "rollout-x.jsonl",
        [
            meta,
            codex_call("call-1", name="assert_item", namespace="mcp__mneia"),  # no result: emitted
            codex_call("call-2", name="mcp__mneia__assert_item"),
            codex_output("call-2"),  # written
            codex_call("call-3", name="mneia__assert_item"),
            codex_end("call-3", {"Err": "BAD_USER_INPUT: statement too long"}),
            codex_output("call-3"),  # looks like a success; the error recorded first wins: emitted
            codex_end("call-4", {"Ok": {"content": [], "isError": True}}),  # an event alone: emitted
            codex_end("call-5", {"Ok": {"content": [], "isError": False}}),  # written
            codex_call("call-6", name="shell", arguments='{"command": ["ls"]}'),
            codex_call("call-7", name="mcp__mneia__assert_item", arguments="{not json"),
        ],
    )
    capture = codex.read(path)
    assert keys(capture) == ["codex:C:call-1", "codex:C:call-3", "codex:C:call-4"]
    assert capture.claims[0].said_at == at("2026-05-01T10:00:05+00:00")
    assert capture.claims[0].statement == ASSERTED["statement"]
    assert capture.already_written == 2
    assert capture.skipped == Counter({"assert_item with unreadable arguments": 1})


def test_codex_markers_from_user_message_events_only(tmp_path: Path) -> None:
    meta = {"timestamp": "2026-05-01T10:00:00Z", "type": "session_meta", "payload": {"id": "C"}}
    sent = {
        "timestamp": "2026-05-01T10:00:02Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "mneia: fact: once"}],
        },
    }
    path = jsonl(
        tmp_path / "r.jsonl",
        [
            meta,
            codex_user("<environment_context>\nmneia: fact: injected\n</environment_context>"),
            codex_user("mneia: fact: from instructions", kind="user_instructions"),
            codex_user("mneia: fact: once"),
            sent,  # the same turn as sent to the model: not counted twice
        ],
    )
    capture = codex.read(path)
    assert capture.claims == [
        Claim(
            key="codex:C:4:0",
            kind="FACT",
            statement="once",
            basis="typed by the user in codex session C, line 4",
            said_at=at("2026-05-01T10:00:02+00:00"),
        )
    ]
    assert capture.session is not None and capture.session.task == "mneia: fact: once"


def test_codex_without_events_falls_back_to_response_items(tmp_path: Path) -> None:
    def sent(text: str, message_id: str | None = None) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        if message_id:
            payload["id"] = message_id
        return {"timestamp": "2026-05-01T10:00:02Z", "type": "response_item", "payload": payload}

    path = jsonl(
        tmp_path / "r.jsonl",
        [
            {"timestamp": "2026-05-01T10:00:00Z", "type": "session_meta", "payload": {"id": "C"}},
            sent("# AGENTS.md instructions for /repo\n\nmneia: constraint: from a file"),
            sent("mneia: preference: short answers", "msg-9"),
        ],
    )
    capture = codex.read(path)
    assert keys(capture) == ["codex:C:msg-9:0"]
    assert capture.claims[0].basis == "typed by the user in codex session C, turn msg-9"


# --- Gemini: Mneia calls, markers, rewinds, legacy files ---------------------------------------


def gemini_user(message_id: str, text: Any, **extra: Any) -> dict[str, Any]:
    return {"id": message_id, "timestamp": "2026-05-01T10:00:01Z", "type": "user", "content": text} | extra


def gemini_calls(message_id: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": message_id,
        "timestamp": "2026-05-01T10:00:03Z",
        "type": "gemini",
        "content": "",
        "toolCalls": list(calls),
    }


def gemini_call(call_id: str, name: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "name": name,
        "args": ASSERTED,
        "status": status,
        "timestamp": "2026-05-01T10:00:04Z",
    } | extra


def test_gemini_mneia_calls(tmp_path: Path) -> None:
    scheduled = gemini_call("g1", "mcp_mneia_assert_item", "scheduled")
    path = jsonl(
        tmp_path / "session-2026-05-01T10-00-abcd1234.jsonl",
        [
            {"sessionId": "G", "projectHash": "h", "startTime": "2026-05-01T10:00:00Z"},
            gemini_calls("m1", scheduled),
            gemini_calls("m1", gemini_call("g1", "mcp_mneia_assert_item", "success")),  # rewritten: written
            gemini_calls("m2", gemini_call("g2", "mneia__assert_item", "error")),
            gemini_calls(
                "m3",
                gemini_call("g3", "assert_item", "cancelled", displayName="assert_item (mneia MCP Server)"),
                gemini_call("g4", "assert_item", "error", displayName="assert_item (other MCP Server)"),
                gemini_call(
                    "g5", "mcp_mneia_checkpoint", "awaiting_approval", args={"summary": "pause here"}
                ),
            ),
            {"$set": {"lastUpdated": "2026-05-01T10:09:00Z"}},
        ],
    )
    capture = gemini.read(path)
    assert keys(capture) == ["gemini-cli:G:g2", "gemini-cli:G:g3"]
    assert capture.claims[0].said_at == at("2026-05-01T10:00:04+00:00")
    assert capture.checkpoints == [Checkpoint(key="gemini-cli:G:g5", summary="pause here")]
    assert capture.already_written == 1
    assert capture.session is not None and capture.session.ended_at == at("2026-05-01T10:09:00+00:00")


def test_gemini_markers_commands_and_rewinds(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "g.jsonl",
        [
            {"sessionId": "G", "projectHash": "h"},
            gemini_user("c1", "/memory add mneia: fact: a command"),
            gemini_user("m1", [{"text": "mneia: decision: keep"}]),
            gemini_user("m2", "mneia: fact: rewound away"),
            gemini_user("m3", "mneia: fact: rewound too"),
            {"$rewindTo": "m2"},
            gemini_user(  # content holds the @-included file; displayContent what was typed
                "m4",
                [{"text": "look at @notes.md"}, {"text": "mneia: fact: from the file"}],
                displayContent="look at @notes.md\nmneia: task: after the rewind",
            ),
        ],
    )
    capture = gemini.read(path)
    assert [(c.key, c.statement) for c in capture.claims] == [
        ("gemini-cli:G:m1:0", "keep"),
        ("gemini-cli:G:m4:0", "after the rewind"),
    ]
    assert capture.claims[0].basis == "typed by the user in gemini-cli session G, turn m1"
    assert capture.skipped == Counter({"rewound message": 2})
    assert capture.session is not None and capture.session.task == "mneia: decision: keep"


def test_gemini_legacy_json_session(tmp_path: Path) -> None:
    record = {
        "sessionId": "L",
        "projectHash": "h",
        "startTime": "2025-10-01T09:00:00Z",
        "lastUpdated": "2025-10-01T09:30:00Z",
        "messages": [gemini_user("m1", "mneia: fact: legacy")],
    }
    path = tmp_path / "session-2025-10-01T09-00-abcd1234.json"
    path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    capture = gemini.read(path)
    assert keys(capture) == ["gemini-cli:L:m1:0"]
    assert capture.skipped == Counter()
    assert capture.session is not None and capture.session.started_at == at("2025-10-01T09:00:00+00:00")


# --- files ------------------------------------------------------------------------------------


def test_files_expands_directories_per_client(tmp_path: Path) -> None:
    for name in [
        "claude/projects/p/a.jsonl",
        "claude/projects/p/a/subagents/agent-1.jsonl",
        "claude/projects/p/notes.txt",
        "codex/sessions/2026/05/01/rollout-2026-05-01T10-00-00-x.jsonl",
        "codex/history.jsonl",
        "codex/session_index.jsonl",
        "gemini/tmp/h/chats/session-2026-05-01T10-00-abcd1234.jsonl",
        "gemini/tmp/h/chats/session-2025-10-01T09-00-ef567890.json",
        "gemini/tmp/h/chats/abcd1234-full/sub.jsonl",
        "gemini/tmp/h/logs.json",
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")

    def relative(found: list[Path]) -> list[str]:
        return [str(path.relative_to(tmp_path)) for path in found]

    assert relative(files([tmp_path / "claude"], "claude-code")) == [
        "claude/projects/p/a/subagents/agent-1.jsonl",  # sorted as paths: part "a" before "a.jsonl"
        "claude/projects/p/a.jsonl",
    ]
    assert relative(files([tmp_path / "codex"], "codex")) == [
        "codex/sessions/2026/05/01/rollout-2026-05-01T10-00-00-x.jsonl"
    ]
    assert relative(files([tmp_path / "gemini"], "gemini")) == [
        "gemini/tmp/h/chats/abcd1234-full/sub.jsonl",
        "gemini/tmp/h/chats/session-2025-10-01T09-00-ef567890.json",
        "gemini/tmp/h/chats/session-2026-05-01T10-00-abcd1234.jsonl",
    ]
    explicit = tmp_path / "codex" / "history.jsonl"
    assert files([explicit, tmp_path / "claude" / "projects" / "p" / "a.jsonl", explicit], "codex") == sorted(
        {explicit, tmp_path / "claude" / "projects" / "p" / "a.jsonl"}
    )
    with pytest.raises(ValueError, match="unknown client 'cursor'"):
        files([tmp_path], "cursor")


def test_files_finds_the_samples() -> None:
    sample("gemini-cli", "jsonl_v040.jsonl")
    assert [path.name for path in files([CLIENTS / "gemini-cli"], "gemini")] == ["jsonl_v040.jsonl"]
    assert [path.name for path in files([CLIENTS / "codex-cli"], "codex")] == [
        "agent-sessions_codex_small.jsonl",
        "sample_codex_session.sanitized.jsonl",
    ]
    assert len(files([CLIENTS / "claude-code"], "claude-code")) == 4
