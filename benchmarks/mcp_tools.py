"""MCP benchmark: what a tool call costs over ``/mcp`` and over ``mneia mcp`` beside the GraphQL it wraps.

One project of ``--items`` agent assertions (sentences from the shared
generator). The app runs in a child process (``common.running_server``); this
process is the client: httpx for ``/graphql``, the MCP SDK's own client for
``/mcp`` (Streamable HTTP, one stateful connection) and for ``mneia mcp``
(stdio, a third process that calls ``/graphql`` over HTTP). For each
operation, sequential calls, after a warm-up:

- ``search`` — ``items(filter: {text}, first: 10)`` with ``rendered`` / ``search_items``;
- ``rehydrate`` — a 2,000-token slice / ``rehydrate``;
- ``assert`` — ``assertItem`` / ``assert_item`` (the connection's session already started);
- ``connect`` — an MCP client's whole handshake, ``initialize`` to ``tools/list``
  (for stdio, the process start included).

    .venv/bin/python benchmarks/mcp_tools.py                       # full
    .venv/bin/python benchmarks/mcp_tools.py --samples 30          # smoke

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
from common import HEADER, WORDS, Series, gql, on_fresh_database, running_server, sentence, timed
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Implementation

from mneia.storage import workspace
from mneia.storage.database import create_engine

CLIENT = Implementation(name="mneia-benchmark", version="1")
SEARCH = """query($p: ID!, $t: String) {
  items(projectId: $p, filter: {text: $t}, first: 10) { nodes { id rendered } } }"""
REHYDRATE = """query($p: ID!, $t: String!) {
  rehydrate(input: {projectId: $p, task: $t, tokenBudget: 2000}) { rendered } }"""
ASSERT = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id rendered } }"


@dataclass(frozen=True)
class Options:
    items: int
    samples: int
    warmup: int
    connects: int


async def sampled(series: Series, call: Callable[[], Awaitable[Any]], options: Options) -> None:
    for _ in range(options.warmup):
        await call()
    for _ in range(options.samples):
        took, _ = await timed(call)
        series.samples.append(took)


def checked(result: CallToolResult) -> CallToolResult:
    if result.is_error:
        raise SystemExit(f"a tool failed: {result.content}")
    return result


async def run(options: Options, url: str, version: str) -> None:
    admin = create_engine(url, pool_size=1)
    made = await workspace.bootstrap(admin, "bench", "alice")
    await admin.dispose()
    rng = random.Random(7)
    with running_server(url) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            human = made.token
            project = (await gql(http, human, 'mutation { createProject(name: "payments") { id } }'))[
                "createProject"
            ]["id"]
            made_agent = await gql(
                http, human, 'mutation { createActor(kind: AGENT, name: "bench") { actor { id } token } }'
            )
            agent = made_agent["createActor"]["token"]
            await gql(
                http,
                human,
                "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }",
                p=project,
                a=made_agent["createActor"]["actor"]["id"],
            )
            for _ in range(options.items):
                item = {"projectId": project, "kind": "FACT", "statement": sentence(rng, 8, 24)}
                await gql(http, agent, ASSERT, i=item)

            series: list[Series] = []
            task = " ".join(rng.sample(WORDS, 2))

            def add(name: str) -> Series:
                series.append(Series(name, None))
                return series[-1]

            await sampled(
                add("graphql search"),
                lambda: gql(http, agent, SEARCH, p=project, t=rng.choice(WORDS)),
                options,
            )
            await sampled(
                add("graphql rehydrate"), lambda: gql(http, agent, REHYDRATE, p=project, t=task), options
            )

            def fact() -> dict[str, Any]:
                return {"projectId": project, "kind": "FACT", "statement": sentence(rng, 8, 24)}

            await sampled(add("graphql assert"), lambda: gql(http, agent, ASSERT, i=fact()), options)

        headers = {"Authorization": f"Bearer {agent}"}
        connection = streamable_http_client(
            f"{base}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60)
        )
        async with Client(connection, client_info=CLIENT, mode="legacy") as client:
            await sampled(
                add("/mcp search_items"),
                lambda: client.call_tool("search_items", {"text": rng.choice(WORDS)}),
                options,
            )
            await sampled(
                add("/mcp rehydrate"), lambda: client.call_tool("rehydrate", {"task": task}), options
            )
            await sampled(
                add("/mcp assert_item"),
                lambda: client.call_tool("assert_item", {"kind": "FACT", "statement": sentence(rng, 8, 24)}),
                options,
            )

        env = {**os.environ, "MNEIA_URL": base, "MNEIA_TOKEN": agent}
        parameters = StdioServerParameters(command=sys.executable, args=["-m", "mneia.cli", "mcp"], env=env)
        async with Client(parameters, client_info=CLIENT, mode="legacy") as client:
            await sampled(
                add("stdio search_items"),
                lambda: client.call_tool("search_items", {"text": rng.choice(WORDS)}),
                options,
            )
            await sampled(
                add("stdio rehydrate"), lambda: client.call_tool("rehydrate", {"task": task}), options
            )
            await sampled(
                add("stdio assert_item"),
                lambda: client.call_tool("assert_item", {"kind": "FACT", "statement": sentence(rng, 8, 24)}),
                options,
            )

        async def connect_http() -> None:
            http2 = httpx2.AsyncClient(headers=headers, timeout=60)
            async with Client(
                streamable_http_client(f"{base}/mcp", http_client=http2), client_info=CLIENT, mode="legacy"
            ) as c:
                await c.list_tools()

        async def connect_stdio() -> None:
            async with Client(parameters, client_info=CLIENT, mode="legacy") as c:
                await c.list_tools()

        connects = Options(options.items, options.connects, 2, options.connects)
        await sampled(add("/mcp connect + tools/list"), connect_http, connects)
        await sampled(add("stdio connect + tools/list"), connect_stdio, connects)

    print(f"PostgreSQL {version}; {options.items} items; {options.samples} calls each, sequential")
    print(HEADER)
    for one in series:
        print(one.row())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--connects", type=int, default=20)
    args = parser.parse_args(argv)
    on_fresh_database(run, Options(args.items, args.samples, args.warmup, args.connects))
    return 0


if __name__ == "__main__":
    sys.exit(main())
