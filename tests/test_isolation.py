"""R1 tenant isolation: through the API, with raw SQL as the server's role, and in the roles.

Two fully populated workspaces, A and B (every tenant table holds rows of
both). An actor of A must never read, count, list or write a row of B. The
API tests show what a client sees; the raw SQL tests run as ``mneia_app``
(the ``engine`` fixture) with A's context set exactly as the server sets it,
so they prove the row-level security policies themselves, not the resolvers.
The role tests read the catalogue as the administrator.

Each of these tests was checked by hand to fail when the policy it covers is
replaced by a permissive one (``USING (true)`` / ``WITH CHECK (true)``) in a
scratch database.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from mneia.config import app_url
from mneia.storage import tables, token
from mneia.storage.database import create_engine, transaction
from mneia.storage.node import Nodes
from tests import support
from tests.citus import ON_CLUSTER
from tests.graphql import Api, Who
from tests.support import (
    ADD_PROJECT_MEMBER,
    ADD_TEAM_MEMBER,
    ASSERT_ITEM,
    CONFIRM_ITEM,
    COUNT_ITEMS,
    MAKE_LOAD_BEARING,
    RETIRE_ITEM,
    SUGGEST_LOAD_BEARING,
    VERIFY_ITEM,
    as_caller,
    as_nobody,
    assert_code,
    node_engine,
    refused,
    rows,
)

# Every table that holds tenant data, as listed in the foundation migration.
TENANT_TABLES = (
    "workspaces",
    "identities",
    "actors",
    "api_tokens",
    "teams",
    "team_members",
    "projects",
    "project_members",
    "clients",
    "sessions",
    "items",
    "item_events",
    "item_states",
    "proposals",
    "disputes",
    "handoffs",
    "imports",
    "invitations",
    "retention_policies",
    "legal_holds",
    "item_counts",
)
# Those that carry a workspace_id column (workspaces is keyed by id; identities span workspaces).
WORKSPACE_TABLES = TENANT_TABLES[2:]
# item_states: the trigger closes them.
APPEND_ONLY = ("items", "item_events", "proposals", "disputes", "handoffs")


@dataclass(frozen=True)
class Tenant:
    """A workspace with a row in every tenant table, and the ids of those rows."""

    workspace_id: str
    human: Who
    agent: Who
    team_id: str
    project_id: str
    session_id: str
    agent_item: str  # PROJECT scope, asserted by the agent, unconfirmed
    human_item: str  # WORKSPACE scope, asserted (so confirmed) by the human
    disputing_item: str  # the agent's item contradicting human_item
    proposal_id: str  # the agent's load-bearing suggestion on agent_item
    handoff_id: str  # the agent's checkpoint of a second session

    def ids(self) -> set[str]:
        return {
            self.workspace_id,
            self.human.id,
            self.agent.id,
            self.team_id,
            self.project_id,
            self.session_id,
            self.agent_item,
            self.human_item,
            self.disputing_item,
            self.proposal_id,
            self.handoff_id,
        }


async def populate(api: Api, label: str) -> Tenant:
    workspace_id, human = await api.bootstrap(f"{label}-human")
    agent = await api.actor(human.token, "AGENT", f"{label}-agent")
    team = await api.run(human.token, 'mutation { createTeam(name: "core", function: "backend") { id } }')
    team_id = team["createTeam"]["id"]
    await api.run(human.token, ADD_TEAM_MEMBER, t=team_id, a=agent.id)
    project_id = await api.project(human.token, f"{label}-project", team_id)
    await api.add_member(human.token, project_id, agent.id)
    started = await api.run(
        agent.token,
        """mutation($p: ID!, $v: String!) { startSession(input: {projectId: $p, task: "work",
             client: {tool: "claude-code", version: $v}, externalId: "ext"}) { id } }""",
        p=project_id,
        v=f"1.0-{uuid.uuid4().hex[:6]}",
    )
    session_id = started["startSession"]["id"]
    agent_item = await api.assert_item(
        agent.token,
        projectId=project_id,
        statement=f"{label}: retries are idempotent",
        sessionId=session_id,
    )
    human_item = await api.assert_item(
        human.token, projectId=project_id, statement=f"{label}: use Postgres", scope="WORKSPACE"
    )
    disputing = await api.assert_item(
        agent.token,
        projectId=project_id,
        statement=f"{label}: use SQLite",
        sessionId=session_id,
        contradicts=[human_item["id"]],
    )
    proposal = await api.run(
        agent.token,
        'mutation($i: ID!) { suggestLoadBearing(id: $i, reason: "core") { id } }',
        i=agent_item["id"],
    )
    second = await api.run(
        agent.token, "mutation($p: ID!) { startSession(input: {projectId: $p}) { id } }", p=project_id
    )
    left = await api.run(
        agent.token,
        'mutation($s: ID!) { checkpoint(input: {sessionId: $s, summary: "stopped"}) { id } }',
        s=second["startSession"]["id"],
    )
    await api.run(
        human.token,
        """mutation($p: ID!, $s: String!) { importItems(input: {projectId: $p, source: "CLAUDE.md",
             origin: DOCUMENT, items: [{key: "rules:CLAUDE.md:1", kind: CONSTRAINT, statement: $s}]}) {
             written } }""",
        p=project_id,
        s=f"{label}: never push to main",
    )
    await api.run(
        human.token,
        "mutation($e: String!) { createInvitation(email: $e) { id } }",
        e=f"{label}-invitee@example.com",
    )
    await api.run(
        human.token,
        """mutation($p: ID!, $i: ID!) {
             setRetentionPolicy(input: {projectId: $p, statuses: [RETIRED], after: "P90D"}) { id }
             placeLegalHold(itemId: $i, reason: "audit") { id } }""",
        p=project_id,
        i=human_item["id"],
    )
    return Tenant(
        workspace_id,
        human,
        agent,
        team_id,
        project_id,
        session_id,
        agent_item["id"],
        human_item["id"],
        disputing["id"],
        proposal["suggestLoadBearing"]["id"],
        left["checkpoint"]["id"],
    )


@pytest.fixture(scope="module")
async def tenants(api: Api) -> tuple[Tenant, Tenant]:
    return await populate(api, "a"), await populate(api, "b")


async def admin_counts(admin_engine: AsyncEngine, workspace_id: str) -> dict[str, int]:
    """Rows per tenant table for one workspace, read as the superuser (no RLS)."""
    ws = uuid.UUID(workspace_id)
    counts: dict[str, int] = {}
    async with admin_engine.connect() as connection:
        for name in WORKSPACE_TABLES:
            table = tables.metadata.tables[name]
            counts[name] = (
                await connection.execute(
                    select(func.count()).select_from(table).where(table.c.workspace_id == ws)
                )
            ).scalar_one()
        counts["workspaces"] = (
            await connection.execute(
                select(func.count()).select_from(tables.workspaces).where(tables.workspaces.c.id == ws)
            )
        ).scalar_one()
        counts["identities"] = (
            await connection.execute(
                select(func.count(func.distinct(tables.identities.c.id)))
                .select_from(
                    tables.identities.join(
                        tables.actors, tables.actors.c.identity_id == tables.identities.c.id
                    )
                )
                .where(tables.actors.c.workspace_id == ws)
            )
        ).scalar_one()
    return counts


async def both_counts(admin_engine: AsyncEngine, a: Tenant, b: Tenant) -> tuple[dict[str, int], ...]:
    """``admin_counts`` of B and of A: a refusal must leave both as they were."""
    return await admin_counts(admin_engine, b.workspace_id), await admin_counts(admin_engine, a.workspace_id)


async def counts_in(connection: AsyncConnection, names: Iterable[str]) -> dict[str, int]:
    """Rows per table that this connection, in its role and context, can count."""
    return {
        name: (
            await connection.execute(select(func.count()).select_from(tables.metadata.tables[name]))
        ).scalar_one()
        for name in names
    }


# --- Through the API -------------------------------------------------------------------------


async def test_r1_objects_of_another_workspace_read_as_null(api: Api, tenants: tuple[Tenant, Tenant]) -> None:
    a, b = tenants
    query = """query($i: ID!, $p: ID!, $s: ID!, $t: DateTime!) {
      item(id: $i) { id } past: item(id: $i, asOf: $t) { id }
      project(id: $p) { id } session(id: $s) { id } }"""
    for who in (a.human, a.agent):
        for item_id in (b.agent_item, b.human_item, b.disputing_item):
            data = await api.run(
                who.token,
                query,
                i=item_id,
                p=b.project_id,
                s=b.session_id,
                t="2999-01-01T00:00:00+00:00",
            )
            assert data == {"item": None, "past": None, "project": None, "session": None}
    # Control: B's own human reads the same ids.
    own = await api.run(
        b.human.token,
        query,
        i=b.human_item,
        p=b.project_id,
        s=b.session_id,
        t="2999-01-01T00:00:00+00:00",
    )
    assert own["item"] == {"id": b.human_item} and own["session"] == {"id": b.session_id}


async def test_r1_items_of_another_workspace_project_is_not_found(
    api: Api, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    for who in (a.human, a.agent):
        body = await api.post(
            who.token,
            "query($p: ID!) { items(projectId: $p) { totalCount nodes { id } } }",
            {"p": b.project_id},
        )
        assert body["data"] is None, "no page (and no totalCount) for another workspace's project"
        assert [error["extensions"]["code"] for error in body["errors"]] == ["NOT_FOUND"]
    own = await api.run(b.human.token, COUNT_ITEMS, p=b.project_id)
    assert own["items"]["totalCount"] == 4


async def test_r1_handoffs_of_another_workspace_never_reach_a_caller(
    api: Api, tenants: tuple[Tenant, Tenant]
) -> None:
    """R1, R12: not by id, not as the newest of B's project, not on resume."""
    a, b = tenants
    for who in (a.human, a.agent):
        found = await api.run(who.token, "query($h: ID!) { handoff(id: $h) { id } }", h=b.handoff_id)
        assert found["handoff"] is None
        for query, variables in (
            ("query($p: ID!) { latestHandoff(projectId: $p) { id } }", {"p": b.project_id}),
            (
                'query($p: ID!) { resume(input: {projectId: $p, task: "work", tokenBudget: 100})'
                " { rendered } }",
                {"p": b.project_id},
            ),
            (
                'mutation($s: ID!) { checkpoint(input: {sessionId: $s, summary: "x"}) { id } }',
                {"s": b.session_id},
            ),
        ):
            error = await api.fail(who.token, query, **variables)
            assert error["extensions"]["code"] == "NOT_FOUND", (query, error)
    own = await api.run(b.agent.token, "query($h: ID!) { handoff(id: $h) { id } }", h=b.handoff_id)
    assert own["handoff"] == {"id": b.handoff_id}


