"""Inbox benchmark: how long each tab of /inbox takes to render, over real HTTP, as a project grows.

One project holds (by default) 1,000 active items asserted by an agent in its
session and never confirmed (every one belongs on the Unconfirmed tab; one in
ten is past its decay, so on the Stale tab too), loaded as the owner role
bound to the agent, plus 20 proposals and 20 disputes raised through the
API. The real application runs under uvicorn in a child process; one httpx
client signs in as Alice, as a browser would (cookie, CSRF), and asks for
each tab in turn, then confirms items one by one through ``/inbox/act``
(each answer is the re-rendered tab).

Every view counts each tab through ``items(filter:)``'s ``totalCount`` and
reads whole only the entries the open tab shows (History: ``events(projectId,
kinds)``), so a tab's work follows what it shows and counts, not the
project's size. No target is set by the issue; the figures are printed for
the README.

    .venv/bin/python benchmarks/inbox.py                       # 1,000 items
    .venv/bin/python benchmarks/inbox.py --items 10000 --samples 10

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL), as in the
other benchmarks; ``--keep`` keeps the bench database.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from common import (
    HEADER,
    BenchmarkBroken,
    Series,
    gql,
    insert_items,
    on_fresh_database,
    owner_transaction,
    running_server,
    sentence,
    timed,
    vacuum_analyze,
)

from mneia.storage import workspace
from mneia.storage.database import create_engine
from mneia.storage.ids import new_id

TABS = ("proposals", "disputes", "unconfirmed", "stale", "history")
RAISED = 20
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


async def build(http: httpx.AsyncClient, url: str, items: int, rng: random.Random) -> tuple[str, str]:
    """The workspace, its project and items; Alice's token and the project's id."""
    admin = create_engine(url, pool_size=2)
    try:
        made = await workspace.bootstrap(admin, f"inbox-{uuid.uuid4().hex[:6]}", "alice")
        alice = made.token
        project = (await gql(http, alice, 'mutation { createProject(name: "ledger") { id } }'))[
            "createProject"
        ]["id"]
        created = await gql(
            http, alice, 'mutation { createActor(kind: AGENT, name: "claude-code") { actor { id } token } }'
        )
        agent_id, agent = created["createActor"]["actor"]["id"], created["createActor"]["token"]
        await gql(
            http,
            alice,
            "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }",
            p=project,
            a=agent_id,
        )
        session = (
            await gql(
                http,
                agent,
                "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }",
                i={"projectId": project, "client": {"tool": "claude-code", "version": "1.0.98"}},
            )
        )["startSession"]["id"]
        now = datetime.now(UTC)
        rows: list[dict[str, Any]] = []
        for _ in range(items):
            stale = rng.random() < 0.1
            rows.append(
                {
                    "id": new_id(),
                    "project_id": uuid.UUID(project),
                    "kind": rng.choice(("FACT", "DECISION", "CONSTRAINT", "TASK")),
                    "statement": sentence(rng, 6, 20),
                    "details": None,
                    "basis": None,
                    "confidence": round(rng.uniform(0.3, 1.0), 2),
                    "status": "ACTIVE",
                    "status_reason": None,
                    "scope": "PROJECT",
                    "grants": "",
                    "asserted_by": uuid.UUID(agent_id),
                    "asserted_at": now - timedelta(days=30 if stale else 1),
                    "session_id": uuid.UUID(session),
                    "decay_after": timedelta(days=7) if stale else None,
                    "load_bearing": False,
                    "load_bearing_set_by": None,
                    "load_bearing_set_at": None,
                    "confirmed_by": None,
                    "confirmed_at": None,
                }
            )
        async with owner_transaction(admin, made.workspace_id, uuid.UUID(agent_id)) as tx:
            await insert_items(tx, rows)
        assert_item = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id } }"
        supersede = "mutation($i: SupersedeInput!) { supersedeItem(input: $i) { __typename } }"
        for n in range(RAISED):
            ruling = await gql(
                http,
                alice,
                assert_item,
                i={"projectId": project, "kind": "CONSTRAINT", "statement": f"Rule {n}"},
            )
            replacement = {"projectId": project, "kind": "CONSTRAINT", "statement": f"Rule {n}, amended"}
            await gql(
                http,
                agent,
                supersede,
                i={"targetId": ruling["assertItem"]["id"], "reason": "amended", "replacement": replacement},
            )
            contested = await gql(
                http,
                alice,
                assert_item,
                i={"projectId": project, "kind": "DECISION", "statement": f"Use {n}"},
            )
            contradiction = {"projectId": project, "kind": "DECISION", "statement": f"Do not use {n}"}
            await gql(
                http, agent, assert_item, i={**contradiction, "contradicts": [contested["assertItem"]["id"]]}
            )
        return alice, project
    finally:
        await admin.dispose()


async def sign_in(http: httpx.AsyncClient, token: str) -> None:
    page = await http.get("/inbox")
    found = CSRF.search(page.text)
    if not found:
        raise BenchmarkBroken("no sign-in form")
    signed = await http.post(
        "/inbox/sign-in",
        data={"csrf": found.group(1), "token": token},
        headers={"Origin": str(http.base_url).rstrip("/")},
    )
    if signed.status_code != 303:
        raise BenchmarkBroken(f"sign-in answered {signed.status_code}")


async def run(options: argparse.Namespace, url: str, version: str) -> None:
    rng = random.Random(options.seed)
    with running_server(url) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            alice, project = await build(http, url, options.items, rng)
            await vacuum_analyze(url)
            await sign_in(http, alice)
            series = {tab: Series(f"GET /inbox?tab={tab}", None) for tab in TABS}
            for _ in range(options.samples):
                for tab in TABS:
                    took, page = await timed(lambda tab=tab: http.get(f"/inbox?tab={tab}&project={project}"))
                    if page.status_code != 200 or 'class="said failed"' in page.text:
                        raise BenchmarkBroken(f"{tab}: {page.status_code}")
                    series[tab].samples.append(took)
            page = await http.get(f"/inbox?tab=unconfirmed&project={project}")
            csrf = CSRF.search(page.text)
            ids = re.findall(r'data-entry="([^"]+)"', page.text)[: options.samples]
            confirm = Series("POST /inbox/act (confirm one)", None)
            form = {"csrf": csrf.group(1) if csrf else "", "tab": "unconfirmed", "project": project}
            for ident in ids:
                took, done = await timed(
                    lambda ident=ident: http.post(
                        "/inbox/act",
                        data={**form, "action": f"confirm:{ident}"},
                        headers={"Origin": base, "HX-Request": "true"},
                    )
                )
                if "Confirmed." not in done.text:
                    raise BenchmarkBroken(f"confirm: {done.status_code} {done.text[:200]}")
                confirm.samples.append(took)
    print(f"database     {version}")
    print(f"server       uvicorn, 1 worker, child process on {base}; client httpx over TCP")
    print(f"cpu cores    {os.cpu_count()}; load average {os.getloadavg()[0]:.2f}")
    print(
        f"project      {options.items:,} active unconfirmed agent items (about {options.items // 10:,}"
        f" stale), {RAISED} proposals, {RAISED} disputes"
    )
    print(f"measured     {options.samples} of each tab, in turn, sequential")
    print(HEADER)
    for tab in TABS:
        print(series[tab].row())
    print(confirm.row())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    options = parser.parse_args(argv)
    on_fresh_database(run, options, keep=options.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
