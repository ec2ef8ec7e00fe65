"""Fill a token budget: the guarantee, what was ruled out, value per token, then the rest (R11).

1. **Guaranteed.** Every ACTIVE load-bearing CONSTRAINT the caller sees is an
   entry (reason GUARANTEED), whatever the task, budget and quotas. If they
   alone (with their heading) cost more than the budget, the slice is
   ``over_budget`` and holds nothing else.
2. **Ruled out, on the task.** Recent supersessions that match the task (the
   text of either side, or of any item in the chain), most relevant first,
   then newest, each as one line naming what was replaced, when, why and by
   what, while their lines fit in ``notes_share`` of the budget: before any
   scored entry competes, but never crowding the task's own entries out of
   the rest. The replacement comes with its note as an entry (reason
   RECENT_SUPERSESSION, outside that share: it is an entry the task needs)
   when it is still believed, not in already, and fits; a note whose
   replacement does not fit is listed alone.
3. **Scored, within the quotas.** The task's candidates by score per token,
   highest first (ties: higher score, then id); each is taken when it fits in
   the budget and its kind's SCORED entries stay within ``quota x budget``
   tokens; otherwise skipped and the next tried. While candidates of every
   kind compete, no kind takes more than its share (R11.3).
4. **Ruled out, the rest of those on the task**, in whatever budget is left.
5. **Fill, the task's candidates.** Every kind has had its share: what is
   left goes to the best remaining candidates of any kind, by score per token
   (reason FILL), quotas no longer binding.
6. **Ruled out, all others**, newest first, whenever they fit: a fresh agent
   hears of every recent change the budget has room for.
7. **Fill, beyond the task's words.** Every candidate matching the task is in
   and budget remains: the best items that share no word with it, by
   ``standing`` per token (authority, load-bearing, freshness, kind weight;
   rehydration.score), reason FILL. The task's words are a poor guide to
   relevance; an empty budget is no guide at all.

A kind whose quota is 0 is left out of steps 3, 5 and 7: the caller asked for
none of it. Otherwise the slice is *maximal*: once packed, no candidate, note
or replacement it considered and left out would fit in the budget it leaves
(a heading counted when its group would open). Each candidate left out is
counted once, with why (``OmissionReason``): QUOTA (skipped in step 3 for its
kind's share and no longer fitting in step 5), BUDGET, or NO_MATCH (shares no
word with the task).

Every piece of text is counted as the slice shows it (an item's line with
its newline, a heading when its group opens), and ``tokens_used`` is their
sum: the tokens of ``rendered`` itself (render.piece). Pure and
deterministic: the same pieces give the same slice.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mneia.rehydration import render, tokens
from mneia.storage.item import ItemRecord
from mneia.vocabulary import InclusionReason, ItemKind, ItemStatus, OmissionReason

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
    standing: float = 0.0
    """How it ranks as a filler, sharing no word with the task (rehydration.score.standing)."""


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
    """Above 0 when either side, or an item of its chain, shares a word with the task."""
    entry: Piece | None
    """The replacement as an entry, when it is still believed."""


@dataclass(frozen=True, slots=True)
class Entry:
    piece: Piece
    reason: InclusionReason


@dataclass(frozen=True, slots=True)
class Packed:
    entries: list[Entry]
    """In the order ``rendered`` shows them: by kind, then by reason, then by score."""
    notes: list[Note]
    omitted: dict[ItemKind, int]
    """Per kind, the candidates matching the task (or replacing a noted item) left out."""
    left_out: dict[tuple[ItemKind, OmissionReason], int]
    """Every candidate left out, once, by kind and why; NO_MATCH ones included."""
    notes_left_out: int
    """Recent supersessions considered and not listed (only for the budget)."""
    tokens_used: int
    over_budget: bool
    rendered: str
    budget: int

    @property
    def unused(self) -> int:
        """The tokens of the budget no piece uses (0 when over it)."""
        return max(0, self.budget - self.tokens_used)


@dataclass
class _Fill:
    budget: int
    used: int = 0
    entries: dict[object, Entry] = field(default_factory=dict)
    notes: dict[uuid.UUID, Note] = field(default_factory=dict)
    scored_by_kind: dict[ItemKind, int] = field(default_factory=dict)
    opened: set[ItemKind] = field(default_factory=set)
    held_by_quota: set[uuid.UUID] = field(default_factory=set)

    @property
    def left(self) -> int:
        return self.budget - self.used

    def opening(self, kind: ItemKind) -> int:
        """What the kind's heading costs if no entry of the kind is in yet."""
        return 0 if kind in self.opened else tokens.count(render.heading(kind))

    def cost(self, piece: Piece) -> int:
        return self.opening(piece.record.kind) + piece.tokens

    def fits(self, piece: Piece) -> bool:
        return self.cost(piece) <= self.left

    def takes(self, piece: Piece) -> bool:
        """Whether the piece may still become an entry at all."""
        return piece.record.id not in self.entries and piece.record.status in LIVE

    def add(self, piece: Piece, reason: InclusionReason) -> None:
        self.used += self.cost(piece)
        self.opened.add(piece.record.kind)
        self.entries[piece.record.id] = Entry(piece, reason)
        if reason == InclusionReason.SCORED:
            kind = piece.record.kind
            self.scored_by_kind[kind] = self.scored_by_kind.get(kind, 0) + piece.tokens

    def note_cost(self, note: Note) -> int:
        return note.tokens + (0 if self.notes else tokens.count(render.piece(render.RULED_OUT)))


