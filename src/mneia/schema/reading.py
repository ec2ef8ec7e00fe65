"""What a type's fields need of the request they are read in.

The schema knows nothing of the resolvers, so it states what it uses as a
protocol; ``resolvers.context.Context`` is the one implementation. Fields
typed with ``Info`` are checked against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import strawberry

from mneia.storage.item import ItemRecord


class Reader(Protocol):
    @property
    def loaders(self) -> Any:
        """DataLoaders by kind (actor, team, project, session, item, successor, chain, disputes, dispute).

        Their ``load`` answers a value now or an awaitable (schema.loading), which
        the fields pass on to graphql-core as they are: typed loosely on purpose.
        """

    @property
    def now(self) -> datetime: ...

    def redact(self, text: str | None) -> Any:
        """The text as this reader may see it: a value now, or an awaitable graphql-core settles."""

    async def render(self, record: ItemRecord) -> str: ...

    async def warm(self, records: Sequence[ItemRecord]) -> None: ...


Info = strawberry.Info[Reader, None]
