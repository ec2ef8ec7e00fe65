"""Text search whose cost depends on neither the project's size nor how common its words are
(docs/counting.md, "Text search").

PostgreSQL cannot tell how many items a prefix matches (its estimate has a
floor), and a text index answers a prefix with every tenant's matches of it.
Left to choose, it walked a million items newest first for a word that
matches none, and read a million index entries for a word that matches most.
So the path is chosen here, from what the project's newest items show:

- **The page** reads the newest WINDOW items the rest of the filter allows
  (past the cursor) and keeps those that match: a common word finds its page
  there. Only when they hold fewer does it ask the text index for the older
  matches, which a word rare among the newest items has few of.
- **The count** (bounded, storage/count.py) of a word that matched at least
  COMMON of the items the page walked walks the newest WALK items, and stops
  at LIMIT + 1 matches; any other word's counts its matches from the text
  index, as does a walk that used up WALK items first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Text, cast, func, literal_column, or_, select
from sqlalchemy.dialects.postgresql import TSQUERY

from mneia.storage import count
from mneia.storage.count import Count
from mneia.storage.database import Tx, stated, walked
from mneia.storage.tables import items

WINDOW = 2_000
"""How many of the newest items a page reads before it asks the text index."""
COMMON = 0.2
"""The share of the window that makes a word common enough to count by walking."""
WALK = 50_000
"""The most items such a count walks before it asks the text index instead."""

_LEXEME = r"'((?:[^']|'')+)'"
"""A lexeme as a tsquery prints it: quoted, a quote inside doubled."""
_VECTOR: Any = literal_column("items.search")


def prefix_query(words: str) -> Any:
    """``filter.text`` as a tsquery: web-search syntax ("a phrase", or, -not) over English
    lexemes, each matching as a prefix, so "idempot" finds "idempotency" and "refund" "refunds,".

    Chosen over a substring (ILIKE) match, which no index serves under RLS without another
    superuser-only LEAKPROOF mark and a trigram index as large as the text: the prefix match
    uses items_search, as full-text does (docs/counting.md, "Text search").
    """
    parsed = func.websearch_to_tsquery(literal_column("'english'::regconfig"), words)
    prefixed = func.regexp_replace(cast(parsed, Text), _LEXEME, r"'\1':*", "g")
    return cast(prefixed, TSQUERY)


def matching(query: Any, vector: Any = _VECTOR) -> ColumnElement[bool]:
    result: ColumnElement[bool] = vector.op("@@")(query)
    return result


@dataclass(frozen=True, slots=True)
class Found:
    rows: list[Any]
    """The page's rows, newest first (``columns`` only)."""
    share: float | None
    """The share of the window that matched; None when the window was not full (a small project)."""
    total: Count | None = None
    """Every match meeting ``chosen``, counted as ``count.bounded`` counts, when the page had to read
    them all from the text index anyway; None when it did not."""


def walk(
    columns: Sequence[Any], chosen: Sequence[ColumnElement[bool]], query: Any, most: Any, table: Any = items
) -> Any:
    """The newest ``most`` rows of ``table`` (items or an alias) meeting ``chosen``, newest first:
    ``columns`` of each (labelled), then ``hit`` (``query`` matches it), ``walked`` (its number in
    the walk) and ``vector`` (its search vector), keeping only the matches and the walk's
    ``most``-th row, which says the walk went that far. ``row_number`` streams in the index's
    order, so a LIMIT on the result stops the walk. Rehydration's scans walk this way too."""
    names = [column.name for column in columns]
    newest = (
        select(*columns, literal_column(f"{table.name}.search").label("vector"))
        .where(*chosen)
        .order_by(table.c.id.desc())
        .limit(most)
        .subquery("walk")
    )
    numbered = select(
        *(newest.c[name] for name in names),
        matching(query, newest.c.vector).label("hit"),
        func.row_number().over(order_by=newest.c.id.desc()).label("walked"),
        newest.c.vector,
    ).subquery("numbered")
    return (
        select(numbered).where(or_(numbered.c.hit, numbered.c.walked == most)).order_by(numbered.c.id.desc())
    )


