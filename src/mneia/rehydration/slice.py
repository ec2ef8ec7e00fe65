"""A task's slice: its candidates from SQL, each item's line and score, then the packer (R11).

The caller supplies a ``Rendering``: the read the slice is made in (now, or
as of a moment; resolvers.reading's ``View`` is one), which renders an
item's line as the rest of the API does (its authority first, R4), hides
what the caller cannot see in a reason, and judges freshness at its
instant. Everything is read in the caller's
transaction, under the caller's row-level security.

Candidate pools, per kind: of the newest ``max(SCAN_MIN, SCAN_FACTOR x pool)`` items sharing
a word with the task, the ``pool`` best ranked, where ``pool`` grows with the
kind's share of the budget the guaranteed constraints leave (about
``POOL_FACTOR`` times as many candidates as fit, counting ``LINE_TOKENS`` a
line, the constraints' lines too), between ``POOL_MIN`` and ``POOL_MAX``; so a
request's work is bounded whatever the project's size, and a project whose
rules take most of the budget does not read and render candidates that could
never fit.

Pools that run dry before the budget does are refilled: after packing, while
the budget left could hold a line of the median length of those read so far
(``MIN_PIECE_TOKENS`` at least), the pools that came back full are doubled and
read again, the recent replacements too; once every item matching the task
is in hand, the newest items of each kind that share no word with it are
read as fillers (about half as many per kind as the budget left could hold
at ``LINE_TOKENS`` a line), and doubled in turn while they run dry. A budget
left shorter than most lines is seldom filled by reading twice as many of
them: measured against the shortest line instead, a 1,000-item tenant's slice
read 60, 120, 240 and 480 fillers for 13 tokens more of 4,000, and a
10,000-item project's read its pools twice more for 6. At most ``MAX_ROUNDS``
refills, each pool at most ``POOL_CEILING``: the sizing that keeps the first
read small never caps what a slice can hold, and no budget makes a request
read the whole project.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import math
import statistics
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from mneia.rehydration import candidates, render, score, tokens
from mneia.rehydration.packing import LIVE, Note, Packed, Piece, pack
from mneia.storage.database import Tx
from mneia.storage.item import ItemRecord
from mneia.vocabulary import ItemKind

RECENT = timedelta(days=30)
"""How far back a supersession is recent, by default (R11.4)."""

SUPERSESSION_SHARE = 0.25
"""The share of the budget the lines of ruled-out options on the task may use before the task's
entries compete for it (their replacements come with them as entries, outside it): the cap that
keeps room for the task's own entries. The rest of them, and the others, go in whatever the scored
entries leave (rehydration.packing)."""

POOL_FACTOR = 1.0
LINE_TOKENS = 50
POOL_MIN = 10
POOL_MAX = 60
SCAN_FACTOR = 2
SCAN_MIN = 64
"""Of each kind, the newest ``max(SCAN_MIN, SCAN_FACTOR x pool)`` items sharing a word with the task
are ranked for its pool."""

EVERY_WORD_POOL = 20
"""How many items sharing every word of the task are considered besides the per-kind pools."""

REPLACEMENTS_POOL = 12
"""How many recent supersessions are considered: the most relevant to the task, then the newest..."""

REPLACEMENTS_SCAN = 40
"""... of the newest so many in the window."""

MAX_ROUNDS = 4
"""How many times the pools may refill after the first read: each round doubles the pools that ran
dry (to ``POOL_CEILING``), so a request's work stays bounded whatever the budget."""

POOL_CEILING = POOL_MAX * 2**MAX_ROUNDS
MIN_PIECE_TOKENS = 12
"""Fewer tokens than the shortest line an item can have: no refill for a budget left below it,
whatever the lines read so far."""


class Rendering(Protocol):
    """How the slice's items read for the caller: the read's instant, each item's line, redaction."""

    @property
    def now(self) -> datetime: ...

    async def render_all(self, records: Sequence[ItemRecord]) -> list[str]: ...

    def redact(self, text: str | None) -> Any: ...


@dataclass(frozen=True, slots=True)
class Ask:
    project_id: uuid.UUID
    task: str
    budget: int
    quotas: Mapping[ItemKind, float]
    weights: Mapping[ItemKind, float]
    recent: timedelta = RECENT
    as_of: datetime | None = None
    shown: frozenset[uuid.UUID] = frozenset()
    """Items the reader is shown already (a handoff's, on resume): never SCORED or FILL entries, nor
    the replacements of notes, so the budget is not spent twice. The guarantee ignores it."""


