"""The packer and the token arithmetic alone, as properties (R11.1, R11.2, R11.3, R11.7).

``pack`` is pure: hypothesis hands it random pieces (kinds, statuses, lengths,
scores), notes, budgets down to 1 and quotas, and checks the clauses on what
it returns, many more cases than a database could build. The token claim
underneath ``tokens_used``: a slice's text is its pieces end to end, and
tiktoken counts the whole exactly as the sum of the pieces counted alone.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from mneia.rehydration import render, tokens
from mneia.rehydration.packing import Note, Piece, pack
from mneia.rehydration.render import ItemText, line
from mneia.vocabulary import ItemKind, ItemStatus
from tests.support import item_record

WHEN = datetime(2026, 3, 3, 9, 30, tzinfo=UTC)
words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=60
)


@st.composite
def item_lines(draw: st.DrawFn) -> str:
    text = ItemText(
        kind=draw(st.sampled_from([k.value for k in ItemKind])),
        statement=draw(words),
        authority=draw(st.sampled_from(["HUMAN_CONFIRMED", "AGENT_ASSERTED", "DISPUTED"])),
        status=draw(st.sampled_from([s.value for s in ItemStatus])),
        asserted_by=draw(words),
        asserted_at=WHEN,
        client=draw(st.none() | words),
        confidence=draw(st.none() | st.floats(0, 1)),
        load_bearing=draw(st.booleans()),
    )
    return render.piece(line(text))


@st.composite
def slice_texts(draw: st.DrawFn) -> list[str]:
    pieces: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        choice = draw(st.sampled_from(["heading", "line", "ruled_out", "ruled_out_heading"]))
        if choice == "heading":
            pieces.append(render.heading(draw(st.sampled_from([k.value for k in ItemKind]))))
        elif choice == "line":
            pieces.append(draw(item_lines()))
        elif choice == "ruled_out_heading":
            pieces.append(render.piece(render.RULED_OUT))
        else:
            previous = draw(item_lines()).rstrip("\n")
            pieces.append(render.ruled_out(previous, WHEN, draw(st.none() | words), draw(words)))
    return pieces


@settings(max_examples=200, deadline=None)
@given(pieces=slice_texts())
def test_r11_7_a_slice_text_counts_as_the_sum_of_its_pieces(pieces: list[str]) -> None:
    assert sum(tokens.count(p) for p in pieces) == len(tokens.encoding().encode_ordinary("".join(pieces)))
    assert all(not p[:1].isspace() for p in pieces)


def test_r11_7_counts_are_cached_within_a_byte_budget() -> None:
    cache = tokens.cached()
    text = "A line counted once " + uuid.uuid4().hex
    assert text not in cache
    first = tokens.count(text)
    assert text in cache and tokens.count(text) == first
    assert cache.size <= tokens.COUNT_CACHE_BYTES


KINDS = list(ItemKind)


@st.composite
def pieces(draw: st.DrawFn, guaranteed: bool = False) -> Piece:
    kind = ItemKind.CONSTRAINT if guaranteed else draw(st.sampled_from(KINDS))
    status = (
        ItemStatus.ACTIVE if guaranteed else draw(st.sampled_from([ItemStatus.ACTIVE, ItemStatus.DISPUTED]))
    )
    record = item_record(id=uuid.UUID(int=draw(st.integers(0, 2**64))), kind=kind, status=status)
    text = render.piece(f"[x] {kind.value}: " + "word " * draw(st.integers(0, 40)))
    return Piece(record, text, tokens.count(text), draw(st.floats(0, 2)))


@st.composite
def notes(draw: st.DrawFn) -> Note:
    entry = draw(st.none() | pieces())
    previous = item_record(id=uuid.UUID(int=draw(st.integers(0, 2**64))), status=ItemStatus.SUPERSEDED)
    replacement = entry.record if entry is not None else item_record(status=ItemStatus.SUPERSEDED)
    text = render.ruled_out("[x] FACT: " + "old " * draw(st.integers(0, 20)), WHEN, "why", "new")
    return Note(
        previous,
        replacement,
        WHEN - timedelta(days=draw(st.integers(0, 29))),
        "why",
        text,
        tokens.count(text),
        draw(st.floats(0, 1)),
        entry,
    )


@settings(max_examples=300, deadline=None)
@given(
    budget=st.integers(1, 600),
    guaranteed=st.lists(pieces(guaranteed=True), max_size=4, unique_by=lambda p: p.record.id),
    scored=st.lists(pieces(), max_size=25, unique_by=lambda p: p.record.id),
    ruled_out=st.lists(notes(), max_size=5, unique_by=lambda n: n.previous.id),
    quotas=st.dictionaries(st.sampled_from(KINDS), st.floats(0, 1)),
    share=st.floats(0, 1),
)
def test_r11_1_2_3_7_the_packer_keeps_the_guarantee_the_budget_and_the_quotas(
    budget: int,
    guaranteed: list[Piece],
    scored: list[Piece],
    ruled_out: list[Note],
    quotas: dict[ItemKind, float],
    share: float,
) -> None:
    guaranteed_ids = {p.record.id for p in guaranteed}
    scored = [p for p in scored if p.record.id not in guaranteed_ids]
    packed = pack(budget, guaranteed, ruled_out, scored, quotas, share)
    reasons = {e.piece.record.id: e.reason.value for e in packed.entries}

    # R11.1: every guaranteed piece is in; over budget only when they alone exceed it.
    assert all(reasons.get(p.record.id) == "GUARANTEED" for p in guaranteed)
    alone = pack(budget, guaranteed, [], [], {}, 0.0)
    assert packed.over_budget == (alone.tokens_used > budget)
    if packed.over_budget:
        assert set(reasons) == guaranteed_ids and not packed.notes
    else:
        assert packed.tokens_used <= budget  # R11.2
    # R11.3: SCORED entries of a kind within their share.
    for kind in KINDS:
        used = sum(
            e.piece.tokens
            for e in packed.entries
            if e.reason.value == "SCORED" and e.piece.record.kind == kind
        )
        assert used <= quotas.get(kind, 0.0) * budget
    # R11.6 and R11.7: only live items; the text is what was counted.
    assert all(e.piece.record.status in (ItemStatus.ACTIVE, ItemStatus.DISPUTED) for e in packed.entries)
    assert packed.tokens_used == tokens.count(packed.rendered)
    for entry in packed.entries:
        assert entry.piece.line in packed.rendered
    # What was considered and left out is counted, per kind.
    left_out = {p.record.id for p in scored} - set(reasons)
    assert sum(packed.omitted.values()) >= len(left_out)
    # R11.8: the same pieces, in another order, give the same slice.
    again = pack(
        budget, list(reversed(guaranteed)), list(reversed(ruled_out)), list(reversed(scored)), quotas, share
    )
    assert again == packed


def test_r11_8_an_item_left_out_counts_once_whatever_the_order_of_the_pieces() -> None:
    """Found by the property above: two pieces naming one item under two kinds were counted under
    whichever came last, so the reversed input gave another ``omitted``."""

    def piece(kind: ItemKind) -> Piece:
        record = item_record(id=uuid.UUID(int=0), kind=kind, status=ItemStatus.ACTIVE)
        text = render.piece(f"[x] {kind.value}: word")
        return Piece(record, text, tokens.count(text), 1.0)

    scored = [piece(ItemKind.CONSTRAINT), piece(ItemKind.DECISION)]
    quotas = dict.fromkeys(ItemKind, 1.0)
    packed = pack(5, [], [], scored, quotas, 0.0)
    assert packed == pack(5, [], [], list(reversed(scored)), quotas, 0.0)
    assert sum(packed.omitted.values()) == 1 and packed.omitted[ItemKind.CONSTRAINT] == 1