def _by_value(piece: Piece) -> tuple[float, float, str]:
    return (-piece.score / max(piece.tokens, 1), -piece.score, str(piece.record.id))


def _by_standing(piece: Piece) -> tuple[float, float, str]:
    return (-piece.standing / max(piece.tokens, 1), -piece.standing, str(piece.record.id))


def _note_order(note: Note) -> tuple[float, float, str]:
    return (-note.relevance, -note.at.timestamp(), str(note.previous.id))


def pack(
    budget: int,
    guaranteed: Sequence[Piece],
    notes: Sequence[Note],
    scored: Sequence[Piece],
    quotas: Mapping[ItemKind, float],
    notes_share: float,
    fillers: Sequence[Piece] = (),
) -> Packed:
    """The slice's entries, notes and text under ``budget`` tokens (see the module's docstring).

    ``scored``: the candidates sharing a word with the task; ``fillers``: items sharing none,
    with their standing. A scored piece whose score is 0 counts as a filler."""
    fill = _Fill(budget)
    for piece in sorted(guaranteed, key=lambda p: str(p.record.id)):
        fill.add(piece, InclusionReason.GUARANTEED)
    over_budget = fill.used > budget

    matching = sorted((p for p in scored if p.score > 0), key=_by_value)
    unmatched = sorted([*fillers, *(p for p in scored if p.score <= 0)], key=_by_standing)
    wanted = {kind for kind in ItemKind if quotas.get(kind, 0.0) > 0}
    ordered_notes = sorted(notes, key=_note_order)
    on_task = [n for n in ordered_notes if n.relevance > 0]
    if not over_budget:
        _add_notes(fill, on_task, notes_share * budget)
        _add_scored(fill, matching, quotas)
        _add_notes(fill, on_task, math.inf)
        _add_rest(fill, matching, wanted, InclusionReason.FILL)
        _add_notes(fill, ordered_notes, math.inf)
        _add_rest(fill, unmatched, wanted, InclusionReason.FILL)

    left_out = _left_out(fill, matching, unmatched, notes, wanted)
    omitted = {kind: 0 for kind in ItemKind}
    for (kind, why), count in left_out.items():
        if why != OmissionReason.NO_MATCH:
            omitted[kind] += count
    noted = {n.previous.id for n in fill.notes.values()}
    notes_left_out = len({n.previous.id for n in notes} - noted)
    entries = _in_order(fill.entries.values())
    listed = sorted(fill.notes.values(), key=_note_order)
    rendered = _text(entries, listed)
    return Packed(
        entries, listed, omitted, left_out, notes_left_out, fill.used, over_budget, rendered, budget
    )


