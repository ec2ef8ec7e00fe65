"""Item, its provenance and confirmation, pages of items, and the inputs that write them.

Authority is a field of its own (R4): a human-confirmed item and an agent's
unconfirmed assertion never look alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from mneia.schema.actor import Actor
from mneia.schema.conversion import flat
from mneia.schema.enums import ActorKind, Authority, ItemKind, ItemStatus, Scope
from mneia.schema.event import ItemEvent
from mneia.schema.loading import now_or_later
from mneia.schema.page import PageInfo
from mneia.schema.project import Project
from mneia.schema.reading import Loaders, View
from mneia.schema.scalars import Duration
from mneia.schema.session import Session
from mneia.storage.actor import ActorRecord
from mneia.storage.count import LIMIT, Count
from mneia.storage.item import ItemRecord
from mneia.storage.session import SessionRecord
from mneia.vocabulary import HIDDEN_ID

if TYPE_CHECKING:
    from mneia.schema.dispute import Dispute
    from mneia.schema.proposal import Proposal

AGENT_OUTSIDE_SESSION = "session"


@strawberry.type(description="A human's confirmation of an item: who confirmed it and when.")
class Confirmation:
    by: Actor = strawberry.field(description="The human who confirmed it.")
    at: datetime = strawberry.field(description="When they confirmed it.")


@strawberry.type(description="Who asserted an item, when, on what basis, from which session of which client.")
class Provenance:
    """Built whole from the asserter and the session, so its fields are plain values."""

    asserted_by: Actor = strawberry.field(description="The actor who asserted the item.")
    actor_kind: ActorKind = strawberry.field(
        description="Whether a human or an agent asserted it, read from the asserter's record."
    )
    asserted_at: datetime = strawberry.field(
        description="When Mneia recorded the assertion (the server's time)."
    )
    basis: str | None = strawberry.field(
        description="On what basis it was asserted, in the asserter's words; null when none was given."
    )
    session: Session | None = strawberry.field(
        description="The session it was asserted in; null when it was asserted outside any session."
    )
    partial: bool = strawberry.field(
        description="True when any part of the chain item→session→client is missing."
    )
    missing: list[str] = strawberry.field(
        description='What is missing, e.g. ["session"] or ["client.version", "deepLink"].'
    )
    said_at: datetime | None = strawberry.field(
        description="When the source said it, where an import knows: the transcript's turn, the ADR's date."
        " The source's word; assertedAt stays the server's record of when Mneia learned it."
    )
    redacted: list[str] = strawberry.field(
        description="The kinds of credential removed from its text before it was stored, e.g."
        ' ["aws-access-key"] (capture and MCP redact value-shaped secrets, keeping the prefix).'
    )

    @classmethod
    def of(cls, record: ItemRecord, asserter: ActorRecord, session: SessionRecord | None) -> Provenance:
        if record.session_id is not None:
            missing = session.provenance_missing if session else [AGENT_OUTSIDE_SESSION]
        else:
            # A person stating something directly is complete provenance; an agent
            # outside any session cannot be traced back to a conversation (R13).
            missing = [] if asserter.is_human else [AGENT_OUTSIDE_SESSION]
        return cls(
            asserted_by=Actor.of(asserter),
            actor_kind=ActorKind(asserter.kind),
            asserted_at=record.asserted_at,
            basis=record.basis,
            session=Session.of(session) if session else None,
            partial=bool(missing),
            missing=missing,
            said_at=record.said_at,
            redacted=list(record.redacted),
        )


@strawberry.type(
    description="A unit of project memory. Read with asOf, every field, however deep, answers as of that"
    " moment: its state, authority, chain, disputes, proposals, events and freshness then."
)
class Item:
    id: strawberry.ID = strawberry.field(description="The item's id.")
    kind: ItemKind = strawberry.field(description="What the item is; decides how rehydration treats it.")
    statement: str = strawberry.field(description="The claim itself. Blank once the item is redacted.")
    details: str | None = strawberry.field(
        description="More text behind the statement; null when none was given."
    )
    load_bearing: bool = strawberry.field(description="Settled by a human only.")
    load_bearing_suggested: bool = strawberry.field(description="An agent's suggestion awaiting a human.")
    confidence: float | None = strawberry.field(description="Extractor confidence, 0..1.")
    status: ItemStatus = strawberry.field(
        description="Where the item stands: active, superseded, disputed or retired."
    )
    authority: Authority = strawberry.field(
        description="How far the item can be trusted: human-confirmed, agent-asserted or disputed (R4)."
    )
    scope: Scope = strawberry.field(description="Who may see the item (R2).")
    asserted_at: datetime = strawberry.field(
        description="When Mneia recorded the assertion (the server's time); provenance.saidAt holds the"
        " source's own time where an import knows it."
    )
    valid_from: datetime | None = strawberry.field(
        description="When the item started to be true of the project; null when not given."
    )
    valid_to: datetime | None = strawberry.field(
        description="When the item stopped being true of the project; null when it still is, or not given."
    )
    decay_after: Duration | None = strawberry.field(description="Null: never goes stale.")
    last_verified_at: datetime | None = strawberry.field(
        description="When somebody last checked that it still holds (verifyItem); null: never."
    )
    record: strawberry.Private[ItemRecord]
    view: strawberry.Private[View]
    """The read this item belongs to: every field below loads and judges through it (schema.reading)."""

    @strawberry.field(description=f"Why the item last changed status; ids you cannot see read {HIDDEN_ID}.")
    def status_reason(self) -> str | None:
        return self.view.redact(self.record.status_reason)

    @strawberry.field(description=f"Why it replaced the item before it; ids you cannot see read {HIDDEN_ID}.")
    def supersession_reason(self) -> str | None:
        return self.view.redact(self.record.supersession_reason)

    @strawberry.field(
        description="The item this one replaced. Null when it replaced nothing, or an item you cannot see:"
        ' then hiddenLinks holds "supersedes".'
    )
    def supersedes_id(self) -> strawberry.ID | None:
        if self.record.supersedes_id is None:
            return None
        found = self.view.loaders.item.load(self.record.supersedes_id)
        return now_or_later(found, lambda record: strawberry.ID(str(record.id)) if record else None)

    @strawberry.field(
        description="The links of this item to items you cannot see, by field: "
        '"supersedes" (it replaced one), "supersededBy" (one replaced it). Those fields are null.'
    )
    def hidden_links(self) -> list[str]:
        record = self.record
        if record.supersedes_id is None and record.status != ItemStatus.SUPERSEDED:
            return []  # links to nothing: answered without a lookup
        looked_up: Any = _hidden_links(self.view.loaders, record)  # graphql-core awaits it
        return looked_up

    @strawberry.field(description="The project the item belongs to.")
    def project(self) -> Project:
        return now_or_later(self.view.loaders.project.load(self.record.project_id), Project.of)

    @strawberry.field(
        description="Who asserted the item, when, on what basis, and from which session of which client."
    )
    def provenance(self) -> Provenance:
        loaders, record = self.view.loaders, self.record
        asserter = loaders.actor.load(record.asserted_by)
        if record.session_id is None:
            return now_or_later(asserter, lambda found: Provenance.of(record, found, None))
        session = loaders.session.load(record.session_id)
        return now_or_later(
            asserter, lambda found: now_or_later(session, lambda held: Provenance.of(record, found, held))
        )

    @strawberry.field(description="Null unless a human confirmed it.")
    def confirmation(self) -> Confirmation | None:
        at = self.record.confirmed_at
        if self.record.confirmed_by is None or at is None:
            return None
        by = self.view.loaders.actor.load(self.record.confirmed_by)
        return now_or_later(by, lambda record: Confirmation(by=Actor.of(record), at=at))

    @strawberry.field(
        description="The item as one line of text that opens with its authority, who and when, e.g. "
        "[human-confirmed · alice · 2026-03-03] or [agent-asserted · claude-code 1.0.98 · … · unconfirmed]."
    )
    async def rendered(self) -> str:
        return await self.view.render(self.record)

    @strawberry.field(description="Past (lastVerifiedAt, else assertedAt) + decayAfter (R10).")
    def stale(self) -> bool:
        return self.record.stale_at(self.view.now)

    @strawberry.field(
        description="1 when it does not decay or was just checked, falling smoothly towards 0 as the time"
        " since lastVerifiedAt (else assertedAt) nears and passes decayAfter; 0.5 when it goes stale."
        " Rehydration multiplies an item's score by it."
    )
    def freshness(self) -> float:
        return self.record.freshness_at(self.view.now)

    @strawberry.field(
        description="The item this one replaced; null when it replaced nothing, or an item you cannot see."
    )
    async def supersedes(self) -> Item | None:
        if self.record.supersedes_id is None:
            return None
        record = await self.view.loaders.item.load(self.record.supersedes_id)
        return Item.of(record, self.view) if record else None

    @strawberry.field(
        description="The item that replaced this one; null when none did, or an item you cannot see."
    )
    async def superseded_by(self) -> Item | None:
        record = await self.view.loaders.successor.load(self.record.id)
        return Item.of(record, self.view) if record else None

    @strawberry.field(description="The whole supersede chain, oldest first, this item included.")
    async def chain(self) -> list[Item]:
        records = await self.view.loaders.chain.load(self.record.id)
        await self.view.warm(records)
        return [Item.of(record, self.view) for record in records]

    @strawberry.field(description="The disputes in which it is either side, newest first.")
    async def disputes(self) -> list[Annotated[Dispute, strawberry.lazy("mneia.schema.dispute")]]:
        from mneia.schema.dispute import Dispute

        found = await self.view.loaders.disputes.load(self.record.id)
        return [Dispute.of(record, self.view) for record in found]

    @strawberry.field(description="The proposals about it (load-bearing, supersession), newest first.")
    async def proposals(self) -> list[Annotated[Proposal, strawberry.lazy("mneia.schema.proposal")]]:
        from mneia.schema.proposal import Proposal

        found = await self.view.loaders.proposals.load(self.record.id)
        return [Proposal.of(record, self.view) for record in found]

    @strawberry.field(
        description="Every change of the item, oldest first: who, when, from which status to which, the"
        " load-bearing flag and confirmation after it, and why. Written by the database, never by a client."
    )
    async def events(self) -> list[ItemEvent]:
        found = await self.view.loaders.events.load(self.record.id)
        return [ItemEvent.of(record, self.view) for record in found]

    @strawberry.field(description="Its text was blanked (R16 retention, R18 erasure); the rest stays.")
    def redacted(self) -> bool:
        return self.record.redacted_at is not None

    @strawberry.field(description="When its text was blanked; null when it is not redacted.")
    def redacted_at(self) -> datetime | None:
        return self.record.redacted_at

    @strawberry.field(description='"retention" or "erasure"; null when not redacted.')
    def redaction_reason(self) -> str | None:
        return self.record.redaction_reason

    @strawberry.field(description="Under a legal hold now, its own or its project's (R17): never redacted.")
    async def legal_hold(self) -> bool:
        return bool(await self.view.loaders.held.load(self.record.id))

    @classmethod
    def of(cls, record: ItemRecord, view: View) -> Item:
        return cls(
            id=strawberry.ID(str(record.id)),
            kind=ItemKind(record.kind),
            statement=record.shown_statement,
            details=record.details,
            load_bearing=record.load_bearing,
            load_bearing_suggested=record.load_bearing_suggested,
            confidence=record.confidence,
            status=ItemStatus(record.status),
            authority=Authority(record.authority),
            scope=Scope(record.scope),
            asserted_at=record.asserted_at,
            valid_from=record.valid_from,
            valid_to=record.valid_to,
            decay_after=Duration(record.decay_after) if record.decay_after is not None else None,
            last_verified_at=record.last_verified_at,
            record=record,
            view=view,
        )


async def _hidden_links(loaders: Loaders, record: ItemRecord) -> list[str]:
    hidden = []
    if record.supersedes_id is not None and await loaders.item.load(record.supersedes_id) is None:
        hidden.append("supersedes")
    if record.status == ItemStatus.SUPERSEDED and await loaders.successor.load(record.id) is None:
        hidden.append("supersededBy")
    return hidden


@strawberry.type(description="A page of a project's items, and how many match on every page together.")
class ItemPage:
    nodes: list[Item] = strawberry.field(description="The items of this page.")
    page_info: PageInfo = strawberry.field(
        description="Whether another page follows, and the cursor to ask for it."
    )
    counter: strawberry.Private[Callable[[], Awaitable[Count]]]

    @strawberry.field(
        description="How many items match the filter, on every page together. Exact when"
        " totalCountIsExact; otherwise the filter matches more than this many, which"
        f" is all that was counted ({LIMIT:,}; docs/counting.md)."
    )
    async def total_count(self) -> int:
        return (await self.counter()).total

    @strawberry.field(
        description="Whether totalCount is the exact number. Always true without a filter or with"
        " one on kinds, statuses, loadBearing and authorities (kept counters); with any other"
        f" filter, true when at most {LIMIT:,} items match."
    )
    async def total_count_is_exact(self) -> bool:
        return (await self.counter()).exact


@strawberry.type(description="A page of events of a project's items, newest first.")
class ItemEventPage:
    nodes: list[ItemEvent] = strawberry.field(description="The events of this page, newest first.")
    page_info: PageInfo = strawberry.field(
        description="Whether another page follows, and the cursor to ask for it."
    )
    counter: strawberry.Private[Callable[[], Awaitable[Count]]]

    @strawberry.field(
        description=f"How many events match, on every page together, counted up to {LIMIT:,}: exact"
        " when totalCountIsExact, else at least this many (docs/counting.md)."
    )
    async def total_count(self) -> int:
        return (await self.counter()).total

    @strawberry.field(description=f"Whether totalCount is exact: true when at most {LIMIT:,} events match.")
    async def total_count_is_exact(self) -> bool:
        return (await self.counter()).exact


@strawberry.input(
    description="Which items to list. Every condition given must hold; one not given holds for every item."
)
class ItemFilter:
    kinds: list[ItemKind] | None = strawberry.field(
        default=None, description="Items of one of these kinds. Default: every kind."
    )
    statuses: list[ItemStatus] | None = strawberry.field(default=None, description="Default: every status.")
    load_bearing: bool | None = strawberry.field(
        default=None, description="True: only load-bearing items; false: only the others. Default: both."
    )
    text: str | None = strawberry.field(
        default=None,
        description='Words to find in the statement or details, in web-search syntax ("a phrase",'
        ' or, -word), English-stemmed, each word matching as a prefix: "idempot" finds "idempotency".'
        ' Words alone like "the" match nothing.',
    )
    authorities: list[Authority] | None = strawberry.field(
        default=None, description="Items whose authority is one of these (R4). Default: every authority."
    )
    stale: bool | None = strawberry.field(
        default=None,
        description="True: only stale items; false: only fresh ones (R10), judged at asOf when given,"
        " else now.",
    )
    load_bearing_suggested: bool | None = strawberry.field(
        default=None, description="True: only items an agent suggested as load-bearing, not yet settled (R5)."
    )


@flat
@strawberry.input(
    description="A new item. A human's assertion is human-confirmed; an agent's stays agent-asserted until"
    " a human confirms it."
)
class AssertItemInput:
    project_id: strawberry.ID = strawberry.field(
        description="The project the item belongs to; you must be a member of it."
    )
    kind: ItemKind = strawberry.field(description="What the item is.")
    statement: str = strawberry.field(description="The claim itself; not empty.")
    details: str | None = strawberry.field(default=None, description="More text behind the statement.")
    basis: str | None = strawberry.field(
        default=None, description="On what basis it is asserted, e.g. a test run or a conversation."
    )
    session_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="The session it comes from. An agent's item asserted outside any session has partial"
        " provenance (R13).",
    )
    confidence: float | None = strawberry.field(default=None, description="The extractor's confidence, 0..1.")
    scope: Scope | None = strawberry.field(
        default=Scope.PROJECT, description="Who may see it (R2). Default: PROJECT."
    )
    grant_actor_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description="With scope GRANTS."
    )
    valid_from: datetime | None = strawberry.field(
        default=None, description="When it started to be true of the project."
    )
    valid_to: datetime | None = strawberry.field(
        default=None, description="When it stopped being true of the project; not before validFrom."
    )
    decay_after: Duration | None = strawberry.field(
        default=None,
        description="How long after lastVerifiedAt (else assertedAt) it goes stale, e.g. P90D. Null: it"
        " never goes stale.",
    )
    suggest_load_bearing: bool | None = strawberry.field(
        default=False, description="True: suggest that it is load-bearing, for a human to settle (R5)."
    )
    contradicts: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Items this assertion contradicts."
    )
    redacted: list[str] | None = strawberry.field(
        default=None,
        description="Kinds of credential the client removed from this text before sending it (e.g."
        ' ["aws-access-key"]), as mneia mcp and the importers do: listed in provenance.redacted.',
    )
