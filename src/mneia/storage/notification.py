"""Announcements across server processes: PostgreSQL LISTEN/NOTIFY (R15).

Each workspace has its own channel, whose name only a transaction bound to
that workspace can learn (``channel``; storage/sql/announcements.sql), and an
announcement carries a kind and a sequence number only: NOTIFY ignores
row-level security, so a subscriber re-reads the row with that number under
its own context before it shows anything.

One listening connection per process serves every channel its subscribers
need, LISTENing while a channel has a subscriber and reconnecting (and
LISTENing again) after a failure. On a Citus cluster a trigger runs on the
shard, so its NOTIFY is heard on the node that holds the workspace only: the
process holds one such connection to every node (the coordinator and the
workers of ``pg_dist_node``). What must stay true (F6), on each connection:
- nothing is lost silently: when any listening connection is lost, every
  inbox gets an ``INTERRUPTED`` announcement first, so its subscriber knows
  to catch up, by number, once the hub listens again on every node
  (``resumed``);
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
from typing import TYPE_CHECKING, Any

import asyncpg
from sqlalchemy import ColumnElement, and_, not_, or_, text, true
from sqlalchemy.engine import make_url

from mneia.storage import citus
from mneia.storage.database import Tx

if TYPE_CHECKING:
    from mneia.storage.node import Nodes

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
_HIGH_WATER = text(
    "SELECT coalesce(pg_sequence_last_value('announcement_seq'), s.seqstart - 1)"
    " FROM pg_catalog.pg_sequence s WHERE s.seqrelid = 'announcement_seq'::regclass"
)


async def channel(tx: Tx) -> str | None:
    """The announcement channel of the transaction's workspace; None when it is bound to nobody."""
    return (await tx.execute(_CHANNEL)).scalar()


async def high_water(tx: Tx) -> int:
    """The last number this transaction's node has handed out so far: whatever is announced from
    it from now on is numbered above it, or was already being written (before the first: the
    sequence's start less one).

    On Citus every node numbers from an ``announcement_seq`` of its own: the coordinator from 1,
    the worker of group g from g * 2**48 + 1, for 2**48 numbers (Citus gives each worker a
    range of a bigint sequence of its own), so no two nodes hand out the same number, and a
    number's node group is ``group_of(number)``; one node's numbers say nothing of another's
    order. A workspace's rows are written on its node, and keep their numbers when its shard
    group moves to another node, which then numbers what follows in its own range: a
    subscriber's floor is therefore one per node (``Floors``).
    """
    return int((await tx.execute(_HIGH_WATER)).scalar_one())


GROUP_BITS = 48
"""On Citus the worker of group g numbers from g * 2**48 + 1 (the coordinator, group 0, from 1)."""


def group_of(seq: int) -> int:
    """The node group whose range holds the number: (g * 2**48, (g + 1) * 2**48]."""
    return (seq - 1) >> GROUP_BITS


@dataclass
class Floors:
    """What a subscriber counts as announced before it began, per numbering: each node group's
    high-water mark when the subscription began (one group, 0, on one server). A number above its
    group's floor came after; so does every number of a group with no floor (a node added since,
    which numbered nothing of the workspace's before). Across a shard move the workspace's new
    node numbers in its own range, above its own floor: catch-up finds what followed the move,
    and nothing written on that node before the subscription began, should the workspace have
    lived there before (``floors`` reads every node)."""

    by_group: dict[int, int]

    @classmethod
    def of(cls, *marks: int) -> Floors:
        """The floors given by high-water marks, each of its own node, in the group of the next
        number that node hands out (a mark may be its range's start less one, g * 2**48)."""
        return cls({group_of(mark + 1): mark for mark in marks})

    def raise_to(self, seq: int) -> None:
        """Count ``seq``, and every number of its group below it, as announced already."""
        group = group_of(seq)
        self.by_group[group] = max(self.by_group.get(group, seq), seq)

    def above(self, seq: int) -> bool:
        floor = self.by_group.get(group_of(seq))
        return floor is None or seq > floor

    def clause(self, seq: ColumnElement[int]) -> ColumnElement[bool]:
        """``above`` in SQL, over a column of numbers: comparisons the column's index serves."""
        known = sorted(self.by_group.items())
        if not known:
            return true()
        return or_(
            *(and_(seq > floor, seq <= (group + 1) << GROUP_BITS) for group, floor in known),
            not_(
                or_(
                    *(seq.between((group << GROUP_BITS) + 1, (group + 1) << GROUP_BITS) for group, _ in known)
                )
            ),
        )


