"""Items: read, confirm, settle load-bearing, retire, verify (asserting is resolvers.assertion).

Who may do what: any member of the project (directly or through its team) may
assert, suggest and verify, and retire an item nobody ruled on; confirming,
settling load-bearing, and changing the status of an item a human confirmed
or made load-bearing are for humans (R3, R5; mneia.authority).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from mneia.authority import require_changeable, require_status_change
from mneia.errors import BadInput, Conflict, Forbidden, NotFound
from mneia.resolvers.inputs import (
    decode_cursor,
    encode_cursor,
    optional_text,
    page_size,
    parse_id,
    required_text,
)
from mneia.resolvers.project import visible_project_id
from mneia.resolvers.request.context import Info
from mneia.schema.item import Item, ItemFilter, ItemPage
from mneia.schema.page import PageInfo
from mneia.schema.proposal import Proposal
from mneia.storage import item, proposal
from mneia.storage.item import ItemRecord
from mneia.vocabulary import ItemOrder, ItemStatus


async def get_item(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The item's id.")],
    as_of: Annotated[
        datetime | None,
        strawberry.argument(description="Read the item as it stood at this moment (R9). Null: now."),
    ] = None,
) -> Item | None:
    """The item, or as of a moment the item as it stood then, with everything reached from it (R9)."""
    view = info.context.view(as_of)
    record = await view.loaders.item.load(parse_id(id, "id"))
    return Item.of(record, view) if record else None


async def list_items(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
    filter: Annotated[
        ItemFilter | None, strawberry.argument(description="Which items. Null: every item you can see.")
    ] = None,
    as_of: Annotated[
        datetime | None,
        strawberry.argument(
            description="Read what was believed at this moment: only items asserted by then, each as it"
            " stood then (R9)."
        ),
    ] = None,
    valid_at: Annotated[
        datetime | None,
        strawberry.argument(
            description="Only items whose validity window (validFrom to validTo) holds this moment (R9)."
        ),
    ] = None,
    first: Annotated[
        int | None, strawberry.argument(description="How many to return, at most 500. Default: 50.")
    ] = 50,
    after: Annotated[
        str | None,
        strawberry.argument(description="The endCursor of the page before; null for the first page."),
    ] = None,
    order_by: Annotated[
        ItemOrder | None,
        strawberry.argument(
            description="NEWEST (default); SUGGESTED_THEN_CONFIDENCE: load-bearing suggestions first, then"
            " the extractor's confidence, highest first (none last), then oldest first; LONGEST_UNCHECKED:"
            " the longest since lastVerifiedAt (else assertedAt) first."
            " Orders other than NEWEST read the present only."
        ),
    ] = ItemOrder.NEWEST,
) -> ItemPage:
    context = info.context
    project_key = parse_id(project_id, "projectId")
    size = page_size(first)
    cursor = decode_cursor(after)
    order = ItemOrder(order_by or ItemOrder.NEWEST)
    if order != ItemOrder.NEWEST and as_of is not None:
        raise BadInput("orderBy", f"{order.value} reads the present only; with asOf, use NEWEST")
    await visible_project_id(info, project_id)
    wanted = filter or ItemFilter()
    page = await item.page(
        context.tx,
        project_key,
        item.ItemFilter(
            kinds=list(wanted.kinds or []),
            statuses=list(wanted.statuses or []),
            load_bearing=wanted.load_bearing,
            text=optional_text(wanted.text, "filter.text", 500),
            authorities=list(wanted.authorities or []),
            stale=wanted.stale,
            load_bearing_suggested=wanted.load_bearing_suggested,
        ),
        first=size,
        after=cursor,
        as_of=as_of,
        valid_at=valid_at,
        now=context.now,
        order=order,
    )
    view = context.view(as_of)
    await view.warm(page.records)
    nodes = [Item.of(record, view) for record in page.records]
    end = encode_cursor(page.records[-1].id) if page.records else None
    return ItemPage(
        nodes=nodes, page_info=PageInfo(has_next_page=page.has_next, end_cursor=end), counter=page.count
    )


async def visible_item(info: Info, id: strawberry.ID, field: str = "id") -> ItemRecord:
    record = await item.get(info.context.tx, parse_id(id, field))
    if record is None:
        raise NotFound("item", id)
    return record


def changed(record: ItemRecord | None, operation: str) -> ItemRecord:
    """The result of a named update; None means the caller does not work in the item's project."""
    if record is None:
        raise Forbidden(f"{operation}: you are not a member of this item's project")
    return record


async def confirm_item(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The item to confirm; it must be ACTIVE.")],
) -> Item:
    record = await visible_item(info, id)
    if record.status != ItemStatus.ACTIVE:
        raise Conflict(f"confirmItem: item is {record.status}; only an ACTIVE item can be confirmed")
    if record.confirmed_by is not None:
        return Item.of(record, info.context.view())
    return Item.of(
        changed(await item.confirm(info.context.tx, record.id), "confirmItem"), info.context.view()
    )


async def set_load_bearing(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The item's id.")],
    load_bearing: Annotated[
        bool,
        strawberry.argument(
            description="True: the item is load-bearing; false: it is not. Settles any open suggestion."
        ),
    ],
) -> Item:
    record = await visible_item(info, id)
    settled = changed(await item.set_load_bearing(info.context.tx, record.id, load_bearing), "setLoadBearing")
    # Settling it closes any open suggestion (R5).
    await proposal.settle_load_bearing(info.context.tx, record.id, accepted=load_bearing)
    return Item.of(settled, info.context.view())


async def suggest(info: Info, record: ItemRecord, reason: str | None) -> ItemRecord:
    """Suggest that an item is load-bearing: a proposal for a human, the item flagged (R5)."""
    tx = info.context.tx
    await proposal.suggest_load_bearing(tx, project_id=record.project_id, target_id=record.id, reason=reason)
    return changed(await item.mark_suggested(tx, record.id), "suggestLoadBearing")


async def suggest_load_bearing(
    info: Info,
    id: Annotated[
        strawberry.ID,
        strawberry.argument(description="The item to suggest; not one that is load-bearing already."),
    ],
    reason: Annotated[
        str | None, strawberry.argument(description="Why the work goes wrong without it.")
    ] = None,
) -> Proposal:
    record = await visible_item(info, id)
    if record.load_bearing:
        raise Conflict("suggestLoadBearing: the item is already load-bearing")
    await suggest(info, record, optional_text(reason, "reason"))
    pending = await proposal.pending_load_bearing(info.context.tx, record.id)
    assert pending is not None, "a suggestion leaves a pending proposal"
    return Proposal.of(pending, info.context.view())


async def retire_item(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The item to retire; ACTIVE or DISPUTED.")],
    reason: Annotated[
        str, strawberry.argument(description="Why it no longer holds; kept as its statusReason.")
    ],
) -> Item:
    why = required_text(reason, "reason")
    record = await visible_item(info, id)
    require_changeable(record, "retireItem")
    require_status_change(info.context.actor, record, "retireItem")
    return Item.of(
        changed(await item.retire(info.context.tx, record.id, why), "retireItem"), info.context.view()
    )


async def verify_item(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The item that was checked.")],
) -> Item:
    record = await visible_item(info, id)
    return Item.of(changed(await item.verify(info.context.tx, record.id), "verifyItem"), info.context.view())
