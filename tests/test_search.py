"""``items(filter: {text})``: words in web-search syntax, each matching as a prefix, through the
full-text index (issue 24, storage.item.prefix_query; docs/counting.md, "Text search")."""

from __future__ import annotations

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
