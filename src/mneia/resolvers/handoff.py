"""checkpoint, handoff, latestHandoff: the artifact made when work stops (R12).

``checkpoint`` is one transaction: the session's items are written by the
same code as ``assertItem``, as one batch (resolvers.assertion.write_assertions),
and its replacements by the same code as ``supersedeItem``
(resolvers.supersession.write_supersession), so disputes open, suggestions
wait and an agent's replacement of a human ruling comes back pending exactly
as there; then the session ends and the handoff is stored, with references
to what it names. Only the session's actor checkpoints it, once: a second
checkpoint of an ended session is CONFLICT, unless it carries the first's
idempotency key and the same input, when it returns the same handoff and
writes nothing. Retries of one session queue on the session's row lock, so
two concurrent retries give one handoff.

Every read of a handoff (these and ``resume``) is built for its reader: the
items, replacements, proposals and disputes it names are loaded under the
reader's row-level security, the author's text has the ids the reader cannot
see hidden, and ``rendered`` shows only what remains (R1, R2).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

import strawberry

from mneia.errors import BadInput, Conflict, Forbidden, NotFound
from mneia.rehydration import handoff_text, render, tokens
from mneia.resolvers.assertion import Assertion, write_assertions
from mneia.resolvers.inputs import (
    decode_cursor,
    encode_cursor,
    optional_text,
    page_size,
    parse_id,
    required_text,
)
from mneia.resolvers.project import visible_project_id
from mneia.resolvers.reading import View
from mneia.resolvers.request.context import Info
from mneia.resolvers.supersession import write_supersession
from mneia.schema.actor import Actor
from mneia.schema.dispute import Dispute
from mneia.schema.handoff import CheckpointInput, Handoff, HandoffPage
from mneia.schema.item import AssertItemInput, Item
from mneia.schema.page import PageInfo
from mneia.schema.project import Project
from mneia.schema.proposal import Proposal
from mneia.schema.session import Session
from mneia.schema.supersession import SupersessionNote
from mneia.storage import dispute, handoff, item, proposal, session
from mneia.storage.handoff import HandoffRecord, NewHandoff
from mneia.storage.session import SessionRecord
from mneia.vocabulary import DisputeStatus, ProposalStatus

KEY_LIMIT = 200
SUMMARY_LIMIT = 4_000
"""The longest summary, in characters (about a thousand tokens): a handoff is read first, whole."""
AWAITING_KEPT = 20
"""A handoff names the project's newest so many pending proposals, and open disputes: what awaits a
human as the session left it, bounded (proposals(projectId) and disputes(projectId) list all)."""
LINE_LIMIT = 2_000
"""The longest next step or open question, in characters: each is one line of the text."""


def request_digest(input: CheckpointInput) -> str:
    """What a retry must repeat: the checkpoint's whole input but its key, as canonical JSON."""
    body = {k: v for k, v in dataclasses.asdict(input).items() if k != "idempotency_key"}
    encoded = json.dumps(body, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


def _lines(values: list[str] | None, field: str) -> tuple[str, ...]:
    return tuple(
        required_text(value, f"{field}[{index}]", LINE_LIMIT, one_line=True)
        for index, value in enumerate(values or [])
    )


def _tied(data: AssertItemInput, found: SessionRecord, field: str) -> AssertItemInput:
    """An assertion of the checkpoint, tied to its session (the one place its items may go)."""
    if parse_id(data.project_id, f"{field}.projectId") != found.project_id:
        raise BadInput(f"{field}.projectId", "must be the session's project")
    if data.session_id is not None and parse_id(data.session_id, f"{field}.sessionId") != found.id:
        raise BadInput(f"{field}.sessionId", "must be the checkpoint's session (or omitted)")
    return dataclasses.replace(data, session_id=strawberry.ID(str(found.id)))


async def checkpoint(
    info: Info,
    input: Annotated[
        CheckpointInput,
        strawberry.argument(
            description="Where the work stopped: the session, the summary, and what to write."
        ),
    ],
) -> Handoff:
    """Write the session's last items, end it, and leave the handoff (see the module's docstring)."""
    context = info.context
    tx = context.tx
    session_key = parse_id(input.session_id, "input.sessionId")
    summary = required_text(input.summary, "input.summary", SUMMARY_LIMIT)
    next_steps = _lines(input.next_steps, "input.nextSteps")
    open_questions = _lines(input.open_questions, "input.openQuestions")
    key = optional_text(input.idempotency_key, "input.idempotencyKey", KEY_LIMIT, one_line=True)
    digest = request_digest(input)

    if await session.get(tx, session_key) is None:
        raise NotFound("session", input.session_id)
    found = await session.lock(tx, session_key)
    if found is None or found.actor_id != context.actor.id:
        raise Forbidden("checkpoint: only the session's actor may checkpoint it")
    if key is not None:
        earlier = await handoff.by_key(tx, key)
        if earlier is not None:
            if earlier.request_digest != digest:
                raise Conflict(
                    "checkpoint: input.idempotencyKey was used with another input",
                    handoffId=str(earlier.id),
                )
            return await build(context.view(), earlier)
    if found.ended_at is not None:
        existing = await handoff.of_session(tx, session_key)
        named = f"; its handoff is {existing.id}" if existing else ""
        raise Conflict(
            f"checkpoint: session {session_key} has ended{named}",
            handoffId=str(existing.id) if existing else None,
        )

    batch: list[Assertion] = []
    for index, data in enumerate(input.items or []):
        field = f"input.items[{index}]"
        batch.append(Assertion(_tied(data, found, field), field))
    await write_assertions(info, batch)
    for index, change in enumerate(input.supersessions or []):
        field = f"input.supersessions[{index}]"
        tied = _tied(change.replacement, found, f"{field}.replacement")
        await write_supersession(info, dataclasses.replace(change, replacement=tied), field)
    await session.end(tx, session_key)

    asserted = await item.of_session(tx, session_key)
    pending = await proposal.of_project(tx, found.project_id, ProposalStatus.PENDING, AWAITING_KEPT)
    open_disputes = await dispute.of_project(tx, found.project_id, DisputeStatus.OPEN, AWAITING_KEPT)
    stored = await handoff.create(
        tx,
        NewHandoff(
            project_id=found.project_id,
            session_id=session_key,
            summary=summary,
            draft=bool(input.draft),
            next_steps=next_steps,
            open_questions=open_questions,
            item_ids=tuple(record.id for record in asserted),
            replacement_ids=tuple(record.id for record in asserted if record.supersedes_id is not None),
            proposal_ids=tuple(record.id for record in pending),
            dispute_ids=tuple(record.id for record in open_disputes),
            pointed_ids=tuple(
                dict.fromkeys(
                    [
                        *(record.supersedes_id for record in asserted if record.supersedes_id is not None),
                        *(record.target_id for record in pending),
                        *(side for record in open_disputes for side in (record.item_id, record.contested_id)),
                    ]
                )
            ),
            idempotency_key=key,
            request_digest=digest,
        ),
    )
    return await build(context.view(), stored)


async def get_handoff(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The handoff's id.")],
) -> Handoff | None:
    key = parse_id(id, "id")
    found = (await handoff.by_ids(info.context.tx, [key])).get(key)
    return await build(info.context.view(), found) if found else None


async def latest_handoff(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
) -> Handoff | None:
    """The project's newest handoff the caller can see."""
    key = await visible_project_id(info, project_id)
    found = await handoff.latest(info.context.tx, key)
    return await build(info.context.view(), found) if found else None


async def list_handoffs(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
    first: Annotated[
        int | None, strawberry.argument(description="How many to return, at most 100. Default: 20.")
    ] = 20,
    after: Annotated[
        str | None,
        strawberry.argument(description="The endCursor of the page before; null for the first page."),
    ] = None,
) -> HandoffPage:
    """A project's handoffs the caller can see, newest first, each as that caller may see it."""
    key = await visible_project_id(info, project_id)
    records, more = await handoff.page(
        info.context.tx, key, first=page_size(first, limit=100), after=decode_cursor(after)
    )
    view = info.context.view()
    nodes = [await build(view, record) for record in records]
    end = encode_cursor(records[-1].id) if records else None
    return HandoffPage(nodes=nodes, page_info=PageInfo(has_next_page=more, end_cursor=end))


async def _settled(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) or asyncio.isfuture(value) else value


def _present(found: list[Any]) -> list[Any]:
    return [record for record in found if record is not None]


async def _redacted(view: View, *groups: Sequence[str | None]) -> list[list[Any]]:
    """Each group of texts as ``view``'s reader may see them, group by group, in one batch."""
    flat = await asyncio.gather(*(_settled(view.redact(text)) for group in groups for text in group))
    split, start = [], 0
    for group in groups:
        split.append(list(flat[start : start + len(group)]))
        start += len(group)
    return split


@dataclasses.dataclass(frozen=True)
class _Seen:
    """What a handoff names that its reader may see: a proposal or dispute only with its items (R2),
    a ruled-out note only with both sides; ``became``: when each replaced item became SUPERSEDED."""

    items: dict[uuid.UUID, Any]
    asserted: list[Any]
    notes: list[tuple[Any, Any]]
    proposals: list[Any]
    disputes: list[Any]
    became: dict[uuid.UUID, datetime]


async def _seen(view: View, record: HandoffRecord) -> _Seen:
    """One batch of each kind: every item the handoff names or points at, its proposals and
    disputes, and when the items that were replaced became SUPERSEDED."""
    loaders = view.loaders
    named = list(dict.fromkeys([*record.item_ids, *record.replacement_ids, *record.pointed_ids]))
    found, proposals, disputes, became = await asyncio.gather(
        loaders.item.load_many(named),
        loaders.proposal.load_many(record.proposal_ids),
        loaders.dispute.load_many(record.dispute_ids),
        item.superseded_at(view.context.tx, record.pointed_ids),
    )
    seen = {found_item.id: found_item for found_item in _present(found)}
    replacements = [seen[key] for key in record.replacement_ids if key in seen]
    return _Seen(
        items=seen,
        asserted=[seen[key] for key in record.item_ids if key in seen],
        notes=[
            (seen[r.supersedes_id], r)
            for r in replacements
            if r.supersedes_id in seen and r.supersedes_id in became
        ],
        proposals=[p for p in _present(proposals) if p.target_id in seen],
        disputes=[d for d in _present(disputes) if d.item_id in seen and d.contested_id in seen],
        became=became,
    )


async def build(view: View, record: HandoffRecord) -> Handoff:
    """The handoff as ``view``'s reader may see it: what it names, loaded under the reader's
    row-level security, and its text made of that alone (only the lines shown are rendered)."""
    loaders = view.loaders
    visible = await _seen(view, record)
    seen, asserted, notes, became = visible.items, visible.asserted, visible.notes, visible.became
    proposals, disputes = visible.proposals, visible.disputes

    # Only the lines the text shows are rendered.
    shown_items = asserted[: handoff_text.LIST_LIMIT]
    shown_notes = notes[: handoff_text.LIST_LIMIT]
    shown_proposals = proposals[: handoff_text.AWAITING_SHOWN]
    shown_disputes = disputes[: handoff_text.AWAITING_SHOWN]
    to_render = {r.id: r for r in shown_items}
    to_render.update({previous.id: previous for previous, _ in shown_notes})
    to_render.update({p.target_id: seen[p.target_id] for p in shown_proposals})
    for d in shown_disputes:
        to_render.update({d.item_id: seen[d.item_id], d.contested_id: seen[d.contested_id]})
    ordered = list(to_render.values())
    # In one tick, so that the actors and the session join the lines' own batches.
    rendered_lines, author, held, project, actors = await asyncio.gather(
        view.render_all(ordered),
        loaders.actor.load(record.created_by),
        loaders.session.load(record.session_id),
        loaders.project.load(record.project_id),
        loaders.actor.load_many(
            list({p.proposed_by for p in shown_proposals} | {d.raised_by for d in shown_disputes})
        ),
    )
    lines = dict(zip([r.id for r in ordered], rendered_lines, strict=True))
    names = {actor.id: actor.name for actor in _present(actors)}
    note_reasons, (summary,), next_steps, open_questions, proposal_reasons, dispute_reasons = await _redacted(
        view,
        [replacement.supersession_reason for _, replacement in notes],
        [record.summary],
        record.next_steps,
        record.open_questions,
        [p.reason for p in shown_proposals],
        [d.reason for d in shown_disputes],
    )

    awaiting = [
        handoff_text.proposal(
            p.kind,
            p.status,
            names[p.proposed_by],
            p.proposed_at,
            lines[p.target_id],
            p.replacement_item.statement if p.replacement_item else None,
            reason,
        )
        for p, reason in zip(shown_proposals, proposal_reasons, strict=True)
    ]
    awaiting += [
        handoff_text.dispute(
            d.status, names[d.raised_by], d.raised_at, lines[d.item_id], lines[d.contested_id], reason
        )
        for d, reason in zip(shown_disputes, dispute_reasons, strict=True)
    ]
    client = None
    if held.client_tool:
        client = " ".join(part for part in (held.client_tool, held.client_version) if part)
    rendered = handoff_text.rendered(
        handoff_text.HandoffText(
            project=project.name,
            author=author.name,
            author_is_human=author.is_human,
            draft=record.draft,
            created_at=record.created_at,
            summary=summary,
            client=client,
            task=held.task,
            started_at=held.started_at,
            deep_link=held.deep_link,
            next_steps=next_steps,
            open_questions=open_questions,
            items=[lines[r.id] for r in shown_items],
            items_more=len(asserted) - len(shown_items),
            ruled_out=[
                render.ruled_out(lines[previous.id], became[previous.id], reason, replacement.shown_statement)
                for (previous, replacement), reason in zip(
                    shown_notes, note_reasons[: len(shown_notes)], strict=True
                )
            ],
            ruled_out_more=len(notes) - len(shown_notes),
            awaiting=awaiting,
            awaiting_more=len(proposals) + len(disputes) - len(awaiting),
        )
    )
    return Handoff(
        id=strawberry.ID(str(record.id)),
        session=Session.of(held),
        project=Project.of(project),
        created_by=Actor.of(author),
        created_at=record.created_at,
        summary=summary,
        next_steps=next_steps,
        open_questions=open_questions,
        items_asserted=[Item.of(r, view) for r in asserted],
        supersessions=[
            SupersessionNote(
                previous=Item.of(previous, view),
                replacement=Item.of(replacement, view),
                reason=reason,
                at=became[previous.id],
            )
            for (previous, replacement), reason in zip(notes, note_reasons, strict=True)
        ],
        pending_confirmations=[Proposal.of(p, view) for p in proposals],
        disputes=[Dispute.of(d, view) for d in disputes],
        rendered=rendered,
        tokens=tokens.count(rendered),
        encoding=tokens.ENCODING,
        idempotency_key=record.idempotency_key,
        draft=record.draft,
        shown=frozenset(r.id for r in shown_items),
    )
