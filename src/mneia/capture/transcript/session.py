"""What the three transcript readers share: the session as its lines reveal it, and what that becomes.

A reader walks its client's JSONL file once, line by line (``Reading.lines``), and feeds a
``Reading``: facts of the session, Mneia tool calls and the results recorded for them, the turns a
person typed, compaction summaries. ``Reading.capture`` then builds the ``Capture``. Keys are
built there because a session id may come after the calls that need it.

What must stay true:

- Claims come only from structure: the arguments of a Mneia tool call, or a marker line
  (``capture.marker``) in a turn a person typed. Never from prose.
- What the file does not say stays None. Every fact is the first valid value the file gives.
  ``started_at``/``ended_at`` are its earliest and latest timezone-aware timestamps.
- A call whose recorded result shows it reached the server is counted in ``already_written``.
  A call with no result, or an error result, is emitted.
- A key depends only on the session id and on ids and line numbers at or before the keyed line.
  A file that grows keeps its keys. A file that names no session id is keyed by a hash of its
  first line, which growing does not change either.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mneia.capture import marker
from mneia.capture.record import Capture, Checkpoint, Claim, NotASource, Origin, SessionFacts

TOOLS = frozenset({"assert_item", "supersede_item", "dispute_item", "checkpoint"})
KINDS = frozenset({"CONSTRAINT", "DECISION", "FACT", "PREFERENCE", "QUESTION", "TASK"})
TASK_LIMIT = 200


def mneia_tool(server: str, tool: str) -> str | None:
    """``tool`` if it is one of Mneia's writing tools on an MCP server whose name says Mneia.

    The server is the name the user gave it in the client's config (``mneia`` as the README
    installs it, ``mneia-prod``, a plugin's ``plugin_mneia_mneia``). Another server's
    ``assert_item`` is not Mneia's.
    """
    return tool if tool in TOOLS and "mneia" in server.lower() else None


def moment(value: Any) -> datetime | None:
    """An ISO-8601 timestamp with its offset. A naive or malformed one is None: a guess otherwise."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def shortened(text: str) -> str:
    collapsed = " ".join(text.split())
    if len(collapsed) <= TASK_LIMIT:
        return collapsed
    return collapsed[: TASK_LIMIT - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class _Call:
    line: int
    id: str
    tool: str
    arguments: Any
    said_at: datetime | None


@dataclass(frozen=True, slots=True)
class _Turn:
    line: int
    id: str  # the message's own id, or its line number
    label: str  # how the basis names it: "turn <uuid>", "line 12"
    text: str
    said_at: datetime | None


class Reading:
    """One transcript being read: fed by a client's reader, answered as a ``Capture``."""

    def __init__(self, path: Path, client: str, name: str, resume: str) -> None:
        self.path = path
        self.client = client  # SessionFacts.tool, and the first part of every key
        self.name = name  # the client as people name it, for NotASource
        self.resume = resume  # the client's resume command, "{}" for the session id
        self.external_id: str | None = None
        self.version: str | None = None
        self.cwd: str | None = None
        self.task: str | None = None
        self.earliest: datetime | None = None
        self.latest: datetime | None = None
        self.recognized = 0  # lines that are records of this client
        self.skipped: Counter[str] = Counter()
        self._objects = 0
        self._lines = 0
        self._first: bytes | None = None
        self._calls: dict[str, _Call] = {}
        self._succeeded: dict[str, bool] = {}
        self._turns: list[_Turn] = []
        self._compactions: list[tuple[int, str, str]] = []

    # --- feeding ------------------------------------------------------------------------------

    def lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """The file's JSON objects with their 1-based line numbers, read one line at a time.

        A last line cut short (the client is still writing it) is counted, not an error.
        """
        with self.path.open("rb") as file:
            for number, raw in enumerate(file, start=1):
                if not raw.strip():
                    continue
                self._lines += 1
                if self._first is None:
                    self._first = raw.strip()
                try:
                    value = json.loads(raw)
                except ValueError:  # JSONDecodeError, UnicodeDecodeError
                    self.skipped["not JSON" if raw.endswith(b"\n") else "truncated last line"] += 1
                    continue
                if not isinstance(value, dict):
                    self.skipped["not a JSON object"] += 1
                    continue
                self._objects += 1
                yield number, value

    def fact(self, name: str, value: Any) -> None:
        """Set ``external_id``, ``version`` or ``cwd`` to ``value`` unless already set."""
        if getattr(self, name) is None and isinstance(value, str) and value.strip():
            setattr(self, name, value)

    def when(self, value: Any) -> datetime | None:
        """``value`` as a moment, which also widens the session's span."""
        at = moment(value)
        if at is not None:
            self.earliest = at if self.earliest is None else min(self.earliest, at)
            self.latest = at if self.latest is None else max(self.latest, at)
        return at

    def called(self, line: int, call_id: Any, tool: str, arguments: Any, said_at: datetime | None) -> None:
        """A Mneia tool call, with its arguments as the client recorded them (a dict, or not)."""
        if isinstance(call_id, str) and call_id and call_id not in self._calls:
            self._calls[call_id] = _Call(line, call_id, tool, arguments, said_at)

    def answered(self, call_id: Any, succeeded: bool) -> None:
        """A recorded result of a call. An error is more specific than a success, so an error wins."""
        if isinstance(call_id, str) and call_id:
            self._succeeded[call_id] = self._succeeded.get(call_id, True) and succeeded

    def typed(self, line: int, turn: str, label: str, text: str, said_at: datetime | None) -> None:
        """A turn a person typed: the session's task if it is the first, and its markers."""
        if not text.strip():
            return
        if self.task is None:
            self.task = shortened(text)
        self._turns.append(_Turn(line, turn, label, text, said_at))

    def compacted(self, line: int, turn: str, summary: str) -> None:
        """A summary the client's model wrote when it compacted the context: a draft handoff."""
        if summary.strip():
            self._compactions.append((line, turn, summary))

    # --- answering ----------------------------------------------------------------------------

    def capture(self, source: str) -> Capture:
        if not self.recognized:
            raise NotASource(source, f"not a {self.name} transcript: {self._why()}")
        anchor = self.external_id
        if anchor is None:
            anchor = "sha256-" + hashlib.sha256(self._first or b"").hexdigest()[:16]
        claims: list[tuple[int, Claim]] = []
        checkpoints: list[tuple[int, Checkpoint]] = []
        written = 0
        for call in self._calls.values():
            if self._succeeded.get(call.id):
                written += 1
                continue
            key = f"{self.client}:{anchor}:{call.id}"
            if not isinstance(call.arguments, dict):
                self.skipped[f"{call.tool} with unreadable arguments"] += 1
            elif call.tool == "checkpoint":
                self._checkpoint(key, call, claims, checkpoints)
            elif call.tool == "dispute_item":
                self.skipped["dispute_item"] += 1  # the uploader does not replay disputes yet
            else:
                made = _claim(call.tool, key, call.arguments, call.said_at)
                if isinstance(made, str):
                    self.skipped[made] += 1
                else:
                    claims.append((call.line, made))
        session = (
            f"{self.client} session {self.external_id}"
            if self.external_id
            else f"a {self.client} session with no recorded id"
        )
        for turn in self._turns:
            for n, found in enumerate(marker.markers(turn.text)):
                claim = Claim(
                    key=f"{self.client}:{anchor}:{turn.id}:{n}",
                    kind=found.kind,
                    statement=found.statement,
                    basis=f"typed by the user in {session}, {turn.label}",
                    said_at=turn.said_at,
                    suggest_load_bearing=found.load_bearing,
                )
                claims.append((turn.line, claim))
        for line, turn_id, summary in self._compactions:
            draft = Checkpoint(key=f"{self.client}:{anchor}:compact:{turn_id}", summary=summary, draft=True)
            checkpoints.append((line, draft))
        facts = SessionFacts(
            tool=self.client,
            external_id=self.external_id,
            version=self.version,
            deep_link=self.resume.format(self.external_id) if self.external_id else None,
            task=self.task,
            started_at=self.earliest,
            ended_at=self.latest,
            cwd=self.cwd,
        )
        return Capture(
            source=source,
            origin=Origin.TRANSCRIPT,
            session=facts,
            claims=[claim for _, claim in sorted(claims, key=lambda pair: pair[0])],
            checkpoints=[checkpoint for _, checkpoint in sorted(checkpoints, key=lambda pair: pair[0])],
            skipped=self.skipped,
            already_written=written,
        )

    def _why(self) -> str:
        if not self._lines:
            return "the file is empty"
        if not self._objects:
            return f"none of its {self._lines} non-blank lines is a JSON object"
        return f"none of its {self._objects} JSON lines is a {self.name} record"

    def _checkpoint(
        self,
        key: str,
        call: _Call,
        claims: list[tuple[int, Claim]],
        checkpoints: list[tuple[int, Checkpoint]],
    ) -> None:
        arguments = call.arguments
        summary = arguments.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            self.skipped["checkpoint without summary"] += 1
            return
        handoff = Checkpoint(
            key=key,
            summary=summary,
            next_steps=_texts(arguments.get("next_steps")),
            open_questions=_texts(arguments.get("open_questions")),
        )
        checkpoints.append((call.line, handoff))
        items = arguments.get("items")
        for index, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict):
                self.skipped["checkpoint item unreadable"] += 1
                continue
            made = _claim("checkpoint item", f"{key}:{index}", item, call.said_at)
            if isinstance(made, str):
                self.skipped[made] += 1
            else:
                claims.append((call.line, made))


