"""Issue 7, part 1: cost before work, authentication before caching (F1, F2, F3, F10, parse-error codes).

A document over a limit is refused with BAD_USER_INPUT naming the limit,
before any statement reaches the database, within a generous bound (< 1 s)
that the findings' queries missed by tens of seconds; a light query sent at
the same time still answers. Text that did not come with a valid token never
enters the shared document cache, and the cache stays within its byte budget.
Syntax and validation errors carry their code over POST, GET and the websocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from graphql import get_introspection_query, parse
from mneia.app import MneiaGraphQL, create_app
from mneia.config import app_url
from mneia.resolvers.request.cost import SLICE_WEIGHT, TEXT_WEIGHT, TOKENS_PER_UNIT, WRITE_WEIGHT, measure
from mneia.resolvers.request.document import DocumentCache
from mneia.resolvers.request.limit import LIMITS
from mneia.resolvers.root import MneiaSchema, build_schema
from mneia.storage.database import create_engine
from tests.graphql import Api, World
from tests.live import PATIENCE, uvicorn_serving
from tests.support import counted

QUICKLY = 1.0  # "refused in milliseconds": generous, yet the findings' queries took 33 to 50 s
LIGHT = "{ me { id } }"
READY = PATIENCE  # a bound on setup steps (a server, a websocket handshake), never waited out


def nested(levels: list[str], leaf: str = "id") -> str:
    """``a { b { … leaf } }`` with ``levels`` outermost first."""
    selection = leaf
    for field in reversed(levels):
        selection = f"{field} {{ {selection} }}"
    return selection


# F2: item → disputes → contested → disputes → … nine levels deep; chain { chain { … } } eleven deep.
F2_DISPUTES = (
    "query($i: ID!) { item(id: $i) { " + nested(["disputes", "contested"] * 4 + ["disputes"]) + " } }"
)
F2_CHAIN = "query($i: ID!) { item(id: $i) { " + nested(["chain"] * 11) + " } }"
# F3: 60 aliases of a full page.
F3_ALIASES = (
    "query($p: ID!) { "
    + " ".join(
        f"a{n}: items(projectId: $p, first: 500) {{ nodes {{ id statement rendered stale }} }}"
        for n in range(60)
    )
    + " }"
)


async def answer(
    http: httpx.AsyncClient, token: str | None, query: str, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON body of a POST, whatever its status (the status codes are another part of issue 7)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = await http.post(
        "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
    )
    return response.json()


def limits_named(body: dict[str, Any]) -> set[str]:
    """The limits a refusal names; every error must be a BAD_USER_INPUT that names one."""
    assert body.get("data") is None, body
    errors = body["errors"]
    assert all(error["extensions"]["code"] == "BAD_USER_INPUT" for error in errors), errors
    named = {error["extensions"]["limit"] for error in errors}
    assert all(f"({error['extensions']['limit']})" in error["message"] for error in errors), errors
    return named


async def refused_quickly(
    api: Api, engine: AsyncEngine, token: str, query: str, variables: dict[str, Any]
) -> set[str]:
    """Refuse ``query`` with no statement run, quickly; a light query at the same time answers. Its limits."""
    with counted(engine) as statements:
        started = time.perf_counter()
        body = await answer(api.http, token, query, variables)
        elapsed = time.perf_counter() - started
    assert statements == [], statements
    assert elapsed < QUICKLY, f"refused in {elapsed:.2f} s"

    started = time.perf_counter()
    heavy, light = await asyncio.gather(
        answer(api.http, token, query, variables), answer(api.http, token, LIGHT)
    )
    assert time.perf_counter() - started < QUICKLY
    assert light["data"]["me"]["id"], light
    assert limits_named(heavy) == limits_named(body)
    return limits_named(body)


@pytest.fixture
async def disputed(api: Api, world: World) -> str:
    """An item with 4 disputes, each newcomer contesting it (as in F2)."""
    contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="Port 5432")
    for n in range(4):
        await api.assert_item(
            world.agent.token,
            projectId=world.project_id,
            statement=f"Port {6432 + n}",
            contradicts=[contested["id"]],
        )
    item = await api.run(
        world.human.token, "query($i: ID!) { item(id: $i) { disputes { id } } }", i=contested["id"]
    )
    assert len(item["item"]["disputes"]) == 4
    return str(contested["id"])


# --- F2, F3: cost, depth, aliases -------------------------------------------------------------------


async def test_f2_nested_disputes_refused_by_cost(
    api: Api, engine: AsyncEngine, world: World, disputed: str
) -> None:
    """Nine levels of disputes/contested stay within maxDepth: the cost alone refuses them."""
    named = await refused_quickly(api, engine, world.agent.token, F2_DISPUTES, {"i": disputed})
    assert named == {"maxCost"}


async def test_f2_nested_chain_refused_by_depth_and_cost(
    api: Api, engine: AsyncEngine, world: World, disputed: str
) -> None:
    named = await refused_quickly(api, engine, world.agent.token, F2_CHAIN, {"i": disputed})
    assert named == {"maxDepth", "maxCost"}


async def test_f3_sixty_aliases_of_a_full_page_refused_by_cost(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    """60 aliases are within maxAliases: what they would fetch (60 × 500 items) is not."""
    named = await refused_quickly(api, engine, world.agent.token, F3_ALIASES, {"p": world.project_id})
    assert named == {"maxCost"}


SLICES = (
    "query($i: RehydrateInput!) { "
    + " ".join(f"s{n}: rehydrate(input: $i) {{ rendered }}" for n in range(100))
    + " }"
)
RESUMES = (
    "query($i: ResumeInput!) { "
    + " ".join(f"r{n}: resume(input: $i) {{ rendered }}" for n in range(100))
    + " }"
)


@pytest.mark.parametrize(("document", "budget"), [(SLICES, 4000), (SLICES, 1), (RESUMES, 4000)])
async def test_issue_21_a_hundred_slices_sharing_one_variable_are_refused_by_cost(
    api: Api, engine: AsyncEngine, world: World, document: str, budget: int
) -> None:
    """100 aliases of ``rehydrate(input: $i)`` (1.1 KB) ran 26.7 s: each slice weighs what its work
    does, so they weigh 100 slices, at any budget, and are refused before any SQL."""
    asked = {"projectId": world.project_id, "task": "refunds", "tokenBudget": budget}
    named = await refused_quickly(api, engine, world.agent.token, document, {"i": asked})
    assert named == {"maxCost"}


async def test_issue_21_a_slice_weighs_its_budget_whether_inline_or_in_a_variable(
    api: Api, world: World
) -> None:
    schema = build_schema()._schema
    by_variable = parse("query($i: RehydrateInput!) { rehydrate(input: $i) { rendered } }")
    inline = parse('{ rehydrate(input: {projectId: "x", task: "t", tokenBudget: 4000}) { rendered } }')
    asked = {"i": {"projectId": "x", "task": "t", "tokenBudget": 4000}}
    weighed = measure(schema, by_variable, None, asked, LIMITS.list_size).cost
    assert weighed == measure(schema, inline, None, {}, LIMITS.list_size).cost
    assert weighed == 1 + SLICE_WEIGHT + 4000 // TOKENS_PER_UNIT + TEXT_WEIGHT  # rendered: a long text
    larger = {"i": {**asked["i"], "tokenBudget": 40_000}}
    assert measure(schema, by_variable, None, larger, LIMITS.list_size).cost > 4 * weighed
    # A few slices in one document are an ordinary query (the README's walkthrough sends two).
    few = "query($i: RehydrateInput!) { a: rehydrate(input: $i) { rendered }"
    few += " b: rehydrate(input: $i) { tokensUsed } }"
    data = await api.run(
        world.agent.token, few, i={"projectId": world.project_id, "task": "t", "tokenBudget": 4000}
    )
    assert set(data) == {"a", "b"}


async def test_issue_21_forty_full_pages_of_details_are_refused_by_cost(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    """40 aliases of ``items(first: 500) { nodes { details } }`` weighed 20,080, passed, and answered
    180 MB while a light query stalled 6.2 s: a long text field weighs what it may hold."""
    pages = " ".join(f"p{n}: items(projectId: $p, first: 500) {{ nodes {{ details }} }}" for n in range(40))
    named = await refused_quickly(
        api, engine, world.agent.token, f"query($p: ID!) {{ {pages} }}", {"p": world.project_id}
    )
    assert named == {"maxCost"}


def test_issue_21_a_checkpoint_weighs_what_it_writes() -> None:
    schema = build_schema()._schema
    document = parse("mutation($i: CheckpointInput!) { checkpoint(input: $i) { id } }")
    item = {"projectId": "x", "kind": "FACT", "statement": "s"}

    def weighed(count: int) -> int:
        asked = {"i": {"sessionId": "s", "summary": "x", "items": [item] * count}}
        return measure(schema, document, None, asked, LIMITS.list_size).cost

    assert weighed(10) - weighed(0) == 10 * WRITE_WEIGHT
    assert weighed(1000) > LIMITS.max_cost  # a thousand writes in one field is refused before it runs


async def test_issue_21_several_operations_without_an_operation_name_are_an_error(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    """The first operation ran; GraphQL over HTTP asks for an error. Now such a document is
    refused and runs nothing; naming an operation runs that one, measured (60 full pages still
    refused by cost)."""
    heavy = F3_ALIASES.replace("query($p: ID!)", "query Heavy($p: ID!)", 1)
    document = f"query Light {{ me {{ id }} }} {heavy}"
    with counted(engine) as statements:
        body = await answer(api.http, world.agent.token, document, {"p": world.project_id})
    assert statements == []
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" and "operationName" in error["message"]
    headers = {"Authorization": f"Bearer {world.agent.token}"}
    for name, expected in (("Light", None), ("Heavy", "maxCost")):
        chosen = {"query": document, "variables": {"p": world.project_id}, "operationName": name}
        answered = (await api.http.post("/graphql", json=chosen, headers=headers)).json()
        if expected is None:
            assert answered["data"]["me"]["id"] == world.agent.id
        else:
            assert limits_named(answered) == {expected}


async def test_f2_shallow_cycle_answers(api: Api, world: World, disputed: str) -> None:
    """Positive control: the same cycle, three levels deep, is an ordinary query and answers."""
    query = "query($i: ID!) { item(id: $i) { " + nested(["disputes", "contested", "disputes"]) + " } }"
    data = await api.run(world.agent.token, query, i=disputed)
    assert len(data["item"]["disputes"]) == 4


async def test_max_depth_refuses_a_deep_chain_of_single_items(
    api: Api, engine: AsyncEngine, world: World
) -> None:
    """``supersedes`` is not a list: cheap, but deeper than maxDepth."""
    query = '{ item(id: "0") { ' + nested(["supersedes"] * LIMITS.max_depth) + " } }"
    named = await refused_quickly(api, engine, world.agent.token, query, {})
    assert named == {"maxDepth"}


async def test_max_aliases_refuses_many_aliases(api: Api, engine: AsyncEngine, world: World) -> None:
    query = "{ " + " ".join(f"a{n}: __typename" for n in range(LIMITS.max_aliases + 1)) + " }"
    named = await refused_quickly(api, engine, world.agent.token, query, {})
    assert named == {"maxAliases"}


async def test_fragments_spread_twice_are_measured_once(api: Api, engine: AsyncEngine, world: World) -> None:
    """40 fragments, each spreading the next twice: 2^40 fields as executed, measured in linear time."""
    fragments = [f"fragment F{n} on Query {{ ...F{n + 1} ...F{n + 1} }}" for n in range(40)]
    query = "\n".join(["{ ...F0 }", *fragments, "fragment F40 on Query { me { id } }"])
    named = await refused_quickly(api, engine, world.agent.token, query, {})
    assert named == {"maxCost"}


async def test_page_size_from_a_variable_weighs_the_page(api: Api, world: World) -> None:
    """``first`` from a variable sets the page's weight; a single page of 500 is still an ordinary query."""
    page = "query($p: ID!, $n: Int) { items(projectId: $p, first: $n) { nodes { id statement rendered } } }"
    schema, document = build_schema()._schema, parse(page)
    small = measure(schema, document, None, {"p": "x", "n": 50}, LIMITS.list_size)
    large = measure(schema, document, None, {"p": "x", "n": 500}, LIMITS.list_size)
    default = measure(schema, document, None, {"p": "x"}, LIMITS.list_size)
    assert large.cost > 9 * small.cost
    assert default == small  # the schema's default page size, 50
    await api.run(world.agent.token, page, p=world.project_id, n=500)


