"""R10 and R11.5: the freshness curve (mneia.freshness), a pure function, as properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mneia.freshness import AT_DECAY, STEEPNESS, freshness, freshness_at
from tests.support import item_record

ages = st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=365_000))
decays = st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(days=36_525))


@given(age=ages, decay=decays)
def test_r10_freshness_is_between_zero_and_one(age: timedelta, decay: timedelta) -> None:
    assert 0.0 <= freshness(age, decay) <= 1.0


@given(decay=decays)
def test_r10_freshness_is_one_when_just_verified(decay: timedelta) -> None:
    assert freshness(timedelta(0), decay) == 1.0
    assert freshness(-timedelta(seconds=1), decay) == 1.0  # a clock a little behind the database's


@given(age=ages)
def test_r10_an_item_without_decay_is_always_fresh(age: timedelta) -> None:
    assert freshness(age, None) == 1.0


@given(first=ages, second=ages, decay=decays)
def test_r10_freshness_never_rises_with_age(first: timedelta, second: timedelta, decay: timedelta) -> None:
    younger, older = sorted((first, second))
    assert freshness(older, decay) <= freshness(younger, decay)


@given(age=ages, decay=decays)
def test_r10_stale_exactly_when_freshness_falls_below_one_half(age: timedelta, decay: timedelta) -> None:
    """An item goes stale (R10) where the curve crosses 1/2: the sharp rule and the smooth one agree."""
    now = datetime(2026, 11, 30, tzinfo=UTC)
    record = item_record(asserted_at=now - age, decay_after=decay)
    fresh = record.freshness_at(now)
    if record.stale_at(now):
        assert fresh <= AT_DECAY
    else:
        assert fresh >= AT_DECAY


def test_r10_the_curve_at_its_landmarks() -> None:
    day = timedelta(days=1)
    assert freshness(day, day) == AT_DECAY == 0.5
    assert freshness(day / 2, day) == pytest.approx(1 / (1 + 0.5**STEEPNESS))
    assert freshness(day / 2, day) > 0.9 and freshness(2 * day, day) < 0.1
    assert freshness(1000 * day, day) > 0.0  # never dropped by freshness alone


@given(decay=decays, since_verified=ages, since_asserted=ages)
def test_r10_age_counts_from_the_last_verification(
    decay: timedelta, since_verified: timedelta, since_asserted: timedelta
) -> None:
    now = datetime(2026, 11, 30, tzinfo=UTC)
    verified = now - min(since_verified, since_asserted)
    asserted = now - since_asserted
    assert freshness_at(now, decay, verified, asserted) == freshness(now - verified, decay)
    assert freshness_at(now, decay, None, asserted) == freshness(since_asserted, decay)
    assert freshness_at(now, decay, verified, asserted) >= freshness_at(now, decay, None, asserted)