def _claim(tool: str, key: str, arguments: dict[str, Any], said_at: datetime | None) -> Claim | str:
    """The claim an ``assert_item`` or ``supersede_item`` call (or a checkpoint's item) makes, or why
    it makes none: the reason ``skipped`` counts."""
    raw_kind = arguments.get("kind")
    if raw_kind is None:
        return f"{tool} without kind"  # supersede_item defaults it to the target's: not ours to guess
    kind = raw_kind.upper() if isinstance(raw_kind, str) else None
    if kind not in KINDS:
        return f"{tool} with unknown kind"
    statement = arguments.get("statement")
    if not isinstance(statement, str) or not statement.strip():
        return f"{tool} without statement"
    supersedes = reason = None
    if tool == "supersede_item":
        target, reason = arguments.get("target_id"), _text(arguments.get("reason"))
        if not isinstance(target, str) or not target.strip():
            return "supersede_item without target_id"
        if reason is None:
            return "supersede_item without reason"
        supersedes = f"id:{target}"  # a server id, not a key of this capture
    confidence = arguments.get("confidence")
    return Claim(
        key=key,
        kind=kind,
        statement=statement,
        details=_text(arguments.get("details")),
        basis=_text(arguments.get("basis")),
        said_at=said_at,
        confidence=float(confidence)
        if isinstance(confidence, int | float) and not isinstance(confidence, bool)
        else None,
        supersedes=supersedes,
        reason=reason,
        suggest_load_bearing=arguments.get("suggest_load_bearing") is True,
        scope=_text(arguments.get("scope")),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(entry for entry in value if isinstance(entry, str)) if isinstance(value, list) else ()
