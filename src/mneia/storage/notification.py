"""Announcements across server processes: PostgreSQL LISTEN/NOTIFY (R15).

One listening connection per process fans each announcement out to the
subscriptions of that process. An announcement carries ids only (NOTIFY
ignores row-level security); a subscriber must re-read the row under its own
context before it shows anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

CHANNEL = "mneia"
RETRY_SECONDS = 1.0
READY_SECONDS = 10.0

log = logging.getLogger("mneia.notification")


@dataclass(frozen=True, slots=True)
class Announcement:
    kind: str
    workspace_id: uuid.UUID
    project_id: uuid.UUID
    id: uuid.UUID

    @classmethod
    def parse(cls, payload: str) -> Announcement:
        data = json.loads(payload)
        return cls(
            data["kind"], uuid.UUID(data["workspace"]), uuid.UUID(data["project"]), uuid.UUID(data["id"])
        )


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class Hub:
    """Listens while anyone subscribes; stops listening when the last subscriber leaves."""

    def __init__(self, url: str) -> None:
        self._dsn = _dsn(url)
        self._queues: set[asyncio.Queue[Announcement]] = set()
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._joining = 0

    @contextlib.asynccontextmanager
    async def subscription(self) -> AsyncIterator[asyncio.Queue[Announcement]]:
        """A queue of every announcement from the moment the hub is known to be listening."""
        queue: asyncio.Queue[Announcement] = asyncio.Queue(maxsize=1000)
        self._joining += 1
        try:
            await self._listening()
            self._queues.add(queue)
        finally:
            self._joining -= 1
        try:
            yield queue
        finally:
            self._queues.discard(queue)
            if not self._queues and not self._joining:
                await self.close()

    async def _listening(self) -> None:
        if self._task is None or self._task.done():
            self._ready = asyncio.Event()
            self._task = asyncio.create_task(self._listen(self._ready), name="mneia-listen")
        assert self._ready is not None
        await asyncio.wait_for(self._ready.wait(), timeout=READY_SECONDS)

    def _deliver(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            announcement = Announcement.parse(payload)
        except (ValueError, KeyError):
            log.warning("ignored a malformed announcement: %r", payload)
            return
        for queue in list(self._queues):
            try:
                queue.put_nowait(announcement)
            except asyncio.QueueFull:
                log.warning("a subscriber is %d announcements behind; dropped one", queue.qsize())

    async def _listen(self, ready: asyncio.Event) -> None:
        """Hold a listening connection open, reconnecting after a failure."""
        while True:
            connection = None
            try:
                connection = await asyncpg.connect(self._dsn)
                lost = asyncio.Event()
                connection.add_termination_listener(lambda _, lost=lost: lost.set())
                await connection.add_listener(CHANNEL, self._deliver)
                ready.set()
                await lost.wait()
                log.warning("the listening connection closed; reconnecting")
            except asyncio.CancelledError:
                raise
            except (OSError, asyncpg.PostgresError) as error:
                log.warning("cannot listen for announcements (%s); retrying", error)
                await asyncio.sleep(RETRY_SECONDS)
            finally:
                if connection is not None and not connection.is_closed():
                    with contextlib.suppress(Exception):
                        await connection.close(timeout=2)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
