"""A task's slice: its candidates from SQL, each item's line and score, then the packer (R11).

The caller supplies a ``Reader``: the read the slice is made in (now, or as
of a moment), which renders an item's line as the rest of the API does (its
authority first, R4), hides what the caller cannot see in a reason, and
judges freshness at its instant. Everything is read in the caller's
transaction, under the caller's row-level security.

Candidate pools, per kind: of the newest ``max(SCAN_MIN, SCAN_FACTOR x pool)`` items sharing
a word with the task, the ``pool`` best ranked, where ``pool`` grows with the
kind's share of the budget the guaranteed constraints leave (about
``POOL_FACTOR`` times as many candidates as fit, counting ``LINE_TOKENS`` a
line, the constraints' lines too), between ``POOL_MIN`` and ``POOL_MAX``; so a
request's work is bounded whatever the project's size, and a project whose
rules take most of the budget does not read and render candidates that could
never fit.
"""

from __future__ import annotations

import asyncio
import inspect
import math
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
"""The share of the budget the ruled-out options (and their replacements) may use."""

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


class Reader(Protocol):
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
    """Items the reader is shown already (a handoff's, on resume): never SCORED entries, nor the
    replacements of notes, so the budget is not spent twice. The guarantee ignores it."""


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
    """The candidates for ``ask``: the guaranteed constraints, then pools sized on what they leave."""
    rules = await candidates.guaranteed(tx, ask.project_id, ask.task, ask.as_of)
    return await candidates.gather(tx, request(ask, moment, len(rules)), rules)


async def _settled(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def assemble(tx: Tx, ask: Ask, reader: Reader) -> Packed:
    """The slice for ``ask``, read through ``reader`` (see the module's docstring)."""
    moment = reader.now
    found = await find(tx, ask, moment)
    matched = [m for m in found.matched if m.record.id not in ask.shown]
    replacements = [r for r in found.replacements if r.replacement.id not in ask.shown]
    records: dict[uuid.UUID, ItemRecord] = {}
    for match in (*found.guaranteed, *matched):
        records[match.record.id] = match.record
    for replaced in replacements:
        records.setdefault(replaced.previous.id, replaced.previous)
        records.setdefault(replaced.replacement.id, replaced.replacement)
    ordered = list(records.values())
    rendered = await reader.render_all(ordered)
    lines = {record.id: render.piece(text) for record, text in zip(ordered, rendered, strict=True)}
    # Together, so that the ids the reasons name are looked up in one batch.
    reasons = await asyncio.gather(
        *(_settled(reader.redact(r.replacement.supersession_reason)) for r in replacements)
    )

    best = found.best_rank

    def piece_of(record: ItemRecord, rank: float) -> Piece:
        line = lines[record.id]
        weight = ask.weights.get(record.kind, 1.0)
        return Piece(record, line, tokens.count(line), score.score(record, rank, best, weight, moment))

    guaranteed = [piece_of(m.record, m.rank) for m in found.guaranteed]
    scored = [piece_of(m.record, m.rank) for m in matched]
    notes = []
    for replaced, reason in zip(replacements, reasons, strict=True):
        text = render.ruled_out(
            lines[replaced.previous.id].rstrip("\n"), replaced.at, reason, replaced.replacement.statement
        )
        entry = (
            piece_of(replaced.replacement, replaced.replacement_rank)
            if replaced.replacement.status in LIVE
            else None
        )
        notes.append(
            Note(
                previous=replaced.previous,
                replacement=replaced.replacement,
                at=replaced.at,
                reason=reason,
                text=text,
                tokens=tokens.count(text),
                relevance=score.relevance(replaced.rank, best),
                entry=entry,
            )
        )
    return pack(ask.budget, guaranteed, notes, scored, ask.quotas, SUPERSESSION_SHARE)
