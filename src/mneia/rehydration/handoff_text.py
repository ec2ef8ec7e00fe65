"""How a handoff reads as text: the first thing an agent reads on resume (R12, R4).

Compact, stable Markdown, in this order: who stopped, when, on what task;
where it stopped (the summary); next steps; open questions; the items
asserted in the session, each line opening with its authority (R4); what
was ruled out and why; what awaits a human. Empty sections are left out.

Everything the author wrote passes through ``render.clean`` (no brackets, one
line per line) and the summary is quoted (``> ``), so no text of the author's
can pass for an item's authority tag or a heading of its own. Like a slice,
the text is pieces that each end in a newline and start with no whitespace,
so its tokens are the sum of its pieces' and a slice appended to it adds
exactly its own (render.piece).

Pure: the caller gathers names and renders the items' lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from mneia.rehydration.render import clean, piece

TITLE = "# Handoff"
WHERE = "## Where it stopped"
DRAFT = (
    "Draft, agent-asserted: the client's model wrote this summary when it compacted the conversation;"
    " nobody checkpointed the session."
)
NEXT = "## Next steps"
QUESTIONS = "## Open questions"
ASSERTED = "## Asserted in this session"
RULED_OUT = "## Ruled out in this session (do not propose again)"
AWAITING = "## Awaiting a human (at the checkpoint; status now)"
FOR_TASK = "# Project memory for the task:"

LIST_LIMIT = 20
"""At most so many lines of each list; the rest is counted ("… and 12 more")."""

AWAITING_SHOWN = 3
"""At most so many proposals, and so many disputes, are shown: each line holds one or two items'."""


@dataclass(frozen=True, slots=True)
class HandoffText:
    """Everything a handoff's text needs, gathered under the reader's row-level security."""

    project: str
    author: str
    author_is_human: bool
    created_at: datetime
    summary: str
    draft: bool = False
    """Its summary was written by the client's model at compaction, not in a checkpoint."""
    client: str | None = None
    task: str | None = None
    started_at: datetime | None = None
    deep_link: str | None = None
    next_steps: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    """The lines of the items asserted in the session (render.line), oldest first: ``LIST_LIMIT``
    at most; ``items_more`` counts the others."""
    items_more: int = 0
    ruled_out: list[str] = field(default_factory=list)
    """Pieces made by render.ruled_out, ``LIST_LIMIT`` at most; ``ruled_out_more`` counts the others."""
    ruled_out_more: int = 0
    awaiting: list[str] = field(default_factory=list)
    """Pieces made by ``proposal`` and ``dispute``."""
    awaiting_more: int = 0
    """How many more (that the reader may see) await a human than ``awaiting`` shows."""


def _minute(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


def _more(count: int) -> list[str]:
    return [piece(f"… and {count} more")] if count > 0 else []


def _limited(pieces: list[str]) -> list[str]:
    return pieces[:LIST_LIMIT] + _more(len(pieces) - LIST_LIMIT)


def proposal(
    kind: str,
    status: str,
    proposed_by: str,
    proposed_at: datetime,
    target_line: str,
    replacement: str | None,
    reason: str | None,
) -> str:
    """A proposal as a piece: its status, who proposed what, when, and about which item."""
    what = "supersession proposed" if kind == "SUPERSESSION" else "load-bearing suggested"
    text = f"- {status}: {what} by {clean(proposed_by)} {_day(proposed_at)} for {target_line}"
    if replacement is not None:
        text += f' → replace with: "{clean(replacement)}"'
    if reason:
        text += f" because: {clean(reason)}"
    return piece(text)


def dispute(
    status: str, raised_by: str, raised_at: datetime, item_line: str, contested_line: str, reason: str | None
) -> str:
    """A dispute as a piece: its status, who raised it when, and both sides with their authority."""
    text = f"- {status}: dispute raised by {clean(raised_by)} {_day(raised_at)}: {item_line} ⟂ contests: "
    text += contested_line
    if reason:
        text += f" because: {clean(reason)}"
    return piece(text)


def rendered(text: HandoffText) -> str:
    """The handoff as Markdown (see the module's docstring)."""
    if text.author_is_human:
        who = f"{clean(text.author)} (human)"
    elif text.client:
        who = f"{clean(text.client)} (agent {clean(text.author)})"
    else:
        who = f"{clean(text.author)} (agent)"
    parts = [piece(f"{TITLE}: {clean(text.project)}")]
    started = f", session started {_minute(text.started_at)}" if text.started_at else ""
    parts.append(piece(f"Left by {who} {_minute(text.created_at)}{started}."))
    if text.task:
        parts.append(piece(f"Task: {clean(text.task)}"))
    if text.deep_link:
        parts.append(piece(f"Conversation: {clean(text.deep_link)}"))
    parts.append(piece(WHERE))
    if text.draft:
        parts.append(piece(DRAFT))
    parts += [piece(f"> {clean(line)}") for line in text.summary.splitlines() if line.strip()]
    if text.next_steps:
        parts.append(piece(NEXT))
        parts += _limited([piece(f"{n}. {clean(step)}") for n, step in enumerate(text.next_steps, 1)])
    if text.open_questions:
        parts.append(piece(QUESTIONS))
        parts += _limited([piece(f"- {clean(question)}") for question in text.open_questions])
    if text.items:
        parts.append(piece(ASSERTED))
        parts += [piece(line) for line in text.items] + _more(text.items_more)
    if text.ruled_out:
        parts.append(piece(RULED_OUT))
        parts += text.ruled_out + _more(text.ruled_out_more)
    if text.awaiting:
        parts.append(piece(AWAITING))
        parts += text.awaiting
        if text.awaiting_more:
            parts.append(
                piece(f"… and {text.awaiting_more} more: proposals(projectId) and disputes(projectId)")
            )
    return "".join(parts)


def for_task(task: str) -> str:
    """The heading between a handoff and the slice that follows it on resume."""
    return piece(f"{FOR_TASK} {clean(task)}")