async def newest(
    tx: Tx, columns: Sequence[Any], chosen: Sequence[ColumnElement[bool]], query: Any, limit: int
) -> Found:
    """The newest ``limit`` items meeting ``chosen`` (the filter but its words, and the cursor) that
    ``query`` matches: ``columns`` (labelled columns of items) of each.

    One statement walks the window newest first and stops at the ``limit``-th
    match; when there are fewer, it also returns the window's last row, which
    says where the window ended. How far it walked tells how common the word
    is (``Found.share``, for the count).
    """
    found = (await walked(tx, walk(columns, chosen, query, WINDOW).limit(limit))).all()
    width = len(columns)
    page = [row[:width] for row in found if row[width]]
    if len(page) == limit:
        return Found(page, limit / found[-1][width + 1])
    if not found or found[-1][width + 1] < WINDOW:  # the window held every item there is
        return Found(page, None)
    share = len(page) / WINDOW
    older_matches = [*chosen, matching(query), items.c.id < found[-1][0]]  # older than the window
    bound = count.LIMIT + 1 - len(page)
    if bound > 0:
        rows = (await tx.execute(_older(tx, columns, older_matches, limit - len(page), bound))).all()
        older = rows[0][-1] if rows else 0
        if older < bound:
            total = Count(len(page) + older, exact=True)
            return Found(page + [tuple(row[:-1]) for row in rows], share, total)
    # More matches than a count reads: those counted were any of them, so the newest are read
    # again, in order.
    fenced = select(*columns).where(*older_matches).offset(0).subquery("older")
    rest = select(fenced).order_by(fenced.c.id.desc()).limit(limit - len(page))
    return Found(page + [tuple(row) for row in (await tx.execute(rest)).all()], share, count.capped())


def _older(
    tx: Tx, columns: Sequence[Any], older_matches: Sequence[ColumnElement[bool]], wanted: int, bound: int
) -> Any:
    """The newest ``wanted`` rows meeting ``older_matches`` (the matches older than the window):
    ``columns``, then ``older``, how many there are, read up to ``bound``; in one pass over the
    text index's matches. The page and the count of a word rare among the newest items each read
    every match (873 of a million items, say), and twice was the half of the search that grew
    with the project (docs/performance.md).

    The matches are fenced (OFFSET 0), so that they are planned without the order or the bound:
    from the text index, never as a walk. Only their ids are kept to be counted and ordered; the
    newest ``wanted`` are read again by key for their columns."""
    matched = select(items.c.id).where(*older_matches).offset(0).subquery("matched")
    capped = select(matched.c.id).limit(bound).subquery("capped")
    latest = (
        select(capped.c.id, func.count().over().label("older"))
        .order_by(capped.c.id.desc())
        .limit(wanted)
        .subquery("latest")
    )
    return (
        select(*columns, latest.c.older)
        .select_from(items.join(latest, items.c.id == latest.c.id))
        .where(stated(items, tx))
        .order_by(items.c.id.desc())
    )


async def counted(
    tx: Tx, chosen: Sequence[ColumnElement[bool]], query: Any, found: Found, *, whole: bool
) -> Count:
    """The items meeting ``chosen`` (the filter but its words) that ``query`` matches, counted up to
    count.LIMIT: as the page counted them when it read them all (``whole``: the page was found
    with ``chosen`` itself, no cursor), else by walking the newest WALK when the page's walk showed
    the word common (stopping at count.LIMIT + 1 matches; a walk that reached the end of the
    project is exact), else, or when the walk used up WALK items first, from the text index."""
    if whole and found.total is not None:
        return found.total
    share = found.share
    if share is not None and share >= COMMON:
        kept = walk([items.c.id.label("id")], chosen, query, WALK).limit(count.LIMIT + 1).subquery("kept")
        tally = select(func.count().filter(kept.c.hit), func.max(kept.c.walked))
        hits, furthest = tuple((await walked(tx, tally)).one())
        if hits > count.LIMIT:
            return count.capped()
        if (furthest or 0) < WALK:  # the walk reached the end of the project first
            return Count(int(hits), exact=True)
    return await count.bounded(tx, items, [*chosen, matching(query)])
