"""A full agent cycle through MCP alone (issue 11): one agent resumes, asserts, proposes to replace a
human's ruling (pending, R7), checkpoints (R12); a second agent, in another client, resumes from its
handoff. Every item names the MCP client and version that said it (R13); no answer is over its budget.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.mcp import budget
from tests.graphql import Api, World
from tests.live import uvicorn_serving
from tests.mcp_client import call, http_client, stdio_client
from tests.support import ADD_PROJECT_MEMBER, MAKE_LOAD_BEARING

CODEX = Implementation(name="codex-mcp-client", version="0.63.0")
CLAUDE_SESSION = "9f1c2d3e-0000-4000-8000-000000000011"
RULE = "Refunds must never exceed the captured amount"

SESSION_ITEMS = """query ($p: ID!) { items(projectId: $p, first: 50) { nodes {
  statement status authority
  provenance { assertedBy { name kind } partial missing
    session { externalId deepLink endedAt client { tool version } } } } } }"""
PROPOSALS = "query ($p: ID!) { proposals(projectId: $p, status: PENDING) { kind target { id } } }"


@pytest.fixture(scope="module")
async def base(engine: AsyncEngine) -> AsyncIterator[str]:
    async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
        yield f"http://127.0.0.1:{port}"


def within_budget(answers: list[str]) -> None:
    for answer in answers:
        assert budget.count(answer) <= budget.OUTPUT_CAP, answer[-300:]


async def test_agent_cycle_through_mcp_then_a_second_client_resumes(
    base: str, api: Api, world: World
) -> None:
    # The human's part, outside MCP: a load-bearing ruling of theirs.
    rule = await api.assert_item(
        world.human.token, projectId=world.project_id, kind="CONSTRAINT", statement=RULE
    )
    await api.run(world.human.token, MAKE_LOAD_BEARING, i=rule["id"])
    answers: list[str] = []

    # Agent one: Claude Code, launching `mneia mcp` over stdio.
    async with stdio_client(base, world.agent.token, CLAUDE_CODE_SESSION_ID=CLAUDE_SESSION) as claude:
        resumed = await call(claude, "resume", task="Add partial refunds")
        assert f"load-bearing] CONSTRAINT: {RULE}" in resumed  # R11.1 through resume
        decided = await call(
            claude,
            "assert_item",
            kind="DECISION",
            statement="A partial refund names the capture it refunds",
            basis="the PSP's partial-refund API",
            confidence=0.7,
        )
        assert decided.startswith("[agent-asserted · claude-code 2.1.3 · ")
        pending = await call(
            claude,
            "supersede_item",
            target_id=rule["id"],
            statement="A refund must never exceed the amount of the capture it refunds",
            reason="Partial captures: the limit is per capture",
        )
        # R7: a human's ruling is not overwritten by an agent; the replacement waits for a human.
        assert pending.startswith("Pending: [human-confirmed · alice · ")
        assert "nothing was replaced" in pending
        handoff = await call(
            claude,
            "checkpoint",
            summary="Partial refunds: the endpoint takes a capture id; the per-capture limit awaits Alice.",
            next_steps=["Write the ledger entries for partial refunds"],
            open_questions=["May support refund the shipping fee on its own?"],
            items=[{"kind": "FACT", "statement": "The PSP refunds in the capture's currency only"}],
            idempotency_key="cycle-1",
        )
        again = await call(
            claude,
            "checkpoint",
            summary="Partial refunds: the endpoint takes a capture id; the per-capture limit awaits Alice.",
            next_steps=["Write the ledger entries for partial refunds"],
            open_questions=["May support refund the shipping fee on its own?"],
            items=[{"kind": "FACT", "statement": "The PSP refunds in the capture's currency only"}],
            idempotency_key="cycle-1",
        )
        answers += [resumed, decided, pending, handoff, again]
    assert "Left by claude-code 2.1.3" in handoff
    for said in ("the per-capture limit awaits Alice", "Write the ledger entries", "shipping fee"):
        assert said in handoff
    assert "DECISION: A partial refund names the capture it refunds" in handoff
    assert "FACT: The PSP refunds in the capture's currency only" in handoff
    assert "## Awaiting a human" in handoff
    assert again == handoff  # the retry with the same key: the same handoff, nothing written twice

    pending_now = (await api.run(world.human.token, PROPOSALS, p=world.project_id))["proposals"]
    assert [(p["kind"], p["target"]["id"]) for p in pending_now] == [("SUPERSESSION", rule["id"])]

    # R13: every item the agent wrote names the MCP client, its version and its session.
    nodes = (await api.run(world.human.token, SESSION_ITEMS, p=world.project_id))["items"]["nodes"]
    written = [n for n in nodes if n["provenance"]["assertedBy"]["kind"] == "AGENT"]
    assert len(written) == 2
    for node in written:
        session = node["provenance"]["session"]
        assert session["client"] == {"tool": "claude-code", "version": "2.1.3"}
        assert session["externalId"] == CLAUDE_SESSION
        assert session["endedAt"] is not None  # R12: the checkpoint ended the session
        assert node["provenance"]["partial"] is False

    # Agent two: another actor, in Codex, over Streamable HTTP, picks the work up.
    codex = await api.actor(world.human.token, "AGENT", "codex")
    await api.run(world.human.token, ADD_PROJECT_MEMBER, p=world.project_id, a=codex.id)
    async with http_client(base, codex.token, client_info=CODEX) as client:
        resumed = await call(client, "resume", task="Release partial refunds", token_budget=500)
        answers.append(resumed)
        latest = await client.read_resource("mneia://handoff/latest")
    assert resumed.startswith("# Handoff: payments\nLeft by claude-code 2.1.3")
    assert "Write the ledger entries for partial refunds" in resumed
    assert f"load-bearing] CONSTRAINT: {RULE}" in resumed
    assert "Awaiting a human" in resumed
    assert "Write the ledger entries" in str(latest.contents[0])
    within_budget(answers)

    # And Alice's own token cannot drive an MCP client (R3): refused at the handshake.
    with pytest.raises(ExceptionGroup) as refused:  # the SDK's client ends its task group on the 403
        async with http_client(base, world.human.token) as client:
            await client.list_tools()
    assert refused.group_contains(MCPError, match="Server returned an error response")


async def test_a_write_after_a_checkpoint_starts_a_new_session(base: str, api: Api, world: World) -> None:
    async with http_client(base, world.agent.token) as client:
        await call(client, "assert_item", kind="FACT", statement="First session's fact")
        await call(client, "checkpoint", summary="Stopping here")
        await call(client, "assert_item", kind="FACT", statement="Second session's fact")
    nodes = (await api.run(world.human.token, SESSION_ITEMS, p=world.project_id))["items"]["nodes"]
    by: dict[str, Any] = {n["statement"]: n["provenance"]["session"] for n in nodes}
    assert by["First session's fact"]["endedAt"] is not None
    assert by["Second session's fact"]["endedAt"] is None
