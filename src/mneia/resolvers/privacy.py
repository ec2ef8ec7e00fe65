"""Retention policies, redaction notices, legal holds and erasure (R16-R18). Writing is for humans (R3)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import strawberry

from mneia.errors import BadInput, Conflict, NotFound
from mneia.resolvers.inputs import parse_id, required_text
from mneia.resolvers.request.context import Info
from mneia.schema.actor import Actor
from mneia.schema.item import Item
from mneia.schema.privacy import LegalHold, RedactionNotice, RetentionPolicy, RetentionPolicyInput
from mneia.schema.scalars import Duration
from mneia.storage import actor, item, privacy, project
from mneia.storage.database import Tx
from mneia.vocabulary import ItemStatus

MINIMUM = timedelta(days=30)
"""R16: no policy redacts sooner, so that R11's recent supersessions (30 days) keep their text."""
FINAL = (ItemStatus.SUPERSEDED, ItemStatus.RETIRED)


async def _project(tx: Tx, given: strawberry.ID | None, field: str) -> object:
    if given is None:
        return None
    found = await project.get(tx, parse_id(given, field))
    if found is None:
        raise NotFound("project", given)
    return found.id


async def retention_policies(
    info: Info,
    project_id: Annotated[
        strawberry.ID | None,
        strawberry.argument(
            description="Also list this project's own policies. Null: the workspace's defaults only."
        ),
    ] = None,
) -> list[RetentionPolicy]:
    """The policies in force: the workspace's defaults and, with projectId, that project's own."""
    tx = info.context.tx
    key = await _project(tx, project_id, "projectId")
    view = info.context.view()
    return [RetentionPolicy.of(record, view) for record in await privacy.policies(tx, key)]  # type: ignore[arg-type]


async def set_retention_policy(
    info: Info,
    input: Annotated[RetentionPolicyInput, strawberry.argument(description="The policy to set.")],
) -> RetentionPolicy:
    tx = info.context.tx
    key = await _project(tx, input.project_id, "input.projectId")
    statuses = list(dict.fromkeys(ItemStatus(status.value) for status in input.statuses))
    if not statuses or any(status not in FINAL for status in statuses):
        raise BadInput(
            "input.statuses", "must be a subset of SUPERSEDED, RETIRED: nothing in force is redacted"
        )
    if input.after < MINIMUM:
        raise BadInput("input.after", "must be at least P30D, so that recent supersessions keep their text")
    kinds = list(dict.fromkeys(kind.value for kind in input.kinds or []))
    record = await privacy.set_policy(tx, key, kinds, [s.value for s in statuses], input.after)  # type: ignore[arg-type]
    return RetentionPolicy.of(record, info.context.view())


async def remove_retention_policy(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The policy's id.")],
) -> RetentionPolicy:
    tx = info.context.tx
    key = parse_id(id, "id")
    if await privacy.policy(tx, key) is None:
        raise NotFound("retention policy", id)
    removed = await privacy.remove_policy(tx, key)
    if removed is None:
        raise Conflict("removeRetentionPolicy: the policy was removed already")
    return RetentionPolicy.of(removed, info.context.view())


async def redactions_due(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
    within: Annotated[
        Duration, strawberry.argument(description="How far ahead of now to look, e.g. P30D; not negative.")
    ],
) -> list[RedactionNotice]:
    """What the policies will redact within ``within`` from now (or should have already), soonest first;
    held items are left out: a hold wins (R17)."""
    tx = info.context.tx
    key = await _project(tx, project_id, "projectId")
    if within < timedelta(0):
        raise BadInput("within", "must not be negative")
    found = [d for d in await privacy.due(tx, info.context.now + within, project_id=key) if not d.held]  # type: ignore[arg-type]
    view = info.context.view()
    items = await item.by_ids(tx, [d.item_id for d in found])
    policies = {p.id: p for p in await privacy.policies(tx, key)}  # type: ignore[arg-type]
    return [
        RedactionNotice(
            item=Item.of(items[d.item_id], view),
            due_at=d.due_at,
            policy=RetentionPolicy.of(policies[d.policy_id], view),
        )
        for d in found
        if d.item_id in items and d.policy_id in policies
    ]


async def legal_holds(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
) -> list[LegalHold]:
    tx = info.context.tx
    key = await _project(tx, project_id, "projectId")
    view = info.context.view()
    return [LegalHold.of(record, view) for record in await privacy.holds(tx, key)]  # type: ignore[arg-type]


async def place_legal_hold(
    info: Info,
    reason: Annotated[str, strawberry.argument(description="Why the hold is placed.")],
    project_id: Annotated[
        strawberry.ID | None,
        strawberry.argument(description="The project to hold whole; give this or itemId."),
    ] = None,
    item_id: Annotated[
        strawberry.ID | None, strawberry.argument(description="The item to hold; give this or projectId.")
    ] = None,
) -> LegalHold:
    tx = info.context.tx
    why = required_text(reason, "reason")
    if (project_id is None) == (item_id is None):
        raise BadInput("projectId", "give projectId or itemId, exactly one")
    if item_id is not None:
        found = await item.get(tx, parse_id(item_id, "itemId"))
        if found is None:
            raise NotFound("item", item_id)
        record = await privacy.place_hold(tx, found.project_id, found.id, why)
    else:
        key = await _project(tx, project_id, "projectId")
        record = await privacy.place_hold(tx, key, None, why)  # type: ignore[arg-type]
    return LegalHold.of(record, info.context.view())


async def release_legal_hold(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The hold's id.")],
) -> LegalHold:
    tx = info.context.tx
    key = parse_id(id, "id")
    if await privacy.hold(tx, key) is None:
        raise NotFound("legal hold", id)
    released = await privacy.release_hold(tx, key)
    if released is None:
        raise Conflict("releaseLegalHold: the hold was released already")
    return LegalHold.of(released, info.context.view())


async def erase_actor(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The actor to erase; not yourself.")],
    reason: Annotated[str, strawberry.argument(description="Why the actor is erased.")],
) -> Actor:
    """R18: revoke every token, pseudonymise the name, redact PRIVATE items and sessions' free text."""
    tx = info.context.tx
    required_text(reason, "reason")
    key = parse_id(id, "id")
    if await actor.get(tx, key) is None:
        raise NotFound("actor", id)
    if key == info.context.actor.id:
        raise BadInput("id", "you cannot erase yourself; ask another human of the workspace")
    await privacy.erase(tx, key)
    erased = await actor.get(tx, key)
    assert erased is not None
    return Actor.of(erased)
