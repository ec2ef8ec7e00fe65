"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``, subagents' under
``<session>/subagents/``) read into a ``Capture``.

Each line is a record with a ``type``. ``user`` and ``assistant`` records carry the API
``message``, plus ``sessionId``, ``version``, ``cwd``, ``uuid`` and ``timestamp``:

- A Mneia call is a ``tool_use`` block named ``mcp__<server>__<tool>`` in an assistant message.
  Its result is a ``tool_result`` block in a later user record (``tool_use_id``, or the
  record's ``sourceToolUseID``), and ``is_error: true`` marks a failure.
- A person's turn is a user record that is none of these: a tool result, ``isMeta`` (text the
  client expanded, such as ``/init``'s prompt), ``isSidechain`` (a subagent's prompt, written
  by the parent agent), ``isCompactSummary``, or a turn whose ``origin.kind`` is not
  ``human``. Client-written spans (``<command-name>``, ``<local-command-stdout>``,
  ``<system-reminder>`` …) are removed from its text. A turn left blank is no turn.
- A compaction summary is a user record with ``isCompactSummary: true``: a draft handoff.
- ``type: "summary"`` lines are session titles. They are read as nothing and not counted.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from mneia.capture.record import Capture
from mneia.capture.transcript.session import Reading, mneia_tool

CLIENT = "claude-code"

# Record types that carry nothing for Mneia (titles, UI state, snapshots, hooks' output):
# known, so not counted as skipped. Seen in the samples of ../shared/clients/claude-code.
_KNOWN = frozenset(
    {
        "summary",
        "system",
        "attachment",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "permission-mode",
        "mode",
        "custom-title",
        "ai-title",
        "last-prompt",
        "agent-name",
        "frame-link",
        "pr-link",
        "started",
        "result",
        "relocated",
        "worktree-state",
        "bridge-session",
        "atis-latch",
    }
)
# Any of these marks a known record as Claude Code's, not a stray {"type": "result"}.
_IDENTITY = ("sessionId", "uuid", "leafUuid", "messageId", "agentId")

_WRITTEN_BY_CLIENT = re.compile(
    r"<(command-name|command-message|command-args|local-command-stdout|local-command-stderr"
    r"|local-command-caveat|system-reminder|bash-input|bash-stdout|bash-stderr"
    r"|user-prompt-submit-hook)>.*?</\1>",
    re.DOTALL,
)
_INTERRUPTED = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")


def read(path: Path, *, shown: str | None = None) -> Capture:
    reading = Reading(path, CLIENT, "Claude Code", "claude --resume {}")
    for number, record in reading.lines():
        kind = record.get("type")
        if not isinstance(kind, str):
            reading.skipped["no type"] += 1
            continue
        message = record.get("message")
        if kind in ("user", "assistant") and isinstance(message, dict):
            reading.recognized += 1
        elif kind in _KNOWN:
            if any(isinstance(record.get(name), str) for name in _IDENTITY):
                reading.recognized += 1
        else:
            reading.skipped[kind] += 1
            continue
        reading.fact("external_id", record.get("sessionId"))
        reading.fact("version", record.get("version"))
        reading.fact("cwd", record.get("cwd"))
        said_at = reading.when(record.get("timestamp"))
        if not isinstance(message, dict) or kind not in ("user", "assistant"):
            continue
        content = message.get("content")
        blocks = [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
        if kind == "assistant":
            _calls(reading, number, blocks, said_at)
        else:
            _user(reading, number, record, content, blocks, said_at)
    return reading.capture(shown or str(path))


def _tool(name: Any) -> str | None:
    if not isinstance(name, str) or not name.startswith("mcp__"):
        return None
    server, delimiter, tool = name.removeprefix("mcp__").rpartition("__")
    return mneia_tool(server, tool) if delimiter and server else None


def _calls(reading: Reading, number: int, blocks: list[dict[str, Any]], said_at: datetime | None) -> None:
    for block in blocks:
        if block.get("type") == "tool_use" and (tool := _tool(block.get("name"))):
            reading.called(number, block.get("id"), tool, block.get("input"), said_at)


def _user(
    reading: Reading,
    number: int,
    record: dict[str, Any],
    content: Any,
    blocks: list[dict[str, Any]],
    said_at: datetime | None,
) -> None:
    results = [block for block in blocks if block.get("type") == "tool_result"]
    for result in results:
        call_id = result.get("tool_use_id") or record.get("sourceToolUseID")
        reading.answered(call_id, result.get("is_error") is not True)
    if results or "toolUseResult" in record:
        return
    texts = [content] if isinstance(content, str) else []
    texts += [
        block["text"]
        for block in blocks
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
    uuid = record.get("uuid")
    turn, label = (
        (uuid, f"turn {uuid}") if isinstance(uuid, str) and uuid else (str(number), f"line {number}")
    )
    if record.get("isCompactSummary") is True:
        reading.compacted(number, turn, "\n".join(texts))
        return
    if not _typed_by_a_person(record):
        return
    kept = [text for text in (_WRITTEN_BY_CLIENT.sub("", text) for text in texts) if text.strip()]
    kept = [text for text in kept if text.strip() not in _INTERRUPTED]
    reading.typed(number, turn, label, "\n".join(kept), said_at)


def _typed_by_a_person(record: dict[str, Any]) -> bool:
    if record.get("isMeta") is True or record.get("isSidechain") is True:
        return False
    origin = record.get("origin")
    return not (isinstance(origin, dict) and "kind" in origin and origin["kind"] != "human")
