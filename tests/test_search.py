"""``items(filter: {text})``: words in web-search syntax, each matching as a prefix, through the
full-text index (issue 24, storage.search; docs/counting.md, "Text search")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mneia.storage import count, search
from tests.graphql import Api, World

FIND = """query($p: ID!, $t: String!) {
  items(projectId: $p, first: 50, filter: {text: $t}) { totalCount totalCountIsExact nodes { statement } }
}"""

STATEMENTS = (
    "Refunds are batched nightly.",
    "Every webhook carries an idempotency key.",
    "Payment retries back off exponentially, never on a canary.",
    "Invoices are numbered per year.",
)


async def found(api: Api, world: World, words: str, who: str = "human") -> set[str]:
    token = world.human.token if who == "human" else world.agent.token
    answer = (await api.run(token, FIND, p=world.project_id, t=words))["items"]
    assert answer["totalCount"] == len(answer["nodes"]) and answer["totalCountIsExact"] is True
    return {node["statement"] for node in answer["nodes"]}


async def test_words_match_as_prefixes_phrases_and_exclusions(api: Api, world: World) -> None:
    for statement in STATEMENTS:
        await api.assert_item(world.human.token, projectId=world.project_id, statement=statement)
    refunds, idempotency, retries, invoices = STATEMENTS
    assert await found(api, world, "refund") == {refunds}  # stemmed: "Refunds" and "refund" meet
    assert await found(api, world, "idempot") == {idempotency}  # a prefix of a word
    assert await found(api, world, "IDEMPOTENCY KEYS") == {idempotency}  # case and plural
    assert await found(api, world, '"payment retries"') == {retries}  # a phrase
    assert await found(api, world, "payment -canary") == set()  # an exclusion
    assert await found(api, world, "invoices or refunds") == {invoices, refunds}
    assert await found(api, world, "ledger") == set()  # a word that matches nothing
    assert await found(api, world, "the") == set()  # a stop word alone


async def test_r2_search_finds_only_what_the_reader_may_see(api: Api, world: World) -> None:
    await api.assert_item(
        world.human.token, projectId=world.project_id, statement="Refunds go to ops.", scope="PRIVATE"
    )
    await api.assert_item(world.human.token, projectId=world.project_id, statement="Refunds are final.")
    assert await found(api, world, "refunds") == {"Refunds go to ops.", "Refunds are final."}
    assert await found(api, world, "refunds", who="agent") == {"Refunds are final."}


# --- the page of a search: the newest matches, whatever path found them --------------------------

PAGED = """query($p: ID!, $t: String!, $n: Int!, $a: String) {
  items(projectId: $p, first: $n, after: $a, filter: {text: $t}) {
    totalCount totalCountIsExact pageInfo { hasNextPage endCursor } nodes { id }
  }
}"""
WORDS = ("amber", "basalt", "cobalt")


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    written=st.lists(
        st.tuples(st.frozensets(st.sampled_from(WORDS), min_size=1), st.booleans()), min_size=1, max_size=14
    ),
    window=st.integers(1, 6),
    first=st.integers(1, 4),
    limit=st.integers(1, 8),
    walk=st.integers(1, 10),
)
# The older matches outnumber what a count reads: the page reads them again in order, and the
# count is the bound, not exact (storage.search.newest). Then: the window's matches alone do.
@example(written=[(frozenset({"amber"}), False)] * 4, window=1, first=1, limit=2, walk=10)
@example(written=[(frozenset({"amber"}), False)] * 5, window=3, first=4, limit=1, walk=10)
async def test_r2_a_search_pages_through_the_newest_matches_whatever_path_finds_them(
    api: Api,
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    written: list[tuple[frozenset[str], bool]],
    window: int,
    first: int,
    limit: int,
    walk: int,
) -> None:
    """Paging through a search returns every visible match once, newest first: through the window of
    newest items (storage.search.WINDOW, made small here), the older matches from the text index, or
    both, for words common and rare; its count is exact up to the bound, counted with the older
    matches, by walking or from the index (WALK, LIMIT, small too); the agent's PRIVATE items never
    reach the human (R2)."""
    monkeypatch.setattr(search, "WINDOW", window)
    monkeypatch.setattr(search, "WALK", walk)
    monkeypatch.setattr(count, "LIMIT", limit)
    project_id = await api.project(world.human.token, "paged")
    await api.add_member(world.human.token, project_id, world.agent.id)
    said: list[tuple[str, frozenset[str], bool]] = []
    for words, private in written:
        fields: dict[str, Any] = {"projectId": project_id, "statement": " ".join(sorted(words)) + "."}
        if private:
            fields["scope"] = "PRIVATE"
        answer = await api.assert_item(world.agent.token, **fields)
        said.append((answer["id"], words, private))
    for word in (*WORDS, "dolomite"):
        expected = [i for i, words, private in reversed(said) if word in words and not private]
        seen: list[str] = []
        after = None
        while True:
            page = (await api.run(world.human.token, PAGED, p=project_id, t=word, n=first, a=after))["items"]
            assert page["totalCount"] == min(len(expected), limit), (word, window, walk, limit)
            assert page["totalCountIsExact"] is (len(expected) <= limit)
            seen += [node["id"] for node in page["nodes"]]
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        assert seen == expected, (word, window, first)
