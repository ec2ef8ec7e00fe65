"""Durations as a person reads them: ``P7D`` is "7 days", ``PT2H30M`` "2 hours 30 minutes". Pure.

The one way the inbox shows a duration (a decay, a retention policy, the
notice window), registered as the templates' ``duration`` filter. The API
sends ISO-8601 durations of days and smaller units only (schema.scalars
refuses years and months, which have no fixed length), so days are the
largest unit said: "400 days", not "1 year".
"""

from __future__ import annotations

from datetime import timedelta

import isodate

UNITS = (("day", 86_400), ("hour", 3_600), ("minute", 60), ("second", 1))


def in_words(value: str | timedelta) -> str:
    """``value`` (an ISO-8601 duration, or a timedelta) in words, largest units first, each unit that is
    not zero once: "1 day 4 hours", "1 second". Whole seconds are said, fractions of one dropped: a
    duration shorter than a second is "less than a second", none at all "0 seconds". Text that is no
    duration of days, hours, minutes or seconds is returned as it is, so that nothing is hidden."""
    if isinstance(value, str):
        try:
            parsed = isodate.parse_duration(value)
        except (isodate.ISO8601Error, ValueError, ArithmeticError):
            return value
        if not isinstance(parsed, timedelta):
            return value  # years or months
        value = parsed
    if value < timedelta(0):
        return f"minus {in_words(-value)}"
    if not value:
        return "0 seconds"
    left = value.days * 86_400 + value.seconds
    if left == 0:
        return "less than a second"
    said = []
    for unit, seconds in UNITS:
        count, left = divmod(left, seconds)
        if count:
            said.append(f"{count} {unit}" if count == 1 else f"{count} {unit}s")
    return " ".join(said)
