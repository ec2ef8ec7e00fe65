"""Items: assert, read, confirm, settle load-bearing, retire, verify.

Who may do what: any member of the project (directly or through its team) may
assert, suggest, verify and retire an unconfirmed item; confirming, settling
load-bearing and retiring a human-confirmed item are for humans (R3, R5).
"""

from __future__ import annotations

from datetime import datetime

import strawberry
from sqlalchemy import func

from mneia.errors import BadInput, Conflict, Forbidden, HumanRequired, NotFound
from mneia.resolvers.inputs import (
    confidence,
    decode_cursor,
    encode_cursor,
    optional_text,
    page_size,
    parse_id,
    parse_ids,
    required_text,
)
from mneia.schema.item import AssertItemInput, Item, ItemFilter, ItemPage, PageInfo
from mneia.schema.proposal import Proposal
from mneia.storage import actor, dispute, item, project, proposal, session
from mneia.storage.failures import refused_as
from mneia.storage.item import ItemRecord

CHANGEABLE = ("ACTIVE", "DISPUTED")


async def get_item(info: strawberry.Info, id: strawberry.ID, as_of: datetime | None = None) -> Item | None:
    record = await item.get(info.context.tx, parse_id(id, "id"), as_of)
    return Item.of(record) if record else None


async def list_items(
    info: strawberry.Info,
    project_id: strawberry.ID,
    filter: ItemFilter | None = None,
    as_of: datetime | None = None,
    valid_at: datetime | None = None,
    first: int | None = 50,
    after: str | None = None,
) -> ItemPage:
    context = info.context
    project_key = parse_id(project_id, "projectId")
    size = page_size(first)
    cursor = decode_cursor(after)
    if await context.loaders.project.load(project_key) is None:
        raise NotFound("project", project_id)
    wanted = filter or ItemFilter()
    page = await item.page(
        context.tx,
        project_key,
        item.ItemFilter(
            kinds=[kind.value for kind in wanted.kinds or []],
            statuses=[status.value for status in wanted.statuses or []],
            load_bearing=wanted.load_bearing,
            text=optional_text(wanted.text, "filter.text", 500),
        ),
        first=size,
        after=cursor,
        as_of=as_of,
        valid_at=valid_at,
    )
    await context.warm(page.records)
    nodes = [Item.of(record) for record in page.records]
    end = encode_cursor(page.records[-1].id) if page.records else None
    return ItemPage(
        nodes=nodes, page_info=PageInfo(has_next_page=page.has_next, end_cursor=end), counter=page.count
    )


async def validated_assertion(info: strawberry.Info, data: AssertItemInput, field: str) -> dict[str, object]:
    """Check an assertion's input and return the item's column values. Writes nothing."""
    context = info.context
    tx = context.tx
    project_key = parse_id(data.project_id, f"{field}.projectId")
    if await project.get(tx, project_key) is None:
        raise NotFound("project", data.project_id)
    if not await project.works_in(tx, project_key):
        raise Forbidden(f"{field}.projectId: you are not a member of this project")

    scope = data.scope.value if data.scope else "PROJECT"
    grants = parse_ids(list(data.grant_actor_ids or []), f"{field}.grantActorIds")
    if scope == "GRANTS" and not grants:
        raise BadInput(f"{field}.grantActorIds", "scope GRANTS needs at least one actor")
    if scope != "GRANTS" and grants:
        raise BadInput(f"{field}.grantActorIds", "only allowed with scope GRANTS")
    if grants:
        known = await actor.by_ids(tx, grants)
        unknown = [str(g) for g in grants if g not in known]
        if unknown:
            raise BadInput(f"{field}.grantActorIds", f"no such actor in this workspace: {', '.join(unknown)}")

    if data.valid_from and data.valid_to and data.valid_to < data.valid_from:
        raise BadInput(f"{field}.validTo", "is before validFrom")

    session_key = None
    if data.session_id is not None:
        session_key = parse_id(data.session_id, f"{field}.sessionId")
        found = await session.get(tx, session_key)
        if found is None:
            raise NotFound("session", data.session_id)
        if found.project_id != project_key:
            raise BadInput(f"{field}.sessionId", "belongs to another project")
        if found.actor_id != context.actor.id:
            raise BadInput(f"{field}.sessionId", "is another actor's session")
        if found.ended_at is not None:
            raise BadInput(f"{field}.sessionId", "has ended; start a new session")

    values: dict[str, object] = {
        "project_id": project_key,
        "kind": data.kind.value,
        "statement": required_text(data.statement, f"{field}.statement"),
        "details": optional_text(data.details, f"{field}.details"),
        "basis": optional_text(data.basis, f"{field}.basis"),
        "confidence": confidence(data.confidence, f"{field}.confidence"),
        "scope": scope,
        "grant_actor_ids": sorted(set(grants)),
        "asserted_by": context.actor.id,
        "session_id": session_key,
        "valid_from": data.valid_from,
        "valid_to": data.valid_to,
        "decay_after": data.decay_after,
    }
    if context.actor.is_human:
        # A person asserting something has read it and said yes (human-confirmed).
        values["confirmed_by"] = context.actor.id
        values["confirmed_at"] = func.now()
    return values


