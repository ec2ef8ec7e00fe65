"""One moment of one read: the loaders, the clock and the helpers that fields use (R9).

A read made ``asOf: T`` answers every field it reaches as of T, however deep
the selection. The moment is not a special case in each field: every object
the schema builds carries the ``View`` it was read in (``Item.of(record,
view)``), and its fields load what they point at through ``view.loaders``,
which answer as of the view's moment, and judge staleness and freshness at
``view.now``. A field added later reaches nothing but through its view, so it
inherits the moment. The present is the view without a moment.

As of T:
- items come with their state at T (storage.item, through item_states); an
  item recorded after T is absent, so a replacement made after T is no
  ``supersededBy`` and a chain ends where it ended at T;
- disputes and proposals raised after T are absent; one decided after T is
  still open (``DisputeRecord.at``, ``ProposalRecord.at``);
- a session ended after T is still open; an item's log ends at T;
- actors, teams and projects do not change: one loader serves every moment.

Loaders are per transaction (resolvers.request.context makes fresh ones for each);
the views of one transaction share them, one set per moment.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any, Generic, TypeVar

from strawberry.dataloader import DataLoader

from mneia.resolvers.redaction import redacted
from mneia.resolvers.rendering import rendered, rendered_all
from mneia.storage import actor, dispute, event, item, privacy, project, proposal, session, team
from mneia.storage.database import Tx
from mneia.storage.identity import of_actors as identities_of_actors
from mneia.storage.item import ItemRecord
from mneia.storage.session import SessionRecord

K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")


def _keyed(
    tx_of: Callable[[], Tx], fetch: Callable[[Tx, Sequence[uuid.UUID]], Awaitable[dict[uuid.UUID, Any]]]
) -> DataLoader[uuid.UUID, Any]:
    async def load(keys: list[uuid.UUID]) -> list[Any]:
        found = await fetch(tx_of(), keys)
        return [found.get(key) for key in keys]

    return DataLoader(load_fn=load)


class _Seen(Generic[K, V, R]):
    """A loader's values as they stood at a moment: the present loader's, converted.

    Returns futures like a DataLoader, already done when the present one is,
    so that fields answer without awaiting once a page warmed it
    (schema.loading). No statement of its own: the present value holds the past.
    """

    def __init__(self, present: DataLoader[K, V], then: Callable[[V], R]) -> None:
        self.present = present
        self.then = then

    def load(self, key: K) -> asyncio.Future[R]:
        inner: asyncio.Future[V] = self.present.load(key)  # type: ignore[assignment]  # a Future
        outer: asyncio.Future[R] = asyncio.get_running_loop().create_future()

        def settle(done: asyncio.Future[V]) -> None:
            if outer.done():
                return
            if done.cancelled():
                outer.cancel()
            elif (error := done.exception()) is not None:
                outer.set_exception(error)
            else:
                outer.set_result(self.then(done.result()))

        if inner.done():
            settle(inner)
        else:
            inner.add_done_callback(settle)
        return outer

    def load_many(self, keys: Sequence[K]) -> Awaitable[list[R]]:
        return asyncio.gather(*(self.load(key) for key in keys))


def _session_at(moment: datetime) -> Callable[[SessionRecord | None], SessionRecord | None]:
    def then(record: SessionRecord | None) -> SessionRecord | None:
        if record is None or record.ended_at is None or record.ended_at <= moment:
            return record
        return dataclasses.replace(record, ended_at=None)

    return then


def _one_at(moment: datetime) -> Callable[[Any], Any]:
    """A dispute or proposal as it stood at ``moment`` (None before it was raised)."""
    return lambda found: found.at(moment) if found is not None else None


def _each_at(moment: datetime) -> Callable[[list[Any]], list[Any]]:
    """Disputes or proposals as they stood at ``moment``, leaving out those raised after it."""
    return lambda found: [then for each in found if (then := each.at(moment)) is not None]


def _events_at(moment: datetime) -> Callable[[list[Any]], list[Any]]:
    return lambda found: [e for e in found if e.at <= moment]


class Loaders:
    """DataLoaders by kind, answering as of ``moment`` (None: now). ``at`` gives another moment's.

    Each loader is made when a field first asks for it: a request uses a few
    of the twelve, and making all of them took about 5% of a write's CPU.
    """

    def __init__(
        self, tx_of: Callable[[], Tx], moment: datetime | None = None, present: Loaders | None = None
    ):
        assert (moment is None) == (present is None), "another moment's loaders come from the present's"
        self.moment = moment
        self._tx_of = tx_of
        self._present = present
        self._moments: dict[datetime, Loaders] = {}

    def _now(self, fetch: Callable[[Tx, Sequence[uuid.UUID]], Awaitable[dict[uuid.UUID, Any]]]) -> Any:
        return _keyed(self._tx_of, fetch)

    # Actors, teams and projects do not change: the present's loader serves every moment.
    @cached_property
    def actor(self) -> DataLoader[uuid.UUID, Any]:
        return self._present.actor if self._present else self._now(actor.by_ids)

    @cached_property
    def identity(self) -> DataLoader[uuid.UUID, Any]:
        """By actor id: the identity the workspace sees linked to it (R19), or None."""
        return self._present.identity if self._present else self._now(identities_of_actors)

    @cached_property
    def team(self) -> DataLoader[uuid.UUID, Any]:
        return self._present.team if self._present else self._now(team.by_ids)

    @cached_property
    def project(self) -> DataLoader[uuid.UUID, Any]:
        return self._present.project if self._present else self._now(project.by_ids)

    # Items are read as they stood at the moment, by statements of their own.
    @cached_property
    def item(self) -> DataLoader[uuid.UUID, Any]:
        moment = self.moment
        return self._now(lambda tx, ids: item.by_ids(tx, ids, moment))

    @cached_property
    def successor(self) -> DataLoader[uuid.UUID, Any]:
        moment = self.moment
        return self._now(lambda tx, ids: item.successors(tx, ids, moment))

    @cached_property
    def chain(self) -> DataLoader[uuid.UUID, Any]:
        moment = self.moment
        return self._now(lambda tx, ids: item.chains(tx, ids, moment))

    # The rest: the present's values, seen as they stood at the moment.
    def _seen(self, name: str, fetch: Any, then: Callable[[datetime], Callable[[Any], Any]]) -> Any:
        """Now, a loader of ``fetch``; at a moment, the present's ``name`` loader seen through ``then``."""
        if self._present is None or self.moment is None:
            return self._now(fetch)
        return _Seen(getattr(self._present, name), then(self.moment))

    @cached_property
    def session(self) -> Any:
        return self._seen("session", session.by_ids, _session_at)

    @cached_property
    def disputes(self) -> Any:
        return self._seen("disputes", dispute.involving, _each_at)

    @cached_property
    def dispute(self) -> Any:
        return self._seen("dispute", dispute.by_ids, _one_at)

    @cached_property
    def proposal(self) -> Any:
        return self._seen("proposal", proposal.by_ids, _one_at)

    @cached_property
    def proposals(self) -> Any:
        return self._seen("proposals", proposal.about, _each_at)

    @cached_property
    def held(self) -> DataLoader[uuid.UUID, Any]:
        """Whether an item is under a legal hold now (R17): a hold is a present fact, at any moment."""
        return self._present.held if self._present else self._now(privacy.held_items)

    @cached_property
    def events(self) -> Any:
        return self._seen("events", event.of_items, _events_at)

    def at(self, moment: datetime | None) -> Loaders:
        """The loaders of ``moment`` in this transaction: made once, shared by its views."""
        if moment is None or moment == self.moment:
            return self
        if self.moment is not None:
            raise ValueError("another moment's loaders come from the present's")
        if moment not in self._moments:
            self._moments[moment] = Loaders(self._tx_of, moment, self)
        return self._moments[moment]


