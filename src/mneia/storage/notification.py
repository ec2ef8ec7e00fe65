"""Announcements across server processes: PostgreSQL LISTEN/NOTIFY (R15).

Each workspace has its own channel, whose name only a transaction bound to
that workspace can learn (``channel``; storage/sql/announcements.sql), and an
announcement carries a kind and a sequence number only: NOTIFY ignores
row-level security, so a subscriber re-reads the row with that number under
its own context before it shows anything.

One listening connection per process serves every channel its subscribers
need, LISTENing while a channel has a subscriber and reconnecting (and
LISTENing again) after a failure. What must stay true (F6):
- nothing is lost silently: when the listening connection is lost, every
  inbox gets an ``INTERRUPTED`` announcement first, so its subscriber knows
  to catch up, by number, once the hub listens again (``resumed``);
- an inbox is bounded: a subscriber more than ``QUEUE_SIZE`` announcements
  behind is told so (``FellBehind``) instead of losing some of them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import make_url

from mneia.storage.database import Tx

RETRY_SECONDS = 1.0
READY_SECONDS = 10.0
QUEUE_SIZE = 1000
RESUME_SECONDS = 30.0  # how long a subscriber waits for the hub to listen again before it gives up

# The kinds an announcement may carry: a row's (its table's number) or a revoked token's.
DISPUTE = "dispute"
PROPOSAL = "proposal"
TOKEN = "token"
# The hub's own: the listening connection was lost, announcements may have been missed.
INTERRUPTED = "interrupted"

log = logging.getLogger("mneia.notification")

_CHANNEL = text("SELECT mneia_channel()")
_HIGH_WATER = text("SELECT coalesce(pg_sequence_last_value('announcement_seq'), 0)")


async def channel(tx: Tx) -> str | None:
    """The announcement channel of the transaction's workspace; None when it is bound to nobody."""
    return (await tx.execute(_CHANNEL)).scalar()


async def high_water(tx: Tx) -> int:
    """The last number handed out so far: whatever is announced from now on is numbered above it,
    or was already being written."""
    return int((await tx.execute(_HIGH_WATER)).scalar_one())


class FellBehind(Exception):
    """A subscriber's inbox overflowed: it was more than ``limit`` announcements behind."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} announcements were waiting")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Announcement:
    kind: str
    seq: int
    subject: str | None = None  # what a TOKEN announcement is about: the revoked token's id

    @classmethod
    def parse(cls, payload: str) -> Announcement:
        data = json.loads(payload)
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise ValueError("not an announcement")
        subject = data.get("subject")
        return cls(data["kind"], int(data["seq"]), str(subject) if subject is not None else None)


INTERRUPTION = Announcement(INTERRUPTED, 0)


class Inbox:
    """One subscriber's announcements, in order, at most ``limit`` waiting.

    Filing never blocks the hub: an inbox that is full stops taking
    announcements, and its reader gets ``FellBehind`` at its next ``get``.
    """

    def __init__(self, limit: int = QUEUE_SIZE) -> None:
        self.limit = limit
        self.behind = False
        self._queue: asyncio.Queue[Announcement] = asyncio.Queue()

    def file(self, announcement: Announcement) -> None:
        if self.behind:
            return
        if self._queue.qsize() >= self.limit:
            self.behind = True
            self._queue.put_nowait(INTERRUPTION)  # wakes a reader waiting in get()
            log.warning("a subscriber fell %d announcements behind; it is disconnected", self.limit)
            return
        self._queue.put_nowait(announcement)

    async def get(self) -> Announcement:
        if not self.behind:
            announcement = await self._queue.get()
            if not self.behind:
                return announcement
        raise FellBehind(self.limit)


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class TooMany(Exception):
    """A holder asked for one subscription more than the hub lets it have open."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"{limit} subscriptions open already")
        self.limit = limit


