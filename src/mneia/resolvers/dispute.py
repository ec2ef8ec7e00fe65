"""Disputes (R8): a contradiction is stored and flagged, never silently applied.

Software never picks a winner between two assertions, whoever made them: the
dispute stays open until a human's ``resolveDispute`` keeps one item (ACTIVE,
and confirmed by that human: keeping it is a ruling) and retires the other.
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from mneia.authority import CHANGEABLE, require_status_change
from mneia.errors import BadInput, Conflict, NotFound
from mneia.resolvers.inputs import optional_text, parse_id, required_text
from mneia.resolvers.item import changed, visible_item
from mneia.resolvers.project import visible_project_id
from mneia.resolvers.request.context import Info
from mneia.schema.dispute import Dispute
from mneia.schema.enums import DisputeStatus
from mneia.storage import dispute, item
from mneia.vocabulary import ItemStatus


async def dispute_item(
    info: Info,
    id: Annotated[
        strawberry.ID,
        strawberry.argument(description="The contradicting item; an ACTIVE one becomes DISPUTED."),
    ],
    contested_id: Annotated[
        strawberry.ID, strawberry.argument(description="The ACTIVE item it contradicts, in the same project.")
    ],
    reason: Annotated[str, strawberry.argument(description="Why the two contradict.")],
) -> Dispute:
    context = info.context
    tx = context.tx
    why = required_text(reason, "reason")
    newcomer = await visible_item(info, id)
    contested = await visible_item(info, contested_id, "contestedId")
    if newcomer.id == contested.id:
        raise BadInput("contestedId", "an item cannot contradict itself")
    if newcomer.project_id != contested.project_id:
        raise BadInput("contestedId", "is in another project")
    if contested.status != ItemStatus.ACTIVE:
        raise Conflict(f"disputeItem: item {contested.id} is {contested.status}, not ACTIVE")
    if newcomer.status not in CHANGEABLE:
        raise Conflict(f"disputeItem: item {newcomer.id} is {newcomer.status}")
    if newcomer.status == ItemStatus.ACTIVE:
        # It becomes DISPUTED: a status change, a human's to make on an item a human ruled on.
        require_status_change(context.actor, newcomer, "disputeItem with it as the contradicting side")
    existing = await dispute.open_between(tx, newcomer.id, contested.id)
    if existing is not None:
        return Dispute.of(existing, context.view())
    locked = changed(await item.lock(tx, newcomer.id), "disputeItem")
    if locked.status == ItemStatus.ACTIVE:
        await item.mark_disputed(tx, locked.id, contested.id, why)
    opened = await dispute.open(tx, locked, contested, reason=why)
    return Dispute.of(opened, context.view())


async def resolve_dispute(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The dispute's id; it must be OPEN.")],
    keep_item_id: Annotated[
        strawberry.ID,
        strawberry.argument(
            description="One of the dispute's two items: it stays ACTIVE and the other is retired."
        ),
    ],
    note: Annotated[str | None, strawberry.argument(description="Why, kept as its resolutionNote.")] = None,
) -> Dispute:
    context = info.context
    tx = context.tx
    key = parse_id(id, "id")
    keep = parse_id(keep_item_id, "keepItemId")
    why = optional_text(note, "note")
    found = await dispute.lock(tx, key)
    if found is None:
        raise NotFound("dispute", id)
    if found.status != DisputeStatus.OPEN:
        raise Conflict("resolveDispute: the dispute is already resolved", currentStatus=found.status.value)
    if keep not in (found.item_id, found.contested_id):
        raise BadInput("keepItemId", "must be one of the dispute's two items")
    other = found.contested_id if keep == found.item_id else found.item_id
    kept = changed(await item.lock(tx, keep), "resolveDispute")
    dropped = changed(await item.lock(tx, other), "resolveDispute")

    resolved = await dispute.resolve(tx, key, keep, why)
    suffix = f": {why}" if why else ""
    # Still DISPUTED while it contradicts anything else, seen by this human or not.
    reactivate = kept.status == ItemStatus.DISPUTED and not await item.still_contesting(tx, keep)
    active = reactivate or kept.status == ItemStatus.ACTIVE
    # Keeping it is a ruling: it is confirmed by this human as soon as it is ACTIVE.
    confirm = active and kept.confirmed_by is None
    await item.keep(
        tx, keep, f"kept when dispute {key} was resolved{suffix}", reactivate=reactivate, confirm=confirm
    )
    if dropped.status in CHANGEABLE:
        await item.retire(tx, other, f"dropped when dispute {key} was resolved{suffix}")
    return Dispute.of(resolved, context.view())


async def list_disputes(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
    status: Annotated[
        DisputeStatus | None,
        strawberry.argument(description="Only disputes with this status. Null: every one."),
    ] = None,
) -> list[Dispute]:
    key = await visible_project_id(info, project_id)
    found = await dispute.of_project(info.context.tx, key, status)
    return [Dispute.of(record, info.context.view()) for record in found]
