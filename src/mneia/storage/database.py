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
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from mneia.config import async_url


def create_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    return create_async_engine(
        async_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=False,
        pool_recycle=1800,
    )


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

    async def execute(
        self, statement: Executable, params: Mapping[str, Any] | list[Mapping[str, Any]] | None = None
    ) -> CursorResult[Any]:
        async with self._lock:
            return await self._connection.execute(statement, params)

    def fail(self) -> None:
        """Roll back at the end instead of committing: the operation reported an error."""
        self.rollback_only = True


@asynccontextmanager
async def transaction(engine: AsyncEngine) -> AsyncIterator[Tx]:
    """A transaction that commits when the block ends cleanly and was not marked failed."""
    async with engine.connect() as connection:
        tx = Tx(connection)
        await connection.begin()
        try:
            yield tx
        except BaseException:
            await connection.rollback()
            raise
        if tx.rollback_only:
            await connection.rollback()
        else:
            await connection.commit()


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