@pytest.mark.parametrize(
    "options",
    [
        {},  # graphql-core's default: what Apollo's tooling sends
        # GraphiQL's
        {
            "descriptions": True,
            "specified_by_url": True,
            "directive_is_repeatable": True,
            "schema_description": True,
            "input_value_deprecation": True,
            "one_of": True,
        },
    ],
)
async def test_introspection_queries_pass_the_limits(
    api: Api, world: World, options: dict[str, bool]
) -> None:
    query = get_introspection_query(**options)
    for token in (None, world.agent.token):
        body = await answer(api.http, token, query)
        assert "errors" not in body, body["errors"]
        assert body["data"]["__schema"]["queryType"]["name"] == "Query"


# --- F1: size and tokens before parsing; authentication before caching --------------------------


@pytest.fixture(scope="module")
async def own_app(admin_url: str) -> AsyncIterator[tuple[httpx.AsyncClient, MneiaSchema, AsyncEngine]]:
    """An application of its own, so that its document cache holds only this module's texts."""
    engine = create_engine(app_url(admin_url), pool_size=2)
    app = create_app(engine, dispose_engine=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://mneia.test") as http:
        yield http, schema_of(app), engine
    await engine.dispose()


def schema_of(app: Starlette) -> MneiaSchema:
    graphql = next(route.endpoint for route in app.routes if isinstance(route, WebSocketRoute))
    assert isinstance(graphql, MneiaGraphQL)
    schema = graphql.schema
    assert isinstance(schema, MneiaSchema)
    return schema


def introspection(tag: int, size: int) -> str:
    """A distinct introspection-only text of about ``size`` bytes, valid within every limit."""
    return '{ __type(name: "' + f"{tag}".ljust(size - 40, "x") + '") { name } }'


async def test_f1_text_without_a_valid_token_never_enters_the_cache(
    own_app: tuple[httpx.AsyncClient, MneiaSchema, AsyncEngine], world: World
) -> None:
    http, schema, _ = own_app
    before = len(schema.documents), schema.documents.size
    large = LIMITS.max_document_bytes
    for tag in range(8):
        text = introspection(tag, large)
        body = await answer(http, None, text)  # introspection only: answered without a token
        assert body == {"data": {"__type": None}}, body
        assert text not in schema.documents
    for token in ("not-a-token", world.agent.token + "x"):
        text = "{ me { id name } }"
        body = await answer(http, token, text)
        assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        assert text not in schema.documents
    assert (len(schema.documents), schema.documents.size) == before

    # Positive control: the same shapes, sent with a valid token, are kept for reuse.
    text = introspection(99, large)
    assert (await answer(http, world.agent.token, text)) == {"data": {"__type": None}}
    assert "{ me { id name } }" not in schema.documents
    await answer(http, world.agent.token, "{ me { id name } }")
    assert text in schema.documents and "{ me { id name } }" in schema.documents
    assert schema.documents.size <= schema.documents.budget


async def test_f1_document_over_the_size_limit_refused_before_parsing(
    own_app: tuple[httpx.AsyncClient, MneiaSchema, AsyncEngine], world: World
) -> None:
    http, schema, engine = own_app
    text = "{ " + "__typename " * 100_000 + "}"  # 1.1 MB, as in F1
    for token in (None, world.agent.token):
        with counted(engine) as statements:
            started = time.perf_counter()
            body = await answer(http, token, text)
            assert time.perf_counter() - started < QUICKLY
        assert statements == []
        assert limits_named(body) == {"maxDocumentBytes"}
        assert text not in schema.documents


async def test_f1_document_over_the_token_limit_refused(
    own_app: tuple[httpx.AsyncClient, MneiaSchema, AsyncEngine], world: World
) -> None:
    http, schema, _ = own_app
    text = "{ " + "a " * LIMITS.max_tokens + "}"  # small in bytes, over in tokens
    assert len(text.encode()) < LIMITS.max_document_bytes
    body = await answer(http, world.agent.token, text)
    assert limits_named(body) == {"maxTokens"}
    # Comments count: they are allocated as tokens too.
    commented = "{ __typename }" + "\n#" * (LIMITS.max_tokens + 1)
    assert limits_named(await answer(http, None, commented)) == {"maxTokens"}


async def test_f1_repeated_fields_cannot_hold_the_server_in_validation(
    own_app: tuple[httpx.AsyncClient, MneiaSchema, AsyncEngine], world: World
) -> None:
    """Comparing same-named fields is quadratic: graphql-core's own budget for it is lowered.

    450 copies of ``me { id }`` (within maxTokens) held its default budget for 0.75 s;
    100 copies stayed within the default and ran.
    """
    http, _, _ = own_app
    for copies in (450, 100):
        started = time.perf_counter()
        body = await answer(http, world.agent.token, "{ " + "me { id } " * copies + "}")
        assert time.perf_counter() - started < QUICKLY
        assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED", body
        assert body["errors"][0]["message"] == "Validation aborted."


@settings(max_examples=200, deadline=None)
@given(
    budget=st.integers(min_value=0, max_value=5_000),
    puts=st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(min_value=0, max_value=2_000))),
)
def test_f1_document_cache_never_grows_past_its_byte_budget(budget: int, puts: list[tuple[str, int]]) -> None:
    cache = DocumentCache(budget)
    document = parse("{ __typename }")
    kept: dict[str, int] = {}  # the weight each text was last kept at
    for text, weight in puts:
        cache.put(text, document, weight)
        if weight <= budget:
            kept[text] = weight
            assert cache.get(text) is document  # what fits is kept, the newest last to leave
        assert cache.size <= budget
        assert cache.size == sum(kept[held] for held in kept if held in cache)


