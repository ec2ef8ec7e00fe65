"""What a type's fields need of the request they are read in.

The schema knows nothing of the resolvers, so it states what it uses as
protocols; ``resolvers.context.Context`` and ``resolvers.view.View`` are the
implementations. Fields typed with ``Info`` are checked against them.

An object read at a moment (``item(id, asOf: T)``, and everything reached
from it) carries its ``View``: its fields load, render, redact and judge time
through the view, never through the request, so they answer as of that
moment (R9). The request itself offers only what no moment changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import strawberry

from mneia.storage.item import ItemRecord


class View(Protocol):
    @property
    def loaders(self) -> Any:
        """DataLoaders by kind (actor, team, project, session, item, successor, chain, disputes,
        dispute, proposals, events), answering as of the view's moment.

        Their ``load`` answers a value now or an awaitable (schema.loading), which
        the fields pass on to graphql-core as they are: typed loosely on purpose.
        """

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
    def loaders(self) -> Any:
        """The present's DataLoaders, for what no moment changes: actors, teams, projects."""

    @property
    def now(self) -> datetime:
        """The request's clock (a token's expiry is judged by it)."""

    def view(self, moment: datetime | None = None) -> View:
        """The read at ``moment`` (None: now)."""


Info = strawberry.Info[Reader, None]
