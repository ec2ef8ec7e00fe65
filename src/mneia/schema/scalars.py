"""DateTime (ISO-8601 with an offset) and Duration (ISO-8601, e.g. P90D, PT12H).

Each parser refuses, with a ValueError graphql-core turns into a clean input
error, any value that could not be stored or computed with later (F4, F9):
a DateTime must lie within Python's range (years 1 to 9999) once converted
to UTC, which PostgreSQL's wider range also holds; a Duration must be
positive and at most ``MAX_DURATION``.
"""

from __future__ import annotations

import datetime as dt
from typing import NewType

import isodate
import strawberry
from strawberry.types.scalar import ScalarDefinition

MAX_DURATION = dt.timedelta(days=36_525)
"""The longest Duration accepted: 100 years of 365.25 days."""

MAX_SCALAR_LENGTH = 64
"""A DateTime or Duration string longer than this is no such value (and is not parsed at all)."""


def _short(value: object, expected: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected {expected}")
    if len(value) > MAX_SCALAR_LENGTH:
        raise ValueError(f"expected {expected}, got a string of {len(value)} characters")
    return value


def parse_datetime(value: object) -> dt.datetime:
    text = _short(value, "an ISO-8601 date-time string with an offset")
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 date-time") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset; add one, e.g. Z or +02:00")
    try:
        parsed.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError(f"{text!r} is outside 0001-01-01 to 9999-12-31 once converted to UTC") from None
    return parsed


def serialize_datetime(value: dt.datetime) -> str:
    # asyncpg reads PostgreSQL's ±infinity as a naive datetime.max/min: it is UTC.
    return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).isoformat()


def parse_duration(value: object) -> dt.timedelta:
    text = _short(value, "an ISO-8601 duration string such as P90D")
    try:
        parsed = isodate.parse_duration(text)
    except (isodate.ISO8601Error, ValueError, ArithmeticError):
        # ArithmeticError: OverflowError and decimal's errors, for numbers past timedelta's range.
        raise ValueError(f"{text!r} is not an ISO-8601 duration such as P90D or PT12H") from None
    if not isinstance(parsed, dt.timedelta):
        raise ValueError(f"{text!r}: years and months have no fixed length; use days, e.g. P30D")
    if parsed <= dt.timedelta(0):
        raise ValueError(f"{text!r} must be longer than zero")
    if parsed > MAX_DURATION:
        raise ValueError(f"{text!r} is longer than {MAX_DURATION.days} days (100 years)")
    return parsed


def serialize_duration(value: dt.timedelta) -> str:
    return isodate.duration_isoformat(value)


Duration = NewType("Duration", dt.timedelta)

SCALARS: dict[object, ScalarDefinition] = {
    dt.datetime: strawberry.scalar(
        name="DateTime",
        description="ISO-8601 date-time with an offset",
        serialize=serialize_datetime,
        parse_value=parse_datetime,
    ),
    Duration: strawberry.scalar(
        name="Duration",
        description='ISO-8601 duration, e.g. "P90D", "PT12H"',
        serialize=serialize_duration,
        parse_value=parse_duration,
    ),
}
