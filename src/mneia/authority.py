"""Who may do what: the rules every entry point asks before it writes (R3, R5, R7, R8).

Plain functions of the caller and the records, free of GraphQL, so that the
API's resolvers, rehydration, handoff and any later entry point answer alike.
The database holds the same rules (storage/sql/authority.sql) for whatever
gets past here; these exist so that a client hears a clear error first.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from datetime import datetime

from mneia.errors import Conflict, HumanRequired
from mneia.storage.actor import ActorRecord
from mneia.storage.item import ItemRecord, NewItem
from mneia.vocabulary import NESTED_SCOPES, ItemStatus, Scope

# An item whose status a member may still change (retire, dispute).
CHANGEABLE = (ItemStatus.ACTIVE, ItemStatus.DISPUTED)


def require_human(caller: ActorRecord, operation: str) -> ActorRecord:
    """R3: a human-only operation refuses an agent before anything is written."""
    if not caller.is_human:
        raise HumanRequired(operation)
    return caller


def require_status_change(caller: ActorRecord, record: ItemRecord, operation: str) -> None:
    """A status change of an item a human confirmed or made load-bearing is a human's to make."""
    if record.ruled and not caller.is_human:
        raise HumanRequired(f"{operation} on an item a human confirmed or made load-bearing")


def require_changeable(record: ItemRecord, operation: str) -> None:
    if record.status not in CHANGEABLE:
        raise Conflict(f"{operation}: item is already {record.status}", currentStatus=record.status.value)


@dataclass(frozen=True, slots=True)
class Source:
    """Where the words of a write come from, which decides the authority they may carry.

    ``vouched``: the caller typed them, or imports a document it vouches for
    (an ADR, a CLAUDE.md). Words taken from a transcript (what an agent said,
    or a pasted text) are not vouched for by whoever imports them.
    """

    vouched: bool = True
    said_at: datetime | None = None
    redacted: tuple[str, ...] = ()

    def stamped(self, new: NewItem) -> NewItem:
        if self.said_at is None and not self.redacted:
            return new
        return dataclasses.replace(new, said_at=self.said_at, redacted=self.redacted)


TYPED = Source()
"""What a caller sends through the API itself: its own words."""


def confirms(caller: ActorRecord, vouched: bool = True) -> bool:
    """A person stating something has read it and said yes: human-confirmed (R4). Words nobody
    vouched for (an agent's, a transcript's) stay unconfirmed, whoever writes them."""
    return caller.is_human and vouched


def replacement_waits_for_a_human(caller: ActorRecord, target: ItemRecord, vouched: bool = True) -> bool:
    """R7: an agent's replacement of a human's ruling is a proposal, never a write; so is one
    taken from a transcript, even when a person imports it."""
    return target.ruled and not confirms(caller, vouched)


def keeps_audience(target: ItemRecord, replacement: NewItem, asserter: uuid.UUID) -> bool:
    """Whether everyone who sees the target will see its replacement.

    A narrower replacement would hide the chain's head from people who saw the
    item it replaced, and a human asked to accept it could not even read it.
    Asked here before a proposal is stored; the database asks it again of
    every replacement it writes (mneia_keeps_audience, storage/sql/authority.sql).
    """
    scope = replacement.scope
    if target.scope == Scope.PRIVATE:
        return True  # only its asserter sees it, and that is who replaces it
    if target.scope == Scope.GRANTS:
        if scope == Scope.WORKSPACE:
            return True
        before = set(target.grant_actor_ids) | {target.asserted_by}
        after = set(replacement.grant_actor_ids) | {asserter}
        return scope == Scope.GRANTS and before <= after
    return scope in NESTED_SCOPES and NESTED_SCOPES.index(scope) >= NESTED_SCOPES.index(target.scope)
