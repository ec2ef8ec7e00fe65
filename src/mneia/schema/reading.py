"""What a type's fields need of the request they are read in.

The schema knows nothing of the resolvers, so it states what it uses as
protocols; ``resolvers.request.context.Context`` and ``resolvers.reading.View`` are the
implementations. Fields typed with ``Info`` are checked against them.

An object read at a moment (``item(id, asOf: T)``, and everything reached
from it) carries its ``View``: its fields load, render, redact and judge time
through the view, never through the request, so they answer as of that
moment (R9). The request itself offers only what no moment changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import strawberry

from mneia.storage.item import ItemRecord


class Loader(Protocol):
    def load(self, key: uuid.UUID, /) -> Any:
        """The value for ``key``: a value now or an awaitable (schema.loading), which the fields
        pass on to graphql-core as they are, so typed loosely on purpose."""


class Loaders(Protocol):
    """DataLoaders by kind, each keyed by an id, answering as of the view's moment."""

    @property
    def actor(self) -> Loader: ...
    @property
    def identity(self) -> Loader: ...
    @property
    def team(self) -> Loader: ...
    @property
    def project(self) -> Loader: ...
    @property
    def session(self) -> Loader: ...
    @property
    def item(self) -> Loader: ...
    @property
    def successor(self) -> Loader: ...
    @property
    def chain(self) -> Loader: ...
    @property
    def disputes(self) -> Loader: ...
    @property
    def dispute(self) -> Loader: ...
    @property
    def proposal(self) -> Loader: ...
    @property
    def proposals(self) -> Loader: ...
    @property
    def held(self) -> Loader: ...
    @property
    def events(self) -> Loader: ...


class View(Protocol):
    @property
    def loaders(self) -> Loaders:
        """The DataLoaders as of the view's moment."""

    @property
    def moment(self) -> datetime | None:
        """The moment read (None: now)."""

    @property
    def now(self) -> datetime:
        """The instant staleness and freshness are judged at."""

    def redact(self, text: str | None) -> Any:
        """The text as this reader may see it: a value now, or an awaitable graphql-core settles."""

    async def render(self, record: ItemRecord) -> str: ...

    async def warm(self, records: Sequence[ItemRecord]) -> None: ...


class Reader(Protocol):
    @property
    def loaders(self) -> Loaders:
        """The present's DataLoaders, for what no moment changes: actors, teams, projects."""

    @property
    def now(self) -> datetime:
        """The request's clock (a token's expiry is judged by it)."""

    def view(self, moment: datetime | None = None) -> View:
        """The read at ``moment`` (None: now)."""


Info = strawberry.Info[Reader, None]
