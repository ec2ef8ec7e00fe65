"""What an importer reads out of a source, before anything is sent: plain data, no I/O.

Every parser (transcripts, ADRs, rules files) answers a ``Capture``; the
uploader (``capture.upload``) turns it into batched ``importItems`` calls.
A ``Claim`` carries a ``key``: the source's own identity for it (a tool-call
id, an ADR's path, a rule's text), unique within the project, which is what
makes importing the same thing twice write nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class Origin(StrEnum):
    """Where claims came from, which decides the authority an import may carry.

    TRANSCRIPT: a client's session; what an agent or a pasted text said there
    stays unconfirmed whoever imports it. DOCUMENT: a file the person running
    the import vouches for (ADRs, CLAUDE.md); theirs, as if they had typed it.
    """

    TRANSCRIPT = "TRANSCRIPT"
    DOCUMENT = "DOCUMENT"


@dataclass(frozen=True, slots=True)
class Claim:
    key: str
    kind: str  # an ItemKind word: CONSTRAINT, DECISION, FACT, PREFERENCE, QUESTION, TASK
    statement: str
    details: str | None = None
    basis: str | None = None
    said_at: datetime | None = None  # when the source said it (the turn's time, the ADR's date)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: float | None = None
    retired: str | None = None  # a reason: imported as RETIRED (a rejected or deprecated ADR)
    supersedes: str | None = None  # the key of the claim this one replaces
    reason: str | None = None  # why it replaces it
    suggest_load_bearing: bool = False
    scope: str | None = None  # a Scope word; None: PROJECT


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A handoff recorded in a transcript (a checkpoint tool call, a compact summary)."""

    key: str
    summary: str
    next_steps: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    draft: bool = False  # written by the client's model (a compact summary), not by a checkpoint call


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """What a transcript says of its session; what it does not say is None, never guessed (R13)."""

    tool: str  # claude-code, codex, gemini-cli
    external_id: str | None
    version: str | None = None
    deep_link: str | None = None
    task: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    cwd: str | None = None


@dataclass(slots=True)
class Capture:
    source: str  # the file read, as the user named it
    origin: Origin
    session: SessionFacts | None = None
    claims: list[Claim] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # unknown line types, by type
    already_written: int = 0  # Mneia tool calls whose recorded result shows they reached the server


class NotASource(ValueError):
    """The file is not what the importer reads (not a transcript of that client, not an ADR)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
