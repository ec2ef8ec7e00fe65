"""A page of items costs a fixed number of SQL statements, whatever its size (no N+1).

Nested fields (project, team, asserter, session, client, confirmer) are loaded
through per-request DataLoaders; these tests count the statements the server's
engine sends for one request and compare a page of 5 with a page of 50 built
from the same mixture of agents, clients, sessions and confirmations.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.graphql import Api
from tests.support import counted

SMALL, LARGE = 5, 50
BOUND = 15
AGENTS = 3
CLIENTS = (("claude-code", "1.0.98"), ("cursor", None), ("aider", "0.86.1"))

PAGE = """query($p: ID!, $first: Int!) { items(projectId: $p, first: $first) {
  nodes { id project { name team { name } }
    provenance { assertedBy { name } actorKind partial missing session { id client { tool version } } }
    confirmation { by { name } } }
  totalCount } }"""

# The same page with every item-to-item and item-to-dispute edge of the contract.
GRAPH_PAGE = """query($p: ID!, $first: Int!) { items(projectId: $p, first: $first) {
  nodes { id supersedes { id } supersededBy { id } chain { id }
    disputes { id item { id } contested { id } raisedBy { name } } }
  totalCount } }"""


@dataclass(frozen=True)
class Mixed:
    project_id: str
    token: str  # the human's: sees every item
    size: int


@pytest.fixture(scope="module")
async def mixed(api: Api) -> Mixed:
    """A teamed project with LARGE + 10 items from several agents, clients and sessions.

    Item i is asserted by agent i % AGENTS, in that agent's session (each agent
    uses a different client; only the first session's provenance is complete)
    except every fourth, and every other one is
    confirmed by the human. Items are asserted round-robin so that any page,
    even the first 5, holds the whole mixture.
    """
    _, human = await api.bootstrap("ursula")
    team = await api.run(human.token, 'mutation { createTeam(name: "billing", function: "backend") { id } }')
    project_id = await api.project(human.token, "ledger", team["createTeam"]["id"])
    agents, sessions = [], []
    for number, (tool, version) in enumerate(CLIENTS[:AGENTS]):
        agent = await api.actor(human.token, "AGENT", f"agent-{number}")
        await api.add_member(human.token, project_id, agent.id)
        started = await api.run(
            agent.token,
            "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }",
            i={
                "projectId": project_id,
                "client": {"tool": tool, "version": version},
                "externalId": f"ext-{number}",
                "deepLink": f"codex resume s-{number}" if number == 0 else None,
            },
        )
        agents.append(agent)
        sessions.append(started["startSession"]["id"])

    confirm: list[str] = []
    for index in range(LARGE + 10):
        who = index % AGENTS
        fields: dict[str, Any] = {"projectId": project_id, "statement": f"fact number {index}"}
        if index % 4 != 3:
            fields["sessionId"] = sessions[who]
        item = await api.assert_item(agents[who].token, **fields)
        if index % 2 == 0:
            confirm.append(item["id"])
    aliases = " ".join(f'c{n}: confirmItem(id: "{item_id}") {{ id }}' for n, item_id in enumerate(confirm))
    await api.run(human.token, f"mutation {{ {aliases} }}")
    return Mixed(project_id, human.token, LARGE + 10)


async def statements_for(
    api: Api, engine: AsyncEngine, query: str, mixed: Mixed, first: int
) -> tuple[list[str], dict[str, Any]]:
    await api.run(mixed.token, query, p=mixed.project_id, first=first)  # warm the pool and caches
    with counted(engine) as statements:
        data = await api.run(mixed.token, query, p=mixed.project_id, first=first)
    return list(statements), data["items"]


def digest(small: list[str], large: list[str]) -> str:
    """The statements of both requests, one short line each, for the failure message."""
    lines = [f"page of {SMALL}: {len(small)} statements, page of {LARGE}: {len(large)}"]
    lines += [" ".join(statement.split())[:110] for statement in large]
    return "\n".join(lines)


def assert_mixture(page: dict[str, Any], size: int) -> None:
    """The page is representative: every kind of nested lookup has something to load."""
    nodes = page["nodes"]
    assert len(nodes) == size
    provenances = [node["provenance"] for node in nodes]
    assert len({p["assertedBy"]["name"] for p in provenances}) == AGENTS
    assert len({p["session"]["client"]["tool"] for p in provenances if p["session"]}) == AGENTS
    assert any(p["session"] is None and p["missing"] == ["session"] for p in provenances)
    assert any(p["session"] and p["partial"] for p in provenances)
    assert any(p["session"] and not p["partial"] for p in provenances)
    assert {bool(node["confirmation"]) for node in nodes} == {True, False}
    assert all(node["project"] == {"name": "ledger", "team": {"name": "billing"}} for node in nodes)


async def test_items_page_costs_a_fixed_number_of_statements_whatever_its_size(
    api: Api, engine: AsyncEngine, mixed: Mixed
) -> None:
    small, small_page = await statements_for(api, engine, PAGE, mixed, SMALL)
    large, large_page = await statements_for(api, engine, PAGE, mixed, LARGE)
    assert_mixture(small_page, SMALL)
    assert_mixture(large_page, LARGE)
    assert small_page["totalCount"] == large_page["totalCount"] == mixed.size
    assert len(small) == len(large), digest(small, large)
    assert len(large) < BOUND, digest(small, large)


# `chain` and `disputes` are batched too: one recursive query for every chain on the page.
async def test_items_page_with_chains_and_disputes_costs_a_fixed_number_of_statements(
    api: Api, engine: AsyncEngine, mixed: Mixed
) -> None:
    small, small_page = await statements_for(api, engine, GRAPH_PAGE, mixed, SMALL)
    large, large_page = await statements_for(api, engine, GRAPH_PAGE, mixed, LARGE)
    assert len(large_page["nodes"]) == LARGE
    assert all(node["chain"] == [{"id": node["id"]}] for node in large_page["nodes"])
    assert len(small) == len(large), digest(small, large)
    assert len(large) < BOUND, digest(small, large)


# The same page as of a moment (R9): states, chains, disputes, proposals and logs then.
AS_OF_PAGE = """query($p: ID!, $first: Int!, $t: DateTime) { items(projectId: $p, first: $first, asOf: $t) {
  nodes { id status authority loadBearing stale freshness rendered
    provenance { assertedBy { name } partial missing session { id endedAt client { tool version } } }
    confirmation { by { name } at }
    supersedes { id } supersededBy { id } chain { id }
    disputes { id status item { id } contested { id } keptItem { id } }
    proposals { id status result { id } }
    events { kind at actor { name } reason } }
  } }"""


async def test_r9_an_as_of_page_costs_a_fixed_number_of_statements_whatever_its_size(
    api: Api, engine: AsyncEngine, mixed: Mixed
) -> None:
    """The moment travels in the loaders: a page of the past batches like a page of now."""
    # The moment of the confirmations, which came last: the newest event of the two newest items.
    newest = await api.run(
        mixed.token,
        "query($p: ID!) { items(projectId: $p, first: 2) { nodes { events { at } } } }",
        p=mixed.project_id,
    )
    moment = max(
        datetime.fromisoformat(event["at"]) for node in newest["items"]["nodes"] for event in node["events"]
    ).isoformat()

    async def page(first: int) -> tuple[list[str], dict[str, Any]]:
        await api.run(mixed.token, AS_OF_PAGE, p=mixed.project_id, first=first, t=moment)
        with counted(engine) as statements:
            data = await api.run(mixed.token, AS_OF_PAGE, p=mixed.project_id, first=first, t=moment)
        return list(statements), data["items"]

    small, small_page = await page(SMALL)
    large, large_page = await page(LARGE)
    assert len(small_page["nodes"]) == SMALL and len(large_page["nodes"]) == LARGE
    assert {node["authority"] for node in large_page["nodes"]} == {"HUMAN_CONFIRMED", "AGENT_ASSERTED"}
    assert all(node["events"][0]["kind"] == "ASSERTED" for node in large_page["nodes"])
    assert len(small) == len(large), digest(small, large)
    assert len(large) < BOUND, digest(small, large)


EVENTS_PAGE = """query($p: ID!, $first: Int!) { events(projectId: $p, first: $first) {
  nodes { id kind actor { name } item { id rendered provenance { assertedBy { name } session { id } } } }
  totalCount } }"""


async def test_project_events_page_costs_a_fixed_number_of_statements_whatever_its_size(
    api: Api, engine: AsyncEngine, mixed: Mixed
) -> None:
    """events(projectId): each event's item, its provenance and the event's actor are batched (R6)."""
    small, _ = await statements_for_events(api, engine, mixed, SMALL)
    large, page = await statements_for_events(api, engine, mixed, LARGE)
    assert len(page["nodes"]) == LARGE
    assert len({node["item"]["id"] for node in page["nodes"]}) > SMALL
    assert {node["kind"] for node in page["nodes"]} == {"ASSERTED", "CONFIRMED"}
    assert len(small) == len(large), digest(small, large)
    assert len(large) < BOUND, digest(small, large)


async def statements_for_events(
    api: Api, engine: AsyncEngine, mixed: Mixed, first: int
) -> tuple[list[str], dict[str, Any]]:
    await api.run(mixed.token, EVENTS_PAGE, p=mixed.project_id, first=first)
    with counted(engine) as statements:
        data = await api.run(mixed.token, EVENTS_PAGE, p=mixed.project_id, first=first)
    return list(statements), data["events"]
