"""How many rows a page's filter matches, without counting a million (docs/counting.md).

Two ways, and the rule that picks one lives in ``storage.item.page``:

- **From the counters** (``item_counts``, kept by the items' triggers,
  storage/sql/counts.sql): exact, transactional, and read under their own
  RLS policy, which restates the items' (R2), so a reader's sum never counts
  an item it cannot see. It answers a filter on status, kind, load-bearing
  and authority of the items as they are now.
- **Bounded**: any other filter (text, staleness, a past moment...) counts
  the matching rows, but at most ``LIMIT`` of them: exact below it, and above
  it the answer is ``LIMIT`` with ``exact`` false.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, bindparam, func, literal_column, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import OWNER_ROLE
from mneia.storage.database import Driven, Tx, stated, transaction
from mneia.storage.tables import item_counts

LIMIT = 10_000
"""The most rows a bounded count reads: the answer above it is LIMIT, not exact."""


@dataclass(frozen=True, slots=True)
class Count:
    total: int
    exact: bool


async def bounded(tx: Tx, source: Any, conditions: Sequence[ColumnElement[bool]]) -> Count:
    """The rows of ``source`` that meet ``conditions``, counted up to LIMIT (one more tells). ``source``
    and ``conditions`` state their workspace, as a value or as the parameter ``workspace``."""
    some = select(literal_column("1")).select_from(source).where(*conditions).limit(LIMIT + 1).subquery()
    counting = select(func.count()).select_from(some)
    found = int((await tx.execute(counting, {"workspace": tx.workspace})).scalar_one())
    return Count(found, exact=True) if found <= LIMIT else capped()


def capped() -> Count:
    """A count past LIMIT: LIMIT, not exact."""
    return Count(LIMIT, exact=False)


async def counted(
    tx: Tx, project_id: uuid.UUID, conditions: Callable[[Any], Sequence[ColumnElement[bool]]]
) -> Count:
    """The project's items the reader sees, from the counters: ``conditions`` gets the counters'
    columns (status, kind, load_bearing, confirmed) and says which rows to add up."""
    chosen = conditions(item_counts.c)
    if not chosen:
        (row,) = await tx.fetch(_WHOLE, {"workspace": tx.workspace, "project": project_id})
        return Count(int(row[0]), exact=True)
    total = await tx.execute(_summed(stated(item_counts, tx), project_id, chosen))
    return Count(int(total.scalar_one()), exact=True)


def _summed(workspace: ColumnElement[bool], project_id: Any, chosen: Sequence[ColumnElement[bool]]) -> Any:
    columns = item_counts.c
    return select(func.coalesce(func.sum(columns.n), 0)).where(
        workspace, columns.project_id == project_id, *chosen
    )


_WHOLE = Driven(_summed(stated(item_counts), bindparam("project"), ()))
"""A whole project's count, the commonest: a statement built once."""


def once(count: Callable[[], Awaitable[Count]]) -> Callable[[], Awaitable[Count]]:
    """``count`` run at most once, however many fields ask (totalCount, totalCountIsExact):
    sibling fields resolve concurrently, and one transaction runs one statement at a time."""
    task: asyncio.Future[Count] | None = None

    def shared() -> Awaitable[Count]:
        nonlocal task
        if task is None:
            task = asyncio.ensure_future(count())
        return task

    return shared


_UNFOLDED = text("SELECT DISTINCT workspace_id FROM item_counts WHERE slot <> 0")
_FOLD = text("SELECT mneia_fold_item_counts(CAST(:workspace AS uuid))")


async def fold(admin: AsyncEngine) -> int:
    """Fold every connection's counter rows into one per audience (the sweep's upkeep, as the
    owner), a workspace per transaction: how many rows it folded. Counts are the same before
    and after."""
    async with transaction(admin, read=True) as tx:
        await tx.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
        workspaces = list((await tx.execute(_UNFOLDED)).scalars())
    folded = 0
    for workspace in workspaces:
        async with transaction(admin) as tx:
            await tx.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
            folded += int((await tx.execute(_FOLD, {"workspace": str(workspace)})).scalar_one())
    return folded
