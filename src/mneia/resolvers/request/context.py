"""The per-request context: one transaction, the authenticated actor, the loaders.

The transaction is opened by ``extension.Transaction`` around execution; the
loaders batch every nested lookup of one operation into one query per kind,
per moment read (resolvers.view: a read ``asOf`` a moment gets its own).
An operation that reads nothing (introspection only, ``{ __typename }``) has
its token checked by the same statement in one round trip, without a
transaction around it (``verified``).

On a Citus cluster (``nodes``) both run on the node that holds the token's
workspace (storage.node): the token names it, so nothing is read to route it.
When the token binds nobody there, the workspace's node is read again once,
and the token tried once on the new node should its shards have moved.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

import strawberry
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.errors import Unauthenticated
from mneia.resolvers.reading import Loaders, View
from mneia.storage import database, token
from mneia.storage.actor import ActorRecord
from mneia.storage.database import Tx, transaction
from mneia.storage.directory import Directory
from mneia.storage.node import Nodes
from mneia.storage.notification import Hub

UNKNOWN = "unknown or revoked bearer token"


def bearer_token(authorization: str | None) -> str | None:
    """The credentials of an ``Authorization: Bearer …`` value; None for any other scheme."""
    if not authorization:
        return None
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def pasted_token(given: str) -> str | None:
    """A token as a person or a client hands it over outside a header: bare, or ``Bearer …``."""
    return bearer_token(given) if given.lower().startswith("bearer") else given.strip() or None


@dataclass
class Context:
    """One per HTTP request, or one per websocket connection.

    A websocket connection runs several operations (and every event of every
    subscription) over one context, so each takes ``lock`` for as long as it
    holds the context's transaction.
    """

    engine: AsyncEngine
    bearer: str | None
    hub: Hub | None = None
    nodes: Nodes | None = None
    """On a Citus cluster, where each workspace lives (``engine`` is then the coordinator's)."""
    directory: Directory | None = None
    """The regions' directory, where an invitation is recorded for other regions' sign-ins."""
    request: Any = None
    response: Any = None
    connection_params: dict[str, Any] | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _tx: Tx | None = None
    _actor: ActorRecord | None = None
    _digested: tuple[str, str] | None = None
    loaders: Loaders = field(init=False)
    # While a subscription event is shared (``sharing``): the context that read it, whose
    # ``event_results`` hold each operation's result once, for every subscriber of its token.
    shared_by: Context | None = None
    event_results: dict[Hashable, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.loaders = Loaders(lambda: self.tx)

    def token(self) -> str | None:
        """The bearer token: from the Authorization header, else a websocket's connection_init."""
        if self.bearer:
            return self.bearer
        params = self.connection_params or {}
        given = params.get("Authorization") or params.get("authorization") or params.get("token")
        if not isinstance(given, str):
            return None
        return pasted_token(given)

    def token_digest(self) -> str:
        """The digest of ``token()`` (empty when none): a key that holds no secret, hashed once per token."""
        secret = self.token() or ""
        if self._digested is None or self._digested[0] != secret:
            self._digested = (secret, token.digest(secret))
        return self._digested[1]

    @property
    def tx(self) -> Tx:
        assert self._tx is not None, "no transaction: resolvers run inside extension.Transaction"
        return self._tx

    @property
    def actor(self) -> ActorRecord:
        if self._actor is None:
            raise Unauthenticated("a bearer token is required")
        return self._actor

    @property
    def accepted(self) -> bool:
        """Whether a token was accepted here: only then may what the request sent be kept for others."""
        return self._actor is not None

    @asynccontextmanager
    async def authenticated(self, read: bool = False) -> AsyncIterator[Tx]:
        """The one way a request gets its transaction: the context's lock, a transaction, the token.

        ``read``: a query's, one snapshot and no writes (storage.database.transaction).

        Raises Unauthenticated (with the transaction rolled back) when the token is
        missing, unknown, revoked or expired. Fresh loaders and a fresh clock each
        time: nothing read in an earlier transaction (an earlier subscription
        event) is served again. A pooled connection that the database dropped
        while it sat idle (a restart, a failover) is replaced once, before
        anything ran on it (storage.database.transaction).
        """
        secret = self.token()
        if not secret:
            self._actor = None
            raise Unauthenticated("a bearer token is required (Authorization: Bearer …)")
        async with self.lock, AsyncExitStack() as held:
            tx, self._actor = await self._bound(held, secret, read)
            self._tx = tx
            self.loaders = Loaders(lambda: self.tx)
            self.now = datetime.now(UTC)
            try:
                yield tx
            finally:
                self._tx = None

    async def _bound(self, held: AsyncExitStack, secret: str, read: bool) -> tuple[Tx, ActorRecord]:
        """A transaction on the token's node, bound to its actor, kept open in ``held``.

        Refused (rolled back) as ``authenticated`` says; tried on a second node only when the
        workspace's node was read again and had changed (``Nodes.moved``).
        """
        engine = await self._engine(secret)
        for attempt in (1, 2):
            async with AsyncExitStack() as opened:
                tx = await opened.enter_async_context(transaction(engine, read=read))
                actor = await token.authenticate(tx, secret)
                if actor is not None:
                    await held.enter_async_context(opened.pop_all())
                    if self.nodes is not None:  # bound here: the workspace's shards are on this node
                        tx.shards = await self.nodes.shards(actor.workspace_id)
                        tx.shards_stale = partial(self.nodes.forget_shards, actor.workspace_id)
                    return tx, actor
                tx.rollback_only = True
            moved = await self._moved(secret, engine) if attempt == 1 else None
            if moved is None:
                break
            engine = moved
        raise Unauthenticated(UNKNOWN)

    async def verified(self) -> None:
        """Authenticate the token for an operation that reads nothing: ``mneia_authenticate`` alone,
        as its own statement, with no BEGIN and COMMIT around it (one round trip, not three).

        Refused exactly as ``authenticated`` refuses: a missing, unknown, revoked or expired
        token raises Unauthenticated. The context it binds lasts for that statement only
        (``set_config(..., true)`` in the statement's own transaction), and no transaction is
        left open. A pooled connection the database dropped is replaced once, as a BEGIN's is.
        """
        secret = self.token()
        if not secret:
            self._actor = None
            raise Unauthenticated("a bearer token is required (Authorization: Bearer …)")
        async with self.lock:
            self._actor = None
            engine = await self._engine(secret)
            self._actor = await _authenticated_alone(engine, secret)
            if self._actor is None and (moved := await self._moved(secret, engine)) is not None:
                self._actor = await _authenticated_alone(moved, secret)
            if self._actor is None:
                raise Unauthenticated(UNKNOWN)

    async def _engine(self, secret: str) -> AsyncEngine:
        """Where the token's transaction runs: ``engine`` on one server; on Citus its workspace's node."""
        if self.nodes is None:
            return self.engine
        workspace_id = token.workspace_of(secret)
        if workspace_id is None:
            raise Unauthenticated(_unroutable(secret))
        return await self.nodes.engine(workspace_id)

    async def _moved(self, secret: str, tried: AsyncEngine) -> AsyncEngine | None:
        """On Citus, after the token bound nobody on ``tried``: its workspace's new node, if it moved."""
        workspace_id = token.workspace_of(secret)
        if self.nodes is None or workspace_id is None:
            return None
        return await self.nodes.moved(workspace_id, tried)

    @asynccontextmanager
    async def sharing(self, other: Context) -> AsyncIterator[Tx]:
        """The transaction ``other`` authenticated with the same token, under this context's lock.

        For a subscription event read once for every subscriber presenting the
        same token (resolvers/subscription.py): the same token is the same
        actor, so the same visibility. ``other`` stays inside ``authenticated()``
        until this block ends.
        """
        if other.token() != self.token():
            raise ValueError("a transaction is shared only between contexts of the same token")
        async with self.lock:
            self._tx, self._actor, self.loaders, self.now = other.tx, other.actor, other.loaders, other.now
            self.shared_by = other
            try:
                yield other.tx
            finally:
                self._tx = None
                self.shared_by = None

    def view(self, moment: datetime | None = None) -> View:
        """This transaction's read at ``moment`` (None: now): what the objects read there carry (R9)."""
        return View(self, self.loaders.at(moment))


async def _authenticated_alone(engine: AsyncEngine, secret: str) -> ActorRecord | None:
    """The token's actor, read by one statement on a pooled connection outside any transaction.
    A pooled connection the database dropped is replaced once, as a BEGIN's is."""
    for attempt in (1, 2):
        try:
            async with database.alone(engine) as tx:
                return await token.authenticate(tx, secret)
        except DBAPIError as error:
            if attempt == 2 or not error.connection_invalidated:
                raise
    raise AssertionError("unreachable")


def _unroutable(secret: str) -> str:
    """Why a token naming no workspace is refused on Citus: one minted before migration 0024 cannot
    be routed to a node (a Citus database is built new, so it holds none); anything else is unknown."""
    body = secret.removeprefix(token.PREFIX)
    if body != secret and len(body) == token.SECRET_LENGTH:
        return (
            "this token names no workspace (minted before migration 0024): on a Citus cluster a"
            " request is routed by its token's workspace; mint a new token"
        )
    return UNKNOWN


Info = strawberry.Info[Context, None]
"""What every resolver receives: the typed request context (no root value)."""