def pool(share: float, budget: int) -> int:
    """How many of a kind's candidates to consider for a share of a budget."""
    if share <= 0:
        return 0
    wanted = math.ceil(POOL_FACTOR * share * budget / LINE_TOKENS)
    return max(POOL_MIN, min(POOL_MAX, wanted))


def _before(moment: datetime, span: timedelta) -> datetime:
    """``moment - span`` (a Duration is positive), or the earliest instant there is when that is
    earlier (asOf near year 1)."""
    try:
        return moment - span
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


def request(ask: Ask, moment: datetime, guaranteed: int = 0) -> candidates.Request:
    """The candidate query for ``ask`` read at ``moment``, beside ``guaranteed`` constraints."""
    left = max(0, ask.budget - LINE_TOKENS * guaranteed)
    pools = {kind: pool(ask.quotas.get(kind, 0.0), left) for kind in ItemKind}
    return candidates.Request(
        project_id=ask.project_id,
        task=ask.task,
        pools=pools,
        scans={kind: max(SCAN_MIN, SCAN_FACTOR * size) if size else 0 for kind, size in pools.items()},
        every_word=EVERY_WORD_POOL,
        every_word_scan=SCAN_FACTOR * EVERY_WORD_POOL,
        replacements=REPLACEMENTS_POOL,
        replacements_scan=REPLACEMENTS_SCAN,
        since=_before(moment, ask.recent),
        as_of=ask.as_of,
    )


async def find(tx: Tx, ask: Ask, moment: datetime) -> candidates.Candidates:
    """The first round of candidates for ``ask``: the guaranteed constraints, then pools sized on
    what they leave."""
    rules = await candidates.guaranteed(tx, ask.project_id, ask.task, ask.as_of)
    return await candidates.gather(tx, request(ask, moment, len(rules)), rules)


