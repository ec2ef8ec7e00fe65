"""Replacing an item without losing authority (R7), and deciding proposals (R5, R7).

An agent never overrules a person by writing a row: an agent's replacement of
an item a human confirmed or made load-bearing only opens a SUPERSESSION
proposal (``PendingConfirmation``); a human's ``decideProposal`` writes the
replacement (asserted by the agent, at the time it proposed; confirmed by the
deciding human). A human's replacement of a load-bearing item stays
load-bearing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Annotated

import strawberry

from mneia.authority import TYPED, Source, confirms, keeps_audience, replacement_waits_for_a_human
from mneia.errors import BadInput, Conflict, Forbidden, NotFound
from mneia.resolvers.assertion import validated_assertion
from mneia.resolvers.inputs import optional_text, parse_id, required_text
from mneia.resolvers.item import changed, suggest
from mneia.resolvers.project import visible_project_id
from mneia.resolvers.request.context import Info
from mneia.schema.item import Item
from mneia.schema.proposal import Proposal
from mneia.schema.supersession import PendingConfirmation, Superseded, SupersedeInput, SupersedeResult
from mneia.storage import item, proposal
from mneia.storage.database import Tx
from mneia.storage.item import ItemRecord
from mneia.storage.proposal import ProposalRecord
from mneia.vocabulary import ItemStatus, ProposalKind, ProposalStatus


async def _no_longer_active(tx: Tx, target: ItemRecord, operation: str) -> Conflict:
    current = await item.head(tx, target.id)
    return Conflict(
        f"{operation}: item {target.id} is {target.status}, not ACTIVE; the chain's head is {current.id}",
        currentHeadId=str(current.id),
        currentStatus=target.status.value,
    )


async def _locked_active(tx: Tx, target_id: uuid.UUID, operation: str) -> ItemRecord:
    target = await item.lock(tx, target_id)
    if target is None:
        raise Forbidden(f"{operation}: you are not a member of this item's project")
    if target.status != ItemStatus.ACTIVE:
        raise await _no_longer_active(tx, target, operation)
    return target


@dataclass(frozen=True, slots=True)
class Replaced:
    """A supersession applied: the previous item, now SUPERSEDED, and its replacement."""

    previous: ItemRecord
    replacement: ItemRecord


async def write_supersession(
    info: Info, data: SupersedeInput, field: str, source: Source = TYPED
) -> Replaced | ProposalRecord:
    """Check a replacement and make it: the one way an item is replaced (``supersedeItem``, and each
    supersession of a ``checkpoint``). An agent's replacement of what a human ruled waits for a
    human: a SUPERSESSION proposal, nothing written to the chain (R7)."""
    context = info.context
    tx = context.tx
    reason = required_text(data.reason, f"{field}.reason")
    target_key = parse_id(data.target_id, f"{field}.targetId")
    if await item.get(tx, target_key) is None:
        raise NotFound("item", data.target_id)
    if data.replacement.contradicts:
        raise BadInput(
            f"{field}.replacement.contradicts", "a replacement cannot open disputes; use disputeItem"
        )
    new = source.stamped(await validated_assertion(info, data.replacement, f"{field}.replacement"))
    target = await _locked_active(tx, target_key, "supersedeItem")
    if new.project_id != target.project_id:
        raise BadInput(f"{field}.replacement.projectId", "must be the target's project")
    if not keeps_audience(target, new, context.actor.id):
        raise BadInput(
            f"{field}.replacement.scope",
            f"is narrower than the target's {target.scope}: the replacement must stay visible to "
            "everyone who sees the item it replaces",
        )

    if replacement_waits_for_a_human(context.actor, target, source.vouched):
        return await proposal.propose_replacement(
            tx, target_id=target.id, project_id=target.project_id, new=new, reason=reason
        )

    replacement = await item.create_replacement(
        tx,
        new,
        target,
        reason,
        confirmed=confirms(context.actor, source.vouched),
        # Only a human writes here over a load-bearing item, and the guarantee carries over.
        load_bearing=target.load_bearing,
    )
    previous = changed(await item.mark_superseded(tx, target.id, reason), "supersedeItem")
    if data.replacement.suggest_load_bearing and not replacement.load_bearing:
        replacement = await suggest(info, replacement, reason=None)
    return Replaced(previous, replacement)


async def supersede_item(
    info: Info,
    input: Annotated[SupersedeInput, strawberry.argument(description="The target, its replacement and why.")],
) -> SupersedeResult:
    view = info.context.view()
    done = await write_supersession(info, input, "input")
    if isinstance(done, Replaced):
        return Superseded(previous=Item.of(done.previous, view), replacement=Item.of(done.replacement, view))
    return PendingConfirmation(proposal=Proposal.of(done, view))


async def _accept_replacement(tx: Tx, pending: ProposalRecord) -> uuid.UUID:
    target = await _locked_active(tx, pending.target_id, "decideProposal")
    new = pending.replacement_item
    assert new is not None, "a SUPERSESSION proposal carries its replacement"
    replacement = await item.accept_replacement(
        tx,
        new,
        target,
        pending.reason,
        proposed_by=pending.proposed_by,
        proposed_at=pending.proposed_at,
        load_bearing=target.load_bearing,
    )
    changed(await item.mark_superseded(tx, target.id, pending.reason or ""), "decideProposal")
    return replacement.id


async def _settle_load_bearing(tx: Tx, pending: ProposalRecord, accept: bool) -> uuid.UUID | None:
    if accept:
        changed(await item.set_load_bearing(tx, pending.target_id, True), "decideProposal")
        return pending.target_id
    changed(await item.clear_suggestion(tx, pending.target_id), "decideProposal")
    return None


async def decide_proposal(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The proposal; it must be PENDING.")],
    accept: Annotated[
        bool,
        strawberry.argument(
            description="True: make the change it proposes (write the replacement, or make the item"
            " load-bearing); false: reject it and change nothing."
        ),
    ],
    note: Annotated[str | None, strawberry.argument(description="Why, kept as its decisionNote.")] = None,
) -> Proposal:
    context = info.context
    tx = context.tx
    key = parse_id(id, "id")
    why = optional_text(note, "note")
    pending = await proposal.lock(tx, key)
    if pending is None:
        raise NotFound("proposal", id)
    if pending.status != ProposalStatus.PENDING:
        raise Conflict(
            f"decideProposal: the proposal is already {pending.status}", currentStatus=pending.status.value
        )

    result_id = None
    if pending.kind == ProposalKind.LOAD_BEARING:
        result_id = await _settle_load_bearing(tx, pending, accept)
    elif accept:
        result_id = await _accept_replacement(tx, pending)

    decided = await proposal.decide(tx, key, accepted=accept, note=why, result_id=result_id)
    return Proposal.of(decided, context.view())


async def list_proposals(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
    status: Annotated[
        ProposalStatus | None,
        strawberry.argument(description="Only proposals with this status. Null: every one."),
    ] = None,
) -> list[Proposal]:
    key = await visible_project_id(info, project_id)
    found = await proposal.of_project(info.context.tx, key, status)
    return [Proposal.of(record, info.context.view()) for record in found]