async def contested_items(
    info: strawberry.Info, ids: list[strawberry.ID] | None, field: str
) -> list[ItemRecord]:
    keys = parse_ids(list(ids or []), field)
    if not keys:
        return []
    found = await item.by_ids(info.context.tx, keys)
    for key in keys:
        record = found.get(key)
        if record is None:
            raise NotFound("item", key)
        if record.status != "ACTIVE":
            raise Conflict(f"{field}: item {key} is {record.status}, not ACTIVE", currentStatus=record.status)
    return [found[key] for key in dict.fromkeys(keys)]


async def assert_item(info: strawberry.Info, input: AssertItemInput) -> Item:
    context = info.context
    values = await validated_assertion(info, input, "input")
    contested = await contested_items(info, input.contradicts, "input.contradicts")
    basis = optional_text(input.basis, "input.basis")
    if contested:
        values["status"] = "DISPUTED"
        values["status_reason"] = "contradicts " + ", ".join(str(record.id) for record in contested)
    async with refused_as("assertItem"):
        record = await item.create(context.tx, **values)
        for other in contested:
            await dispute.open(context.tx, record, other, reason=basis)
        if input.suggest_load_bearing:
            record = await suggest(info, record, reason=None)
    return Item.of(record)


async def visible_item(info: strawberry.Info, id: strawberry.ID, field: str = "id") -> ItemRecord:
    record = await item.get(info.context.tx, parse_id(id, field))
    if record is None:
        raise NotFound("item", id)
    return record


async def _change(info: strawberry.Info, record: ItemRecord, operation: str, **values: object) -> ItemRecord:
    async with refused_as(operation):
        changed = await item.change(info.context.tx, record.id, **values)
    if changed is None:
        raise Forbidden(f"{operation}: you are not a member of this item's project")
    return changed


async def confirm_item(info: strawberry.Info, id: strawberry.ID) -> Item:
    human = info.context.require_human("confirmItem")
    record = await visible_item(info, id)
    if record.status != "ACTIVE":
        raise Conflict(f"confirmItem: item is {record.status}; only an ACTIVE item can be confirmed")
    if record.confirmed_by is not None:
        return Item.of(record)
    return Item.of(await _change(info, record, "confirmItem", confirmed_by=human.id, confirmed_at=func.now()))


async def set_load_bearing(info: strawberry.Info, id: strawberry.ID, load_bearing: bool) -> Item:
    human = info.context.require_human("setLoadBearing")
    record = await visible_item(info, id)
    changed = await _change(
        info,
        record,
        "setLoadBearing",
        load_bearing=load_bearing,
        load_bearing_set_by=human.id,
        load_bearing_set_at=func.now(),
        load_bearing_suggested=False,
    )
    # Settling it closes any open suggestion (R5).
    async with refused_as("setLoadBearing"):
        await proposal.settle_load_bearing(info.context.tx, record.id, accepted=load_bearing)
    return Item.of(changed)


async def suggest(info: strawberry.Info, record: ItemRecord, reason: str | None) -> ItemRecord:
    """Suggest that an item is load-bearing: a proposal for a human, the item flagged (R5)."""
    await proposal.suggest_load_bearing(
        info.context.tx, project_id=record.project_id, target_id=record.id, reason=reason
    )
    return await _change(info, record, "suggestLoadBearing", load_bearing_suggested=True)


async def suggest_load_bearing(
    info: strawberry.Info, id: strawberry.ID, reason: str | None = None
) -> Proposal:
    record = await visible_item(info, id)
    if record.load_bearing:
        raise Conflict("suggestLoadBearing: the item is already load-bearing")
    async with refused_as("suggestLoadBearing"):
        await suggest(info, record, optional_text(reason, "reason"))
    pending = await proposal.pending_load_bearing(info.context.tx, record.id)
    assert pending is not None, "a suggestion leaves a pending proposal"
    return Proposal.of(pending)


async def retire_item(info: strawberry.Info, id: strawberry.ID, reason: str) -> Item:
    why = required_text(reason, "reason")
    record = await visible_item(info, id)
    if record.status not in CHANGEABLE:
        raise Conflict(f"retireItem: item is already {record.status}", currentStatus=record.status)
    if record.confirmed_by is not None and not info.context.actor.is_human:
        raise HumanRequired("retireItem on a human-confirmed item")
    return Item.of(await _change(info, record, "retireItem", status="RETIRED", status_reason=why))


async def verify_item(info: strawberry.Info, id: strawberry.ID) -> Item:
    record = await visible_item(info, id)
    return Item.of(await _change(info, record, "verifyItem", last_verified_at=func.now()))
