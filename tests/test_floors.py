"""A subscriber's floors (R15, F6; storage.notification.Floors): what catch-up counts as new.

Catch-up reads the announcements above a subscriber's floors in SQL (``Floors.clause``), and the
subscriber's memory of what it took raises them (resolvers.subscription): the SQL must answer as
``Floors.above`` does for every number, whatever the floors, on one server (one group) or on
Citus (a group per node, a workspace's numbers in more than one after a move). Checked on the
real database for numbers near every range's edges.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import BigInteger, column, select, values
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage.notification import GROUP_BITS, Floors, group_of

RANGE = 1 << GROUP_BITS
GROUPS = st.integers(min_value=0, max_value=4)


@st.composite
def numbers(draw: Any) -> int:
    """A number of some group: near its range's start or end."""
    group = draw(GROUPS)
    offset = draw(
        st.integers(min_value=0, max_value=3) | st.integers(min_value=RANGE - 3, max_value=RANGE - 1)
    )
    return group * RANGE + 1 + offset


@st.composite
def floors(draw: Any) -> Floors:
    """A floor for some groups: a high-water mark of each (its range's start less one: nothing yet)."""
    chosen = draw(st.sets(GROUPS, max_size=4))
    return Floors(
        {
            group: draw(st.sampled_from([group * RANGE, draw(numbers()) % RANGE + group * RANGE]))
            for group in chosen
        }
    )


def test_r15_a_number_of_a_group_with_no_floor_is_above_and_raising_only_rises() -> None:
    found = Floors.of(RANGE + 10)
    assert found.by_group == {1: RANGE + 10}
    assert not found.above(RANGE + 10) and found.above(RANGE + 11)
    assert found.above(2 * RANGE + 1) and found.above(5)  # groups 2 and 0: no floor
    found.raise_to(RANGE + 7)
    assert found.by_group[1] == RANGE + 10  # never lowered
    found.raise_to(7)
    assert found.by_group[0] == 7 and not found.above(7) and found.above(8)
    assert group_of(RANGE) == 0 and group_of(RANGE + 1) == 1
    assert Floors.of(RANGE).by_group == {1: RANGE}  # group 1's start less one: nothing yet
    assert Floors({}).above(1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(floors(), st.lists(numbers(), min_size=1, max_size=12))
async def test_r15_catch_ups_sql_keeps_exactly_the_numbers_above_the_floors(
    admin_engine: AsyncEngine, given_floors: Floors, seqs: list[int]
) -> None:
    rows = values(column("seq", BigInteger), name="announced").data([(seq,) for seq in seqs])
    seq = rows.c.seq
    async with admin_engine.connect() as connection:
        kept = (await connection.execute(select(seq).where(given_floors.clause(seq)))).scalars().all()
    assert sorted(kept) == sorted(each for each in seqs if given_floors.above(each)), given_floors
