"""Gather what the renderer needs for an item, through the request's loaders (R4)."""

from __future__ import annotations

from typing import Any

from mneia.rehydration.render import Contested, ItemText, line
from mneia.storage.item import ItemRecord


async def item_text(context: Any, record: ItemRecord) -> ItemText:
    loaders = context.loaders
    asserter = await loaders.actor.load(record.asserted_by)
    confirmer = await loaders.actor.load(record.confirmed_by) if record.confirmed_by else None
    session = await loaders.session.load(record.session_id) if record.session_id else None
    client = None
    if session is not None and session.client_tool:
        client = " ".join(part for part in (session.client_tool, session.client_version) if part)
    contested: list[Contested] = []
    if record.status == "DISPUTED":
        for dispute in await loaders.disputes.load(record.id):
            if dispute.item_id == record.id and dispute.status == "OPEN":
                other = await loaders.item.load(dispute.contested_id)
                if other is not None:
                    contested.append(Contested(str(other.id), other.statement))
    return ItemText(
        kind=record.kind,
        statement=record.statement,
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
    )


async def rendered(context: Any, record: ItemRecord) -> str:
    return line(await item_text(context, record))