# --- F10: introspection without a token means introspection only, through fragments too ------------


@pytest.mark.parametrize(
    "query",
    [
        "{ ...__F } fragment __F on Query { projects { id } }",
        "{ __typename ... on Query { projects { id } } }",
        "{ ...A } fragment A on Query { __typename ...B } fragment B on Query { ... { projects { id } } }",
    ],
)
async def test_f10_fields_reached_through_fragments_need_a_token(
    api: Api, engine: AsyncEngine, world: World, query: str
) -> None:
    with counted(engine) as statements:
        body = await answer(api.http, None, query)
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", body
    assert body.get("data") is None
    assert statements == []  # no resolver ran, inside a transaction or outside one
    # Positive control: with a token, the same document answers.
    assert (await answer(api.http, world.agent.token, query))["data"]["projects"]


async def test_f10_introspection_through_fragments_answers_without_a_token(api: Api) -> None:
    body = await answer(
        api.http, None, "{ ...F } fragment F on Query { __typename ... { __schema { queryType { name } } } }"
    )
    assert body["data"] == {"__typename": "Query", "__schema": {"queryType": {"name": "Query"}}}


# --- F14-16: syntax and validation errors carry their code on every transport -----------------------

BAD_DOCUMENTS = [("{ me { id ", "GRAPHQL_PARSE_FAILED"), ("{ nope }", "GRAPHQL_VALIDATION_FAILED")]


