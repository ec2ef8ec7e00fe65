"""Fill a token budget: the guarantee first, then what was ruled out, then value per token (R11).

1. **Guaranteed.** Every ACTIVE load-bearing CONSTRAINT the caller sees is an
   entry (reason GUARANTEED), whatever the task, budget and quotas. If they
   alone (with their heading) cost more than the budget, the slice is
   ``over_budget`` and holds nothing else.
2. **Ruled out, on the task.** Recent supersessions that share a word with
   the task, most relevant first (then newest), each as one line naming what
   was replaced, when, why and by what, while they fit in ``notes_share`` of
   the budget. The replacement comes with its note as an entry (reason
   RECENT_SUPERSESSION) when it is still believed and not already in.
3. **Scored.** The remaining candidates by score per token, highest first
   (ties: higher score, then id); each is taken when it fits in the budget
   and its kind's SCORED entries stay within ``quota x budget`` tokens;
   otherwise skipped, and the next one tried.
4. **Ruled out, the rest.** The other recent supersessions, newest first,
   in what is left of ``notes_share`` and of the budget: a fresh agent hears
   of every recent change the budget has room for, those about its task
   first.

Every piece of text is counted as the slice shows it (an item's line with
its newline, a heading when its group opens), and ``tokens_used`` is their
sum: the tokens of ``rendered`` itself (render.piece). Pure and
deterministic: the same pieces give the same slice.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mneia.rehydration import render, tokens
from mneia.storage.item import ItemRecord
from mneia.vocabulary import InclusionReason, ItemKind, ItemStatus

LIVE = (ItemStatus.ACTIVE, ItemStatus.DISPUTED)
"""What may be an entry: never SUPERSEDED or RETIRED (R11.6)."""


@dataclass(frozen=True, slots=True)
class Piece:
    """One item as the slice would show it."""

    record: ItemRecord
    line: str
    """Its piece of the text: the item's rendered line and a newline."""
    tokens: int
    score: float


@dataclass(frozen=True, slots=True)
class Note:
    """A recent supersession as the slice would show it."""

    previous: ItemRecord
    replacement: ItemRecord
    at: datetime
    reason: str | None
    text: str
    tokens: int
    relevance: float
    entry: Piece | None
    """The replacement as an entry, when it is still believed."""


@dataclass(frozen=True, slots=True)
class Entry:
    piece: Piece
    reason: InclusionReason


@dataclass(frozen=True, slots=True)
class Packed:
    entries: list[Entry]
    """In the order ``rendered`` shows them: by kind, then guaranteed first, then by score."""
    notes: list[Note]
    omitted: dict[ItemKind, int]
    tokens_used: int
    over_budget: bool
    rendered: str


@dataclass
class _Fill:
    budget: int
    used: int = 0
    entries: dict[object, Entry] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    scored_by_kind: dict[ItemKind, int] = field(default_factory=dict)
    opened: set[ItemKind] = field(default_factory=set)

    def opening(self, kind: ItemKind) -> int:
        """What the kind's heading costs if no entry of the kind is in yet."""
        return 0 if kind in self.opened else tokens.count(render.heading(kind))

    def add(self, piece: Piece, reason: InclusionReason) -> None:
        self.used += self.opening(piece.record.kind) + piece.tokens
        self.opened.add(piece.record.kind)
        self.entries[piece.record.id] = Entry(piece, reason)
        if reason == InclusionReason.SCORED:
            kind = piece.record.kind
            self.scored_by_kind[kind] = self.scored_by_kind.get(kind, 0) + piece.tokens


def _by_value(piece: Piece) -> tuple[float, float, str]:
    return (-piece.score / max(piece.tokens, 1), -piece.score, str(piece.record.id))


