"""DateTime (ISO-8601 with an offset) and Duration (ISO-8601, e.g. P90D, PT12H)."""

from __future__ import annotations

import datetime as dt
from typing import NewType

import isodate
import strawberry
from strawberry.types.scalar import ScalarDefinition


def parse_datetime(value: object) -> dt.datetime:
    if not isinstance(value, str):
        raise ValueError("expected an ISO-8601 date-time string with an offset")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO-8601 date-time") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} has no UTC offset; add one, e.g. Z or +02:00")
    return parsed


def serialize_datetime(value: dt.datetime) -> str:
    return value.isoformat()


def parse_duration(value: object) -> dt.timedelta:
    if not isinstance(value, str):
        raise ValueError("expected an ISO-8601 duration string such as P90D")
    try:
        parsed = isodate.parse_duration(value)
    except (isodate.ISO8601Error, ValueError):
        raise ValueError(f"{value!r} is not an ISO-8601 duration such as P90D or PT12H") from None
    if not isinstance(parsed, dt.timedelta):
        raise ValueError(f"{value!r}: years and months have no fixed length; use days, e.g. P30D")
    if parsed <= dt.timedelta(0):
        raise ValueError(f"{value!r} must be longer than zero")
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
