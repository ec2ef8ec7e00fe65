"""Engines and the one-transaction-per-request unit of work.

``Tx`` wraps one connection inside one transaction. Strawberry resolves
sibling fields concurrently, and a connection must not serve two coroutines
at once, so every statement goes through ``Tx.execute`` under a lock.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Executable, any_, bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from mneia.config import async_url


def create_engine(url: str, *, pool_size: int = 20, application_name: str = "mneia") -> AsyncEngine:
    """An engine whose connections name themselves in ``pg_stat_activity``.

    No ping before each checkout: a connection the database dropped while it
    sat in the pool fails its first statement, which SQLAlchemy reports as an
    invalidated connection (recycling the rest of the pool), and the request
    boundary (resolvers.context) retries once on a fresh one.

    The pool keeps ``pool_size`` connections and opens up to half as many
    again for a burst, closing those when they come back. A subscription event
    opens one transaction per token its subscribers present, all at once: with
    10 kept and 20 tokens, every event opened and closed 10 connections, each
    preparing its statements anew (200 subscribers of 20 tokens: p95 305 ms
    with 10 kept, 158 ms with 20).
    """
    return create_async_engine(
        async_url(url),
        pool_size=pool_size,
        max_overflow=pool_size // 2,
        pool_pre_ping=False,
        pool_recycle=1800,
        connect_args={"server_settings": {"application_name": application_name}},
    )


class Unreachable(ConnectionError):
    """No connection could be opened: the database is away, restarting, or refused us.

    A connection dropped while it is being set up fails with whatever the driver
    was doing then (an asyncpg protocol state error, say); to the caller it is
    the database's absence all the same, never an internal error.
    """


class TransactionEnded(RuntimeError):
    """A statement sent after its transaction ended: the connection may be another request's now."""


class Tx:
    """One transaction, shared by every resolver of one GraphQL operation.

    ``workspace_id`` and ``actor_id`` mirror the context the database sealed
    when the transaction was authenticated (storage.token); only the database
    can bind a transaction, so they are set from its answer, never by hand.
    """

    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection
        self._lock = asyncio.Lock()
        self.workspace_id: uuid.UUID | None = None
        self.actor_id: uuid.UUID | None = None
        self.rollback_only = False
        self._ended = False

    async def execute(
        self, statement: Executable, params: Mapping[str, Any] | list[Mapping[str, Any]] | None = None
    ) -> CursorResult[Any]:
        async with self._lock:
            if self._ended:
                raise TransactionEnded("the operation's transaction has ended")
            return await self._connection.execute(statement, params)

    async def end(self) -> None:
        """Let the statement in flight finish, then refuse any later one.

        graphql-core answers as soon as an error bubbles out of a synchronous
        field and settles the sibling fields in the background; whatever they
        still send must not reach the connection once it is back in the pool.
        """
        async with self._lock:
            self._ended = True

    def fail(self) -> None:
        """Roll back at the end instead of committing: the operation reported an error."""
        self.rollback_only = True


@asynccontextmanager
async def transaction(engine: AsyncEngine) -> AsyncIterator[Tx]:
    """A transaction that commits when the block ends cleanly and was not marked failed."""
    try:
        connection = await engine.connect()
    except DBAPIError as error:
        raise Unreachable(f"could not open a connection: {error.orig!r}") from error
    try:
        tx = Tx(connection)
        await connection.begin()
        try:
            yield tx
        except BaseException:
            await tx.end()
            await connection.rollback()
            raise
        await tx.end()
        if tx.rollback_only:
            await connection.rollback()
        else:
            await connection.commit()
    finally:
        await connection.close()


R = TypeVar("R")


def one_of(column: ColumnElement[Any], name: str = "ids") -> ColumnElement[bool]:
    """``column = ANY(:ids)``, the ids bound as one array parameter.

    Unlike ``IN`` (one placeholder per id, rendered at each execution), the
    statement's text is the same for any number of ids: built once at import,
    it skips SQLAlchemy's construction and cache-key work per call, and the
    driver prepares it once per connection.
    """
    return column == any_(bindparam(name, type_=ARRAY(column.type)))


def from_row(record: type[R], row: Any) -> R:
    """Build a record dataclass from a row whose columns are in the record's field order."""
    return record(*row)
