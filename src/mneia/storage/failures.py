"""Translate what PostgreSQL refuses into the domain's errors.

The resolvers validate input first, so these are the backstop: a policy or
trigger that refuses a write (R1–R3), a constraint that catches a race (R7).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.exc import DBAPIError

from mneia.errors import BadInput, Conflict, Forbidden, HumanRequired, MneiaError

INSUFFICIENT_PRIVILEGE = "42501"
FOREIGN_KEY_VIOLATION = "23503"
UNIQUE_VIOLATION = "23505"
CHECK_VIOLATION = "23514"
NOT_NULL_VIOLATION = "23502"


def sqlstate(error: DBAPIError) -> str | None:
    original = error.orig
    return getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)


def constraint_name(error: DBAPIError) -> str | None:
    cause = getattr(error.orig, "__cause__", None)
    return getattr(cause, "constraint_name", None)


def translate(error: DBAPIError, operation: str) -> MneiaError | None:
    state = sqlstate(error)
    message = str(error.orig)
    if state == INSUFFICIENT_PRIVILEGE:
        if "HUMAN_REQUIRED" in message:
            return HumanRequired(operation)
        return Forbidden(f"{operation}: not allowed for this actor")
    if state == UNIQUE_VIOLATION:
        return Conflict(f"{operation}: conflicts with an existing record", constraint=constraint_name(error))
    if state in (CHECK_VIOLATION, NOT_NULL_VIOLATION):
        return BadInput(constraint_name(error) or "input", f"rejected by the database ({operation})")
    return None


@asynccontextmanager
async def refused_as(operation: str) -> AsyncIterator[None]:
    """Run a write; if the database refuses it, raise the matching domain error."""
    try:
        yield
    except DBAPIError as error:
        translated = translate(error, operation)
        if translated is None:
            raise
        raise translated from error
