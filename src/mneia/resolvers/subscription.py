"""Subscriptions: disputes and proposals as they are raised (R8, R15, F6, F16).

NOTIFY ignores row-level security, so every announced row is read again under
a sealed context before anyone sees it. What must stay true:

- Nobody sees a row outside their scope (R1, R2). An event is read once per
  visibility class: the subscribers presenting the same token. One token is
  one actor, so one visibility; the first of them to take an announcement
  opens a transaction authenticated with that very token (``_Reads``) and
  every one of them resolves its fields in it (``Context.sharing``). So 200
  subscribers of one token cost one transaction per event, not 200.
- Nothing is lost silently (F6). Each subscriber remembers the numbers it
  has taken; after the hub lost its listening connection it reads again, in
  number order, what was raised above the last numbers it knew, skipping
  what it already delivered. When it cannot, it ends with
  SUBSCRIPTION_INTERRUPTED (reason MISSED_EVENTS); a subscriber whose
  inbox overflows ends with reason FELL_BEHIND.
- A revoked token ends its streams at once (F16): a revocation is announced
  on the workspace's channel with the token's id, and the class presenting
  that token authenticates again; a revoked or expired token ends with
  UNAUTHENTICATED. Each event authenticates too.

A stream that ends sends graphql-transport-ws ``next`` with the error (its
``extensions.code``), then ``complete``: the operation ends, the connection
(and the client's other subscriptions on it) stays open.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Hashable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Annotated, Any, Generic, Protocol, TypeVar

import strawberry

from mneia.errors import Interrupted, LimitExceeded, NotFound
from mneia.resolvers.inputs import parse_id
from mneia.resolvers.request.context import Context, Info
from mneia.schema.dispute import Dispute
from mneia.schema.proposal import Proposal
from mneia.storage import dispute, failures, notification, project, proposal, token
from mneia.storage.announced import Announcement
from mneia.storage.database import Tx
from mneia.storage.notification import FellBehind, Floors

CATCH_UP_PAUSE = 0.5
KEEP_SEEN = 4096  # numbers a subscriber remembers above its floors before it raises them

log = logging.getLogger("mneia.subscription")


class _Numbered(Protocol):
    @property
    def seq(self) -> int: ...

    @property
    def project_id(self) -> Any: ...


R = TypeVar("R", bound=_Numbered)
V = TypeVar("V")


class _Read(Generic[V]):
    """One transaction, authenticated with one token, open while any subscriber of that token uses it."""

    def __init__(self, context: Context, work: Callable[[Context, Tx], Awaitable[V]]) -> None:
        self.members = 0
        self.released = asyncio.Event()
        self.result: asyncio.Future[tuple[Context, V]] = asyncio.get_running_loop().create_future()
        # Every member may have left before a failure: it is theirs, not the loop's to report.
        self.result.add_done_callback(lambda done: done.cancelled() or done.exception())
        self.task = asyncio.create_task(self._run(context, work), name="mneia-shared-read")

    async def _run(self, context: Context, work: Callable[[Context, Tx], Awaitable[V]]) -> None:
        try:
            async with context.authenticated() as tx:
                self.result.set_result((context, await work(context, tx)))
                await self.released.wait()
        except BaseException as error:
            if not self.result.done():
                self.result.set_exception(error)
            elif not isinstance(error, asyncio.CancelledError):
                log.warning("a shared read failed after it was read: %r", error)


class _Reads:
    """The shared reads open now, by token digest and what they read."""

    def __init__(self) -> None:
        self._open: dict[Hashable, _Read[Any]] = {}

    @asynccontextmanager
    async def joined(
        self, context: Context, what: Hashable, work: Callable[[Context, Tx], Awaitable[V]]
    ) -> AsyncIterator[tuple[Context, V]]:
        """``work`` read under ``context``'s token, once for all who join meanwhile: (its context, result)."""
        secret = context.token()
        key = (id(context.engine), context.token_digest(), what)
        read = self._open.get(key)
        if read is None:
            read = self._open[key] = _Read(
                Context(engine=context.engine, bearer=secret, nodes=context.nodes), work
            )
        read.members += 1
        try:
            yield await asyncio.shield(read.result)
        finally:
            read.members -= 1
            if read.members == 0:
                if self._open.get(key) is read:
                    del self._open[key]
                read.released.set()


_reads = _Reads()


class _Seen:
    """The numbers a subscriber has taken; catch-up reads above ``floors``.

    ``floors`` start at the high-water marks when the subscription began (one per node group on
    Citus: storage.notification.Floors) and rise only when the set is trimmed, so catch-up
    covers everything since, across a move of the workspace to another node too.
    """

    def __init__(self, floors: Floors) -> None:
        self.floors = floors
        self._numbers: set[int] = set()

    def __contains__(self, seq: object) -> bool:
        return seq in self._numbers

    def take(self, seq: int) -> bool:
        """True the first time ``seq`` is taken."""
        if seq in self._numbers:
            return False
        self._numbers.add(seq)
        if len(self._numbers) > 2 * KEEP_SEEN:
            ordered = sorted(self._numbers)
            for dropped in ordered[:-KEEP_SEEN]:
                self.floors.raise_to(dropped)
            self._numbers = set(ordered[-KEEP_SEEN:])
        return True