def _add_notes(fill: _Fill, notes: Sequence[Note], allowance: float) -> None:
    """List what fits of ``notes`` within ``allowance`` tokens of note text, each with its
    replacement when that fits in the budget too; a note listed already has its replacement tried
    again. The allowance caps the notes only: a replacement is an entry the task needs as much."""
    for note in notes:
        entry = note.entry if note.entry is not None and fill.takes(note.entry) else None
        listed = note.previous.id in fill.notes
        own = 0 if listed else fill.note_cost(note)
        if own > min(allowance, fill.left):
            continue
        if entry is not None and own + fill.cost(entry) <= fill.left:
            fill.add(entry, InclusionReason.RECENT_SUPERSESSION)
        elif listed:
            continue
        fill.used += own
        allowance -= own
        fill.notes[note.previous.id] = note


def _add_scored(fill: _Fill, matching: Sequence[Piece], quotas: Mapping[ItemKind, float]) -> None:
    for piece in matching:
        if not fill.takes(piece):
            continue
        kind = piece.record.kind
        if fill.scored_by_kind.get(kind, 0) + piece.tokens > quotas.get(kind, 0.0) * fill.budget:
            fill.held_by_quota.add(piece.record.id)
            continue
        if fill.fits(piece):
            fill.add(piece, InclusionReason.SCORED)


def _add_rest(fill: _Fill, pieces: Sequence[Piece], wanted: set[ItemKind], reason: InclusionReason) -> None:
    for piece in pieces:
        if piece.record.kind in wanted and fill.takes(piece) and fill.fits(piece):
            fill.add(piece, reason)


def _left_out(
    fill: _Fill,
    matching: Sequence[Piece],
    unmatched: Sequence[Piece],
    notes: Sequence[Note],
    wanted: set[ItemKind],
) -> dict[tuple[ItemKind, OmissionReason], int]:
    """Each item considered and left out, once, under one kind and one reason, whatever order the
    pieces came in (R11.8): should two pieces name one item, the first by (id, kind) decides."""
    named: list[tuple[uuid.UUID, ItemKind, int]] = []
    named += [(p.record.id, p.record.kind, 0) for p in matching]
    named += [(n.entry.record.id, n.entry.record.kind, 0) for n in notes if n.entry is not None]
    named += [(p.record.id, p.record.kind, 1) for p in unmatched]
    considered: dict[uuid.UUID, tuple[ItemKind, int]] = {}
    for item_id, kind, unmatching in sorted(named, key=lambda t: (str(t[0]), t[2], t[1].value)):
        considered.setdefault(item_id, (kind, unmatching))
    counts: dict[tuple[ItemKind, OmissionReason], int] = {}
    for item_id, (kind, unmatching) in considered.items():
        if item_id in fill.entries:
            continue
        if unmatching:
            why = OmissionReason.NO_MATCH
        elif kind not in wanted or item_id in fill.held_by_quota:
            why = OmissionReason.QUOTA
        else:
            why = OmissionReason.BUDGET
        counts[(kind, why)] = counts.get((kind, why), 0) + 1
    return counts


_REASON_ORDER = {
    InclusionReason.GUARANTEED: 0,
    InclusionReason.RECENT_SUPERSESSION: 1,
    InclusionReason.SCORED: 2,
    InclusionReason.FILL: 3,
}


def _in_order(entries: Iterable[Entry]) -> list[Entry]:
    kinds = list(ItemKind)
    return sorted(
        entries,
        key=lambda e: (
            kinds.index(e.piece.record.kind),
            _REASON_ORDER[e.reason],
            -e.piece.score,
            -e.piece.standing,
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