async def _settled(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _doubled(sizes: Mapping[ItemKind, int], kinds: frozenset[ItemKind]) -> dict[ItemKind, int]:
    return {kind: min(POOL_CEILING, 2 * size) if kind in kinds else size for kind, size in sizes.items()}


def grown(
    asked: candidates.Request, found: candidates.Candidates, filled: frozenset[ItemKind] | None, unused: int
) -> candidates.Request | None:
    """The next round's request, when the pools ran dry before the budget did: the task's pools that
    came back full doubled, and the replacements; once every match is in, items sharing no word
    with the task (``filled``: the filler kinds that came back full, None before any were read),
    then more of them. None when nothing more is to be had."""
    full = frozenset(k for k in found.full if asked.pools.get(k, 0) < POOL_CEILING)
    more_replacements = found.replacements_full and asked.replacements < POOL_CEILING
    if full or more_replacements:
        pools = _doubled(asked.pools, full)
        replacements = min(POOL_CEILING, 2 * asked.replacements) if more_replacements else asked.replacements
        return dataclasses.replace(
            asked,
            pools=pools,
            scans={kind: max(asked.scans.get(kind, 0), SCAN_FACTOR * pools[kind]) for kind in ItemKind},
            replacements=replacements,
            replacements_scan=max(asked.replacements_scan, SCAN_FACTOR * replacements),
        )
    if filled is None:
        wanted = max(POOL_MIN, min(POOL_CEILING, math.ceil(unused / LINE_TOKENS / 2)))
        return dataclasses.replace(
            asked, fillers={kind: wanted for kind in ItemKind if asked.pools.get(kind, 0) > 0}
        )
    dry = frozenset(k for k in filled if asked.fillers.get(k, 0) < POOL_CEILING)
    return dataclasses.replace(asked, fillers=_doubled(asked.fillers, dry)) if dry else None


@dataclass
class _Pieces:
    """The candidates of every round so far, rendered once each, as the packer takes them."""

    ask: Ask
    reader: Rendering
    moment: datetime
    lines: dict[uuid.UUID, str] = dataclasses.field(default_factory=dict)
    reasons: dict[uuid.UUID, Any] = dataclasses.field(default_factory=dict)

    async def render(
        self, records: Sequence[ItemRecord], replacements: Sequence[candidates.Replacement]
    ) -> None:
        fresh: dict[uuid.UUID, ItemRecord] = {}
        for record in records:
            if record.id not in self.lines:
                fresh.setdefault(record.id, record)
        ordered = list(fresh.values())
        rendered = await self.reader.render_all(ordered)
        self.lines.update(
            {record.id: render.piece(text) for record, text in zip(ordered, rendered, strict=True)}
        )
        waiting = [r for r in replacements if r.replacement.id not in self.reasons]
        # Together, so that the ids the reasons name are looked up in one batch.
        said = await asyncio.gather(
            *(_settled(self.reader.redact(r.replacement.supersession_reason)) for r in waiting)
        )
        self.reasons.update({r.replacement.id: reason for r, reason in zip(waiting, said, strict=True)})

    def median_line(self) -> int:
        """The median length of the lines read so far, in tokens (``LINE_TOKENS`` before any)."""
        if not self.lines:
            return LINE_TOKENS
        return statistics.median_low(tokens.count(line) for line in self.lines.values())

    def pack(self, found: candidates.Candidates, fillers: Sequence[candidates.Match]) -> Packed:
        ask, moment, best = self.ask, self.moment, found.best_rank

        def piece_of(record: ItemRecord, rank: float) -> Piece:
            line = self.lines[record.id]
            weight = ask.weights.get(record.kind, 1.0)
            return Piece(
                record,
                line,
                tokens.count(line),
                score.score(record, rank, best, weight, moment),
                score.standing(record, weight, moment),
            )

        # A note is on the task when its rank is above 0, even with no live match to compare with.
        best_note = max([best, *(r.rank for r in found.replacements)])
        notes = []
        for replaced in found.replacements:
            reason = self.reasons[replaced.replacement.id]
            previous = self.lines[replaced.previous.id].rstrip("\n")
            text = render.ruled_out(previous, replaced.at, reason, replaced.replacement.shown_statement)
            live = replaced.replacement.status in LIVE
            notes.append(
                Note(
                    previous=replaced.previous,
                    replacement=replaced.replacement,
                    at=replaced.at,
                    reason=reason,
                    text=text,
                    tokens=tokens.count(text),
                    relevance=score.relevance(replaced.rank, best_note),
                    entry=piece_of(replaced.replacement, replaced.replacement_rank) if live else None,
                )
            )
        return pack(
            ask.budget,
            [piece_of(m.record, m.rank) for m in found.guaranteed],
            notes,
            [piece_of(m.record, m.rank) for m in found.matched],
            ask.quotas,
            SUPERSESSION_SHARE,
            [piece_of(m.record, 0.0) for m in fillers],
        )


def _unshown(ask: Ask, found: candidates.Candidates) -> candidates.Candidates:
    return dataclasses.replace(
        found,
        matched=[m for m in found.matched if m.record.id not in ask.shown],
        replacements=[r for r in found.replacements if r.replacement.id not in ask.shown],
    )


async def assemble(tx: Tx, ask: Ask, reader: Rendering) -> Packed:
    """The slice for ``ask``, read through ``reader`` (see the module's docstring)."""
    moment = reader.now
    rules = await candidates.guaranteed(tx, ask.project_id, ask.task, ask.as_of)
    asked = request(ask, moment, len(rules))
    found = await candidates.gather(tx, asked, rules)
    fillers: list[candidates.Match] = []
    filled: frozenset[ItemKind] | None = None
    pieces = _Pieces(ask, reader, moment)
    for round_ in range(MAX_ROUNDS + 1):
        shown = _unshown(ask, found)
        fillers = [m for m in fillers if m.record.id not in ask.shown]
        records = [m.record for m in (*shown.guaranteed, *shown.matched, *fillers)]
        for replaced in shown.replacements:
            records += [replaced.previous, replaced.replacement]
        await pieces.render(records, shown.replacements)
        packed = pieces.pack(shown, fillers)
        typical = pieces.median_line()
        if round_ == MAX_ROUNDS or packed.over_budget or packed.unused < max(MIN_PIECE_TOKENS, typical):
            return packed
        following = grown(asked, found, filled, packed.unused)
        if following is None:
            return packed
        if following.fillers != asked.fillers:
            fillers, filled = await candidates.fillers(tx, following, rules)
        else:
            replacements = (
                await candidates.recent_replacements(tx, following)
                if following.replacements != asked.replacements
                else found.replacements
            )
            chosen = (
                await candidates.matches(tx, following, rules)
                if following.pools != asked.pools
                else (found.matched, found.full)
            )
            found = candidates.candidates_of(following, rules, chosen, replacements)
        asked = following
    return packed
