"""The HTTP surface around GraphQL: health without a token, GraphiQL in a browser."""

from __future__ import annotations

import httpx


async def test_healthz_answers_without_a_token(http: httpx.AsyncClient) -> None:
    response = await http.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_graphiql_is_served_to_a_browser(http: httpx.AsyncClient) -> None:
    response = await http.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert "graphiql" in response.text.lower()


async def test_r14_a_query_without_a_token_is_unauthenticated(http: httpx.AsyncClient) -> None:
    response = await http.post("/graphql", json={"query": "{ me { id } }"})
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert response.json()["data"] is None