class Hub:
    """Listens on a channel while anyone subscribes to it; closes when the last subscriber leaves."""

    def __init__(self, url: str, queue_size: int = QUEUE_SIZE, per_holder: int | None = None) -> None:
        self._dsn = _dsn(url)
        self.queue_size = queue_size  # of each inbox that joins from now on
        self.per_holder = per_holder
        """How many subscriptions one holder (a token, by digest) may have open at once; None: any."""
        self._held: collections.Counter[str] = collections.Counter()
        self._channels: dict[str, set[Inbox]] = {}
        self._connection: asyncpg.Connection | None = None
        self._connected = asyncio.Event()
        self._lock = asyncio.Lock()  # LISTEN, UNLISTEN and the (re)connection's LISTENs, one at a time
        self._task: asyncio.Task[None] | None = None

    @property
    def subscribers(self) -> int:
        return sum(len(inboxes) for inboxes in self._channels.values())

    @contextlib.asynccontextmanager
    async def subscription(self, name: str, holder: str = "") -> AsyncIterator[Inbox]:
        """An inbox of every announcement on ``name`` from the moment the hub listens to it.

        TooMany when ``holder`` has ``per_holder`` subscriptions open already."""
        if self.per_holder is not None and self._held[holder] >= self.per_holder:
            raise TooMany(self.per_holder)
        self._held[holder] += 1
        try:
            inbox = Inbox(self.queue_size)
            await self._join(name, inbox)
            try:
                yield inbox
            finally:
                await self._leave(name, inbox)
        finally:
            self._held[holder] -= 1
            if not self._held[holder]:
                del self._held[holder]

    async def resumed(self, within: float = RESUME_SECONDS) -> None:
        """Return once the hub listens again after an interruption; TimeoutError if not ``within`` seconds."""
        async with asyncio.timeout(within):
            await self._connected.wait()

    def _running(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._listen(), name="mneia-listen")
        return self._task

    async def _join(self, name: str, inbox: Inbox) -> None:
        deadline = asyncio.get_running_loop().time() + READY_SECONDS
        while True:
            task = self._running()
            connected = asyncio.ensure_future(self._connected.wait())
            remaining = deadline - asyncio.get_running_loop().time()
            await asyncio.wait(
                {connected, task}, timeout=max(remaining, 0), return_when=asyncio.FIRST_COMPLETED
            )
            if not connected.done():
                connected.cancel()
                if remaining <= 0:
                    raise TimeoutError("the announcement listener did not connect")
                continue  # the listener was closed meanwhile: start another
            async with self._lock:
                if not self._connected.is_set() or self._connection is None:
                    continue  # lost meanwhile: the reconnection LISTENs again
                inboxes = self._channels.setdefault(name, set())
                if not inboxes:
                    try:
                        await self._connection.add_listener(name, self._deliver)
                    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                        del self._channels[name]
                        continue
                inboxes.add(inbox)
                return

    async def _leave(self, name: str, inbox: Inbox) -> None:
        async with self._lock:
            inboxes = self._channels.get(name, set())
            inboxes.discard(inbox)
            if inboxes:
                return
            self._channels.pop(name, None)
            if self._channels:
                if self._connected.is_set() and self._connection is not None:
                    with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                        await self._connection.remove_listener(name, self._deliver)
                return
            # The last subscriber left: stop listening (a joiner waiting meanwhile starts anew).
            await self.close()

    def _deliver(self, _connection: Any, _pid: int, name: str, payload: str) -> None:
        try:
            announcement = Announcement.parse(payload)
        except (ValueError, KeyError, TypeError):
            log.warning("ignored a malformed announcement on %s: %r", name, payload)
            return
        for inbox in list(self._channels.get(name, ())):
            inbox.file(announcement)

    async def _listen(self) -> None:
        """Hold a listening connection open, reconnecting (and LISTENing again) after a failure."""
        while True:
            connection = None
            try:
                connection = await asyncpg.connect(self._dsn)
                lost = asyncio.Event()
                connection.add_termination_listener(lambda _, lost=lost: lost.set())
                async with self._lock:
                    for name in self._channels:
                        await connection.add_listener(name, self._deliver)
                    self._connection = connection
                    self._connected.set()
                await lost.wait()
                log.warning("the listening connection closed; reconnecting")
            except asyncio.CancelledError:
                raise
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                log.warning("cannot listen for announcements (%s); retrying", error)
                await asyncio.sleep(RETRY_SECONDS)
            finally:
                if self._connected.is_set():
                    # Announcements may be missed from now until the hub listens again:
                    # say so in every inbox, ahead of anything the next connection hears.
                    for inboxes in self._channels.values():
                        for inbox in inboxes:
                            inbox.file(INTERRUPTION)
                self._connected.clear()
                self._connection = None
                if connection is not None and not connection.is_closed():
                    with contextlib.suppress(Exception):
                        await connection.close(timeout=2)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
