"""The MCP client configurations of docs/mcp.md, checked offline (issue 11): each snippet parses as its
client's format (JSON or TOML, the `claude mcp add` command line), and each one, with its variables
filled in as its client expands them, reaches a real Mneia: the stdio ones launched as a client
launches them, the HTTP ones connected to ``/mcp`` with their URL and headers."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from tests.graphql import World
from tests.live import SCRUBBED, uvicorn_serving
from tests.mcp_client import CLAUDE_CODE, call

MCP_PAGE = Path(__file__).resolve().parent.parent / "docs" / "mcp.md"
SNIPPET = re.compile(r"<!-- mcp-config: ([\w-]+)(?: (\w+))? -->\n```(\w+)\n(.*?)```", re.S)
PAGE_URL = "http://127.0.0.1:8000"
# How each client writes "the variable MNEIA_TOKEN" (Claude Code, Gemini CLI, Cursor), or the
# placeholder where the token goes inline (Codex's stdio table).
TOKEN_FORMS = ("${MNEIA_TOKEN}", "${env:MNEIA_TOKEN}", "$MNEIA_TOKEN", "mneia_…")
MNEIA = Path(sys.executable).parent / "mneia"  # the console script, as on a client's PATH


def snippets() -> list[tuple[str, str | None, str, str]]:
    found = SNIPPET.findall(MCP_PAGE.read_text())
    return [(client, transport or None, language, body) for client, transport, language, body in found]


def loaded(language: str, body: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(body) if language == "json" else tomllib.loads(body)
    servers = config.get("mcpServers") or config.get("mcp_servers")
    assert servers and set(servers) == {"mneia"}, config
    server: dict[str, Any] = servers["mneia"]
    return server


def filled(value: str, base: str, token: str) -> str:
    for form in TOKEN_FORMS:
        value = value.replace(form, token)
    return value.replace(PAGE_URL, base)


@pytest.fixture(scope="module")
async def base(engine: AsyncEngine) -> AsyncIterator[str]:
    async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
        yield f"http://127.0.0.1:{port}"


def test_the_mcp_page_configures_every_client_both_ways() -> None:
    found = {(client, transport) for client, transport, _, _ in snippets()}
    assert found == {
        ("claude-code-cli", None),
        *(
            (client, transport)
            for client in ("claude-code", "codex", "gemini-cli", "cursor")
            for transport in ("stdio", "http")
        ),
    }


def test_the_claude_mcp_add_lines() -> None:
    (body,) = [body for client, _, _, body in snippets() if client == "claude-code-cli"]
    stdio, http = (shlex.split(line) for line in body.strip().splitlines())
    assert stdio[:4] == ["claude", "mcp", "add", "mneia"]
    assert stdio[stdio.index("--") + 1 :] == ["mneia", "mcp"]
    env = [stdio[i + 1] for i, word in enumerate(stdio) if word == "--env"]
    assert [pair.split("=", 1)[0] for pair in env] == ["MNEIA_URL", "MNEIA_TOKEN", "MNEIA_PROJECT"]
    assert http[:6] == ["claude", "mcp", "add", "--transport", "http", "mneia"]
    assert http[6] == f"{PAGE_URL}/mcp"
    headers = [http[i + 1] for i, word in enumerate(http) if word == "--header"]
    assert headers == ["Authorization: Bearer $MNEIA_TOKEN", "X-Mneia-Project: payments"]


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini-cli", "cursor"])
async def test_the_stdio_configuration_launches_mneia_mcp(base: str, world: World, client: str) -> None:
    (server,) = [loaded(lang, body) for c, t, lang, body in snippets() if (c, t) == (client, "stdio")]
    assert (server["command"], server["args"]) == ("mneia", ["mcp"])
    assert set(server["env"]) == {"MNEIA_URL", "MNEIA_TOKEN", "MNEIA_PROJECT"}
    env = {name: value for name, value in os.environ.items() if name not in SCRUBBED}
    env.update({name: filled(value, base, world.agent.token) for name, value in server["env"].items()})
    parameters = StdioServerParameters(command=str(MNEIA), args=server["args"], env=env)
    async with Client(parameters, client_info=CLAUDE_CODE) as session:
        assert await call(session, "search_items", text="nothing-like-this") == "No item matches."


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini-cli", "cursor"])
async def test_the_http_configuration_reaches_mcp(base: str, world: World, client: str) -> None:
    (server,) = [loaded(lang, body) for c, t, lang, body in snippets() if (c, t) == (client, "http")]
    url = server.get("url") or server["httpUrl"]
    headers = dict(server.get("headers") or server.get("http_headers") or {})
    if client == "claude-code":
        assert server["type"] == "http"
    if client == "codex":
        assert server["bearer_token_env_var"] == "MNEIA_TOKEN"
        headers["Authorization"] = "Bearer $MNEIA_TOKEN"  # what Codex sends from that variable
    assert url == f"{PAGE_URL}/mcp" and set(headers) == {"Authorization", "X-Mneia-Project"}
    headers = {name: filled(value, base, world.agent.token) for name, value in headers.items()}
    http = httpx2.AsyncClient(headers=headers)
    async with Client(streamable_http_client(filled(url, base, ""), http_client=http)) as session:
        assert await call(session, "search_items", text="nothing-like-this") == "No item matches."
