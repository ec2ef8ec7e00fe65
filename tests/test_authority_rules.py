"""The authority rules as plain functions (mneia.authority), asked directly.

Every entry point (the resolvers now; rehydration, handoff and MCP later)
calls these; the database asks the same questions again
(tests/test_database_guards.py holds the SQL and Python audience rules equal).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mneia.authority import (
    CHANGEABLE,
    keeps_audience,
    replacement_waits_for_a_human,
    require_changeable,
    require_human,
    require_status_change,
)
from mneia.errors import Conflict, HumanRequired
from mneia.storage.actor import ActorRecord
from mneia.storage.item import ItemRecord, NewItem
from mneia.vocabulary import ActorKind, ItemKind, ItemStatus, Scope
from tests.support import item_record

WORKSPACE = uuid.uuid4()
NOW = datetime(2026, 11, 30, tzinfo=UTC)
HUMAN = ActorRecord(WORKSPACE, uuid.uuid4(), ActorKind.HUMAN, "Ada", NOW)
AGENT = ActorRecord(WORKSPACE, uuid.uuid4(), ActorKind.AGENT, "coder", NOW)


def an_item(**changes: object) -> ItemRecord:
    return item_record(**{"kind": ItemKind.CONSTRAINT, "asserted_by": AGENT.id, **changes})


CONFIRMED = an_item(confirmed_by=HUMAN.id, confirmed_at=NOW)
LOAD_BEARING = an_item(load_bearing=True)
UNRULED = an_item()


def test_r3_require_human_refuses_an_agent_naming_the_operation() -> None:
    assert require_human(HUMAN, "confirmItem") is HUMAN
    with pytest.raises(HumanRequired) as refused:
        require_human(AGENT, "confirmItem")
    assert refused.value.code == "FORBIDDEN"
    assert refused.value.extensions == {"reason": "HUMAN_REQUIRED"}
    assert "confirmItem" in refused.value.message


@pytest.mark.parametrize("ruled", [CONFIRMED, LOAD_BEARING], ids=["confirmed", "load-bearing"])
def test_r3_r5_a_status_change_of_a_ruled_item_is_a_humans(ruled: ItemRecord) -> None:
    require_status_change(HUMAN, ruled, "retireItem")
    with pytest.raises(HumanRequired):
        require_status_change(AGENT, ruled, "retireItem")


def test_r3_anyone_may_change_the_status_of_an_item_nobody_ruled_on() -> None:
    require_status_change(AGENT, UNRULED, "retireItem")
    require_status_change(HUMAN, UNRULED, "retireItem")


@pytest.mark.parametrize("status", list(ItemStatus))
def test_r8_only_active_or_disputed_items_change(status: ItemStatus) -> None:
    record = an_item(status=status)
    if status in CHANGEABLE:
        require_changeable(record, "retireItem")
        return
    with pytest.raises(Conflict) as refused:
        require_changeable(record, "retireItem")
    assert refused.value.extensions == {"currentStatus": status.value}


def test_r7_only_an_agents_replacement_of_a_ruling_waits_for_a_human() -> None:
    assert replacement_waits_for_a_human(AGENT, CONFIRMED)
    assert replacement_waits_for_a_human(AGENT, LOAD_BEARING)
    assert not replacement_waits_for_a_human(AGENT, UNRULED)
    assert not replacement_waits_for_a_human(HUMAN, CONFIRMED)


def replacement(target: ItemRecord, scope: Scope, grants: tuple[uuid.UUID, ...] = ()) -> NewItem:
    return NewItem(target.project_id, target.kind, "replacement", scope=scope, grant_actor_ids=grants)


def test_r2_a_replacement_may_widen_its_audience_but_never_narrow_it() -> None:
    team = an_item(scope=Scope.TEAM)
    assert keeps_audience(team, replacement(team, Scope.WORKSPACE), AGENT.id)
    assert keeps_audience(team, replacement(team, Scope.TEAM), AGENT.id)
    assert not keeps_audience(team, replacement(team, Scope.PROJECT), AGENT.id)
    assert not keeps_audience(team, replacement(team, Scope.PRIVATE), AGENT.id)


def test_r2_a_granted_item_keeps_every_grantee_and_its_asserter() -> None:
    other = uuid.uuid4()
    granted = an_item(scope=Scope.GRANTS, grant_actor_ids=[other], asserted_by=HUMAN.id)
    assert keeps_audience(granted, replacement(granted, Scope.GRANTS, (other, HUMAN.id)), AGENT.id)
    assert not keeps_audience(granted, replacement(granted, Scope.GRANTS, (other,)), AGENT.id)
    assert keeps_audience(granted, replacement(granted, Scope.WORKSPACE), AGENT.id)


@given(st.sampled_from(list(Scope)), st.sampled_from(list(Scope)))
def test_r2_a_replacement_in_the_same_scope_always_keeps_the_audience(first: Scope, second: Scope) -> None:
    """Same scope and same grants (asserter included) never narrow; a private target may go anywhere."""
    grants = (AGENT.id,)
    target = an_item(scope=first, grant_actor_ids=list(grants) if first == Scope.GRANTS else [])
    same = replacement(target, first, grants if first == Scope.GRANTS else ())
    assert keeps_audience(target, same, AGENT.id)
    if first == Scope.PRIVATE:
        assert keeps_audience(
            target, replacement(target, second, grants if second == Scope.GRANTS else ()), AGENT.id
        )
