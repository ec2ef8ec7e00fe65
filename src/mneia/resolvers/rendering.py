"""Gather what the renderer needs for an item, through the request's loaders (R4)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from mneia.rehydration.render import Contested, ItemText, line
from mneia.storage import item
from mneia.storage.item import ItemRecord


async def item_text(context: Any, record: ItemRecord) -> ItemText:
    """``context``: the View the item is read in (resolvers.view)."""
    loaders = context.loaders
    asserter = await loaders.actor.load(record.asserted_by)
    confirmer = await loaders.actor.load(record.confirmed_by) if record.confirmed_by else None
    session = await loaders.session.load(record.session_id) if record.session_id else None
    client = None
    if session is not None and session.client_tool:
        client = " ".join(part for part in (session.client_tool, session.client_version) if part)
    contested: list[Contested] = []
    undisputed = False
    if record.status == "DISPUTED":
        opened = [
            d for d in await loaders.disputes.load(record.id) if d.item_id == record.id and d.status == "OPEN"
        ]
        for dispute in opened:
            other = await loaders.item.load(dispute.contested_id)
            if other is not None:
                contested.append(Contested(str(other.id), other.shown_statement))
        if not opened and context.moment is None:
            # A row left DISPUTED with no open dispute (written before migration 0011, or past the
            # guards): flagged, so that a reader sees why nobody can resolve it (issue 21). Asked
            # whatever the caller sees, as the guards ask it.
            undisputed = not await item.still_contesting(context.context.tx, record.id)
    return ItemText(
        kind=record.kind,
        statement=record.shown_statement,
        authority=record.authority,
        status=record.status,
        asserted_by=asserter.name,
        asserted_at=record.asserted_at,
        client=client,
        asserter_is_human=asserter.is_human,
        confirmed_by=confirmer.name if confirmer else None,
        confirmed_at=record.confirmed_at,
        confidence=record.confidence,
        load_bearing=record.load_bearing,
        load_bearing_suggested=record.load_bearing_suggested,
        stale=record.stale_at(context.now),
        contested=contested,
        undisputed=undisputed,
    )


async def rendered(context: Any, record: ItemRecord) -> str:
    return line(await item_text(context, record))


async def rendered_all(view: Any, records: Sequence[ItemRecord]) -> list[str]:
    """Many items' lines at once (a slice's candidates): what their tags name is loaded first, one
    batch per kind, so that each line then renders without a round trip or a task of its own."""
    loaders = view.loaders
    actors = {r.asserted_by for r in records} | {r.confirmed_by for r in records if r.confirmed_by}
    sessions = {r.session_id for r in records if r.session_id}
    await asyncio.gather(loaders.actor.load_many(list(actors)), loaders.session.load_many(list(sessions)))
    disputed = [record.id for record in records if record.status == "DISPUTED"]
    if disputed:
        found = await loaders.disputes.load_many(disputed)
        contested = {d.contested_id for disputes in found for d in disputes if d.status == "OPEN"}
        await loaders.item.load_many(list(contested))
    return [await rendered(view, record) for record in records]