async def _announced(
    context: Context,
    kind: str,
    project_id: strawberry.ID | None,
    announcement: Announcement[R],
    since: Callable[[Tx, Floors], Awaitable[list[R]]],
) -> AsyncGenerator[R, None]:
    project_key = parse_id(project_id, "projectId") if project_id is not None else None
    hub = context.hub
    assert hub is not None, "subscriptions need the application's notification hub"

    def wanted(record: R | None) -> bool:
        return record is not None and project_key in (None, record.project_id)

    async with AsyncExitStack() as stack:
        async with context.authenticated() as tx:
            if project_key is not None and await project.get(tx, project_key) is None:
                raise NotFound("project", project_id)
            channel = await notification.channel(tx)
            shown = await token.presented(tx, context.token() or "")
            presented = str(shown.id if shown is not None else None)
            assert channel is not None, "an authenticated transaction knows its workspace's channel"
            try:
                inbox = await stack.enter_async_context(hub.subscription(channel, context.token_digest()))
            except notification.TooMany as too_many:
                open_now = too_many.limit
                raise LimitExceeded(
                    "subscriptions of this token", open_now + 1, "maxSubscriptionsPerToken", open_now
                ) from None
            # Read once the hub listens: what is numbered above this is announced, or caught up.
            seen = _Seen(await notification.floors(tx, context.nodes))

        while True:
            try:
                note = await inbox.get()
            except FellBehind as behind:
                raise Interrupted(
                    f"fell behind: more than {behind.limit} events were waiting for this subscriber;"
                    " it was disconnected and may have missed some. Subscribe again.",
                    reason="FELL_BEHIND",
                ) from behind
            if note.kind == notification.TOKEN:
                if note.subject in (None, presented):
                    # Authenticate again, once per token: the revoked token ends the stream here.
                    async with _reads.joined(context, note, _nothing):
                        pass
                continue
            missed = note.kind == notification.INTERRUPTED
            if note.kind == kind and note.seq not in seen:
                try:
                    async with _reads.joined(
                        context, note, functools.partial(_one, announcement, note.seq)
                    ) as (
                        shared,
                        record,
                    ):
                        if seen.take(note.seq) and wanted(record):
                            async with context.sharing(shared):
                                yield record  # type: ignore[misc]  # wanted() checked it is not None
                except Exception as error:
                    if not failures.unavailable(error):
                        raise
                    missed = True  # the database went away under this read: catch up below
            if missed:
                async for record in _catch_up(context, hub, seen, since):
                    if wanted(record):
                        yield record


async def _one(announcement: Announcement[R], seq: int, context: Context, tx: Tx) -> R | None:
    """The announced row, and what its fields point at, put into the class's loaders.

    One statement (storage.announced); every subscriber of the class then
    resolves those fields from done futures, without waiting on the database.
    """
    read = await announcement.read(tx, seq)
    context.loaders.item.prime_many(read.items)
    context.loaders.actor.prime_many(read.actors)
    return read.record


async def _nothing(_context: Context, _tx: Tx) -> None:
    """A shared read whose only work is authenticating its token."""


async def _catch_up(
    context: Context,
    hub: notification.Hub,
    seen: _Seen,
    since: Callable[[Tx, Floors], Awaitable[list[R]]],
) -> AsyncGenerator[R, None]:
    """What was raised above ``seen.floors`` and not taken yet, by number, under the subscriber's context.

    While the database comes back (a restart leaves dead connections in the
    pool), it tries again for up to ``RESUME_SECONDS``; then it gives up.
    """
    deadline = asyncio.get_running_loop().time() + notification.RESUME_SECONDS
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            await hub.resumed(max(remaining, 0.0))
            async with context.authenticated() as tx:
                for record in await since(tx, seen.floors):
                    if seen.take(record.seq):
                        yield record
            return
        except TimeoutError:
            break
        except Exception as error:
            if not failures.unavailable(error) or remaining <= 0:
                log.warning("catch-up failed: %r", error)
                break
            await asyncio.sleep(CATCH_UP_PAUSE)
    raise Interrupted(
        "events may have been missed while the database was unreachable, and could not be read"
        " again; the subscription ended. Subscribe again.",
        reason="MISSED_EVENTS",
    )


async def dispute_raised(
    info: Info,
    project_id: Annotated[
        strawberry.ID | None,
        strawberry.argument(description="Only this project's. Null: every project you can see."),
    ] = None,
) -> AsyncGenerator[Dispute, None]:
    announced = _announced(info.context, notification.DISPUTE, project_id, dispute.ANNOUNCED, dispute.since)
    async for record in announced:
        yield Dispute.of(record, info.context.view())


async def proposal_raised(
    info: Info,
    project_id: Annotated[
        strawberry.ID | None,
        strawberry.argument(description="Only this project's. Null: every project you can see."),
    ] = None,
) -> AsyncGenerator[Proposal, None]:
    announced = _announced(
        info.context, notification.PROPOSAL, project_id, proposal.ANNOUNCED, proposal.since
    )
    async for record in announced:
        yield Proposal.of(record, info.context.view())
