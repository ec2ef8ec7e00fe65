"""How fresh an item is, from 1 down towards 0: the one curve for it (R10, R11.5).

An item without ``decayAfter`` never decays: its freshness is always 1. One
with it is 1 when just verified (or just asserted, if never verified) and
falls smoothly with its age, the time since then, measured in decayAfter:

    x = age / decayAfter
    freshness = 1 / (1 + x ** STEEPNESS)

- at 0 it is 1, and flat there: a day-old check is as good as a new one;
- at x = 1/2 it is 0.94; at x = 1, the moment R10 calls the item stale, it is
  exactly 1/2 (below 1/2 only when stale); at x = 2 it is 0.06;
- it keeps falling afterwards but never reaches 0: freshness lowers an
  item's rehydration score (relevance x authority x freshness) long before
  the item would be dropped, and a stale item can still win on relevance.

A larger STEEPNESS keeps an item nearer 1 for longer and drops it faster
around decayAfter; 4 makes the fall span roughly half to twice decayAfter.
Pure, no I/O: the API's ``Item.freshness`` and rehydration both call
``freshness``; an as-of read judges it at its moment.
"""

from __future__ import annotations

from datetime import datetime, timedelta

STEEPNESS = 4.0
"""How sharply freshness falls around decayAfter (see the module's docstring)."""

AT_DECAY = 0.5
"""Freshness at the moment an item goes stale (age == decayAfter): 1 / (1 + 1 ** STEEPNESS)."""


def freshness(age: timedelta, decay_after: timedelta | None) -> float:
    """Freshness in [0, 1] of an item ``age`` after its last verification (or assertion).

    A negative age (a clock a little behind the database's) counts as 0.
    """
    if decay_after is None or age <= timedelta(0):
        return 1.0
    x = age / decay_after
    if x > 1e6:  # 1 / (1 + x**4) is below 1e-24 here: spare the float an overflow
        return 0.0
    return 1.0 / (1.0 + x**STEEPNESS)


def freshness_at(
    moment: datetime, decay_after: timedelta | None, last_verified_at: datetime | None, asserted_at: datetime
) -> float:
    """An item's freshness at ``moment``: its age counts from the last verification, else the assertion."""
    if decay_after is None:
        return 1.0
    return freshness(moment - (last_verified_at or asserted_at), decay_after)
