"""Real clients of other ecosystems against a real ``mneia serve``, over real sockets.

- Apollo Client 4 with automatic persisted queries (Node): the hash-only
  request, the fallback with the text, the cached hash next time, a mutation,
  a refusal it can read.
- graphql-ws, the reference graphql-transport-ws client (Node): a
  subscription delivers a dispute raised while it listens (R15).
- gql, Python's GraphQL client, over HTTP and over graphql-transport-ws.

The Node clients are pinned in tests/clients/package-lock.json; their tests
skip, saying why, when node or npm is missing.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError
from gql.transport.httpx import HTTPXAsyncTransport
from gql.transport.websockets import WebsocketsTransport

from tests.graphql import Api, World
from tests.live import CLIENTS, cli_env, node_clients, serving
from tests.support import rows

STATEMENT_OF = "SELECT statement FROM items WHERE id = :id"
DISPUTE = 'mutation($i: ID!, $c: ID!) { disputeItem(id: $i, contestedId: $c, reason: "gql") { id } }'


@pytest.fixture(scope="module")
def base(admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mneia serve`` over the tests' database, for every test of this module."""
    logs = tmp_path_factory.mktemp("real-clients")
    with serving([], cli_env(logs, DATABASE_URL=admin_url), logs) as (_, url):
        yield url


def node(script: str, *args: str) -> dict[str, Any]:
    executable = node_clients()
    ran = subprocess.run(
        [executable, str(CLIENTS / script), *args], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


async def two_items(api: Api, world: World) -> tuple[str, str]:
    first = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Ship on Fridays")
    second = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Never ship on Fridays"
    )
    return first["id"], second["id"]


async def test_apollo_client_with_persisted_queries(base: str, world: World, api: Api) -> None:
    ran = await asyncio.to_thread(node, "apollo.mjs", f"{base}/graphql", world.agent.token, world.project_id)
    hash_only, with_text, cached = ran["sent"][:3]
    # Apollo's exchange: the hash alone, then (not found) the hash with the text, then the hash alone again.
    assert hash_only["hashOnly"] and not with_text["hashOnly"] and cached["hashOnly"]
    assert hash_only["hash"] == with_text["hash"] == cached["hash"]
    assert (
        ran["me"]
        == ran["again"]
        == {"__typename": "Actor", "id": world.agent.id, "kind": "AGENT", "name": "claude-code"}
    )
    assert ran["asserted"]["authority"] == "AGENT_ASSERTED"
    assert ran["refused"] == [{"message": "input.statement: must not be empty", "code": "BAD_USER_INPUT"}]
    stored = await rows(
        api.admin_engine, "SELECT statement FROM items WHERE id = :id", id=ran["asserted"]["id"]
    )
    assert stored == [{"statement": "Apollo Client persisted this query"}]


async def test_r15_graphql_ws_client_receives_a_dispute(base: str, world: World, api: Api) -> None:
    item, contested = await two_items(api, world)
    ws = base.replace("http://", "ws://") + "/graphql"
    ran = await asyncio.to_thread(
        node, "graphql-ws.mjs", ws, f"{base}/graphql", world.agent.token, item, contested
    )
    assert "errors" not in ran["raised"], ran["raised"]
    event = ran["event"]["data"]["disputeRaised"]
    assert event["id"] == ran["raised"]["data"]["disputeItem"]["id"]
    assert (event["item"]["id"], event["contested"]["id"], event["reason"]) == (item, contested, "graphql-ws")


def http_client(base: str, token: str) -> Client:
    transport = HTTPXAsyncTransport(url=f"{base}/graphql", headers={"Authorization": f"Bearer {token}"})
    return Client(transport=transport)


async def test_gql_over_http_queries_and_reads_errors(base: str, world: World) -> None:
    async with http_client(base, world.agent.token) as session:
        answer = await session.execute(gql("{ me { id kind } }"))
        assert answer == {"me": {"id": world.agent.id, "kind": "AGENT"}}
        with pytest.raises(TransportQueryError) as refused:
            await session.execute(gql('mutation { confirmItem(id: "nope") { id } }'))
    assert refused.value.errors is not None
    assert refused.value.errors[0]["extensions"] == {"code": "FORBIDDEN", "reason": "HUMAN_REQUIRED"}


async def test_r15_gql_over_graphql_transport_ws_receives_a_dispute(
    base: str, world: World, api: Api
) -> None:
    item, contested = await two_items(api, world)
    transport = WebsocketsTransport(
        url=base.replace("http://", "ws://") + "/graphql",
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        init_payload={"Authorization": f"Bearer {world.agent.token}"},
    )
    subscription = gql("subscription { disputeRaised { id item { id } contested { id } } }")
    async with Client(transport=transport) as session:
        events = session.subscribe(subscription)
        first = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(0.5)  # the subscribe message reaches the server
        dispute = gql(DISPUTE)
        dispute.variable_values = {"i": item, "c": contested}
        async with http_client(base, world.agent.token) as writer:
            raised = await writer.execute(dispute)
        event = (await asyncio.wait_for(first, 10))["disputeRaised"]
        await events.aclose()
    assert event == {"id": raised["disputeItem"]["id"], "item": {"id": item}, "contested": {"id": contested}}


def test_the_node_clients_are_pinned() -> None:
    """What the Node tests run is what the lock file names, never a floating version."""
    package = json.loads((CLIENTS / "package.json").read_text())
    assert all(version[0].isdigit() for version in package["dependencies"].values()), package
    assert Path(CLIENTS / "package-lock.json").is_file()
