"""Replacing an item without losing authority (R7), and deciding proposals (R5, R7).

An agent never overrules a person by writing a row: replacing a
human-confirmed item by an agent only opens a SUPERSESSION proposal; a human's
``decideProposal`` writes the replacement (asserted by the agent, at the time
it proposed; confirmed by the deciding human).
"""

from __future__ import annotations

from typing import Any

import strawberry
from sqlalchemy import func

from mneia.errors import BadInput, Conflict, Forbidden, NotFound
from mneia.resolvers.inputs import optional_text, parse_id, required_text
from mneia.resolvers.item import suggest, validated_assertion
from mneia.schema.item import Item
from mneia.schema.proposal import Proposal
from mneia.schema.supersession import PendingConfirmation, Superseded, SupersedeInput, SupersedeResult
from mneia.storage import item, proposal
from mneia.storage.database import Tx
from mneia.storage.failures import refused_as
from mneia.storage.item import ItemRecord

_WIDTH = {"PROJECT": 1, "TEAM": 2, "WORKSPACE": 3}


def _keeps_audience(target: ItemRecord, values: dict[str, Any]) -> bool:
    """Whether everyone who sees the target will see its replacement.

    A narrower replacement would hide the chain's head from people who saw the
    item it replaced, and a human asked to accept it could not even read it.
    """
    scope = values["scope"]
    if target.scope == "PRIVATE":
        return True  # only its asserter sees it, and that is who replaces it
    if target.scope == "GRANTS":
        if scope == "WORKSPACE":
            return True
        before = set(target.grant_actor_ids) | {target.asserted_by}
        after = set(values["grant_actor_ids"]) | {values["asserted_by"]}
        return scope == "GRANTS" and before <= after
    return scope in _WIDTH and _WIDTH[scope] >= _WIDTH[target.scope]


async def _no_longer_active(tx: Tx, target: ItemRecord, operation: str) -> Conflict:
    current = await item.head(tx, target.id)
    return Conflict(
        f"{operation}: item {target.id} is {target.status}, not ACTIVE; the chain's head is {current.id}",
        currentHeadId=str(current.id),
        currentStatus=target.status,
    )


async def _locked_active(tx: Tx, target_id: Any, operation: str) -> ItemRecord:
    target = await item.lock(tx, target_id)
    if target is None:
        raise Forbidden(f"{operation}: you are not a member of this item's project")
    if target.status != "ACTIVE":
        raise await _no_longer_active(tx, target, operation)
    return target


async def _replace(
    info: strawberry.Info, target: ItemRecord, values: dict[str, Any], reason: str, operation: str
) -> tuple[ItemRecord, ItemRecord]:
    """Write the replacement and mark the target SUPERSEDED. The caller holds the target's lock."""
    context = info.context
    values = {**values, "supersedes_id": target.id, "supersession_reason": reason}
    # A load-bearing item's replacement keeps the guarantee only when a human
    # writes it; an agent's replacement carries a suggestion instead (R5).
    carry = target.load_bearing and context.actor.is_human
    if carry:
        values.update(load_bearing=True, load_bearing_set_by=context.actor.id, load_bearing_set_at=func.now())
    async with refused_as(operation):
        replacement = await item.create(context.tx, **values)
        previous = await item.change(context.tx, target.id, status="SUPERSEDED", status_reason=reason)
        if target.load_bearing and not carry:
            replacement = await suggest(info, replacement, reason=f"replaces load-bearing item {target.id}")
    assert previous is not None
    return previous, replacement


async def supersede_item(info: strawberry.Info, input: SupersedeInput) -> SupersedeResult:
    context = info.context
    tx = context.tx
    reason = required_text(input.reason, "input.reason")
    target_key = parse_id(input.target_id, "input.targetId")
    if await item.get(tx, target_key) is None:
        raise NotFound("item", input.target_id)
    if input.replacement.contradicts:
        raise BadInput("input.replacement.contradicts", "a replacement cannot open disputes; use disputeItem")
    values = await validated_assertion(info, input.replacement, "input.replacement")
    target = await _locked_active(tx, target_key, "supersedeItem")
    if values["project_id"] != target.project_id:
        raise BadInput("input.replacement.projectId", "must be the target's project")
    if not _keeps_audience(target, values):
        raise BadInput(
            "input.replacement.scope",
            f"is narrower than the target's {target.scope}: the replacement must stay visible to "
            "everyone who sees the item it replaces",
        )

    if target.confirmed_by is not None and not context.actor.is_human:
        async with refused_as("supersedeItem"):
            pending = await proposal.create(
                tx,
                project_id=target.project_id,
                kind="SUPERSESSION",
                target_id=target.id,
                reason=reason,
                replacement=proposal.encode_replacement(values),
            )
        return PendingConfirmation(proposal=Proposal.of(pending))

    previous, replacement = await _replace(info, target, values, reason, "supersedeItem")
    if input.replacement.suggest_load_bearing and not replacement.load_bearing_suggested:
        replacement = await suggest(info, replacement, reason=None)
    return Superseded(previous=Item.of(previous), replacement=Item.of(replacement))


async def decide_proposal(
    info: strawberry.Info, id: strawberry.ID, accept: bool, note: str | None = None
) -> Proposal:
    context = info.context
    human = context.require_human("decideProposal")
    tx = context.tx
    key = parse_id(id, "id")
    why = optional_text(note, "note")
    pending = await proposal.lock(tx, key)
    if pending is None:
        raise NotFound("proposal", id)
    if pending.status != "PENDING":
        raise Conflict(
            f"decideProposal: the proposal is already {pending.status}", currentStatus=pending.status
        )

    result_id = None
    if pending.kind == "LOAD_BEARING":
        target = await item.get(tx, pending.target_id)
        assert target is not None, "a visible proposal's target is visible"
        values: dict[str, Any] = {"load_bearing_suggested": False}
        if accept:
            values.update(load_bearing=True, load_bearing_set_by=human.id, load_bearing_set_at=func.now())
            result_id = target.id
        async with refused_as("decideProposal"):
            changed = await item.change(tx, target.id, **values)
        if changed is None:
            raise Forbidden("decideProposal: you are not a member of this item's project")
    elif accept:
        target = await _locked_active(tx, pending.target_id, "decideProposal")
        assert pending.replacement is not None
        values = proposal.decode_replacement(pending.replacement)
        values.update(
            asserted_by=pending.proposed_by,
            asserted_at=pending.proposed_at,
            confirmed_by=human.id,
            confirmed_at=func.now(),
        )
        _, replacement = await _replace(info, target, values, pending.reason or "", "decideProposal")
        result_id = replacement.id

    async with refused_as("decideProposal"):
        decided = await proposal.decide(tx, key, accepted=accept, note=why, result_id=result_id)
    return Proposal.of(decided)
