"""The one clock retention reads (R16): the database's time of day, unless a test or an operator
says otherwise (``mneia admin sweep --now``), so that a sweep at day 31 needs no waiting."""

from __future__ import annotations

from datetime import UTC, datetime


def now(given: datetime | None = None) -> datetime:
    """``given`` when there is one (timezone-aware), else the wall clock in UTC."""
    if given is None:
        return datetime.now(UTC)
    if given.tzinfo is None:
        raise ValueError("a moment needs its UTC offset, e.g. 2027-01-31T00:00:00+00:00")
    return given
