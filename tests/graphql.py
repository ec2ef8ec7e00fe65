"""A small GraphQL client for the tests, and a builder of ready-made workspaces."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage import workspace


@dataclass(frozen=True)
class Who:
    id: str
    token: str


@dataclass(frozen=True)
class World:
    workspace_id: str
    human: Who
    agent: Who
    project_id: str


class GraphQLFailure(AssertionError):
    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(errors)
        self.errors = errors


class Api:
    def __init__(self, http: httpx.AsyncClient, admin_engine: AsyncEngine) -> None:
        self.http = http
        self.admin_engine = admin_engine

    async def post(
        self, token: str | None, query: str, variables: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        body = {"query": query, "variables": variables or {}}
        response = await self.http.post("/graphql", json=body, headers=headers)
        answer: dict[str, Any] = response.json()
        # 401 carries the GraphQL error too (UNAUTHENTICATED); every other answer is a 200.
        refused = [e for e in answer.get("errors") or [] if e["extensions"]["code"] == "UNAUTHENTICATED"]
        assert response.status_code == (401 if refused else 200), response.text
        return answer

    async def run(self, token: str | None, query: str, **variables: Any) -> dict[str, Any]:
        """Run an operation that must succeed; return its data."""
        body = await self.post(token, query, variables)
        if body.get("errors"):
            raise GraphQLFailure(body["errors"])
        return body["data"]

    async def fail(self, token: str | None, query: str, **variables: Any) -> dict[str, Any]:
        """Run an operation that must fail; return its first error."""
        body = await self.post(token, query, variables)
        assert body.get("errors"), f"expected an error, got {body}"
        return body["errors"][0]

    async def bootstrap(self, human: str = "alice") -> tuple[str, Who]:
        made = await workspace.bootstrap(self.admin_engine, f"ws-{uuid.uuid4().hex[:8]}", human)
        return str(made.workspace_id), Who(str(made.actor_id), made.token)

    async def actor(self, token: str, kind: str, name: str) -> Who:
        data = await self.run(
            token,
            "mutation($k: ActorKind!, $n: String!) {"
            " createActor(kind: $k, name: $n) { actor { id } token } }",
            k=kind,
            n=name,
        )
        return Who(data["createActor"]["actor"]["id"], data["createActor"]["token"])

    async def project(self, token: str, name: str = "payments", team_id: str | None = None) -> str:
        data = await self.run(
            token,
            "mutation($n: String!, $t: ID) { createProject(name: $n, teamId: $t) { id } }",
            n=name,
            t=team_id,
        )
        return data["createProject"]["id"]

    async def add_member(self, token: str, project_id: str, actor_id: str) -> None:
        await self.run(
            token,
            "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }",
            p=project_id,
            a=actor_id,
        )

    async def assert_item(self, token: str, **fields: Any) -> dict[str, Any]:
        data = await self.run(
            token,
            "mutation($i: AssertItemInput!) { assertItem(input: $i) { id status authority scope } }",
            i={"kind": "FACT", **fields},
        )
        return data["assertItem"]

    async def world(self) -> World:
        workspace_id, human = await self.bootstrap()
        agent = await self.actor(human.token, "AGENT", "claude-code")
        project_id = await self.project(human.token)
        await self.add_member(human.token, project_id, agent.id)
        return World(workspace_id, human, agent, project_id)