async def test_r1_nested_fields_and_lists_never_reach_another_workspace(
    api: Api, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    data = await api.run(
        a.human.token,
        """query($p: ID!) { me { id } projects { id team { id } }
          items(projectId: $p) { totalCount nodes { id project { id team { id } }
            provenance { assertedBy { id } session { id project { id } actor { id } } }
            confirmation { by { id } } chain { id } supersedes { id } supersededBy { id }
            disputes { id item { id } contested { id } raisedBy { id } } } } }""",
        p=a.project_id,
    )
    seen = set(_strings(data))
    assert not seen & b.ids(), "a nested field reached workspace B"
    assert {a.project_id, a.team_id, a.session_id, a.agent.id, a.disputing_item} <= seen
    assert {project["id"] for project in data["projects"]} == {a.project_id}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


async def test_r1_cannot_assert_into_another_workspace(
    api: Api, admin_engine: AsyncEngine, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    before = await both_counts(admin_engine, a, b)
    into_b = {"kind": "FACT", "projectId": b.project_id, "statement": "planted", "scope": "WORKSPACE"}
    for who in (a.human, a.agent):
        assert_code(await api.fail(who.token, ASSERT_ITEM, i=into_b), "NOT_FOUND")
    # Pointing at B's rows from A's own project: B's session, B's item, B's actor.
    own = {"kind": "FACT", "projectId": a.project_id, "statement": "planted"}
    pointing = [
        ({**own, "sessionId": b.session_id}, "NOT_FOUND"),
        ({**own, "contradicts": [b.human_item]}, "NOT_FOUND"),
        ({**own, "scope": "GRANTS", "grantActorIds": [b.human.id]}, "BAD_USER_INPUT"),
    ]
    for fields, expected in pointing:
        assert_code(await api.fail(a.agent.token, ASSERT_ITEM, i=fields), expected)
    assert await both_counts(admin_engine, a, b) == before, "a refused assertion wrote something"


async def test_r1_cannot_change_membership_across_workspaces(
    api: Api, admin_engine: AsyncEngine, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    before = await both_counts(admin_engine, a, b)
    attempts = [
        (ADD_PROJECT_MEMBER, {"p": a.project_id, "a": b.agent.id}),  # B's actor into A's project
        (ADD_PROJECT_MEMBER, {"p": b.project_id, "a": a.agent.id}),  # A's actor into B's project
        (ADD_TEAM_MEMBER, {"t": a.team_id, "a": b.agent.id}),
        (ADD_TEAM_MEMBER, {"t": b.team_id, "a": a.agent.id}),
        ('mutation($t: ID) { createProject(name: "x", teamId: $t) { id } }', {"t": b.team_id}),
        ("mutation($p: ID!) { startSession(input: {projectId: $p}) { id } }", {"p": b.project_id}),
        ("mutation($s: ID!) { endSession(id: $s) { id } }", {"s": b.session_id}),
    ]
    for query, variables in attempts:
        error = await api.fail(a.human.token, query, **variables)
        assert error["extensions"]["code"] == "NOT_FOUND", (query, error)
    assert await both_counts(admin_engine, a, b) == before


async def test_r1_cannot_change_an_item_of_another_workspace(
    api: Api, admin_engine: AsyncEngine, tenants: tuple[Tenant, Tenant]
) -> None:
    a, b = tenants
    item_columns = (
        select(tables.items)
        .where(tables.items.c.workspace_id == uuid.UUID(b.workspace_id))
        .order_by(tables.items.c.id)
    )
    async with admin_engine.connect() as connection:
        before = (await connection.execute(item_columns)).all()
    events_before = (await admin_counts(admin_engine, b.workspace_id))["item_events"]
    mutations = [
        (a.human, CONFIRM_ITEM, {}),
        (a.human, MAKE_LOAD_BEARING, {}),
        (a.human, RETIRE_ITEM, {"r": "gone"}),
        (a.agent, VERIFY_ITEM, {}),
        (a.agent, SUGGEST_LOAD_BEARING, {}),
    ]
    for who, query, variables in mutations:
        for target in (b.agent_item, b.human_item):
            error = await api.fail(who.token, query, i=target, **variables)
            assert error["extensions"]["code"] == "NOT_FOUND", (query, error)
    async with admin_engine.connect() as connection:
        assert (await connection.execute(item_columns)).all() == before
    assert (await admin_counts(admin_engine, b.workspace_id))["item_events"] == events_before


# --- Raw SQL as mneia_app ---------------------------------------------------------------------


async def test_r1_raw_reads_as_app_role_never_count_another_workspace(
    engine: AsyncEngine, admin_engine: AsyncEngine, tenants: tuple[Tenant, Tenant]
) -> None:
    """A's human works in everything of A, so it must count exactly A's rows, never B's."""
    a, b = tenants
    expected = await admin_counts(admin_engine, a.workspace_id)
    # The token policy shows an actor its own tokens, and a human those of the actors it created (F14).
    human = uuid.UUID(a.human.id)
    created = select(tables.actors.c.id).where(tables.actors.c.created_by == human)
    async with admin_engine.connect() as connection:
        expected["api_tokens"] = (
            await connection.execute(
                select(func.count())
                .select_from(tables.api_tokens)
                .where((tables.api_tokens.c.actor_id == human) | tables.api_tokens.c.actor_id.in_(created))
            )
        ).scalar_one()
    # A person's identity is read only through the owner's mneia_identities_of (migration 0036),
    # never by the server's role directly: none shows here (tests/test_identity.py reads them).
    expected["identities"] = 0
    in_b = await admin_counts(admin_engine, b.workspace_id)
    assert all(in_b[name] > 0 for name in TENANT_TABLES), in_b

    async with as_caller(engine, a.human) as connection:
        assert (await connection.execute(text("SELECT current_user"))).scalar_one() == "mneia_app"
        counted = await counts_in(connection, TENANT_TABLES)
        probing_b = {
            name: (
                await connection.execute(
                    select(func.count())
                    .select_from(tables.metadata.tables[name])
                    .where(tables.metadata.tables[name].c.workspace_id == uuid.UUID(b.workspace_id))
                )
            ).scalar_one()
            for name in WORKSPACE_TABLES
        }
        b_workspace = (
            await connection.execute(
                select(func.count())
                .select_from(tables.workspaces)
                .where(tables.workspaces.c.id == uuid.UUID(b.workspace_id))
            )
        ).scalar_one()
    assert counted == expected
    assert probing_b == dict.fromkeys(WORKSPACE_TABLES, 0)
    assert b_workspace == 0


def _foreign_row(name: str, a: Tenant, b: Tenant) -> dict[str, Any]:
    """A row of table ``name`` that claims workspace B, written with A's context."""
    ws, me = uuid.UUID(b.workspace_id), uuid.UUID(a.human.id)
    new = uuid.uuid4()
    planted: dict[str, dict[str, Any]] = {
        "workspaces": {"id": new, "name": "planted"},
        "identities": {"id": new, "display_name": "planted"},
        "actors": {"kind": "AGENT", "name": "planted", "created_by": me},
        "api_tokens": {"actor_id": uuid.UUID(b.agent.id), "token_hash": new.hex, "created_by": me},
        "teams": {"name": "planted", "function": "x", "created_by": me},
        "team_members": {"team_id": uuid.UUID(b.team_id), "actor_id": me, "added_by": me},
        "projects": {"name": "planted", "created_by": me},
        "project_members": {"project_id": uuid.UUID(b.project_id), "actor_id": me, "added_by": me},
        "clients": {"tool": "planted", "version": new.hex},
        "sessions": {"project_id": uuid.UUID(b.project_id), "actor_id": me},
        "items": {
            "project_id": uuid.UUID(b.project_id),
            "kind": "FACT",
            "statement": "planted",
            "status": "ACTIVE",
            "scope": "WORKSPACE",
            "grant_actor_ids": [],
            "asserted_by": me,
            "load_bearing": False,
            "load_bearing_suggested": False,
        },
        "item_events": {
            "item_id": uuid.UUID(b.human_item),
            "actor_id": me,
            "at": func.now(),
            "event": "CONFIRMED",
            "to_status": "RETIRED",
            "load_bearing": False,
            "confirmed": False,
            "data": {},
        },
        "item_states": {
            "item_id": uuid.UUID(b.human_item),
            "since": func.now(),
            "status": "RETIRED",
            "load_bearing": False,
            "load_bearing_suggested": False,
        },
        "proposals": {
            "project_id": uuid.UUID(b.project_id),
            "kind": "LOAD_BEARING",
            "status": "PENDING",
            "target_id": uuid.UUID(b.human_item),
            "proposed_by": me,
        },
        "disputes": {
            "project_id": uuid.UUID(b.project_id),
            "status": "OPEN",
            "item_id": uuid.UUID(b.agent_item),
            "contested_id": uuid.UUID(b.human_item),
            "raised_by": me,
        },
        "handoffs": {
            "project_id": uuid.UUID(b.project_id),
            "session_id": uuid.UUID(b.session_id),
            "created_by": me,
            "summary": "planted",
            "next_steps": [],
            "open_questions": [],
            "item_ids": [],
            "replacement_ids": [],
            "proposal_ids": [],
            "dispute_ids": [],
            "pointed_ids": [],
            "request_digest": "planted",
        },
        "imports": {
            "project_id": uuid.UUID(b.project_id),
            "key": "planted",
            "digest": "planted",
            "item_id": uuid.UUID(b.human_item),
            "imported_by": me,
        },
        "invitations": {
            "email": "planted@example.com",
            "invited_by": me,
            "expires_at": func.now() + timedelta(days=1),
        },
        "retention_policies": {
            "project_id": uuid.UUID(b.project_id),
            "statuses": ["RETIRED"],
            "after": timedelta(days=90),
            "created_by": me,
        },
        "legal_holds": {
            "project_id": uuid.UUID(b.project_id),
            "reason": "planted",
            "placed_by": me,
        },
        "item_counts": {
            "project_id": uuid.UUID(b.project_id),
            "scope": "WORKSPACE",
            "actor_id": me,
            "via_grant": False,
            "status": "ACTIVE",
            "kind": "FACT",
            "load_bearing": False,
            "confirmed": True,
            "slot": 1,
            "n": 1000,
        },
    }
    row = planted[name]
    columns = tables.metadata.tables[name].c
    if "id" in columns and "id" not in row:
        row = {"id": new, **row}
    if "workspace_id" in columns:
        row = {"workspace_id": ws, **row}
    return row


@pytest.mark.parametrize("name", TENANT_TABLES)
async def test_r1_raw_insert_into_another_workspace_is_refused(
    engine: AsyncEngine, admin_engine: AsyncEngine, tenants: tuple[Tenant, Tenant], name: str
) -> None:
    a, b = tenants
    before = await admin_counts(admin_engine, b.workspace_id)
    async with as_caller(engine, a.human) as connection:
        planting = insert(tables.metadata.tables[name]).values(**_foreign_row(name, a, b))
        error = (await refused(connection, planting)).orig
    # Where the role may insert at all, it is the row-level policy that says no; the rest
    # (workspaces and identities are minted by an administrator, events, states and counts by a
    # trigger) it may not.
    # Proposals and disputes meet their authority guard first: it cannot see the item they name.
    # Invitations are written through mneia_invite alone (beside their emails, migration 0037).
    if name in ("workspaces", "identities", "item_events", "item_states", "item_counts", "invitations"):
        assert "permission denied" in str(error), error
    elif name in ("proposals", "disputes"):
        assert "REFUSED:" in str(error), error
    elif support.ROUTED is not None and "REFUSED:" in str(error):
        # On Citus, when B's shard is on another node, the row is written there in a backend of
        # its own, whose transaction began later: a guard of the row's times refuses it first.
        assert "is the server's time of the write" in str(error) or "asserted by the actor" in str(error)
    else:
        assert "row-level security" in str(error), error
    assert await admin_counts(admin_engine, b.workspace_id) == before


# A change each table allows the caller on its own rows, and the rows it applies to.
UPDATABLE: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "items": ({"status_reason": "planted"}, {}),
    "sessions": ({"ended_at": func.now()}, {"ended_at": None}),
    "api_tokens": ({"revoked_at": func.now()}, {"revoked_at": None}),
    "imports": ({"digest": "planted"}, {}),
    "proposals": (
        {"status": "REJECTED", "decided_by": func.mneia_actor(), "decided_at": func.now()},
        {"status": "PENDING"},
    ),
    "disputes": (
        {
            "status": "RESOLVED",
            "resolved_by": func.mneia_actor(),
            "resolved_at": func.now(),
            "kept_item_id": tables.disputes.c.contested_id,
        },
        {"status": "OPEN"},
    ),
}


@pytest.mark.parametrize("name", sorted(UPDATABLE))
async def test_r1_raw_update_of_another_workspace_touches_nothing(
    engine: AsyncEngine, tenants: tuple[Tenant, Tenant], name: str
) -> None:
    a, b = tenants
    table = tables.metadata.tables[name]
    values, which = UPDATABLE[name]
    applies = [
        table.c[column].is_(None) if wanted is None else table.c[column] == wanted
        for column, wanted in which.items()
    ]

    def change(*where: Any) -> Any:
        return update(table).where(*applies, *where).values(**values)

    async with as_caller(engine, a.human) as connection:
        assert (
            await connection.execute(change(table.c.workspace_id == uuid.UUID(b.workspace_id)))
        ).rowcount == 0
        # Unfiltered, the statement still reaches only A's rows (those it applies to).
        own = await connection.execute(
            select(func.count())
            .select_from(table)
            .where(*applies, table.c.workspace_id == uuid.UUID(a.workspace_id))
        )
        mine = own.scalar_one()
        everywhere = await connection.execute(change())
        assert everywhere.rowcount == mine
    # Control: the same statement does reach A's own rows, so the zero above means something.
    async with as_caller(engine, a.human) as connection:
        assert (
            await connection.execute(change(table.c.workspace_id == uuid.UUID(a.workspace_id)))
        ).rowcount > 0


async def test_r1_without_context_every_table_reads_empty(
    engine: AsyncEngine, admin_engine: AsyncEngine, tenants: tuple[Tenant, Tenant]
) -> None:
    del tenants  # only makes sure every table holds rows
    async with admin_engine.connect() as connection:
        stored = await counts_in(connection, TENANT_TABLES)
    assert all(count > 0 for count in stored.values()), stored
    async with as_nobody(engine) as connection:
        seen = await counts_in(connection, TENANT_TABLES)
    assert seen == dict.fromkeys(TENANT_TABLES, 0)


async def test_r1_context_is_transaction_local_on_a_pooled_connection(
    admin_url: str, tenants: tuple[Tenant, Tenant]
) -> None:
    """The server's own unit of work (``transaction`` + ``token.authenticate``) on a one-connection pool.

    After a request with A's context ends, committed or rolled back, the next
    user of that very connection has no tenant and reads nothing.
    """
    a, _ = tenants
    pooled = create_engine(app_url(admin_url), pool_size=1)
    pid = text("SELECT pg_backend_pid()")
    setting = text("SELECT current_setting('mneia.workspace_id', true)")
    items_count = select(func.count()).select_from(tables.items)
    actors_count = select(func.count()).select_from(tables.actors)
    try:
        backends = set()
        for failed in (False, True):
            async with transaction(pooled) as tx:
                assert await token.authenticate(tx, a.human.token) is not None
                backends.add((await tx.execute(pid)).scalar_one())
                assert (await tx.execute(items_count)).scalar_one() > 0
                if failed:
                    tx.fail()
            async with transaction(pooled) as tx:
                backends.add((await tx.execute(pid)).scalar_one())
                assert (await tx.execute(setting)).scalar_one() in ("", None)
                assert (await tx.execute(items_count)).scalar_one() == 0
                assert (await tx.execute(actors_count)).scalar_one() == 0
        assert len(backends) == 1, "the pool did not hand back the same connection"
    finally:
        await pooled.dispose()


# --- The roles --------------------------------------------------------------------------------


async def test_r1_server_role_is_neither_superuser_nor_bypassrls(admin_engine: AsyncEngine) -> None:
    (role,) = await rows(
        admin_engine,
        "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb,"
        " pg_has_role('mneia_app', 'mneia_owner', 'MEMBER') AS owner_member"
        " FROM pg_roles WHERE rolname = 'mneia_app'",
    )
    # No role it can become is a superuser or bypasses RLS either.
    (mighty,) = await rows(
        admin_engine,
        "SELECT count(*) AS roles FROM pg_roles r WHERE pg_has_role('mneia_app', r.oid, 'MEMBER')"
        " AND (r.rolsuper OR r.rolbypassrls)",
    )
    assert not role["rolsuper"] and not role["rolbypassrls"]
    assert not role["rolcreaterole"] and not role["rolcreatedb"]
    assert not role["owner_member"], "mneia_app could SET ROLE mneia_owner and disable RLS"
    assert mighty["roles"] == 0


async def test_r1_server_role_owns_nothing_and_owner_owns_every_table(admin_engine: AsyncEngine) -> None:
    (owned,) = await rows(
        admin_engine,
        "SELECT (SELECT count(*) FROM pg_class WHERE relowner = r.oid)"
        " + (SELECT count(*) FROM pg_proc WHERE proowner = r.oid)"
        " + (SELECT count(*) FROM pg_namespace WHERE nspowner = r.oid) AS objects"
        " FROM pg_roles r WHERE r.rolname = 'mneia_app'",
    )
    tables_owned = await rows(
        admin_engine,
        "SELECT table_name, pg_get_userbyid(c.relowner) AS owner FROM information_schema.tables t"
        " JOIN pg_class c ON c.oid = (quote_ident(t.table_schema) || '.'"
        " || quote_ident(t.table_name))::regclass"
        " WHERE t.table_schema = 'public' AND t.table_name <> 'alembic_version'"
        # an extension's own (Citus's views citus_tables and citus_schemas) are not Mneia's
        " AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass"
        " AND d.objid = c.oid AND d.deptype = 'e')",
    )
    owners = {row["table_name"]: row["owner"] for row in tables_owned}
    assert owned["objects"] == 0
    assert set(owners) == set(TENANT_TABLES) | {
        "seal_keys",
        "sign_in_states",
        "identity_links",
        "invitation_emails",
    }
    assert set(owners.values()) == {"mneia_owner"}


async def test_r1_every_table_has_row_level_security_enabled_and_forced(
    admin_engine: AsyncEngine,
) -> None:
    found = await rows(
        admin_engine,
        "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,"
        " (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid) AS policies"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')"
        " AND c.relname <> 'alembic_version'",
    )
    assert {row["relname"] for row in found} >= set(TENANT_TABLES)
    unguarded = [
        row["relname"] for row in found if not (row["relrowsecurity"] and row["relforcerowsecurity"])
    ]
    assert unguarded == []
    assert all(row["policies"] > 0 for row in found)


async def test_r1_server_role_cannot_delete_or_truncate(admin_engine: AsyncEngine) -> None:
    found = await rows(
        admin_engine,
        "SELECT c.relname, has_table_privilege('mneia_app', c.oid, 'DELETE') AS can_delete,"
        " has_table_privilege('mneia_app', c.oid, 'TRUNCATE') AS can_truncate"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')",
    )
    assert {row["relname"] for row in found} >= set(APPEND_ONLY)
    assert [row["relname"] for row in found if row["can_delete"] or row["can_truncate"]] == []


@pytest.mark.skipif(
    not ON_CLUSTER, reason="reads a Citus shard on its node: MNEIA_TEST_CITUS=1 (.ci/run's Citus stage)"
)
async def test_r1_on_citus_a_shard_read_directly_shows_only_the_bound_workspace(
    api: Api, engine: AsyncEngine, nodes: Nodes
) -> None:
    """R1, issue 25: a slice's statements read their workspace's shards directly on its node
    (storage.database.Driven.on), where the shards' own policies are all that guards them. Bound
    to another workspace of the same node, the first one's shard of ``items`` shows none of its
    rows, named by its workspace or not; bound to the first (the control), it shows them."""
    first = await api.world()
    await api.assert_item(
        first.human.token, projectId=first.project_id, statement="shards: one", scope="WORKSPACE"
    )
    home = await node_engine(engine, first.human)
    for _ in range(16):  # two workers: about one new workspace in two lands on the first one's node
        other = await api.world()
        if await node_engine(engine, other.human) is home:
            break
    else:
        pytest.fail("no workspace of 16 landed on the first one's node")
    shard = (await nodes.shards(uuid.UUID(first.workspace_id)))["items"]
    read = text(f'SELECT count(*) FROM "{shard}" WHERE workspace_id = :w OR :everything')
    for who, everything, expected in (
        (other.human, False, 0),
        (other.human, True, 0),
        (first.human, False, 1),
    ):
        async with as_caller(engine, who) as connection:
            seen = await connection.execute(
                read, {"w": uuid.UUID(first.workspace_id), "everything": everything}
            )
            assert seen.scalar_one() == expected, (who, everything)
