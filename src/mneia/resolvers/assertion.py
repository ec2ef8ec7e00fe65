"""Asserting items: one (``assertItem``) or many (``assertItems``), by one path.

Every item any entry point asserts comes through ``write_assertions``: a
single ``assertItem`` is a batch of one, ``checkpoint`` and ``importItems``
send theirs here too. So there is one set of rules, checked for the whole
batch before anything is written (R14: one bad item refuses the batch, its
error naming ``input[k].field``), with one query per kind of lookup
(projects and sessions, granted actors, contradicted items), never one per
item, and one INSERT (storage.bulk). Authority is the same for every item:
a person's own words are human-confirmed, anything else stays unconfirmed
(``authority.confirms``, R4). What follows a write is per item and rare:
the disputes it opens (R8), the load-bearing suggestion it makes (R5).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import strawberry

from mneia.authority import TYPED, Source, confirms
from mneia.errors import BadInput, Conflict, NotFound
from mneia.resolvers.inputs import (
    confidence,
    optional_text,
    parse_id,
    parse_ids,
    redacted_kinds,
    required_text,
)
from mneia.resolvers.item import suggest
from mneia.resolvers.project import work_in
from mneia.resolvers.request.context import Info
from mneia.schema.item import AssertItemInput, Item
from mneia.storage import actor, bulk, dispute, item, project
from mneia.storage.item import ItemRecord, NewItem
from mneia.vocabulary import ItemStatus, Scope

BATCH_LIMIT = 1_000
"""Items per ``assertItems``: a thousand are one INSERT of a tenth to a fifth of a second, and one
transaction that holds its locks no longer than that."""


@dataclass(frozen=True, slots=True)
class Assertion:
    """One item to assert: what the caller sent, the path of its input for errors, and its source."""

    data: AssertItemInput
    field: str
    source: Source = TYPED


@dataclass(slots=True)
class _Named:
    """The ids an input names, parsed, and what its scope lets it grant."""

    session_id: uuid.UUID | None
    project_id: uuid.UUID
    scope: Scope = Scope.PROJECT
    grants: list[uuid.UUID] | None = None


async def validated_assertions(info: Info, batch: Sequence[Assertion]) -> list[NewItem]:
    """Check every assertion of a batch and return what each states, in order. Writes nothing.

    The checks of one input run in the order a single ``assertItem`` has
    always run them (project, scope and grants, validity, session, texts), so
    its first error is the one it always was; a batch reports the first bad
    input's.
    """
    context = info.context
    tx = context.tx
    named = [
        _Named(_session_key(one), parse_id(one.data.project_id, f"{one.field}.projectId")) for one in batch
    ]
    sessions_named = list(dict.fromkeys(n.session_id for n in named if n.session_id is not None))
    places, sessions = await project.access_all(
        tx, list(dict.fromkeys(n.project_id for n in named)), sessions_named
    )
    for one, ids in zip(batch, named, strict=True):
        data, field = one.data, one.field
        work_in(places.get(ids.project_id), data.project_id, f"{field}.projectId")
        ids.scope = Scope(data.scope) if data.scope else Scope.PROJECT
        ids.grants = parse_ids(list(data.grant_actor_ids or []), f"{field}.grantActorIds")
        if ids.scope == Scope.GRANTS and not ids.grants:
            raise BadInput(f"{field}.grantActorIds", "scope GRANTS needs at least one actor")
        if ids.scope != Scope.GRANTS and ids.grants:
            raise BadInput(f"{field}.grantActorIds", "only allowed with scope GRANTS")

    granted = list(dict.fromkeys(grant for ids in named for grant in ids.grants or ()))
    known = await actor.by_ids(tx, granted) if granted else {}
    news = []
    for one, ids in zip(batch, named, strict=True):
        data, field = one.data, one.field
        grants = ids.grants or []
        unknown = [str(grant) for grant in grants if grant not in known]
        if unknown:
            raise BadInput(f"{field}.grantActorIds", f"no such actor in this workspace: {', '.join(unknown)}")
        if data.valid_from and data.valid_to and data.valid_to < data.valid_from:
            raise BadInput(f"{field}.validTo", "is before validFrom")
        if ids.session_id is not None:
            found = sessions.get(ids.session_id)
            if found is None:
                raise NotFound("session", data.session_id)
            if found.project_id != ids.project_id:
                raise BadInput(f"{field}.sessionId", "belongs to another project")
            if found.actor_id != context.actor.id:
                raise BadInput(f"{field}.sessionId", "is another actor's session")
            if found.ended_at is not None:
                raise BadInput(f"{field}.sessionId", "has ended; start a new session")
        news.append(
            NewItem(
                project_id=ids.project_id,
                kind=data.kind,
                statement=required_text(data.statement, f"{field}.statement"),
                details=optional_text(data.details, f"{field}.details"),
                basis=optional_text(data.basis, f"{field}.basis"),
                confidence=confidence(data.confidence, f"{field}.confidence"),
                scope=ids.scope,
                grant_actor_ids=tuple(sorted(set(grants))),
                session_id=ids.session_id,
                valid_from=data.valid_from,
                valid_to=data.valid_to,
                decay_after=data.decay_after,
                redacted=redacted_kinds(data.redacted, f"{field}.redacted"),
            )
        )
    return news


def _session_key(one: Assertion) -> uuid.UUID | None:
    given = one.data.session_id
    return parse_id(given, f"{one.field}.sessionId") if given is not None else None


async def validated_assertion(info: Info, data: AssertItemInput, field: str) -> NewItem:
    """One assertion's checks (a replacement's, say): a batch of one. Writes nothing."""
    (new,) = await validated_assertions(info, [Assertion(data, field)])
    return new


async def contested_items(info: Info, batch: Sequence[Assertion]) -> list[list[ItemRecord]]:
    """What each assertion contradicts, each an ACTIVE item the caller can see (R8), read at once."""
    wanted = [parse_ids(list(one.data.contradicts or []), f"{one.field}.contradicts") for one in batch]
    everything = list(dict.fromkeys(key for keys in wanted for key in keys))
    found = await item.by_ids(info.context.tx, everything) if everything else {}
    contested = []
    for one, keys in zip(batch, wanted, strict=True):
        field = f"{one.field}.contradicts"
        for key in keys:
            record = found.get(key)
            if record is None:
                raise NotFound("item", key)
            if record.status != ItemStatus.ACTIVE:
                raise Conflict(
                    f"{field}: item {key} is {record.status}, not ACTIVE", currentStatus=record.status.value
                )
        contested.append([found[key] for key in dict.fromkeys(keys)])
    return contested


async def write_assertions(info: Info, batch: Sequence[Assertion]) -> list[ItemRecord]:
    """Check a batch of assertions and write them, in order: the one way items are asserted
    (``assertItem``, ``assertItems``, a ``checkpoint``'s items, ``importItems``' new items).
    Disputes open for what each contradicts (R8); a suggestion that one is load-bearing waits
    for a human (R5)."""
    context = info.context
    if not batch:
        return []
    checked = await validated_assertions(info, batch)
    news = [one.source.stamped(new) for one, new in zip(batch, checked, strict=True)]
    contested = await contested_items(info, batch)
    records = await bulk.create_many(
        context.tx,
        news,
        confirmed=[confirms(context.actor, one.source.vouched) for one in batch],
        contradicts=[[other.id for other in others] for others in contested],
    )
    for index, (one, new, others) in enumerate(zip(batch, news, contested, strict=True)):
        for other in others:
            await dispute.open(context.tx, records[index], other, reason=new.basis)
        if one.data.suggest_load_bearing:
            records[index] = await suggest(info, records[index], reason=None)
    return records


async def write_assertion(
    info: Info, data: AssertItemInput, field: str, source: Source = TYPED
) -> ItemRecord:
    """One assertion: a batch of one (``write_assertions``)."""
    (record,) = await write_assertions(info, [Assertion(data, field, source)])
    return record


async def assert_item(
    info: Info,
    input: Annotated[AssertItemInput, strawberry.argument(description="The item to assert.")],
) -> Item:
    return Item.of(await write_assertion(info, input, "input"), info.context.view())


async def assert_items(
    info: Info,
    input: Annotated[
        list[AssertItemInput],
        strawberry.argument(description="The items to assert, at most 1,000, in order."),
    ],
) -> list[Item]:
    if len(input) > BATCH_LIMIT:
        raise BadInput("input", f"at most {BATCH_LIMIT} items per request, not {len(input)}")
    batch = [Assertion(data, f"input[{index}]") for index, data in enumerate(input)]
    view = info.context.view()
    return [Item.of(record, view) for record in await write_assertions(info, batch)]
