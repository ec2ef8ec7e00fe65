"""Engines and the one-transaction-per-request unit of work.

``Tx`` wraps one connection inside one transaction. Strawberry resolves
sibling fields concurrently, and a connection must not serve two coroutines
at once, so every statement goes through ``Tx`` under a lock.

The transaction is the driver's own (BEGIN, COMMIT and ROLLBACK sent by
asyncpg on a connection SQLAlchemy holds in autocommit), so that the
statements on every request's path can be sent by the driver directly
(``Driven``, ``Tx.fetch``) in the same transaction as those SQLAlchemy runs
(``Tx.execute``). A failure of the driver's reaches the error boundary as
SQLAlchemy's would: a ``DBAPIError`` whose ``orig`` is the driver's error,
``connection_invalidated`` when the connection is lost (and then it is
discarded, never pooled again).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar, overload

import asyncpg
from sqlalchemy import ClauseElement, ColumnElement, Executable, FromClause, any_, bindparam, pool, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql.asyncpg import dialect as asyncpg_dialect
from sqlalchemy.engine import Connection, CursorResult, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine
from sqlalchemy.util import greenlet_spawn

from mneia.config import async_url


def create_engine(
    url: str,
    *,
    pool_size: int = 20,
    application_name: str = "mneia",
    settings: Mapping[str, str] | None = None,
) -> AsyncEngine:
    """An engine whose connections name themselves in ``pg_stat_activity``.

    No ping before each checkout: a connection the database dropped while it
    sat in the pool fails its first statement, which SQLAlchemy reports as an
    invalidated connection (recycling the rest of the pool), and the request
    boundary (resolvers.request.context) retries once on a fresh one.

    The pool keeps ``pool_size`` connections and opens up to half as many
    again for a burst, closing those when they come back. A subscription event
    opens one transaction per token its subscribers present, all at once: with
    10 kept and 20 tokens, every event opened and closed 10 connections, each
    preparing its statements anew (200 subscribers of 20 tokens: p95 305 ms
    with 10 kept, 158 ms with 20).

    ``settings``: more run-time parameters each connection starts with (storage.node's).
    """
    return create_async_engine(
        async_url(url),
        pool_size=pool_size,
        max_overflow=pool_size // 2,
        pool_pre_ping=False,
        pool_recycle=1800,
        connect_args={"server_settings": {"application_name": application_name, **(settings or {})}},
    )


def lone_engine(url: str, *, connect_timeout: float = 10.0) -> AsyncEngine:
    """An engine that keeps no connection: for a command's one-off statements (a probe, a password)."""
    return create_async_engine(
        async_url(url), poolclass=pool.NullPool, connect_args={"timeout": connect_timeout}
    )


class Unreachable(ConnectionError):
    """No connection could be opened: the database is away, restarting, or refused us.

    A connection dropped while it is being set up fails with whatever the driver
    was doing then (an asyncpg protocol state error, say); to the caller it is
    the database's absence all the same, never an internal error.
    """


class ShardsGone(Unreachable):
    """A shard the transaction read by name (``Tx.shards``) no longer exists on its node (split or
    moved since the names were read): answered as the database's absence, a retry invited; the
    names are read again for the next transaction."""


class TransactionEnded(RuntimeError):
    """A statement sent after its transaction ended: the connection may be another request's now."""


_DIALECT = asyncpg_dialect()  # type: ignore[no-untyped-call]  # SQLAlchemy's dialects are untyped


class _OnShards(_DIALECT.statement_compiler):  # type: ignore[name-defined,misc]
    """The statement compiler that names each table's shard (``compile_kwargs={"shards": {...}}``),
    keeping the table's own name as the alias, so that every column reference still reads."""

    def visit_table(self, table: Any, asfrom: bool = False, enclosing_alias: Any = None, **kw: Any) -> str:
        shards: Mapping[str, str] = kw.get("shards", {})
        if not (asfrom and table.name in shards):
            if asfrom:
                self.unsharded = {*getattr(self, "unsharded", ()), table.name}
            return str(super().visit_table(table, asfrom=asfrom, enclosing_alias=enclosing_alias, **kw))
        shard = self.preparer.quote(shards[table.name])
        if enclosing_alias is not None and enclosing_alias.element is table:
            return str(shard)  # the alias names itself: "items_102008 AS walked_fact"
        return f"{shard} AS {self.preparer.quote(table.name)}"


_SHARD_DIALECT = asyncpg_dialect()  # type: ignore[no-untyped-call]
_SHARD_DIALECT.statement_compiler = _OnShards


ON_TABLES: dict[str, str] = {}
"""Each statement compiled to read shards (``Driven.on``), as it reads the tables: for tools that
compare it with one server's or have the coordinator plan it (benchmarks, tests)."""


class NotOnShards(ValueError):
    """A statement asked to read shards directly reads a table the mapping gives no shard for."""


DRIVEN_OBSERVERS: list[Callable[[Engine, str, Sequence[Any]], None]] = []
"""Called with the engine, SQL and arguments (as the driver gets them) of each ``Driven`` statement as
it is sent: SQLAlchemy's ``before_cursor_execute`` event sees every other statement with its
parameters, not these (the tests count, and read the plans of, both)."""


def _typed(given: TypeEngine[Any]) -> TypeEngine[Any]:
    """The dialect's own implementation of a type (asyncpg's Interval, say), as SQLAlchemy uses."""
    described: TypeEngine[Any] = _DIALECT.type_descriptor(given)  # type: ignore[no-untyped-call]
    return described


class Driven:
    """A statement the driver runs itself: for the few on every request's path.

    SQLAlchemy's execution of a prepared statement costs about 80 µs of CPU
    over the driver's own 55 (measured on this project's 2-core machine):
    authentication, a write's access check and the insert of an item pay it
    on every request. A ``Driven`` statement is compiled once by SQLAlchemy's
    asyncpg dialect, and the column types' bind and result processors are
    applied here as SQLAlchemy applies them (the result processors chosen by
    the columns' types as the database describes them, learnt at the first
    run), so it sends and reads the same values ``Tx.execute`` would
    (tests/test_driven.py compares the two).
    """

    def __init__(
        self,
        statement: ClauseElement,
        names: Iterable[str] | None = None,
        *,
        shardable: bool = False,
        shards: Mapping[str, str] | None = None,
    ) -> None:
        keys = None if names is None else list(names)
        if shards:
            compiled = statement.compile(
                dialect=_SHARD_DIALECT, column_keys=keys, compile_kwargs={"shards": shards}
            )
            if unsharded := getattr(compiled, "unsharded", None):
                raise NotOnShards(
                    f"the statement reads {', '.join(sorted(unsharded))}, which has no shard given"
                )
        else:
            compiled = statement.compile(dialect=_DIALECT, column_keys=keys)
        assert isinstance(compiled, SQLCompiler)
        self.sql = str(compiled)
        self._statement, self._names = statement, keys
        self.shardable = shardable
        self._on_shards: dict[tuple[tuple[str, str], ...], Driven] = {}
        self._binds = tuple(
            (name, _typed(compiled.binds[name].type).bind_processor(_DIALECT))
            for name in compiled.positiontup or ()
        )
        # Values the statement carries itself (a literal SQLAlchemy bound, say).
        self._carried = {
            name: bind.effective_value for name, bind in compiled.binds.items() if not bind.required
        }
        # A text() statement declares no columns: its values are the driver's.
        self._types = tuple(_typed(column.type) for column in getattr(statement, "exported_columns", ()))
        self._results: tuple[Callable[[Any], Any] | None, ...] | None = None if self._types else ()
        # The columns a result processor applies to, by position: learnt with them.
        self._processed: tuple[tuple[int, Callable[[Any], Any]], ...] = ()

    def on(self, shards: Mapping[str, str]) -> Driven:
        """The statement reading the shards named (table → its shard on this node) instead of the
        tables, when it is ``shardable`` and ``shards`` names any; else itself.

        On Citus a statement on the distributed tables is planned twice at every execution, on
        the tables and again on the shard, and a statement that is not a single-table lookup
        pays its whole planning both times (docs/scale-out.md): a slice's candidates cost
        11.6 ms more than on one server. Read from the shards themselves, PostgreSQL plans it
        once, as on one server, under the shards' own policies (the declared ones). Compiled
        once per set of shards."""
        if not (self.shardable and shards):
            return self
        key = tuple(sorted(shards.items()))
        found = self._on_shards.get(key)
        if found is None:
            found = self._on_shards[key] = Driven(self._statement, self._names, shards=shards)
            ON_TABLES[found.sql] = self.sql
        return found

    def sends(self, sql: str) -> bool:
        """Whether ``sql`` is this statement as sent, on the tables or on any shards (for observers)."""
        return sql == self.sql or any(sql == on.sql for on in self._on_shards.values())

    def arguments(self, params: Mapping[str, Any]) -> list[Any]:
        given = {**self._carried, **params} if self._carried else params
        return [given[name] if process is None else process(given[name]) for name, process in self._binds]

    async def learn(self, driver: asyncpg.Connection) -> None:
        """The result processors, once: they depend on the column types the database reports."""
        if self._results is None:
            described = (await driver.prepare(self.sql)).get_attributes()
            self._results = tuple(
                given.result_processor(_DIALECT, column.type.oid)
                for given, column in zip(self._types, described, strict=True)
            )
            self._processed = tuple(
                (position, process) for position, process in enumerate(self._results) if process is not None
            )

    def row(self, record: asyncpg.Record) -> tuple[Any, ...]:
        assert self._results is not None, "learn() first"
        if not self._processed:
            return tuple(record)
        # Only the columns that need it are converted: a rehydration reads some 250 rows of 25.
        values = list(record)
        for position, process in self._processed:
            values[position] = process(values[position])
        return tuple(values)


class Unbound(RuntimeError):
    """A statement that states the transaction's workspace, in a transaction bound to nobody."""


class Tx:
    """One transaction, shared by every resolver of one GraphQL operation.

    ``workspace_id`` and ``actor_id`` mirror the context the database sealed
    when the transaction was authenticated (storage.token); only the database
    can bind a transaction, so they are set from its answer, never by hand.
    ``workspace`` is what every statement of the request path states (``stated``).

    ``shards``: on Citus, once the transaction is bound on the node holding its workspace, each
    distributed table's shard of that workspace here; a ``shardable`` statement reads them
    (``Driven.on``). ``shards_stale`` is called when one of them is gone (a shard split since
    they were read), so that the next transaction reads them again.
    """

    def __init__(self, connection: AsyncConnection, driver: asyncpg.Connection) -> None:
        self._connection = connection
        self._driver = driver
        self._lock = asyncio.Lock()
        self.workspace_id: uuid.UUID | None = None
        self.actor_id: uuid.UUID | None = None
        self.rollback_only = False
        self.shards: Mapping[str, str] = {}
        self.shards_stale: Callable[[], None] | None = None
        self._ended = False

    @property
    def workspace(self) -> uuid.UUID:
        """The workspace the transaction is bound to; Unbound when it is bound to nobody."""
        if self.workspace_id is None:
            raise Unbound("the transaction is bound to no workspace: authenticate first")
        return self.workspace_id

    async def execute(
        self, statement: Executable, params: Mapping[str, Any] | list[Mapping[str, Any]] | None = None
    ) -> CursorResult[Any]:
        async with self._lock:
            if self._ended:
                raise TransactionEnded("the operation's transaction has ended")
            return await self._connection.execute(statement, params)

    async def fetch(self, statement: Driven, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of a ``Driven`` statement, sent by the driver in this transaction (on the
        transaction's ``shards`` when it is ``shardable``)."""
        if self.shards:
            statement = statement.on(self.shards)
        async with self._lock:
            if self._ended:
                raise TransactionEnded("the operation's transaction has ended")
            try:
                arguments = statement.arguments(params)
            except Exception as error:
                raise await self._failed(statement.sql, error) from error
            for observe in DRIVEN_OBSERVERS:
                observe(self._connection.sync_engine, statement.sql, arguments)
            try:
                records = await self._driver.fetch(statement.sql, *arguments)
                await statement.learn(self._driver)
            except Exception as error:
                if isinstance(error, asyncpg.UndefinedTableError) and statement.sql in ON_TABLES:
                    if self.shards_stale is not None:
                        self.shards_stale()
                    raise ShardsGone(f"a shard of the workspace is gone from this node: {error}") from error
                raise await self._failed(statement.sql, error) from error
        return [statement.row(record) for record in records]

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

    async def finish(self, commit: bool) -> None:
        """COMMIT or ROLLBACK. A connection that cannot answer is discarded: a failed ROLLBACK is
        not raised (the error that caused it is on its way), a failed COMMIT is."""
        try:
            await self._driver.execute("COMMIT" if commit else "ROLLBACK")
        except Exception as error:
            failed = await self._failed("COMMIT" if commit else "ROLLBACK", error)
            if not failed.connection_invalidated and self._driver.is_in_transaction():
                await self._connection.invalidate()  # it must not be pooled mid-transaction
            if commit:
                raise failed from error

    async def _failed(self, sql: str, error: Exception) -> DBAPIError:
        """The driver's error as SQLAlchemy would have raised it.

        The connection is kept only when the server reported the error (the
        protocol is intact) or the driver refused an argument before sending
        it; after anything else (lost, reset, interrupted mid-message) it is
        discarded, and the error says so (``connection_invalidated``), which
        the error boundary answers as the database's absence."""
        reported = isinstance(error, asyncpg.PostgresError)
        intact = isinstance(error, asyncpg.exceptions.DataError) or (
            reported and not isinstance(error, asyncpg.PostgresConnectionError)
        )
        lost = not intact or self._driver.is_closed()
        if lost:
            await self._connection.invalidate()
        return DBAPIError(sql, None, error, connection_invalidated=lost)


PLAN_CACHE_MODE = "force_custom_plan"
PLANNED_WITH_VALUES = f"SET LOCAL plan_cache_mode = {PLAN_CACHE_MODE}"
"""Every statement planned with its values in hand, sent with each BEGIN (one round trip).

Tenants are skewed: one project holds a million items beside a thousand of a
thousand. A prepared statement's generic plan knows no tenant and plans for an
average one (about 2,000 rows: a bitmap and a sort), which for the big project
reads and sorts all of it: a page took 2.2 s instead of 0.9 ms, rehydrate's
share of the task's words 1.7 s instead of 2.6 ms (benchmarks/scale.py, a
million items beside 1,000 workspaces; docs/performance.md). Planning each
time costs a fraction of a millisecond; the statements are still parsed once.
Set per transaction rather than per connection, so that it also holds behind
a pooler that refuses startup parameters."""
BEGIN = f"BEGIN; {PLANNED_WITH_VALUES}"
BEGIN_READ = f"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; {PLANNED_WITH_VALUES}"
"""A read: every statement sees the one snapshot taken at its first, and none may write."""


WALKS = Driven(
    text(
        "SELECT current_setting('enable_sort'), current_setting('jit'),"
        " set_config('enable_sort', 'off', true), set_config('jit', 'off', true)"
    )
)
"""The statement ``walked`` sends first (benchmarks name it when they time statements apart)."""
SORTS = Driven(text("SELECT set_config('enable_sort', :sort, true), set_config('jit', :jit, true)"))
"""The statement ``walked`` sends after, setting both back as they were."""


async def walked(tx: Tx, statement: Any, params: Any = None) -> Any:
    """``statement``'s rows, planned as the walk newest first it is written as, never as a sort.

    A walk (``ORDER BY id DESC LIMIT n`` over what a reader may see) is meant to
    stop at its n-th row. The planner prices it against sorting every row the
    filter keeps, which it estimates through the row-level security policies
    (an OR it cannot see into) and beside other tenants' rows: 61,000 for a
    project of 963,000. So it sorted the whole project on disk to count a
    common word, 1.3 s instead of 30 ms. Sorting is set aside for this one
    statement (``enable_sort``, SET LOCAL), where nothing but an index gives
    its order; a sort that has no alternative (ORDER BY rank) is still used.
    JIT compilation is set aside too: the penalty that sets sorting aside lifts
    the plan's cost past JIT's thresholds, and compiling a task's candidate
    statement took 3.2 s, to save nothing on its few hundred rows.
    """
    async with walking(tx):
        return await (
            tx.fetch(statement, params) if isinstance(statement, Driven) else tx.execute(statement, params)
        )


@asynccontextmanager
async def walking(tx: Tx) -> AsyncIterator[None]:
    """``walked``'s settings around every statement of the block: for a walk whose lengths another
    walk decides first (a slice's probe of the newest items, then its candidates), in the same
    two round trips. Beside 1,000 other workspaces, a 10,000-item project's probe was planned as a
    sort of every item it holds: 10.3 ms, 0.9 walked."""
    sort, jit = (await tx.fetch(WALKS, {}))[0][:2]
    yield
    await tx.fetch(SORTS, {"sort": sort, "jit": jit})


def _checked_out(engine: Engine) -> tuple[Connection, asyncpg.Connection]:
    """Run in SQLAlchemy's greenlet: a pooled connection set to autocommit, and its driver's."""
    connection = engine.connect()
    try:
        connection.execution_options(isolation_level="AUTOCOMMIT")
        driver = connection.connection.driver_connection
        assert isinstance(driver, asyncpg.Connection)
    except BaseException:
        connection.close()
        raise
    return connection, driver


async def _connect(engine: AsyncEngine) -> tuple[AsyncConnection, asyncpg.Connection]:
    """A pooled connection whose transactions this module begins and ends itself (SQLAlchemy's
    autocommit: it sends no BEGIN of its own), and its driver connection.

    Checked out, set and unwrapped in one pass through SQLAlchemy's greenlet rather than
    three (``AsyncEngine.connect``, ``execution_options``, ``get_raw_connection``): every
    request pays for this, and each pass is a greenlet switch there and back."""
    try:
        connection, driver = await greenlet_spawn(_checked_out, engine.sync_engine)
    except DBAPIError as error:
        raise Unreachable(f"could not open a connection: {error.orig!r}") from error
    return AsyncConnection(engine, connection), driver


@asynccontextmanager
async def alone(engine: AsyncEngine) -> AsyncIterator[Tx]:
    """A pooled connection outside any transaction: each statement is its own (for an operation
    that sends one, authentication alone: one round trip, no BEGIN and COMMIT around it)."""
    connection, driver = await _connect(engine)
    try:
        yield Tx(connection, driver)
    finally:
        await connection.close()


async def _begin(engine: AsyncEngine, read: bool = False) -> tuple[AsyncConnection, asyncpg.Connection]:
    """A connection in a new transaction (``read``: BEGIN_READ's). A pooled connection the database
    dropped while it sat idle (a restart, a failover) fails its BEGIN: it is discarded and replaced,
    once."""
    for attempt in (1, 2):
        connection, driver = await _connect(engine)
        try:
            await driver.execute(BEGIN_READ if read else BEGIN)
        except Exception as error:
            await connection.invalidate()
            await connection.close()
            if attempt == 2:
                raise Unreachable(f"could not begin a transaction: {error!r}") from error
            continue
        except BaseException:
            await connection.close()
            raise
        return connection, driver
    raise AssertionError("unreachable")


T = TypeVar("T", bound=Tx)


@overload
def transaction(engine: AsyncEngine, *, read: bool = False) -> AbstractAsyncContextManager[Tx]: ...
@overload
def transaction(
    engine: AsyncEngine, kind: type[T], *, read: bool = False
) -> AbstractAsyncContextManager[T]: ...
def transaction(
    engine: AsyncEngine, kind: type[Tx] = Tx, *, read: bool = False
) -> AbstractAsyncContextManager[Tx]:
    """A transaction that commits when the block ends cleanly and was not marked failed.

    ``kind``: a subclass of Tx to hold it (the benchmarks' ExplainingTx). ``read``: a GraphQL
    query's, whose statements must agree with each other (a slice's rules, candidates and
    replacements; an item and its events) and must not write: REPEATABLE READ, READ ONLY."""
    return _transaction(engine, kind, read)


@asynccontextmanager
async def _transaction(engine: AsyncEngine, kind: type[Tx], read: bool = False) -> AsyncIterator[Tx]:
    connection, driver = await _begin(engine, read)
    try:
        tx = kind(connection, driver)
        try:
            yield tx
        except BaseException:
            await tx.end()
            await tx.finish(commit=False)
            raise
        await tx.end()
        await tx.finish(commit=not tx.rollback_only)
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


def stated(table: FromClause, tx: Tx | None = None) -> ColumnElement[bool]:
    """``table.workspace_id = X``: the workspace, said by the statement itself (R1, issue 25).

    Row-level security already confines every row to the transaction's
    workspace, but through a function that neither the planner nor Citus sees
    into. On a cluster distributed by workspace (docs/scale-out.md) a
    statement reaches one shard only when it states, for each table it reads
    or writes, which workspace: so every statement of the request path says
    it, for each tenant table it names (or joins that table on
    ``workspace_id`` to one that says it). The planner also plans a workspace
    of a million items as what it is, not as an average one.

    X is ``tx``'s workspace as a value (Unbound when it has none), for a
    statement built per call; without ``tx``, the parameter ``workspace``,
    for a statement built once, which the caller binds to ``Tx.workspace``.
    ``workspaces`` itself is stated by its ``id``.
    """
    column = table.c.workspace_id if "workspace_id" in table.c else table.c.id
    return column == (bindparam("workspace") if tx is None else tx.workspace)


def from_row(record: type[R], row: Any) -> R:
    """Build a record dataclass from a row whose columns are in the record's field order."""
    return record(*row)
