"""An announced row and what its fields point at, read in one statement (a subscription's shared read).

Each class of subscribers (one token) reads an announced dispute or proposal
under its own context, and the items and actors it names, so that every
subscriber's fields answer from loaders already filled. As three statements
that was three round trips per class per event, 60 for 20 tokens; as one
statement it is one. Nothing is seen differently: the statement reads the
announced table, ``items`` and ``actors``, each under its row-level security
policies as the loaders' own statements do (an item the reader cannot see is
simply absent, and its loader answers None).

The rows of the three kinds come as one ``UNION ALL``: a tag, then the
announced record's columns, then an item's, then an actor's, the parts a row
does not carry being NULL.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Column, Table, bindparam, cast, literal, null, select, union, union_all

from mneia.storage import actor, item
from mneia.storage.actor import ActorRecord
from mneia.storage.database import Driven, Tx, from_row, stated
from mneia.storage.item import ItemRecord
from mneia.storage.tables import actors, items

R = TypeVar("R")

_ITEM_COLUMNS = item.selected(item.columns_at(items, None)[1], "item_")
_ACTOR_COLUMNS = [column.label("actor_" + column.name) for column in actor.COLUMNS]
_ANNOUNCED, _ITEM, _ACTOR = "announced", "item", "actor"


@dataclass(frozen=True, slots=True)
class Read(Generic[R]):
    """The announced record, if the reader sees it, and the items and actors it names: None for
    each one the reader cannot see."""

    record: R | None
    items: dict[uuid.UUID, ItemRecord | None]
    actors: dict[uuid.UUID, ActorRecord | None]


def _nulls(columns: Sequence[Any]) -> list[Any]:
    """Typed NULLs in place of ``columns``: the first branch of the union gives every column its type."""
    return [cast(null(), column.type).label(column.name) for column in columns]


def _unseen(found: dict[uuid.UUID, Any], record: object, refs: Sequence[str]) -> None:
    """Each id ``record`` names under ``refs`` and the reader did not see, as None."""
    for ref in refs:
        named = getattr(record, ref)
        if named is not None:
            found.setdefault(named, None)


class Announcement(Generic[R]):
    """How to read one kind of announced row, ``record`` built from ``own`` (its table's columns in
    the record's field order), with the items and actors its ``item_refs`` and ``actor_refs`` name."""

    def __init__(
        self,
        table: Table,
        record: type[R],
        own: Sequence[Column[Any]],
        item_refs: Sequence[str],
        actor_refs: Sequence[str],
    ) -> None:
        self._record = record
        self._item_refs, self._actor_refs = tuple(item_refs), tuple(actor_refs)
        announced = select(*own).where(stated(table), table.c.seq == bindparam("seq")).cte("announced")
        mine = [announced.c[column.name] for column in own]
        item_ids = union(*(select(announced.c[ref]) for ref in item_refs))
        actor_ids = union(*(select(announced.c[ref]) for ref in actor_refs))
        statement = union_all(
            select(literal(_ANNOUNCED), *mine, *_nulls(_ITEM_COLUMNS), *_nulls(_ACTOR_COLUMNS)),
            select(literal(_ITEM), *_nulls(own), *_ITEM_COLUMNS, *_nulls(_ACTOR_COLUMNS)).where(
                stated(items), items.c.id.in_(item_ids)
            ),
            select(literal(_ACTOR), *_nulls(own), *_nulls(_ITEM_COLUMNS), *_ACTOR_COLUMNS).where(
                stated(actors), actors.c.id.in_(actor_ids)
            ),
        )
        self._statement = Driven(statement)
        self._widths = (1, 1 + len(own), 1 + len(own) + len(_ITEM_COLUMNS))

    async def read(self, tx: Tx, seq: int) -> Read[R]:
        """The row numbered ``seq`` in the workspace, and what it names, as the reader sees them."""
        rows = await tx.fetch(self._statement, {"workspace": tx.workspace, "seq": seq})
        own, its_item, its_actor = self._widths
        record: R | None = None
        found_items: dict[uuid.UUID, ItemRecord | None] = {}
        found_actors: dict[uuid.UUID, ActorRecord | None] = {}
        for row in rows:
            if row[0] == _ANNOUNCED:
                record = from_row(self._record, row[own:its_item])
            elif row[0] == _ITEM:
                found = item.record_of(row[its_item:its_actor])
                found_items[found.id] = found
            else:
                named = from_row(ActorRecord, row[its_actor:])
                found_actors[named.id] = named
        if record is not None:
            _unseen(found_items, record, self._item_refs)
            _unseen(found_actors, record, self._actor_refs)
        return Read(record, found_items, found_actors)
