"""How an item reads as text, everywhere the API returns text for it (R4).

A human ruling and an agent's guess must never look alike: every line opens
with the authority, who and when — ``[human-confirmed · alice · 2026-03-03]``,
``[agent-asserted · claude-code 1.0.98 · 2026-03-03 · unconfirmed · confidence
0.72]``, ``[DISPUTED · contradicts …]`` — before the kind and the statement.
Pure: the caller gathers names and clients; nothing here touches the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

SEPARATOR = " · "
QUOTE_LIMIT = 60


@dataclass(frozen=True, slots=True)
class Contested:
    id: str
    statement: str


@dataclass(frozen=True, slots=True)
class ItemText:
    """Everything one rendered line needs."""

    kind: str
    statement: str
    authority: str
    status: str
    asserted_by: str
    asserted_at: datetime
    client: str | None = None
    asserter_is_human: bool = False
    confirmed_by: str | None = None
    confirmed_at: datetime | None = None
    confidence: float | None = None
    load_bearing: bool = False
    load_bearing_suggested: bool = False
    stale: bool = False
    contested: list[Contested] = field(default_factory=list)
    undisputed: bool = False
    """DISPUTED with no open dispute naming it: an inconsistent row, flagged ``no open dispute``."""


def clean(value: str) -> str:
    """One line, no brackets: a name or client string can never open a forged tag."""
    return " ".join(value.replace("[", "(").replace("]", ")").split())


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


def _quote(text: str) -> str:
    text = clean(text)
    return f'"{text}"' if len(text) <= QUOTE_LIMIT else f'"{text[: QUOTE_LIMIT - 1]}…"'


def source(text: ItemText) -> str:
    """Who asserted it: the client (tool and version) for an agent in a session, else the actor."""
    if not text.asserter_is_human and text.client:
        return clean(text.client)
    return clean(text.asserted_by)


def tag(text: ItemText) -> str:
    """The bracketed authority tag that opens the line."""
    if text.authority == "DISPUTED":
        parts = ["DISPUTED"]
        parts += [f"contradicts {_quote(other.statement)} ({clean(other.id)})" for other in text.contested]
        if text.undisputed:
            parts.append("no open dispute")
        parts += [f"asserted by {source(text)}", _day(text.asserted_at)]
    elif text.authority == "HUMAN_CONFIRMED":
        confirmed_at = text.confirmed_at or text.asserted_at
        parts = ["human-confirmed", clean(text.confirmed_by or text.asserted_by), _day(confirmed_at)]
        if text.confirmed_by and text.confirmed_by != text.asserted_by:
            parts.append(f"asserted by {source(text)}")
    else:
        parts = ["agent-asserted", source(text), _day(text.asserted_at), "unconfirmed"]
        if text.confidence is not None:
            parts.append(f"confidence {text.confidence:.2f}")
    if text.load_bearing:
        parts.append("load-bearing")
    elif text.load_bearing_suggested:
        parts.append("load-bearing suggested")
    if text.status in ("SUPERSEDED", "RETIRED"):
        parts.append(text.status.lower())
    if text.stale:
        parts.append("stale")
    return "[" + SEPARATOR.join(parts) + "]"


def line(text: ItemText) -> str:
    """One item as one line: ``[tag] KIND: statement``."""
    return f"{tag(text)} {text.kind}: {' '.join(text.statement.split())}"


# --- a slice as text ------------------------------------------------------------------------------
# A slice's text is a sequence of pieces, each one line (or more) ending in a newline: a
# group's heading, an item's line, a ruled-out option. No piece starts with whitespace, so
# tiktoken splits the whole text exactly where it splits each piece alone: the tokens of the
# text are the sum of its pieces' (rehydration.packing counts them so, R11.7).

HEADINGS = {
    "CONSTRAINT": "## Constraints",
    "DECISION": "## Decisions",
    "FACT": "## Facts",
    "PREFERENCE": "## Preferences",
    "QUESTION": "## Questions",
    "TASK": "## Tasks",
}
RULED_OUT = "## Ruled out recently (do not propose again)"
REPLACEMENT_QUOTE_LIMIT = 100


def piece(text: str) -> str:
    """``text`` as a piece of a slice: one line per line of it, newline-terminated."""
    return text + "\n"


def heading(kind: str) -> str:
    return piece(HEADINGS[kind])


def ruled_out(previous_line: str, at: datetime, reason: str | None, replacement_statement: str) -> str:
    """A replaced item as a fresh agent must read it: what it said (with its authority), when and
    why it was replaced, and by what."""
    why = clean(reason) if reason else "no reason given"
    replacement = clean(replacement_statement)
    if len(replacement) > REPLACEMENT_QUOTE_LIMIT:
        replacement = replacement[: REPLACEMENT_QUOTE_LIMIT - 1] + "…"
    return piece(f'- {previous_line} → replaced {_day(at)} because: {why} → now: "{replacement}"')