def pack(
    budget: int,
    guaranteed: Sequence[Piece],
    notes: Sequence[Note],
    scored: Sequence[Piece],
    quotas: Mapping[ItemKind, float],
    notes_share: float,
) -> Packed:
    """The slice's entries, notes and text under ``budget`` tokens (see the module's docstring)."""
    fill = _Fill(budget)
    for piece in sorted(guaranteed, key=lambda p: str(p.record.id)):
        fill.add(piece, InclusionReason.GUARANTEED)
    over_budget = fill.used > budget

    if not over_budget:
        left = _add_notes(fill, [n for n in notes if n.relevance > 0], notes_share * budget)
        _add_scored(fill, scored, quotas)
        _add_notes(fill, [n for n in notes if n.relevance <= 0], left)

    # Each item considered and left out counts once, under one kind, whatever order the pieces
    # came in (R11.8): should two pieces name one item under two kinds, the first kind by name.
    named = [(p.record.id, p.record.kind) for p in scored]
    named += [(n.entry.record.id, n.entry.record.kind) for n in notes if n.entry is not None]
    considered: dict[uuid.UUID, ItemKind] = {}
    for item_id, kind in sorted(named, key=lambda pair: (str(pair[0]), pair[1].value)):
        considered.setdefault(item_id, kind)
    omitted = {kind: 0 for kind in ItemKind}
    for item_id, kind in considered.items():
        if item_id not in fill.entries:
            omitted[kind] += 1

    entries = _in_order(fill.entries.values())
    rendered = _text(entries, fill.notes)
    return Packed(entries, fill.notes, omitted, fill.used, over_budget, rendered)


def _add_notes(fill: _Fill, notes: Sequence[Note], allowance: float) -> float:
    """Add what fits of ``notes`` in ``allowance`` tokens; answer what is left of it."""
    ordered = sorted(notes, key=lambda n: (-n.relevance, -n.at.timestamp(), str(n.previous.id)))
    for note in ordered:
        own = note.tokens + (0 if fill.notes else tokens.count(render.piece(render.RULED_OUT)))
        entry = note.entry
        if entry is not None and (entry.record.id in fill.entries or entry.record.status not in LIVE):
            entry = None
        with_entry = own + (fill.opening(entry.record.kind) + entry.tokens if entry is not None else 0)
        if with_entry > allowance or fill.used + with_entry > fill.budget:
            continue
        if entry is not None:
            fill.add(entry, InclusionReason.RECENT_SUPERSESSION)
        fill.used += own
        allowance -= with_entry
        fill.notes.append(note)
    return allowance


def _add_scored(fill: _Fill, scored: Sequence[Piece], quotas: Mapping[ItemKind, float]) -> None:
    for piece in sorted(scored, key=_by_value):
        record = piece.record
        if piece.score <= 0 or record.id in fill.entries or record.status not in LIVE:
            continue
        kind = record.kind
        if fill.scored_by_kind.get(kind, 0) + piece.tokens > quotas.get(kind, 0.0) * fill.budget:
            continue
        if fill.used + fill.opening(kind) + piece.tokens > fill.budget:
            continue
        fill.add(piece, InclusionReason.SCORED)


_REASON_ORDER = {
    InclusionReason.GUARANTEED: 0,
    InclusionReason.RECENT_SUPERSESSION: 1,
    InclusionReason.SCORED: 2,
}


def _in_order(entries: Iterable[Entry]) -> list[Entry]:
    kinds = list(ItemKind)
    return sorted(
        entries,
        key=lambda e: (
            kinds.index(e.piece.record.kind),
            _REASON_ORDER[e.reason],
            -e.piece.score,
            str(e.piece.record.id),
        ),
    )


def _text(entries: Sequence[Entry], notes: Sequence[Note]) -> str:
    parts: list[str] = []
    current: ItemKind | None = None
    for entry in entries:
        if entry.piece.record.kind != current:
            current = entry.piece.record.kind
            parts.append(render.heading(current))
        parts.append(entry.piece.line)
    if notes:
        parts.append(render.piece(render.RULED_OUT))
        parts.extend(note.text for note in notes)
    return "".join(parts)
