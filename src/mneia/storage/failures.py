"""What a database failure means to the caller, decided from its SQLSTATE.

The resolvers validate input first, so refusals are the backstop: a policy or
trigger that refuses a write (R1–R3), a constraint that catches a race (R7).
Lost connections, a server shutting down or out of resources are not the
caller's doing: ``unavailable`` tells the error boundary (resolvers.request.errors) to
answer "retry" instead of an internal error.
"""

from __future__ import annotations

import re

import asyncpg
import sqlalchemy.exc
from sqlalchemy.exc import DBAPIError

from mneia.errors import BadInput, Conflict, Forbidden, HumanRequired, MneiaError, TooExpensive

INSUFFICIENT_PRIVILEGE = "42501"
UNIQUE_VIOLATION = "23505"
CHECK_VIOLATION = "23514"
NOT_NULL_VIOLATION = "23502"
SERIALIZATION_FAILURE = "40001"
DEADLOCK_DETECTED = "40P01"
QUERY_CANCELED = "57014"
# Classes: 08 connection exception, 53 insufficient resources, 57 operator intervention
# (admin shutdown, crash shutdown, cannot connect now), 58 system error.
UNAVAILABLE_CLASSES = ("08", "53", "57", "58")
DATA_EXCEPTION_CLASS = "22"


def sqlstate(error: BaseException) -> str | None:
    original = getattr(error, "orig", error)
    return getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)


_SHARD_SUFFIX = re.compile(r"_[0-9]{6,}$")
"""What Citus appends to a shard's constraint and index names (``items_one_successor_102045``):
its shard id, from 102008 up. No constraint of Mneia's ends in six digits."""


_NAMED_IN_MESSAGE = re.compile(
    r'violates (?:unique|check|foreign key|exclusion|not-null) constraint "([^"]+)"'
)
"""A constraint's name in PostgreSQL's own message, for an error that carries no name of its own."""


def constraint_name(error: DBAPIError) -> str | None:
    """The constraint named by the driver's error: ``orig`` itself when the driver ran the
    statement (storage.database.Driven), its cause when SQLAlchemy's adapter wrapped it. On Citus
    the error comes from a shard: its name is given as declared, without the shard's id. A
    shard's refusal that Citus relays from another node (a reference table's other placements)
    carries the message alone: the name is read from it."""
    for candidate in (error.orig, getattr(error.orig, "__cause__", None)):
        if name := getattr(candidate, "constraint_name", None):
            return _SHARD_SUFFIX.sub("", str(name))
    if (sqlstate(error) or "").startswith("23"):
        found = _NAMED_IN_MESSAGE.search(str(error.orig))
        if found:
            return _SHARD_SUFFIX.sub("", found.group(1))
    return None


def translate(error: DBAPIError, operation: str) -> MneiaError | None:
    """The domain error a refusal by the database means, or None when it is no refusal."""
    state = sqlstate(error) or ""
    if state == INSUFFICIENT_PRIVILEGE:
        if "HUMAN_REQUIRED" in str(error.orig):
            return HumanRequired(operation)
        return Forbidden(f"{operation}: not allowed for this actor")
    if state == UNIQUE_VIOLATION:
        return Conflict(f"{operation}: conflicts with an existing record", constraint=constraint_name(error))
    if timed_out(error):
        return TooExpensive(operation)
    if state in (SERIALIZATION_FAILURE, DEADLOCK_DETECTED):
        return Conflict(f"{operation}: lost a race with a concurrent write; retry")
    if state in (CHECK_VIOLATION, NOT_NULL_VIOLATION):
        return BadInput(constraint_name(error) or "input", f"rejected by the database ({operation})")
    if state.startswith(DATA_EXCEPTION_CLASS):
        return BadInput("input", f"holds a value the database cannot store ({operation})")
    return None


def unavailable(error: BaseException) -> bool:
    """Whether the failure is the database's absence (connection lost, shutdown, overload), not a bug."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    if isinstance(error, (OSError, sqlalchemy.exc.TimeoutError, asyncpg.InterfaceError)):
        # Refused or reset connections; no pooled connection free in time; the driver
        # finding its connection closed (also while a new one is being set up).
        return True
    state = sqlstate(error)
    if state is not None:
        return state.startswith(UNAVAILABLE_CLASSES) and not timed_out(error)
    cause = getattr(error, "orig", None) or error.__cause__
    return cause is not None and cause is not error and unavailable(cause)


def timed_out(error: BaseException) -> bool:
    """Whether the database stopped the statement at its ``statement_timeout`` (57014, the same
    state as a cancel request, told apart by PostgreSQL's message)."""
    original = getattr(error, "orig", error)
    return sqlstate(error) == QUERY_CANCELED and "statement timeout" in str(original)
