"""MCP clients of another ecosystem against a real Mneia: the MCP Inspector's CLI (over Streamable HTTP
and over stdio, listing and calling tools) and the protocol scenarios of the MCP conformance suite that
apply to a server with Mneia's tools (pinned in tests/clients/package-lock.json)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Receive, Scope, Send

from mneia.app import create_app
from tests.graphql import Api, World
from tests.live import CLI, CLIENTS, node_clients, uvicorn_serving

INSPECTOR = CLIENTS / "node_modules" / "@modelcontextprotocol" / "inspector"
CONFORMANCE = CLIENTS / "node_modules" / "@modelcontextprotocol" / "conformance"

# The conformance suite's server scenarios that test the protocol rather than its own fixture server's
# tools, resources and prompts (test_image_content, test://static-text, test_simple_prompt…), and
# features Mneia offers. Not applicable: logging/setLevel, completion, resource subscriptions,
# sampling, elicitation, progress, SSE polling/resumption (Mneia offers none), and every scenario
# that calls a fixture by name.
SCENARIOS = (
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
)


def installed(package: Path) -> str:
    """Node, with ``package`` installed from the lock file; the test skips, saying why, when the npm
    registry cannot be reached (``npm ci`` fails) or the package is absent."""
    try:
        node = node_clients()
    except AssertionError as failed:
        pytest.skip(f"tests/clients could not be installed (npm registry unreachable?): {failed}"[:500])
    if not (package / "package.json").is_file():
        pytest.skip(f"{package.name} is not installed in {CLIENTS} (npm registry unreachable?)")
    return node


def bin_of(package: Path, name: str) -> str:
    bins = json.loads((package / "package.json").read_text())["bin"]
    return str(package / (bins[name] if isinstance(bins, dict) else bins))


def inspector(node: str, *args: str) -> dict[str, Any]:
    """``mcp-inspector --cli …``; its JSON answer."""
    ran = subprocess.run(
        [node, bin_of(INSPECTOR, "mcp-inspector"), "--cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=CLIENTS,
    )
    assert ran.returncode == 0, f"inspector failed:\n{ran.stdout}\n{ran.stderr}"
    answer: dict[str, Any] = json.loads(ran.stdout)
    return answer


@pytest.fixture(scope="module")
async def base(engine: AsyncEngine) -> AsyncIterator[str]:
    async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
        yield f"http://127.0.0.1:{port}"


async def test_inspector_cli_over_http_lists_and_calls_tools(base: str, world: World) -> None:
    node = installed(INSPECTOR)
    bearer = f"Authorization: Bearer {world.agent.token}"
    listed = await asyncio.to_thread(
        inspector, node, f"{base}/mcp", "--header", bearer, "--method", "tools/list"
    )
    assert {tool["name"] for tool in listed["tools"]} >= {"assert_item", "search_items", "resume"}
    called = await asyncio.to_thread(
        inspector,
        node,
        f"{base}/mcp",
        "--header",
        bearer,
        "--method",
        "tools/call",
        "--tool-name",
        "assert_item",
        "--tool-arg",
        "kind=FACT",
        "statement=The inspector was here",
    )
    assert called["isError"] is False
    (block,) = called["content"]
    # R13: the session names the client the Inspector said it is, from its handshake.
    assert block["text"].startswith("[agent-asserted · inspector-cli ")
    assert "FACT: The inspector was here — id " in block["text"]


async def test_inspector_cli_over_stdio_calls_a_tool(base: str, api: Api, world: World) -> None:
    node = installed(INSPECTOR)
    await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Payouts settle on Fridays"
    )
    env = ["-e", f"MNEIA_URL={base}", "-e", f"MNEIA_TOKEN={world.agent.token}"]
    called = await asyncio.to_thread(
        inspector,
        node,
        *env,
        *CLI,
        "mcp",
        "--method",
        "tools/call",
        "--tool-name",
        "search_items",
        "--tool-arg",
        "text=payouts",
    )
    assert called["isError"] is False
    assert "FACT: Payouts settle on Fridays" in called["content"][0]["text"]


def authorizing(app: ASGIApp, token: str) -> ASGIApp:
    """``app`` with an agent's bearer token on every request: the suite sends no header of its own."""

    async def with_token(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = dict(scope, headers=[*scope["headers"], (b"authorization", f"Bearer {token}".encode())])
        await app(scope, receive, send)

    return with_token


async def test_conformance_suite_protocol_scenarios(engine: AsyncEngine, world: World) -> None:
    node = installed(CONFORMANCE)
    app = authorizing(create_app(engine, dispose_engine=False), world.agent.token)
    async with uvicorn_serving(app) as port:  # type: ignore[arg-type]
        for scenario in SCENARIOS:
            ran = await asyncio.to_thread(
                subprocess.run,
                [node, bin_of(CONFORMANCE, "conformance"), "server"]
                + ["--url", f"http://127.0.0.1:{port}/mcp", "--scenario", scenario],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=CLIENTS,
            )
            assert ran.returncode == 0, f"{scenario}:\n{ran.stdout}\n{ran.stderr}"
            assert " 0 failed" in ran.stdout and "Passed: 0/" not in ran.stdout, f"{scenario}:\n{ran.stdout}"