async def floors(tx: Tx, nodes: Nodes | None) -> Floors:
    """A new subscriber's floors: the high-water mark of the transaction's node (bound to the
    subscriber's workspace, so its node) and, on Citus, of every other primary node, each read on
    the node itself after the hub listens on every node."""
    own = await high_water(tx)
    if nodes is None:
        return Floors.of(own)
    others = []
    for engine in await nodes.primaries():
        async with engine.connect() as connection:
            others.append(int((await connection.execute(_HIGH_WATER)).scalar_one()))
    return Floors.of(*others, own)


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
    """Listens on a channel while anyone subscribes to it; closes when the last subscriber leaves.

    One listening connection to ``url``; on a Citus cluster, one to each of its other primary
    nodes too (``citus.other_nodes``, read over ``url``'s connection each time it connects), since
    a trigger's NOTIFY is heard only on the node where its shard is. Every connection LISTENs to
    every channel: a channel's name says nothing of its workspace's node.
    """

    def __init__(self, url: str, queue_size: int = QUEUE_SIZE, per_holder: int | None = None) -> None:
        self._dsn = _dsn(url)
        self.queue_size = queue_size  # of each inbox that joins from now on
        self.per_holder = per_holder
        """How many subscriptions one holder (a token, by digest) may have open at once; None: any."""
        self._held: collections.Counter[str] = collections.Counter()
        self._channels: dict[str, set[Inbox]] = {}
        self._listening: dict[str, asyncpg.Connection] = {}  # by node: connections LISTENing to every channel
        self._others: dict[str, asyncio.Task[None]] = {}  # the other nodes' listeners, by node
        self._connected = asyncio.Event()  # set while every node's connection listens
        self._lock = asyncio.Lock()  # LISTEN, UNLISTEN and the (re)connections' LISTENs, one at a time
        self._task: asyncio.Task[None] | None = None  # ``url``'s listener, which starts the others

    @property
    def subscribers(self) -> int:
        return sum(len(inboxes) for inboxes in self._channels.values())

    @property
    def nodes(self) -> list[str]:
        """Where the hub listens now, as ``host:port``."""
        return [_where(dsn) for dsn in self._listening]

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
        """Return once the hub listens again on every node after an interruption; TimeoutError if not
        ``within`` seconds."""
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
                if not self._connected.is_set():
                    continue  # lost meanwhile: the reconnection LISTENs again
                inboxes = self._channels.setdefault(name, set())
                if not inboxes:
                    try:
                        for connection in list(self._listening.values()):
                            await connection.add_listener(name, self._deliver)
                    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                        # The connection that failed is being lost; a LISTEN left on another is
                        # harmless (nobody to deliver to) and taken up again by the next join.
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
                for connection in list(self._listening.values()):
                    with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                        await connection.remove_listener(name, self._deliver)
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
        """Listen on ``url``'s node and, through the tasks it starts, on the cluster's others."""
        try:
            await self._hold(self._dsn)
        finally:
            others, self._others = self._others, {}
            for task in others.values():
                task.cancel()
            for task in others.values():
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _hold(self, dsn: str) -> None:
        """Hold a listening connection to one node open, reconnecting (and LISTENing again) after a
        failure; ``url``'s connection reads the cluster's nodes first. Ends when the node has left
        the cluster."""
        while dsn == self._dsn or dsn in self._others:
            connection = None
            failed = False
            try:
                connection = await asyncpg.connect(dsn)
                lost = asyncio.Event()
                connection.add_termination_listener(lambda _, lost=lost: lost.set())
                async with self._lock:
                    if dsn == self._dsn:
                        self._spread(await citus.other_nodes(connection, self._dsn))
                    for name in self._channels:
                        await connection.add_listener(name, self._deliver)
                    self._listening[dsn] = connection
                    self._settle()
                await lost.wait()
                log.warning("the listening connection to %s closed; reconnecting", _where(dsn))
            except asyncio.CancelledError:
                raise
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                log.warning("cannot listen for announcements on %s (%s); retrying", _where(dsn), error)
                failed = True
            finally:
                if connection is not None and self._listening.get(dsn) is connection:
                    del self._listening[dsn]
                    # Announcements may be missed from now until the hub listens again: say so in
                    # every inbox (its workspace may be on this node), ahead of anything the next
                    # connection hears.
                    for inboxes in self._channels.values():
                        for inbox in inboxes:
                            inbox.file(INTERRUPTION)
                self._settle()
                if connection is not None and not connection.is_closed():
                    with contextlib.suppress(Exception):
                        await connection.close(timeout=2)
            if failed:
                await asyncio.sleep(RETRY_SECONDS)
                if dsn != self._dsn:
                    await self._rediscover()  # the node may have left the cluster

    async def _rediscover(self) -> None:
        """The cluster's nodes read again, over ``url``'s listening connection if it has one."""
        async with self._lock:
            connection = self._listening.get(self._dsn)
            if connection is None:
                return  # its reconnection reads them
            try:
                nodes = await citus.other_nodes(connection, self._dsn)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                log.warning("cannot read the cluster's nodes (%s)", error)
                return
            self._spread(nodes)

    def _spread(self, nodes: list[str]) -> None:
        """A listener for each of ``nodes`` (the other nodes of the cluster), none for a node that left."""
        wanted = {_dsn(url) for url in nodes} - {self._dsn}
        for dsn in set(self._others) - wanted:
            log.warning("%s left the cluster: no longer listening there", _where(dsn))
            task = self._others.pop(dsn)
            if task is not asyncio.current_task():
                task.cancel()  # the current one ends by itself: its node is no longer wanted
        for dsn in sorted(wanted - set(self._others)):
            self._others[dsn] = asyncio.create_task(self._hold(dsn), name=f"mneia-listen-{_where(dsn)}")

    def _settle(self) -> None:
        """``_connected`` set exactly while every node the hub knows has a listening connection."""
        if self._dsn in self._listening and set(self._others) <= set(self._listening):
            self._connected.set()
        else:
            self._connected.clear()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _where(dsn: str) -> str:
    """A node as the log names it: no credentials."""
    url = make_url(dsn)
    return f"{url.host}:{url.port}"
