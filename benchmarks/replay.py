"""The SQL a request sends, recorded as it is sent and timed again alone.

A request's statements are recorded in order as the server sends them: the
ones SQLAlchemy runs (its ``before_cursor_execute`` event, with the values as
the driver gets them) and the ones the driver runs itself
(``storage.database.DRIVEN_OBSERVERS``). Replayed on a connection of the same
role to the same node, inside the transaction the server opens (``BEGIN``,
or ``BEGIN_READ`` for a query) and committed, they take what the database and
the driver alone take for that request: the request's time minus this is what
GraphQL, the resolvers, SQLAlchemy and the routing add.

A write is replayed with the ids the server minted for it replaced by new
ones, so that the replay writes a new row as the request did.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage.database import BEGIN, BEGIN_READ, DRIVEN_OBSERVERS
from mneia.storage.ids import new_id


@dataclass(frozen=True)
class Statement:
    sql: str
    arguments: tuple[Any, ...]


@dataclass
class Recorder:
    """Records the statements sent on the engines it watches, while ``recording``."""

    statements: list[Statement] | None = None
    engines: list[AsyncEngine] = field(default_factory=list)

    def watch(self, engine: AsyncEngine) -> None:
        event.listen(engine.sync_engine, "before_cursor_execute", self._sqlalchemy)
        self.engines.append(engine)

    def close(self) -> None:
        for engine in self.engines:
            event.remove(engine.sync_engine, "before_cursor_execute", self._sqlalchemy)
        self.engines.clear()

    @contextmanager
    def recording(self) -> Iterator[list[Statement]]:
        self.statements = []
        DRIVEN_OBSERVERS.append(self._driven)
        try:
            yield self.statements
        finally:
            DRIVEN_OBSERVERS.remove(self._driven)
            self.statements = None

    def _sqlalchemy(
        self, _conn: Any, _cursor: Any, sql: str, parameters: Any, _context: Any, executemany: bool
    ) -> None:
        if self.statements is None:
            return
        if executemany:
            raise RuntimeError(f"an executemany is not replayed: {sql[:200]}")
        self.statements.append(Statement(sql, tuple(parameters or ())))

    def _driven(self, _engine: Engine, sql: str, arguments: Sequence[Any]) -> None:
        if self.statements is not None:
            self.statements.append(Statement(sql, tuple(arguments)))


def renewed(statements: Sequence[Statement], minted: Sequence[uuid.UUID]) -> list[Statement]:
    """The statements with each id in ``minted`` (as a UUID or its text, alone or in a list) replaced
    by a new one, the same new one wherever the old one appears."""
    fresh = {old: new_id() for old in minted}
    by_text = {str(old): str(new) for old, new in fresh.items()}

    def swap(value: Any) -> Any:
        if isinstance(value, uuid.UUID):
            return fresh.get(value, value)
        if isinstance(value, str):
            return by_text.get(value, value)
        if isinstance(value, list):
            return [swap(part) for part in value]
        return value

    return [Statement(s.sql, tuple(swap(a) for a in s.arguments)) for s in statements]


def driver_dsn(url: str) -> str:
    """An engine's URL as asyncpg takes it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def replayed(
    connection: asyncpg.Connection,
    statements: Sequence[Statement],
    read: bool,
    by_statement: dict[str, list[float]] | None = None,
) -> float:
    """Milliseconds to run ``statements`` in one transaction opened as the server opens it, committed;
    each statement's own milliseconds added to ``by_statement`` under its text (BEGIN and COMMIT too)."""
    spent = {} if by_statement is None else by_statement
    started = time.perf_counter()
    await _timed(connection, BEGIN_READ if read else BEGIN, (), spent, execute=True)
    try:
        for statement in statements:
            await _timed(connection, statement.sql, statement.arguments, spent)
    except BaseException:
        await connection.execute("ROLLBACK")
        raise
    await _timed(connection, "COMMIT", (), spent, execute=True)
    return (time.perf_counter() - started) * 1000


async def _timed(
    connection: asyncpg.Connection,
    sql: str,
    arguments: Sequence[Any],
    spent: dict[str, list[float]],
    execute: bool = False,
) -> None:
    started = time.perf_counter()
    if execute:
        await connection.execute(sql)
    else:
        rows = await connection.fetch(sql, *arguments)
        if "mneia_authenticate" in sql and not rows:
            # Unbound, the rest would read nothing and write nothing: a figure too good to be true.
            raise ReplayBroken("the replayed authentication bound nobody")
    spent.setdefault(sql, []).append((time.perf_counter() - started) * 1000)


class ReplayBroken(RuntimeError):
    """A replay that does not do what the request did: its time would mean nothing."""
