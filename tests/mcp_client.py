"""The MCP SDK's own client against a real Mneia: over Streamable HTTP (``/mcp`` of the app under
uvicorn) and over stdio (``mneia mcp`` launched as a client launches it)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Implementation, TextContent

from tests.live import CLI, SCRUBBED

CLAUDE_CODE = Implementation(name="claude-code", version="2.1.3")


def http_client(
    base: str,
    token: str | None,
    *,
    project: str | None = None,
    headers: dict[str, str] | None = None,
    **options: Any,
) -> Client:
    headers = {**(headers or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    if project:
        headers["X-Mneia-Project"] = project
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0))
    options.setdefault("client_info", CLAUDE_CODE)
    return Client(streamable_http_client(f"{base}/mcp", http_client=http), **options)


def stdio_parameters(base: str, token: str, project: str | None = None, **env: str) -> StdioServerParameters:
    """``mneia mcp`` as a client launches it: a command and the environment its configuration gives."""
    variables = {name: value for name, value in os.environ.items() if name not in SCRUBBED}
    variables.pop("CLAUDE_CODE_SESSION_ID", None)
    variables.update({"MNEIA_URL": base, "MNEIA_TOKEN": token, **env})
    if project:
        variables["MNEIA_PROJECT"] = project
    return StdioServerParameters(command=CLI[0], args=[*CLI[1:], "mcp"], env=variables)


def stdio_client(
    base: str, token: str, project: str | None = None, client_info: Implementation = CLAUDE_CODE, **env: str
) -> Client:
    return Client(stdio_parameters(base, token, project, **env), client_info=client_info)


def text(result: CallToolResult) -> str:
    """The one text block a Mneia tool answers."""
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


async def call(client: Client, tool: str, **arguments: Any) -> str:
    """A tool's text; the call must succeed."""
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, text(result)
    assert result.structured_content is None  # text only: clients show structured output instead
    return text(result)


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """A tool's error text; the call must fail."""
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error, text(result)
    return text(result).removeprefix(f"Error executing tool {tool}: ")


@asynccontextmanager
async def connected(client: Client) -> AsyncIterator[Client]:
    async with client:
        yield client