@pytest.mark.parametrize(("query", "code"), BAD_DOCUMENTS)
@pytest.mark.parametrize("token", [True, False], ids=["token", "no-token"])
async def test_parse_and_validation_errors_carry_their_code_over_post_and_get(
    api: Api, world: World, query: str, code: str, token: bool
) -> None:
    headers = {"Authorization": f"Bearer {world.agent.token}"} if token else {}
    posted = await api.http.post("/graphql", json={"query": query}, headers=headers)
    got = await api.http.get("/graphql", params={"query": query}, headers=headers)
    for response in (posted, got):
        errors = response.json()["errors"]
        assert [error["extensions"]["code"] for error in errors] == [code], errors


@pytest.fixture(scope="module")
async def websocket_url(admin_url: str) -> AsyncIterator[str]:
    """uvicorn serving the application on a free local port (graphql-transport-ws needs a real server)."""
    engine = create_engine(app_url(admin_url), pool_size=2)
    try:
        async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
            yield f"ws://127.0.0.1:{port}/graphql"
    finally:
        await engine.dispose()


@pytest.mark.parametrize(("query", "code"), [*BAD_DOCUMENTS, (F3_ALIASES, "BAD_USER_INPUT")])
async def test_parse_validation_and_limit_errors_carry_their_code_over_the_websocket(
    websocket_url: str, world: World, query: str, code: str
) -> None:
    protocol = Subprotocol("graphql-transport-ws")
    async with connect(websocket_url, subprotocols=[protocol], open_timeout=READY) as ws:
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {world.agent.token}"}}
        await ws.send(json.dumps(init))
        assert json.loads(await asyncio.wait_for(ws.recv(), READY))["type"] == "connection_ack"
        variables = {"p": world.project_id} if "$p" in query else {}
        payload = {"query": query, "variables": variables}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        message = json.loads(await asyncio.wait_for(ws.recv(), READY))
        with contextlib.suppress(Exception):
            await ws.close()
    assert message["type"] == "error", message
    assert [error["extensions"]["code"] for error in message["payload"]] == [code], message
