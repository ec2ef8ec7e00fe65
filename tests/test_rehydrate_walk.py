"""R11.9 as a property: a slice's present candidates are the same whichever path finds them.

Each kind's scan walks its newest items first and asks the text index for the older matches
only when the walk ran out before finding enough (rehydration.candidates._walked_scan); how far
it walks comes from a probe of the newest items (``walk_length``), and must never change the
answer. Here the walk length is drawn, from 1 (the index alone) to past the whole project.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.rehydration import candidates
from mneia.storage import database
from mneia.storage.database import Tx
from mneia.vocabulary import ItemKind
from tests.graphql import Api, World
from tests.support import RETIRE_ITEM, as_caller, rehydrate

WORDS = ("amber", "basalt", "cobalt")
KINDS = (ItemKind.FACT, ItemKind.DECISION)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# The newest one walked, the two older from the index.
@example([(ItemKind.FACT, frozenset({"amber"}), "shown")] * 4, frozenset({"amber"}), 3, 1, 1)
@given(
    written=st.lists(
        st.tuples(
            st.sampled_from(KINDS),
            st.frozensets(st.sampled_from(WORDS), min_size=1),
            st.sampled_from(("shown", "private", "retired")),
        ),
        min_size=4,
        max_size=16,
    ),
    task=st.frozensets(st.sampled_from(WORDS), min_size=1, max_size=2),
    scan=st.integers(1, 4),
    every_word=st.integers(1, 3),
    walk=st.integers(1, 4),
)
async def test_r11_9_r2_a_kinds_candidates_are_its_newest_matches_whatever_the_walk(
    api: Api,
    world: World,
    engine: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
    written: list[tuple[ItemKind, frozenset[str], str]],
    task: frozenset[str],
    scan: int,
    every_word: int,
    walk: int,
) -> None:
    """Per kind, the newest ``scan`` items still believed that share a word with the task, and of
    every kind the newest ``every_word`` sharing all its words: walked, read from the index, or
    both; never a retired item, nor the agent's PRIVATE one for the human (R2)."""
    monkeypatch.setattr(candidates, "walk_length", lambda *_: walk)
    project_id = await api.project(world.human.token, "walked")
    await api.add_member(world.human.token, project_id, world.agent.id)
    said: list[tuple[str, ItemKind, frozenset[str]]] = []
    for kind, words, fate in written:
        fields: dict[str, Any] = {"projectId": project_id, "kind": kind.value}
        fields["statement"] = " ".join(sorted(words)) + "."
        if fate == "private":
            fields["scope"] = "PRIVATE"
        answer = await api.assert_item(world.agent.token, **fields)
        if fate == "retired":
            await api.run(world.human.token, RETIRE_ITEM, i=answer["id"], r="done")
        if fate == "shown":
            said.append((answer["id"], kind, words))
    newest_first = list(reversed(said))  # ids are minted in time order

    expected = set()
    full = set()
    for kind in KINDS:
        matches = [i for i, k, words in newest_first if k is kind and words & task]
        expected |= set(matches[:scan])
        if len(matches) >= scan:
            full.add(kind)
    sharing_all = [i for i, _, words in newest_first if task <= words]
    expected |= set(sharing_all[:every_word])

    request = candidates.Request(
        project_id=uuid.UUID(project_id),
        task=" ".join(sorted(task)),
        pools={kind: scan if kind in KINDS else 0 for kind in ItemKind},
        scans={kind: scan if kind in KINDS else 0 for kind in ItemKind},
        every_word=every_word,
        every_word_scan=every_word,
        replacements=0,
        replacements_scan=0,
        since=datetime.now(UTC),
    )
    async with as_caller(engine, world.human) as connection:
        tx = Tx(connection, (await connection.get_raw_connection()).driver_connection)
        tx.workspace_id = uuid.UUID(world.workspace_id)  # as storage.token.authenticate sets it
        matched, came_full = await candidates.matches(tx, request, [])
    assert {str(m.record.id) for m in matched} == expected, (walk, scan)
    assert came_full == full, (walk, scan)


async def test_r11_9_the_probe_walks_as_the_candidates_do(api: Api, world: World) -> None:
    """The probe of the newest items, which sizes the walks, runs inside the same walk settings as
    the candidate statement (storage.database.walking): planned as a sort of the project's every
    item, a 10,000-item project's probe took 10.3 ms beside 1,000 other workspaces, 0.9 walked."""
    for statement in ("Amber basalt", "Cobalt amber"):
        await api.assert_item(world.human.token, projectId=world.project_id, kind="FACT", statement=statement)
    sent: list[str] = []

    def keep(_sender: Any, statement: str, _arguments: Any) -> None:
        if statement in (database.WALKS.sql, database.SORTS.sql):
            sent.append(statement)
        elif candidates.name_of(statement) in ("probe", "matches"):
            sent.append(candidates.name_of(statement))

    database.DRIVEN_OBSERVERS.append(keep)
    try:
        await rehydrate(api, world.agent.token, world.project_id, "amber basalt", 4000)
    finally:
        database.DRIVEN_OBSERVERS.remove(keep)
    assert sent == [database.WALKS.sql, "probe", "matches", database.SORTS.sql], sent
