"""Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``) read into a ``Capture``.

Each line is ``{"timestamp", "type", "payload"}``. The first ``session_meta`` gives the session
(``payload.id``, ``cli_version``, ``cwd``). Later ones, from forks and resumes, are read for
nothing.

- A Mneia call is a ``response_item`` ``function_call``, named ``mcp__<server>__<tool>``
  (older: ``<server>__<tool>``) or named ``<tool>`` within ``namespace: "mcp__<server>"``.
  Its ``arguments`` are a JSON string. ``event_msg`` ``mcp_tool_call_begin``/``_end`` name the
  call too (``invocation.server``/``tool``/``arguments``).
- Results: a ``function_call_output`` for the ``call_id`` is a success unless it says
  ``success: false``. An ``mcp_tool_call_end`` tells ``{"Ok": {... "isError"}}`` from
  ``{"Err": ...}``. An ``item_completed`` McpToolCall tells its ``status``. An error anywhere
  wins over a success elsewhere.
- A person's turn is an ``event_msg`` ``user_message`` whose ``kind`` is absent or ``plain``.
  Files without such events (older or sanitized rollouts) fall back to ``response_item``
  user messages. Items the client injected (``<environment_context>``, AGENTS.md, …) are left
  out. Using one source or the other keeps a typed line from counting twice.
- A ``compacted`` line with a non-empty ``message`` is the summary Codex wrote when it
  compacted the context: a draft handoff. Remote compaction leaves the message empty.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, TypeGuard

from mneia.capture.record import Capture
from mneia.capture.transcript.session import Reading, mneia_tool

CLIENT = "codex"

_KNOWN = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "world_state",
        "inter_agent_communication_metadata",
    }
)
_INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "# AGENTS.md instructions for ",
)

_Turn = tuple[int, str, str, str, datetime | None]


def read(path: Path, *, shown: str | None = None) -> Capture:
    reading = Reading(path, CLIENT, "Codex", "codex resume {}")
    events: list[_Turn] = []  # user_message events: what the person typed
    items: list[_Turn] = []  # user messages as sent to the model: the fallback
    for number, record in reading.lines():
        kind, payload = record.get("type"), record.get("payload")
        if not isinstance(kind, str):
            reading.skipped["no type"] += 1
            continue
        if kind not in _KNOWN or not isinstance(payload, dict):
            reading.skipped[kind] += 1
            continue
        reading.recognized += 1
        said_at = reading.when(record.get("timestamp"))
        if kind == "session_meta":
            reading.fact("external_id", payload.get("id") or payload.get("session_id"))
            reading.fact("version", payload.get("cli_version"))
            reading.fact("cwd", payload.get("cwd"))
        elif kind == "turn_context":
            reading.fact("cwd", payload.get("cwd"))
        elif kind == "response_item":
            _item(reading, number, payload, said_at, items)
        elif kind == "event_msg":
            _event(reading, number, payload, said_at, events)
        elif kind == "compacted" and isinstance(payload.get("message"), str):
            reading.compacted(number, str(number), payload["message"])
    for turn in events or items:
        reading.typed(*turn)
    return reading.capture(shown or str(path))


def _tool(name: Any, namespace: Any = None) -> str | None:
    if not isinstance(name, str):
        return None
    if isinstance(namespace, str) and namespace:
        name = f"{namespace.rstrip('_')}__{name}"
    server, delimiter, tool = name.removeprefix("mcp__").rpartition("__")
    return mneia_tool(server, tool) if delimiter and server else None


def _arguments(value: Any) -> Any:
    """Arguments as recorded: a JSON string (function_call) or an object (MCP events)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _typed(text: Any) -> TypeGuard[str]:
    return isinstance(text, str) and bool(text.strip()) and not text.lstrip().startswith(_INJECTED)


def _item(
    reading: Reading, number: int, payload: dict[str, Any], said_at: datetime | None, items: list[_Turn]
) -> None:
    kind = payload.get("type")
    if kind == "function_call":
        if tool := _tool(payload.get("name"), payload.get("namespace")):
            reading.called(
                number, payload.get("call_id"), tool, _arguments(payload.get("arguments")), said_at
            )
    elif kind == "function_call_output":
        output = payload.get("output")
        failed = isinstance(output, dict) and (
            output.get("success") is False or output.get("isError") is True or output.get("is_error") is True
        )
        reading.answered(payload.get("call_id"), not failed)
    elif kind == "message" and payload.get("role") == "user" and isinstance(payload.get("content"), list):
        texts = [
            part.get("text")
            for part in payload["content"]
            if isinstance(part, dict) and part.get("type") in ("input_text", "text")
        ]
        text = "\n".join(text for text in texts if _typed(text))
        message_id = payload.get("id")
        if isinstance(message_id, str) and message_id:
            items.append((number, message_id, f"turn {message_id}", text, said_at))
        else:
            items.append((number, str(number), f"line {number}", text, said_at))


def _event(
    reading: Reading, number: int, payload: dict[str, Any], said_at: datetime | None, events: list[_Turn]
) -> None:
    kind = payload.get("type")
    if kind == "user_message":
        text = payload.get("message")
        if payload.get("kind") in (None, "plain") and _typed(text):
            events.append((number, str(number), f"line {number}", text, said_at))
    elif kind in ("mcp_tool_call_begin", "mcp_tool_call_end"):
        invocation = payload.get("invocation")
        if not isinstance(invocation, dict):
            return
        server, name = invocation.get("server"), invocation.get("tool")
        tool = mneia_tool(server, name) if isinstance(server, str) and isinstance(name, str) else None
        if tool is None:
            return
        reading.called(number, payload.get("call_id"), tool, _arguments(invocation.get("arguments")), said_at)
        result = payload.get("result")
        if kind == "mcp_tool_call_end" and isinstance(result, dict):
            if "Err" in result:
                reading.answered(payload.get("call_id"), False)
            elif isinstance(result.get("Ok"), dict):
                reading.answered(payload.get("call_id"), result["Ok"].get("isError") is not True)
    elif kind == "item_completed":
        item = payload.get("item")
        if not isinstance(item, dict) or item.get("type") != "McpToolCall":
            return
        result = item.get("result")
        if item.get("status") == "failed" or (isinstance(result, dict) and result.get("isError") is True):
            reading.answered(item.get("id"), False)
        elif item.get("status") == "completed":
            reading.answered(item.get("id"), True)
