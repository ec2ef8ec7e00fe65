"""The imports ledger: what each import wrote, by the source's own key (storage/sql/tables.sql).

A key imported once is found here again, with the digest of what it said,
so that importing the same thing twice writes nothing and a changed one is
told apart. Entries are never deleted: a key removed from its document keeps
its entry, pointing at the item that was retired.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from mneia.storage.database import Tx, from_row, stated
from mneia.storage.tables import imports


@dataclass(frozen=True, slots=True)
class Entry:
    key: str
    document: str | None
    position: int
    digest: str
    item_id: uuid.UUID | None
    proposal_id: uuid.UUID | None


_COLUMNS = (
    imports.c.key,
    imports.c.document,
    imports.c.position,
    imports.c.digest,
    imports.c.item_id,
    imports.c.proposal_id,
)


async def by_keys(tx: Tx, project_id: uuid.UUID, keys: Sequence[str]) -> dict[str, Entry]:
    if not keys:
        return {}
    rows = await tx.execute(
        select(*_COLUMNS).where(
            stated(imports, tx), imports.c.project_id == project_id, imports.c.key.in_(list(keys))
        )
    )
    return {row.key: from_row(Entry, row) for row in rows}


async def of_document(tx: Tx, project_id: uuid.UUID, document: str) -> list[Entry]:
    """A document's entries in their place in it (index imports_document)."""
    rows = await tx.execute(
        select(*_COLUMNS)
        .where(stated(imports, tx), imports.c.project_id == project_id, imports.c.document == document)
        .order_by(imports.c.position, imports.c.key)
    )
    return [from_row(Entry, row) for row in rows]


async def record(tx: Tx, project_id: uuid.UUID, entries: Sequence[Entry]) -> None:
    """Write or rewrite entries, in one statement: the key's latest content and what it wrote."""
    if not entries:
        return
    assert tx.workspace_id and tx.actor_id
    rows = [
        {
            "workspace_id": tx.workspace_id,
            "project_id": project_id,
            "key": entry.key,
            "document": entry.document,
            "position": entry.position,
            "digest": entry.digest,
            "item_id": entry.item_id,
            "proposal_id": entry.proposal_id,
            "imported_by": tx.actor_id,
            "imported_at": func.now(),
        }
        for entry in entries
    ]
    statement = pg_insert(imports).values(rows)
    await tx.execute(
        statement.on_conflict_do_update(
            index_elements=[imports.c.workspace_id, imports.c.project_id, imports.c.key],
            set_={
                "document": statement.excluded.document,
                "position": statement.excluded.position,
                "digest": statement.excluded.digest,
                "item_id": statement.excluded.item_id,
                "proposal_id": statement.excluded.proposal_id,
            },
        )
    )


async def recorded_at(tx: Tx) -> datetime:
    """The transaction's time, which the database records every write at (and checks saidAt by)."""
    moment: datetime = (await tx.execute(select(func.now()))).scalar_one()
    return moment
