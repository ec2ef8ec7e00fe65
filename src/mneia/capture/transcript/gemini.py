"""Gemini CLI sessions (``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``, subagents'
``chats/<parent>/<id>.jsonl``, legacy ``session-*.json``) read into a ``Capture``.

The JSONL file is the log gemini-cli's ``chatRecordingService`` appends. It is read the way
that service loads it back:

- a metadata line ``{"sessionId", "projectHash", "startTime", "lastUpdated", "kind"}``;
- message records ``{"id", "timestamp", "type", "content", ...}``, where ``type`` is ``user``,
  ``gemini``, ``info``, ``error`` or ``warning``. A message is rewritten in full, under the same
  id, each time its tool calls, results or tokens change, so the last record of an id wins;
- ``{"$set": {...}}`` metadata updates. Their ``messages`` (the model's history after a
  compression or a rollback) repeat messages and are read for nothing;
- ``{"$rewindTo": id}``: the user rewound, and that message and every later one are gone
  (all of them when the id is unknown). Each one gone is counted as ``rewound message``.

A Mneia call is an entry of a gemini message's ``toolCalls``, named ``mcp_<server>_<tool>``
(current), ``<server>__<tool>`` (older, on a name clash) or a bare ``<tool>``. The bare name is
read only when its ``displayName`` is ``"<tool> (<server> MCP Server)"``. Its ``status``
``success`` means the call reached the server. ``error`` and ``cancelled`` mean it did not.

A person's turn is a ``user`` message that is not a slash command (text starting with ``/``
or ``?``, which gemini-cli leaves out of history too). It is read from ``displayContent``,
what was typed, before ``content``, which may hold @-included files.

Gemini records no client version and no cwd (only a hash of the project path): both stay None.
``gemini --resume <session id>`` is documented (geminicli.com/docs/cli/session-management,
"Resume by ID").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mneia.capture.record import Capture
from mneia.capture.transcript.session import TOOLS, Reading, mneia_tool, moment

CLIENT = "gemini-cli"

_MESSAGES = frozenset({"user", "gemini", "info", "error", "warning"})
_DISPLAYED = re.compile(r"(?P<tool>\S+) \((?P<server>.+) MCP Server\)")


def read(path: Path, *, shown: str | None = None) -> Capture:
    reading = Reading(path, CLIENT, "Gemini CLI", "gemini --resume {}")
    messages: dict[str, tuple[int, dict[str, Any]]] = {}
    for number, record in reading.lines():
        if isinstance(record.get("$rewindTo"), str):
            reading.recognized += 1
            _rewind(reading, messages, record["$rewindTo"])
        elif isinstance(record.get("id"), str):
            kind = record.get("type")
            if kind not in _MESSAGES:
                reading.skipped[kind if isinstance(kind, str) else "no type"] += 1
                continue
            reading.recognized += 1
            _times(reading, record)
            first = messages[record["id"]][0] if record["id"] in messages else number
            messages[record["id"]] = (first, record)
        elif isinstance(record.get("$set"), dict):
            reading.recognized += 1
            _metadata(reading, record["$set"])
        elif isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
            reading.recognized += 1
            _metadata(reading, record)
        else:
            reading.skipped["unrecognized record"] += 1
    if not reading.recognized:
        _legacy(reading, messages)
    for number, message in messages.values():
        _message(reading, number, message)
    return reading.capture(shown or str(path))


def _legacy(reading: Reading, messages: dict[str, tuple[int, dict[str, Any]]]) -> None:
    """A legacy ``session-*.json``: one JSON object holding the metadata and a ``messages`` list."""
    try:
        whole = json.loads(reading.path.read_bytes())
    except ValueError:
        return
    if not (isinstance(whole, dict) and isinstance(whole.get("sessionId"), str)):
        return
    listed = whole.get("messages")
    if not isinstance(listed, list):
        return
    reading.recognized += 1
    reading.skipped.clear()  # its lines were never meant to be JSON each
    _metadata(reading, whole)
    for position, message in enumerate(listed, start=1):
        if (
            isinstance(message, dict)
            and isinstance(message.get("id"), str)
            and message.get("type") in _MESSAGES
        ):
            _times(reading, message)
            messages.setdefault(message["id"], (position, message))


def _metadata(reading: Reading, record: dict[str, Any]) -> None:
    reading.fact("external_id", record.get("sessionId"))
    reading.when(record.get("startTime"))
    reading.when(record.get("lastUpdated"))


def _times(reading: Reading, message: dict[str, Any]) -> None:
    reading.when(message.get("timestamp"))
    for call in message.get("toolCalls") or []:
        if isinstance(call, dict):
            reading.when(call.get("timestamp"))


def _rewind(reading: Reading, messages: dict[str, tuple[int, dict[str, Any]]], target: str) -> None:
    ids = list(messages)
    gone = ids[ids.index(target) :] if target in messages else ids
    for message_id in gone:
        del messages[message_id]
    reading.skipped["rewound message"] += len(gone)


def _text(content: Any) -> str:
    """The text of a PartListUnion: a string, a part, or a list of strings and parts."""
    parts = content if isinstance(content, list) else [content]
    texts = [
        part if isinstance(part, str) else part.get("text") if isinstance(part, dict) else None
        for part in parts
    ]
    return "\n".join(text for text in texts if isinstance(text, str))


def _tool(name: Any, display: Any) -> str | None:
    if not isinstance(name, str):
        return None
    if name.startswith("mcp_"):
        for tool in TOOLS:
            server = name.removeprefix("mcp_").removesuffix(f"_{tool}")
            if name.endswith(f"_{tool}") and server:
                return mneia_tool(server, tool)
    server, delimiter, tool = name.rpartition("__")
    if delimiter and server:
        return mneia_tool(server, tool)
    shown = _DISPLAYED.fullmatch(display) if isinstance(display, str) else None
    if shown and shown["tool"] == name:
        return mneia_tool(shown["server"], name)
    return None


def _message(reading: Reading, number: int, message: dict[str, Any]) -> None:
    said_at = moment(message.get("timestamp"))
    if message["type"] == "user":
        typed = message.get("displayContent")
        text = _text(typed if typed else message.get("content"))
        if not text.strip().startswith(("/", "?")):
            reading.typed(number, message["id"], f"turn {message['id']}", text, said_at)
        return
    calls = message.get("toolCalls") if message["type"] == "gemini" else None
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict) or not (tool := _tool(call.get("name"), call.get("displayName"))):
            continue
        reading.called(
            number, call.get("id"), tool, call.get("args"), moment(call.get("timestamp")) or said_at
        )
        if call.get("status") == "success":
            reading.answered(call.get("id"), True)
        elif call.get("status") in ("error", "cancelled"):
            reading.answered(call.get("id"), False)