@dataclasses.dataclass(frozen=True, slots=True)
class View:
    """What the fields of objects read at one moment use: ``context`` supplies the clock of now."""

    context: Any
    loaders: Loaders

    @property
    def moment(self) -> datetime | None:
        return self.loaders.moment

    @property
    def now(self) -> datetime:
        """The instant staleness and freshness are judged at: the moment, else the request's clock."""
        return self.loaders.moment if self.loaders.moment is not None else self.context.now

    def redact(self, text: str | None) -> str | None | Awaitable[str | None]:
        """A reason as this reader may see it: ids of what it cannot see (then) are hidden."""
        return redacted(self, text)

    async def render(self, record: ItemRecord) -> str:
        """The item as one line of text, its authority first (R4), as it stood at the moment."""
        return await rendered(self, record)

    async def render_all(self, records: Sequence[ItemRecord]) -> list[str]:
        """Many items' lines, as ``render`` gives each, with what they name loaded in batches first."""
        return await rendered_all(self, records)

    async def warm(self, records: Sequence[ItemRecord]) -> None:
        """Load what a list of items' provenance points at, one batched query per kind.

        Afterwards their nested fields answer without awaiting (schema.loading).
        """
        loaders = self.loaders
        actor_ids = {r.asserted_by for r in records} | {r.confirmed_by for r in records if r.confirmed_by}
        session_ids = {r.session_id for r in records if r.session_id}
        loaded: tuple[list[Any], list[Any], list[Any]] = await asyncio.gather(
            loaders.actor.load_many(list(actor_ids)),
            loaders.session.load_many(list(session_ids)),
            loaders.project.load_many(list({r.project_id for r in records})),
        )
        projects = loaded[2]
        team_ids = [p.team_id for p in projects if p is not None and p.team_id is not None]
        if team_ids:
            await loaders.team.load_many(team_ids)
