"""Apollo's automatic persisted queries, byte for byte as Apollo Client sends them.

What must stay true: a hash-only request for an unknown hash answers 200 with
PERSISTED_QUERY_NOT_FOUND (Apollo then resends with the query; a 400 would
make it give up on APQ); hash + query runs and stores the text, after which
hash-only requests run by POST and by GET; a hash that is not the query's
SHA-256 is refused and stores nothing; only an authenticated request stores
(F1: no token, no memory); the cache never holds more bytes than its bound.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from mneia.http.persisted import PersistedQueries
from tests.graphql import World

# Apollo Client 3.x's HttpLink (and the persisted-queries link) send these.
APOLLO_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/graphql-response+json,application/json;q=0.9",
}


def sha256(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8")).hexdigest()


def fresh_query() -> str:
    """A query text no other test has persisted: the app (and its cache) is shared by the session."""
    return f"query Me {{ me {{ id }} }} # {uuid.uuid4().hex}"


def apq(query_hash: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": query_hash}}


async def send(
    http: httpx.AsyncClient, token: str | None, query_hash: str, query: str | None = None
) -> httpx.Response:
    body: dict[str, Any] = {"operationName": "Me", "variables": {}, "extensions": apq(query_hash)}
    if query is not None:
        body["query"] = query
    headers = {**APOLLO_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    return await http.post("/graphql", content=json.dumps(body), headers=headers)


def not_found(response: httpx.Response) -> bool:
    errors = response.json().get("errors") or []
    return response.status_code == 200 and [e["extensions"]["code"] for e in errors] == [
        "PERSISTED_QUERY_NOT_FOUND"
    ]


async def test_apq_apollo_exchange_hash_first_then_hash_and_query(
    http: httpx.AsyncClient, world: World
) -> None:
    query = fresh_query()
    token = world.human.token

    first = await send(http, token, sha256(query))
    assert not_found(first), first.text
    assert first.json()["errors"][0]["message"] == "PersistedQueryNotFound"

    second = await send(http, token, sha256(query), query)
    assert second.status_code == 200
    assert second.json() == {"data": {"me": {"id": world.human.id}}}

    third = await send(http, token, sha256(query))
    assert third.status_code == 200
    assert third.json() == {"data": {"me": {"id": world.human.id}}}


async def test_apq_hash_only_by_get_runs_a_stored_query(http: httpx.AsyncClient, world: World) -> None:
    """Apollo's ``useGETForHashedQueries``: the hash in the query string, no ``query`` parameter."""
    query = fresh_query()
    token = world.human.token
    assert (await send(http, token, sha256(query), query)).status_code == 200
    params = {"operationName": "Me", "variables": "{}", "extensions": json.dumps(apq(sha256(query)))}
    response = await http.get(
        "/graphql", params=params, headers={**APOLLO_HEADERS, "Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"data": {"me": {"id": world.human.id}}}


async def test_apq_a_hash_that_is_not_the_querys_is_refused_and_stores_nothing(
    http: httpx.AsyncClient, world: World
) -> None:
    query = fresh_query()
    wrong = sha256(query + " ")
    response = await send(http, world.human.token, wrong, query)
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "extensions.persistedQuery.sha256Hash"}
    assert not_found(await send(http, world.human.token, wrong))


async def test_f1_apq_stores_nothing_for_an_unauthenticated_request(
    http: httpx.AsyncClient, world: World
) -> None:
    """Introspection runs without a token, and a bad token is refused: neither fills the cache."""
    typename = f"query Me {{ __typename }} # {uuid.uuid4().hex}"
    ran = await send(http, None, sha256(typename), typename)
    assert ran.json() == {"data": {"__typename": "Query"}}
    assert not_found(await send(http, world.human.token, sha256(typename)))

    query = fresh_query()
    refused = await send(http, "mneia_not-a-token", sha256(query), query)
    assert refused.status_code == 401
    assert not_found(await send(http, world.human.token, sha256(query)))


async def test_apq_malformed_persisted_query_is_bad_user_input(http: httpx.AsyncClient) -> None:
    cases = {
        "extensions.persistedQuery": {"persistedQuery": "abc"},
        "extensions.persistedQuery.version": {"persistedQuery": {"version": 2, "sha256Hash": "0" * 64}},
        "extensions.persistedQuery.sha256Hash": {"persistedQuery": {"version": 1, "sha256Hash": "xyz"}},
    }
    for field, extensions in cases.items():
        response = await http.post("/graphql", json={"extensions": extensions}, headers=APOLLO_HEADERS)
        assert response.status_code == 400, response.text
        assert response.json()["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": field}


def test_f1_persisted_queries_evict_the_least_recently_used_by_bytes() -> None:
    cache = PersistedQueries(max_bytes=100)
    texts = {name: name * 40 for name in "abc"}  # 40 bytes each
    cache.put("a", texts["a"])
    cache.put("b", texts["b"])
    assert cache.get("a") == texts["a"]  # "a" is now the most recently used
    cache.put("c", texts["c"])  # 120 bytes > 100: "b" goes
    assert cache.get("b") is None
    assert cache.get("a") == texts["a"] and cache.get("c") == texts["c"]
    assert cache.size == 80
    cache.put("huge", "x" * 101)  # larger than the whole bound: never stored, evicts nothing
    assert cache.get("huge") is None and len(cache) == 2


@given(st.lists(st.text(max_size=60), max_size=40), st.integers(min_value=1, max_value=200))
def test_f1_property_persisted_queries_never_exceed_their_byte_bound(texts: list[str], bound: int) -> None:
    cache = PersistedQueries(max_bytes=bound)
    for text in texts:
        cache.put(sha256(text), text)
        assert cache.size <= bound
    held = [text for text in set(texts) if cache.get(sha256(text)) is not None]
    assert cache.size == sum(len(text.encode("utf-8")) for text in held)
