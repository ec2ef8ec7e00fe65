"""What the inbox tests review: a project with one of everything a person decides, made through the API.

A human's ruling that an agent proposes to replace (a SUPERSESSION proposal),
an agent's constraint suggested load-bearing (a LOAD_BEARING proposal), an
agent's assertion contradicting another ruling (an open dispute), agents'
unconfirmed facts of different confidence, and an item past its decay.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.graphql import Api, World
from tests.support import SUPERSEDE, supersession

START = """mutation($p: ID!) { startSession(input: {projectId: $p, task: "review the deploy notes",
  client: {tool: "claude-code", version: "1.0.98"}, externalId: "s-1",
  deepLink: "https://claude.ai/chat/s-1"}) { id } }"""
ASSERT = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id disputes { id } } }"
RENDERED = "query($i: ID!) { item(id: $i) { rendered authority status loadBearing lastVerifiedAt } }"
PROPOSALS = "query($p: ID!) { proposals(projectId: $p) { id kind status target { id } decisionNote } }"
DISPUTES = "query($p: ID!) { disputes(projectId: $p) { id status keptItem { id } resolutionNote } }"


@dataclass(frozen=True)
class Review:
    world: World
    ruling: str  # a human's constraint an agent proposes to replace
    replaced_statement: str
    replacement_statement: str
    supersession: str  # that proposal
    suggested: str  # an agent's constraint suggested load-bearing
    suggestion: str  # that proposal
    contested: str  # a human's decision an agent contradicts
    contradiction: str  # the agent's assertion
    dispute: str
    sure: str  # an agent's fact, confidence 0.9
    unsure: str  # an agent's fact, confidence 0.4
    stale: str  # a human's fact past its decay


async def review(api: Api, admin_engine: AsyncEngine, world: World, statement: str | None = None) -> Review:
    """The project of ``world`` with one of everything to review; ``statement`` for the unsure fact."""
    human, agent, project = world.human.token, world.agent.token, world.project_id

    async def said(token: str, **fields: Any) -> dict[str, Any]:
        return (await api.run(token, ASSERT, i={"projectId": project, **fields}))["assertItem"]

    session = (await api.run(agent, START, p=project))["startSession"]["id"]
    old = "Deploys happen on Tuesdays after the 10:00 stand-up"
    new = "Deploys happen on Tuesdays and Thursdays after the 10:00 stand-up"
    ruling = (await said(human, kind="CONSTRAINT", statement=old))["id"]
    proposed = await api.run(
        agent,
        SUPERSEDE,
        **supersession(project, ruling, new, "two deploy days halve the queue", sessionId=session),
    )
    supersession_id = proposed["supersedeItem"]["proposal"]["id"]
    suggested = await said(
        agent,
        kind="CONSTRAINT",
        statement="Card numbers never reach the logs",
        sessionId=session,
        confidence=0.5,
        suggestLoadBearing=True,
        basis="PCI scope review",
    )
    contested = (await said(human, kind="DECISION", statement="Payments use Stripe"))["id"]
    contradiction = await said(
        agent,
        kind="DECISION",
        statement="Payments use Adyen",
        sessionId=session,
        contradicts=[contested],
        basis="the invoice from March",
        confidence=0.7,
    )
    sure = await said(
        agent, kind="FACT", statement="The API runs PostgreSQL 15", sessionId=session, confidence=0.9
    )
    unsure = await said(
        agent,
        kind="FACT",
        statement=statement or "The queue holds at most 500 jobs",
        sessionId=session,
        confidence=0.4,
    )
    stale = await said(human, kind="FACT", statement="The PSP SDK is version 4.2", decayAfter="P7D")
    async with admin_engine.begin() as connection:
        await connection.execute(
            text("UPDATE items SET asserted_at = asserted_at - interval '30 days' WHERE id = :i"),
            {"i": stale["id"]},
        )
    proposals = (await api.run(human, PROPOSALS, p=project))["proposals"]
    (suggestion,) = [p["id"] for p in proposals if p["kind"] == "LOAD_BEARING"]
    return Review(
        world=world,
        ruling=ruling,
        replaced_statement=old,
        replacement_statement=new,
        supersession=supersession_id,
        suggested=suggested["id"],
        suggestion=suggestion,
        contested=contested,
        contradiction=contradiction["id"],
        dispute=contradiction["disputes"][0]["id"],
        sure=sure["id"],
        unsure=unsure["id"],
        stale=stale["id"],
    )


CSRF = re.compile(r'name="csrf" value="([^"]+)"')


class Browser:
    """An HTTP client that keeps cookies and sends forms as a browser on this origin does."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.origin = str(client.base_url).rstrip("/")

    async def sign_in(self, token: str) -> httpx.Response:
        page = await self.client.get("/inbox")
        csrf = CSRF.search(page.text)
        assert csrf, page.text
        return await self.post("/inbox/sign-in", {"csrf": csrf.group(1), "token": token})

    async def post(
        self, path: str, form: dict[str, Any] | list[tuple[str, str]], **headers: str
    ) -> httpx.Response:
        sent = {
            "Origin": self.origin,
            "Sec-Fetch-Site": "same-origin",
            "Content-Type": "application/x-www-form-urlencoded",
            **headers,
        }
        pairs = list(form.items()) if isinstance(form, dict) else form
        return await self.client.post(path, content=urlencode(pairs), headers=sent)

    async def csrf(self, path: str = "/inbox") -> str:
        page = await self.client.get(path)
        found = CSRF.search(page.text)
        assert found, page.text
        return found.group(1)

    async def act(self, tab: str, project: str, action: str, **fields: str) -> httpx.Response:
        form = {"csrf": await self.csrf(), "tab": tab, "project": project, "action": action, **fields}
        return await self.post("/inbox/act", form, **{"HX-Request": "true"})
