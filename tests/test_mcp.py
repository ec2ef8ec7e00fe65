"""``mneia mcp`` and ``/mcp``: the MCP SDK's own client over stdio and Streamable HTTP (issue 11).

Provenance from the handshake (R13), human tokens refused (R3), the tools'
budgets, human-only operations absent, and the tools' errors carrying the
API's codes (R14).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp_types import Implementation
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from tests.graphql import Api, World
from tests.live import uvicorn_serving
from tests.mcp_client import CLAUDE_CODE, call, http_client, refused, stdio_client


TOOLS = {
    "resume",
    "rehydrate",
    "checkpoint",
    "assert_item",
    "supersede_item",
    "dispute_item",
    "search_items",
    "get_item",
    "item_action",
}

PROVENANCE = """query ($id: ID!) { item(id: $id) { provenance { partial missing
  session { id externalId deepLink provenanceMissing client { tool version placeholderVersion } } } } }"""


@pytest.fixture(scope="module")
async def base(engine: AsyncEngine) -> AsyncIterator[str]:
    """The application (``/graphql`` and ``/mcp``) under uvicorn, on the test database."""
    async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
        yield f"http://127.0.0.1:{port}"


def item_id(answer: str) -> str:
    """The id a tool's line ends with (``… — id <uuid>``)."""
    return answer.splitlines()[0].rsplit(" — id ", 1)[1].strip()


async def provenance(api: Api, world: World, item: str) -> dict[str, Any]:
    data = await api.run(world.human.token, PROVENANCE, id=item)
    return data["item"]["provenance"]


async def test_http_lists_the_tools_and_no_human_only_operation(base: str, world: World) -> None:
    """R3: the tools are the agent's operations; confirm, load-bearing, decide, resolve are absent."""
    async with http_client(base, world.agent.token) as client:
        tools = (await client.list_tools()).tools
    assert {tool.name for tool in tools} == TOOLS
    for tool in tools:
        assert tool.output_schema is None, tool.name
        for word in ("confirm_item", "set_load_bearing", "decide", "resolve"):
            assert word not in tool.name


async def test_r13_http_session_names_the_client_from_the_handshake(
    base: str, api: Api, world: World
) -> None:
    async with http_client(base, world.agent.token) as client:
        answer = await call(client, "assert_item", kind="FACT", statement="The PSP is Adyen", basis="docs")
    assert answer.startswith("[agent-asserted · claude-code 2.1.3 · ")
    found = await provenance(api, world, item_id(answer))
    assert found["session"]["client"] == {
        "tool": "claude-code",
        "version": "2.1.3",
        "placeholderVersion": False,
    }
    # Over HTTP the client gives no session id of its own: reported missing, never guessed.
    assert found["session"]["externalId"] is None
    assert found["missing"] == ["externalId", "deepLink"]
    assert found["partial"] is True


async def test_r13_stdio_session_takes_claude_codes_session_id(base: str, api: Api, world: World) -> None:
    client = stdio_client(
        base, world.agent.token, CLAUDE_CODE_SESSION_ID="1af7fc5e-8455-4414-9ccd-011d40f70b2a"
    )
    async with client:
        answer = await call(client, "assert_item", kind="DECISION", statement="Refunds go through the PSP")
    found = await provenance(api, world, item_id(answer))
    session = found["session"]
    assert session["client"]["tool"] == "claude-code"
    assert session["client"]["version"] == "2.1.3"
    assert session["externalId"] == "1af7fc5e-8455-4414-9ccd-011d40f70b2a"
    assert session["deepLink"] == "claude --resume 1af7fc5e-8455-4414-9ccd-011d40f70b2a"
    assert found["partial"] is False and found["missing"] == []


async def test_r13_cursors_constant_version_is_recorded_and_flagged(
    base: str, api: Api, world: World
) -> None:
    cursor = Implementation(name="cursor-vscode", version="1.0.0")
    async with http_client(base, world.agent.token, client_info=cursor) as client:
        answer = await call(client, "assert_item", kind="FACT", statement="Cursor was here")
    session = (await provenance(api, world, item_id(answer)))["session"]
    assert session["client"] == {"tool": "cursor-vscode", "version": "1.0.0", "placeholderVersion": True}
    assert "client.version" in session["provenanceMissing"]


async def test_r3_http_refuses_a_humans_token(base: str, world: World) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{base}/mcp",
            headers={
                "Authorization": f"Bearer {world.human.token}",
                "Accept": "application/json, text/event-stream",
            },
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "x", "version": "1"},
                },
            },
        )
    assert response.status_code == 403, response.text
    assert "insufficient_scope" in response.headers["www-authenticate"]


async def test_errors_carry_the_apis_code(base: str, world: World) -> None:
    """R14: a bad argument is refused naming the field, and nothing is written."""
    async with http_client(base, world.agent.token) as client:
        error = await refused(client, "get_item", item_id="not-an-id")
        assert "BAD_USER_INPUT" in error
        error = await refused(client, "search_items", limit=1000)
        assert "limit" in error
        _ = CLAUDE_CODE
