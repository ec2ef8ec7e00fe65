"""Events: the log of a project's items, newest first, across items (R6).

What a client reads to follow what happened in a project (the inbox's
History): one query with a page size, instead of every item's ``events``.
Who sees what is the policies' (an event is seen with its item, R2).
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from mneia.resolvers.inputs import decode_cursor, encode_cursor, page_size
from mneia.resolvers.project import visible_project_id
from mneia.resolvers.request.context import Info
from mneia.schema.event import ItemEvent
from mneia.schema.item import ItemEventPage
from mneia.schema.page import PageInfo
from mneia.storage import event
from mneia.vocabulary import ItemEventKind


async def list_events(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
    kinds: Annotated[
        list[ItemEventKind] | None, strawberry.argument(description="Default: every kind.")
    ] = None,
    first: Annotated[
        int | None, strawberry.argument(description="How many to return, at most 500. Default: 50.")
    ] = 50,
    after: Annotated[
        str | None,
        strawberry.argument(description="The endCursor of the page before; null for the first page."),
    ] = None,
) -> ItemEventPage:
    """The events of the project's items the caller can see, newest first."""
    context = info.context
    project_key = await visible_project_id(info, project_id)
    size = page_size(first)
    cursor = decode_cursor(after)
    page = await event.of_project(
        context.tx, project_key, [ItemEventKind(kind) for kind in kinds or []], first=size, after=cursor
    )
    view = context.view()
    # The page's items in one query, and what their provenance points at: no lookup per event.
    found = await view.loaders.item.load_many(list({record.item_id for record in page.records}))
    await view.warm([record for record in found if record is not None])
    end = encode_cursor(page.records[-1].id) if page.records else None
    return ItemEventPage(
        nodes=[ItemEvent.of(record, view) for record in page.records],
        page_info=PageInfo(has_next_page=page.has_next, end_cursor=end),
        counter=page.count,
    )
