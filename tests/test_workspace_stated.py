"""R1, issue 25: every statement of the request path states ``workspace_id = X``.

On a Citus cluster distributed by workspace (docs/scale-out.md) a statement
reaches one shard only when it says which workspace it reads or writes, for
each distributed table, as a constant or a bound parameter; row-level security
confines the rows too, but through a function Citus cannot route by. So a
representative run of the API (teams, projects, actors and ``me``; tokens
created, listed and revoked; sessions; items asserted one and many; pages
with their counts, filters, words, cursors and another order, and as of a
moment; an item with its history and chain; proposals and disputes raised,
listed and decided; supersessions; a checkpoint, its handoff and resumption;
rehydration now and as of a moment; retention, holds, erasure, invitations,
memberships and an import; what a subscription event reads) is sent through
the real application, and every statement the server's engine sends is kept
with its parameters (storage.database.Tx's both ways: SQLAlchemy's and the
driver's).

Each is then EXPLAINed as the administrator: a superuser, to whom row-level
security does not apply, so that the plan shows the statement's own
conditions only, every parameter a constant (``plan_cache_mode =
force_custom_plan``). Every scan of a tenant table (one with a
``workspace_id``; ``workspaces`` by its ``id``) must fix that key to the
request's workspace: by one of its own conditions (an index condition, a
recheck, a filter; the planner writes there the constant that a join's
equality implies), or by an equality of keys with a scan that does, as a
join condition or a parameterised scan shows it. A key passed into a
sub-plan as a parameter (``$9``) shows no such equality, and a recursive step
does not inherit its seed's: those scans say the workspace themselves. The
controls prove the checker finds a statement that leaves it out.

EXPLAIN does not show the statements inside the database's own functions and
triggers (storage/sql). So the same run is sent again through connections
that load auto_explain, which plans every statement run, nested ones too
(a function's variables, ``NEW.workspace_id`` among them, as constants), and
each plan is read the same way. None may read every workspace
(ACROSS_WORKSPACES, empty since a person's workspaces are read from their
links, migration 0037). One lookup is not run here: ``mneia_authenticate``
finds a token minted before 0024, which names no workspace, by its digest
alone.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from unittest.mock import patch

import asyncpg
import httpx
import pytest
from sqlalchemy import and_, event, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from mneia.app import create_app
from mneia.config import APP_ROLE, async_url
from mneia.rehydration import candidates
from mneia.storage import count, database, dispute, identity, notification, proposal, search, token
from mneia.storage.citus import REFERENCE_TABLES
from mneia.storage.node import Nodes
from mneia.storage.tables import item_states, items
from tests.citus import ON_CLUSTER
from tests.graphql import Api, Who
from tests.live import PATIENCE
from tests.support import node_engine, sent

TENANT_TABLES = text(
    "SELECT table_name, CASE WHEN table_name = 'workspaces' THEN 'id' ELSE 'workspace_id' END AS key"
    " FROM information_schema.columns WHERE table_schema = 'public'"
    " AND (column_name = 'workspace_id' OR (table_name = 'workspaces' AND column_name = 'id'))"
    " AND table_name <> ALL (CAST(:reference AS text[]))"
).bindparams(reference=sorted(REFERENCE_TABLES))
"""Every table of a tenant's rows, with the column that names the tenant. Not ``identity_links``,
which names the workspaces of a person and is read by the person: on Citus a reference table,
read on the node the request runs on, never across the nodes."""

OWN_CONDITIONS = ("Index Cond", "Recheck Cond", "Filter", "TID Cond")
"""A scan's own conditions: where its key is fixed to a constant."""
CONDITIONS = (*OWN_CONDITIONS, "Join Filter", "Hash Cond", "Merge Cond")
"""Every condition of a plan: where two keys are equated."""
EXPLAINED = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE")


def parts(condition: str, joiner: str = "AND") -> list[str]:
    """The top-level parts of a condition as EXPLAIN prints it joined by ``joiner`` (AND, OR), each
    without the parentheses around it."""
    body, separator = _unwrapped(condition), f" {joiner} "
    found, depth, start, quoted, index = [], 0, 0, False, 0
    while index < len(body):
        char = body[index]
        if char == "'":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif not quoted and depth == 0 and body.startswith(separator, index):
            found.append(_unwrapped(body[start:index]))
            index = start = index + len(separator)
            continue
        index += 1
    found.append(_unwrapped(body[start:]))
    return found


def _unwrapped(condition: str) -> str:
    """``condition`` without the parentheses that enclose all of it."""
    condition = condition.strip()
    while condition.startswith("(") and condition.endswith(")"):
        depth, quoted = 0, False
        for position, char in enumerate(condition):
            if char == "'":
                quoted = not quoted
            elif not quoted and char == "(":
                depth += 1
            elif not quoted and char == ")":
                depth -= 1
                if depth == 0 and position < len(condition) - 1:
                    return condition  # "(a) OR (b)": the first parenthesis closes early
        condition = condition[1:-1].strip()
    return condition


_EQUALITY = re.compile(r"^(\S+) = (\S+)$")
_COLUMN = re.compile(r"^([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)$")
_PARAMETER = re.compile(r"\$\d+")
_NOTHING = re.compile(r"\S+ = ANY \('\{\}'::\w+\[\]\)")
"""A condition among an empty array's values: the planner may then leave the statement's other
conditions out of the scan (PostgreSQL 18 does, given a small table), since it reads nothing."""


@dataclass
class Plan:
    """What one plan (EXPLAIN's JSON, VERBOSE: every column named by its scan's unique alias) says
    of its tenant tables: each scan, those whose own conditions fix the workspace, and the
    equalities between keys."""

    workspace: str
    keys: dict[str, str]
    """The tenant tables, each with its key."""
    parameters: bool = False
    """Whether a parameter (``$1``) fixes the key too: a function's statement planned generically
    (the keyed lookups of migration 0032) shows its variable so, not its value."""
    scans: dict[str, str] = field(default_factory=dict)
    """Each scan of a tenant table, by alias (EXPLAIN makes them unique): its table."""
    pinned: set[str] = field(default_factory=set)
    equated: dict[str, str] = field(default_factory=dict)
    """Union-find over the aliases whose keys are equated."""

    def read(self, plan: dict[str, Any]) -> None:
        """Every scan first (a join names its tables before their scans), then every condition."""
        for node in _nodes(plan):
            relation = node.get("Relation Name")
            if relation in self.keys and node["Node Type"] != "ModifyTable":
                self.scans[node["Alias"]] = relation
        for node in _nodes(plan):
            own = node.get("Alias") if node.get("Alias") in self.scans else None
            for name in CONDITIONS:
                if name not in node:
                    continue
                if own is not None and name in OWN_CONDITIONS and self._fixes(node[name], own):
                    self.pinned.add(own)
                if (
                    own is not None
                    and name in OWN_CONDITIONS
                    and any(map(_NOTHING.fullmatch, parts(node[name])))
                ):
                    self.pinned.add(own)  # a key among no values: the scan reads no one's rows
                for part in parts(node[name]):
                    self._equate(part)

    def unpinned(self) -> list[str]:
        """The scans of a tenant table that nothing fixes to the workspace, as ``table alias``."""
        held = {self._root(alias) for alias in self.pinned}
        return sorted(
            f"{table} {alias}" for alias, table in self.scans.items() if self._root(alias) not in held
        )

    def _fixes(self, condition: str, scan: str) -> bool:
        """Whether ``condition`` holds only for ``scan``'s rows of the workspace: one of its AND-ed
        parts is ``key = 'workspace'``, or an OR each of whose parts fixes it (row-level security
        ORs its policies, and a plan may read each by an index of its own)."""
        for part in parts(condition):
            either = parts(part, "OR")
            if len(either) > 1 and all(self._fixes(one, scan) for one in either):
                return True
            found = _EQUALITY.match(part)
            if found is not None and any(self._the_workspace(side) for side in found.groups()):
                sides = [_COLUMN.match(side) for side in found.groups()]
                if any(side is not None and (side[1], side[2]) == (scan, self._key(scan)) for side in sides):
                    return True
        return False

    def _the_workspace(self, side: str) -> bool:
        return side == f"'{self.workspace}'::uuid" or (
            self.parameters and _PARAMETER.fullmatch(side) is not None
        )

    def _equate(self, part: str) -> None:
        found = _EQUALITY.match(part)
        sides = [_COLUMN.match(side) for side in found.groups()] if found is not None else []
        keys = [side[1] for side in sides if side is not None and side[2] == self._key(side[1])]
        if len(keys) == 2:
            self.equated[self._root(keys[0])] = self._root(keys[1])

    def _key(self, alias: str) -> str:
        return self.keys.get(self.scans.get(alias, ""), "workspace_id")

    def _root(self, alias: str) -> str:
        while self.equated.get(alias, alias) != alias:
            alias = self.equated[alias]
        return alias


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


async def check(
    admin_engine: AsyncEngine, statements: list[tuple[str, tuple[Any, ...]]], workspace: uuid.UUID
) -> tuple[int, list[str]]:
    """How many distinct statements (with their parameters) were EXPLAINed as the administrator, and
    each offending statement once, with its scans that do not fix the workspace."""
    async with admin_engine.connect() as connection:
        keys = {row.table_name: row.key for row in await connection.execute(TENANT_TABLES)}
        driver = (await connection.get_raw_connection()).driver_connection
        assert isinstance(driver, asyncpg.Connection)
        await driver.execute(f"SET plan_cache_mode = {database.PLAN_CACHE_MODE}")
        explained: set[tuple[str, str]] = set()
        offenders: dict[str, set[str]] = {}
        for statement, parameters in statements:
            if (statement, repr(parameters)) in explained:
                continue
            explained.add((statement, repr(parameters)))
            if statement.lstrip().split(None, 1)[0].upper() not in EXPLAINED:
                offenders.setdefault(statement, set()).add("not a statement EXPLAIN reads")
                continue
            answer = await driver.fetchval(f"EXPLAIN (FORMAT JSON, VERBOSE) {statement}", *parameters)
            (plan,) = json.loads(answer) if isinstance(answer, str) else answer  # as the codec reads json
            read = Plan(str(workspace), keys)
            read.read(plan["Plan"])
            if unpinned := read.unpinned():
                offenders.setdefault(statement, set()).update(unpinned)
        await driver.execute("RESET plan_cache_mode")
    return len(explained), [
        f"{', '.join(sorted(scans))} in: {_shown(sql)}" for sql, scans in offenders.items()
    ]


def _shown(statement: str, width: int = 400) -> str:
    """A statement on one line, its middle left out past ``width`` characters."""
    line = " ".join(statement.split())
    return line if len(line) <= width else f"{line[: width // 2]} … {line[-width // 2 :]}"


# --- a representative run of the API ----------------------------------------------------------

ITEM = """id statement status authority stale freshness legalHold redacted
  project { id name team { name } }
  provenance { assertedBy { name } actorKind partial missing session { id client { tool version } } }
  confirmation { by { name } }"""
DEEP = f"""{ITEM} supersedes {{ id }} supersededBy {{ id }} chain {{ id }}
  events {{ kind actor {{ name }} item {{ id }} }} proposals {{ id status target {{ id }} }}
  disputes {{ id status item {{ id }} contested {{ id }} raisedBy {{ name }} }}"""
PAGE = f"""query($p: ID!, $f: ItemFilter, $after: String, $asOf: DateTime, $order: ItemOrder) {{
  items(projectId: $p, filter: $f, first: 2, after: $after, asOf: $asOf, orderBy: $order) {{
    nodes {{ {ITEM} }} pageInfo {{ hasNextPage endCursor }} totalCount totalCountIsExact }} }}"""
ONE = f"query($i: ID!, $asOf: DateTime) {{ item(id: $i, asOf: $asOf) {{ {DEEP} }} }}"
ASSERT = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id status } }"
ASSERT_MANY = "mutation($i: [AssertItemInput!]!) { assertItems(input: $i) { id status } }"
SUPERSEDE = """mutation($i: SupersedeInput!) { supersedeItem(input: $i) { __typename
  ... on PendingConfirmation { proposal { id } }
  ... on Superseded { previous { id } replacement { id } } } }"""
PROPOSAL = "id kind status target { id statement } proposedBy { name } result { id } decidedBy { name }"
PROPOSALS = f"query($p: ID!, $s: ProposalStatus) {{ proposals(projectId: $p, status: $s) {{ {PROPOSAL} }} }}"
DECIDE = f"mutation($i: ID!, $a: Boolean!) {{ decideProposal(id: $i, accept: $a) {{ {PROPOSAL} }} }}"
DISPUTE = "id status item { id } contested { id } raisedBy { name } resolvedBy { name } keptItem { id }"
DISPUTES = f"query($p: ID!, $s: DisputeStatus) {{ disputes(projectId: $p, status: $s) {{ {DISPUTE} }} }}"
SLICE = """tokensUsed rendered entries { reason item { id statement } }
  supersessions { previous { id } replacement { id } }"""
REHYDRATE = f"query($i: RehydrateInput!) {{ rehydrate(input: $i) {{ {SLICE} }} }}"
HANDOFF = f"""id summary rendered session {{ id endedAt }} project {{ id }} createdBy {{ name }}
  itemsAsserted {{ id }} supersessions {{ previous {{ id }} replacement {{ id }} }}
  pendingConfirmations {{ {PROPOSAL} }} disputes {{ {DISPUTE} }}"""
CHECKPOINT = f"mutation($i: CheckpointInput!) {{ checkpoint(input: $i) {{ {HANDOFF} }} }}"
RESUME = (
    f"query($i: ResumeInput!) {{ resume(input: $i) {{ rendered handoff {{ id }} slice {{ {SLICE} }} }} }}"
)
SESSION = "id task externalId provenanceMissing client { tool version } project { id } actor { name }"
SESSIONS = f"""query($p: ID!, $e: String, $a: String) {{ sessions(projectId: $p, externalId: $e, first: 1,
  after: $a) {{ nodes {{ {SESSION} }} pageInfo {{ endCursor }} }} }}"""
TOKEN = "id hint active actor { name } createdBy { name } revokedBy { name }"
REVOKE = f"mutation($i: ID!) {{ revokeToken(id: $i) {{ {TOKEN} }} }}"
IMPORT = """mutation($i: ImportInput!) { importItems(input: $i) { written unchanged session { id }
  writes { key action item { id } proposal { id } } } }"""


@dataclass
class Run:
    """The API, driven as one workspace's people and agents would; it counts the operations."""

    api: Api
    human: Who
    operations: int = 0

    async def __call__(self, who: Who, query: str, **variables: Any) -> dict[str, Any]:
        self.operations += 1
        return await self.api.run(who.token, query, **variables)

    async def refused(self, who: Who, query: str, code: str, **variables: Any) -> None:
        """An operation the server refuses: its statements are the request path's too."""
        self.operations += 1
        assert (await self.api.fail(who.token, query, **variables))["extensions"]["code"] == code


@dataclass
class Place:
    project: str
    team: str
    agent: Who


async def people_and_places(run: Run) -> Place:
    """Teams, projects, actors and their memberships; ``me``, the workspace, the projects."""
    human = run.human
    team = (await run(human, 'mutation { createTeam(name: "billing", function: "backend") { id } }'))[
        "createTeam"
    ]
    made = await run(
        human,
        'mutation($t: ID) { createProject(name: "ledger", teamId: $t) { id name team { name } } }',
        t=team["id"],
    )
    p = made["createProject"]["id"]
    created = await run(
        human, 'mutation { createActor(kind: AGENT, name: "claude-code") { actor { id } token } }'
    )
    agent = Who(created["createActor"]["actor"]["id"], created["createActor"]["token"])
    await run(
        human,
        "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }",
        p=p,
        a=agent.id,
    )
    await run(
        human,
        "mutation($t: ID!, $a: ID!) { addTeamMember(teamId: $t, actorId: $a) { id } }",
        t=team["id"],
        a=agent.id,
    )
    await run(human, "{ me { id kind name erased identity { id } } workspace { id name region } }")
    await run(agent, "{ me { id name } projects { id name team { name function } } }")
    await run(human, "query($p: ID!) { project(id: $p) { id name team { name } } }", p=p)
    return Place(p, team["id"], agent)


async def tokens(run: Run, place: Place) -> None:
    """Tokens: created, listed (all, and one actor's), the current one, revoked (and again)."""
    human = run.human
    minted = await run(
        human, 'mutation($a: ID!) { createToken(actorId: $a, expiresIn: "P1D") { token } }', a=place.agent.id
    )
    spare = Who(place.agent.id, minted["createToken"]["token"])
    listed = await run(human, f"query($a: ID) {{ tokens(actorId: $a) {{ {TOKEN} }} }}", a=place.agent.id)
    await run(human, f"{{ tokens {{ {TOKEN} }} }}")
    await run(spare, f"{{ currentToken {{ {TOKEN} }} }}")
    await run(human, REVOKE, i=listed["tokens"][0]["id"])
    await run(human, REVOKE, i=listed["tokens"][0]["id"])


@dataclass
class Items:
    session: str
    rule: str
    one: str
    queued: str
    capped: str
    shared: str
    moment: str
    """Before the first confirmation: a moment to read as of."""


async def sessions_and_items(run: Run, place: Place) -> Items:
    """A session; items asserted one and many; confirmed and verified; pages of every kind; one
    item with its history, now and as of a moment."""
    human, agent, p = run.human, place.agent, place.project
    started = await run(
        agent,
        """mutation($p: ID!) { startSession(input: {projectId: $p, task: "refunds",
          client: {tool: "claude-code", version: "1.0.98"}, externalId: "s-1"}) { id } }""",
        p=p,
    )
    s = started["startSession"]["id"]
    await run(agent, SESSIONS, p=p)
    listed = await run(agent, SESSIONS, p=p, e="s-1")
    await run(agent, SESSIONS, p=p, a=listed["sessions"]["pageInfo"]["endCursor"])
    await run(agent, f"query($s: ID!) {{ session(id: $s) {{ {SESSION} }} }}", s=s)

    rule = (await run(human, ASSERT, i=fact(p, "Refunds never exceed the capture", kind="CONSTRAINT")))[
        "assertItem"
    ]
    await run(human, "mutation($i: ID!) { setLoadBearing(id: $i, loadBearing: true) { id } }", i=rule["id"])
    one = await run(agent, ASSERT, i=fact(p, "Refunds settle in two days", sessionId=s, decayAfter="P30D"))
    many = await run(
        agent,
        ASSERT_MANY,
        i=[
            fact(p, "Refunds go through the queue", sessionId=s),
            fact(p, "The PSP caps refunds per capture", confidence=0.7),
            fact(p, "Refund ids are UUIDv7", scope="WORKSPACE"),
            fact(p, "Partial refunds need a capture id", scope="PRIVATE"),
        ],
    )
    queued, capped, shared, _ = (each["id"] for each in many["assertItems"])
    moment = datetime.now(UTC).isoformat()
    await run(human, "mutation($i: ID!) { confirmItem(id: $i) { id } }", i=capped)
    await run(agent, "mutation($i: ID!) { verifyItem(id: $i) { id } }", i=one["assertItem"]["id"])

    # Pages: the commonest, past a cursor, filtered, by words, in another order, as of a moment.
    first = await run(agent, PAGE, p=p)
    await run(agent, PAGE, p=p, after=first["items"]["pageInfo"]["endCursor"])
    chosen = {
        "kinds": ["FACT"],
        "statuses": ["ACTIVE"],
        "authorities": ["AGENT_ASSERTED"],
        "loadBearing": False,
    }
    await run(agent, PAGE, p=p, f=chosen)
    await run(human, PAGE, p=p, f={"loadBearingSuggested": False, "stale": False})
    worded = await run(agent, PAGE, p=p, f={"text": "refunds capture"})
    await run(agent, PAGE, p=p, f={"text": "refunds"}, after=worded["items"]["pageInfo"]["endCursor"])
    # Words past the window of newest items: their older matches read and counted in one pass
    # (storage.search._older), and, past the count's bound, read again in order.
    with patch.object(search, "WINDOW", 1):
        await run(agent, PAGE, p=p, f={"text": "refunds"})
        with patch.object(count, "LIMIT", 1):
            await run(agent, PAGE, p=p, f={"text": "refunds"})
    ordered = await run(agent, PAGE, p=p, order="SUGGESTED_THEN_CONFIDENCE")
    await run(
        agent, PAGE, p=p, order="SUGGESTED_THEN_CONFIDENCE", after=ordered["items"]["pageInfo"]["endCursor"]
    )
    then = await run(agent, PAGE, p=p, asOf=moment)
    await run(
        agent,
        PAGE,
        p=p,
        asOf=moment,
        f={"statuses": ["ACTIVE"], "text": "refunds"},
        after=then["items"]["pageInfo"]["endCursor"],
    )
    await run(agent, ONE, i=one["assertItem"]["id"])
    await run(agent, ONE, i=capped, asOf=moment)
    return Items(s, rule["id"], one["assertItem"]["id"], queued, capped, shared, moment)


async def proposals_and_disputes(run: Run, place: Place, made: Items) -> None:
    """Proposals (a load-bearing suggestion declined, a replacement of a ruling accepted), a
    supersession and the history of both sides, disputes raised two ways, listed and resolved."""
    human, agent, p = run.human, place.agent, place.project
    await run(agent, 'mutation($i: ID!) { suggestLoadBearing(id: $i, reason: "core") { id } }', i=made.one)
    pending = await run(
        agent,
        SUPERSEDE,
        i={
            "targetId": made.capped,
            "reason": "the PSP changed",
            "replacement": fact(p, "The PSP caps per day"),
        },
    )
    await run(human, PROPOSALS, p=p)
    waiting = (await run(human, PROPOSALS, p=p, s="PENDING"))["proposals"]
    suggested = next(each["id"] for each in waiting if each["kind"] == "LOAD_BEARING")
    await run(human, DECIDE, i=pending["supersedeItem"]["proposal"]["id"], a=True)
    await run(human, DECIDE, i=suggested, a=False)

    replaced = await run(
        agent,
        SUPERSEDE,
        i={
            "targetId": made.queued,
            "reason": "the queue drops refunds",
            "replacement": fact(p, "Refunds are sent synchronously", sessionId=made.session),
        },
    )
    again = {"targetId": made.queued, "reason": "again", "replacement": fact(p, "Refunds are sent twice")}
    await run.refused(agent, SUPERSEDE, "CONFLICT", i=again)
    await run(agent, ONE, i=made.queued)
    await run(
        agent, ONE, i=replaced["supersedeItem"]["replacement"]["id"], asOf=datetime.now(UTC).isoformat()
    )

    await run(agent, ASSERT, i=fact(p, "Refunds settle the same day", contradicts=[made.one]))
    contrary = (await run(agent, ASSERT, i=fact(p, "Refund ids are random")))["assertItem"]["id"]
    raised = await run(
        agent,
        f'mutation($i: ID!, $c: ID!) {{ disputeItem(id: $i, contestedId: $c, reason: "which?")'
        f" {{ {DISPUTE} }} }}",
        i=contrary,
        c=made.shared,
    )
    await run(human, DISPUTES, p=p)
    await run(human, DISPUTES, p=p, s="OPEN")
    await run(
        human,
        f"mutation($i: ID!, $k: ID!) {{ resolveDispute(id: $i, keepItemId: $k) {{ {DISPUTE} }} }}",
        i=raised["disputeItem"]["id"],
        k=contrary,
    )
    gone = (await run(agent, ASSERT, i=fact(p, "Refunds are free")))["assertItem"]["id"]
    await run(agent, 'mutation($i: ID!) { retireItem(id: $i, reason: "wrong") { id } }', i=gone)
    events = (
        "query($p: ID!, $k: [ItemEventKind!], $a: String)"
        " { events(projectId: $p, kinds: $k, first: 2, after: $a)"
    )
    listed = await run(
        human, events + " { nodes { kind item { id } } pageInfo { endCursor } totalCount } }", p=p
    )
    await run(human, events + " { nodes { id } } }", p=p, a=listed["events"]["pageInfo"]["endCursor"])
    await run(human, events + " { nodes { id } totalCount } }", p=p, k=["ASSERTED", "CONFIRMED"])


async def handoffs_and_slices(run: Run, place: Place, made: Items) -> None:
    """Rehydration now and as of a moment; a checkpoint (with an agent's replacement of a ruling left
    pending), its retry, its handoff read three ways, resumption; sessions ended."""
    human, agent, p = run.human, place.agent, place.project
    ask = {"projectId": p, "task": "partial refunds of a capture", "tokenBudget": 800}
    await run(agent, REHYDRATE, i=ask)
    await run(agent, REHYDRATE, i={**ask, "asOf": made.moment})
    await run(agent, REHYDRATE, i={**ask, "task": "zebra", "tokenBudget": 4000})
    left = {
        "sessionId": made.session,
        "summary": "Stopped.",
        "nextSteps": ["ledger"],
        "idempotencyKey": "k-1",
        "items": [fact(p, "Refund webhooks retry", sessionId=made.session)],
        "supersessions": [
            {
                "targetId": made.rule,
                "reason": "partial captures",
                "replacement": fact(p, "Refunds never exceed what is left", kind="CONSTRAINT"),
            }
        ],
    }
    handoff = (await run(agent, CHECKPOINT, i=left))["checkpoint"]["id"]
    await run(agent, CHECKPOINT, i=left)
    await run.refused(agent, CHECKPOINT, "CONFLICT", i={**left, "idempotencyKey": "k-2"})
    await run(human, f"query($h: ID!) {{ handoff(id: $h) {{ {HANDOFF} }} }}", h=handoff)
    await run(human, f"query($p: ID!) {{ latestHandoff(projectId: $p) {{ {HANDOFF} }} }}", p=p)
    pages = "query($p: ID!, $a: String) { handoffs(projectId: $p, first: 1, after: $a) { nodes { id }"
    first = await run(human, pages + " pageInfo { endCursor } } }", p=p)
    await run(human, pages + " } }", p=p, a=first["handoffs"]["pageInfo"]["endCursor"])
    await run(human, RESUME, i={"projectId": p, "task": "refunds", "tokenBudget": 800})
    later = await run(agent, "mutation($p: ID!) { startSession(input: {projectId: $p}) { id } }", p=p)
    await run(agent, "mutation($s: ID!) { endSession(id: $s) { id endedAt } }", s=later["startSession"]["id"])


async def privacy_and_imports(run: Run, place: Place, made: Items) -> None:
    """Retention, legal holds, erasure, invitations and memberships; a transcript imported twice."""
    human, p = run.human, place.project
    policy = await run(
        human,
        """mutation($p: ID) { setRetentionPolicy(input: {projectId: $p, statuses: [SUPERSEDED],
          after: "P90D"}) { id } }""",
        p=p,
    )
    await run(human, "query($p: ID) { retentionPolicies(projectId: $p) { id } }", p=p)
    await run(
        human, 'query($p: ID!) { redactionsDue(projectId: $p, within: "P365D") { item { id } dueAt } }', p=p
    )
    hold = await run(
        human, 'mutation($i: ID) { placeLegalHold(reason: "audit", itemId: $i) { id } }', i=made.queued
    )
    await run(human, "query($p: ID!) { legalHolds(projectId: $p) { id } }", p=p)
    await run(human, "mutation($h: ID!) { releaseLegalHold(id: $h) { id } }", h=hold["placeLegalHold"]["id"])
    await run(
        human,
        "mutation($i: ID!) { removeRetentionPolicy(id: $i) { id } }",
        i=policy["setRetentionPolicy"]["id"],
    )
    leaving = await run(human, 'mutation { createActor(kind: AGENT, name: "old-bot") { actor { id } } }')
    erased = leaving["createActor"]["actor"]["id"]
    await run(human, 'mutation($i: ID!) { eraseActor(id: $i, reason: "left") { id erased } }', i=erased)
    await run(human, 'mutation { createInvitation(email: "bo@example.com") { id } }')
    await run(
        human, "{ invitations { id invitedBy { name } } myMemberships { workspace { name } actor { name } } }"
    )

    session = {"client": {"tool": "claude-code", "version": "2.1.3"}, "externalId": "t-1"}
    batch = {"projectId": p, "source": "claude-code", "origin": "TRANSCRIPT"}
    said = [{"key": "t:1", "kind": "FACT", "statement": "Refunds are audited monthly"}]
    await run(place.agent, IMPORT, i={**batch, "items": said, "session": {**session, "endedAt": made.moment}})
    grown = {**session, "endedAt": datetime.now(UTC).isoformat()}
    more = [*said, {"key": "t:2", "kind": "FACT", "statement": "Audits take a day"}]
    await run(place.agent, IMPORT, i={**batch, "items": more, "session": grown})
    document = {
        "projectId": p,
        "source": "docs/adr",
        "origin": "DOCUMENT",
        "document": "adr",
        "complete": True,
    }
    decided = [{"key": "adr:1", "kind": "DECISION", "statement": "Use PostgreSQL"}]
    await run(human, IMPORT, i={**document, "items": decided})
    await run(human, IMPORT, i={**document, "items": [{**decided[0], "statement": "Use PostgreSQL 18"}]})


async def a_subscription_event(engine: AsyncEngine, human: Who) -> None:
    """What a subscription reads under its subscriber's context (resolvers.subscription): the
    channel, the high-water mark, an announced row with what it names, and a catch-up (on Citus, on
    the node of the subscriber's workspace, as the hub reads it)."""
    async with database.transaction(await node_engine(engine, human), read=True) as tx:
        assert await token.authenticate(tx, human.token) is not None
        await notification.channel(tx)
        floors = await notification.floors(tx, None)
        for announced in (dispute.ANNOUNCED, proposal.ANNOUNCED):
            await announced.read(tx, 1)
        await dispute.since(tx, floors)
        await proposal.since(tx, floors)


def fact(project: str, statement: str, **more: Any) -> dict[str, Any]:
    return {"projectId": project, "kind": "FACT", "statement": statement, **more}


async def representative_run(api: Api, engine: AsyncEngine, human: Who) -> int:
    """Every phase above, as ``human``'s workspace; how many operations were sent (the subscription
    event's read counted as one)."""
    run = Run(api, human)
    place = await people_and_places(run)
    await tokens(run, place)
    made = await sessions_and_items(run, place)
    await proposals_and_disputes(run, place, made)
    await handoffs_and_slices(run, place, made)
    await privacy_and_imports(run, place, made)
    await a_subscription_event(engine, human)
    return run.operations + 1


# --- the rule, and its controls ---------------------------------------------------------------


async def test_r1_every_statement_of_the_request_path_states_its_workspace(
    api: Api, engine: AsyncEngine
) -> None:
    """R1, issue 25: in every statement the server sends for a representative run of the API, every
    scan of a tenant table is fixed to the request's workspace by the statement itself."""
    workspace_id, human = await api.bootstrap()
    with sent(engine) as statements:
        operations = await representative_run(api, engine, human)
    assert operations > 80, operations
    explained, offenders = await check(api.admin_engine, statements, uuid.UUID(workspace_id))
    assert explained > 200, explained
    assert not offenders, f"statements that do not state their workspace ({len(offenders)}):\n" + "\n".join(
        offenders
    )


ACROSS_WORKSPACES: dict[str, set[str]] = {}
"""What may read every workspace: nothing since migration 0037, where a person's workspaces are
read from their links (``identity_links``) and each actor and workspace by its key; until then,
mneia_memberships_of read the person's actors, then their workspaces, in every workspace. The
list may only shrink."""


async def test_r1_the_statements_inside_the_databases_functions_state_it_too(
    api: Api, admin_url: str
) -> None:
    """R1, issue 25: the same run, through an engine whose connections are the server's role by
    ``SET SESSION AUTHORIZATION`` on an administrator's connection, which may load auto_explain:
    every statement it runs is planned and its plan sent to the client as a notice, the statements
    inside functions and triggers too (each variable a constant, or a parameter where a function
    plans its keyed lookups generically, migration 0032, and in what it calls), under row-level
    security. Each states its workspace as the request path's do, but for ACROSS_WORKSPACES."""
    notices: list[str] = []
    explaining = create_async_engine(
        async_url(admin_url),
        pool_size=2,
        connect_args={"server_settings": AUTO_EXPLAIN},
    )

    @event.listens_for(explaining.sync_engine, "connect")
    def as_the_server(connection: Any, _record: Any) -> None:
        async def become(driver: asyncpg.Connection) -> None:
            driver.add_log_listener(lambda _driver, message: notices.append(message.message))
            await driver.execute(f"SET SESSION AUTHORIZATION {APP_ROLE}")

        connection.run_async(become)

    app = create_app(explaining, dispose_engine=False)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://mneia.test"
        ) as http:
            explained = Api(http, api.admin_engine)
            workspace_id, human = await explained.bootstrap()
            await representative_run(explained, explaining, human)
    finally:
        await explaining.dispose()
    async with api.admin_engine.connect() as connection:
        keys = {row.table_name: row.key for row in await connection.execute(TENANT_TABLES)}
    plans = [json.loads(notice[notice.index("{") :]) for notice in notices if "{" in notice]
    offenders: dict[str, set[str]] = {}
    for plan in plans:
        read = Plan(workspace_id, keys, parameters=True)
        read.read(plan["Plan"])
        if unpinned := read.unpinned():
            offenders.setdefault(" ".join(plan["Query Text"].split()), set()).update(unpinned)
    assert len(plans) > 2_000, len(plans)
    assert any("INSERT INTO public.item_events" in plan["Query Text"] for plan in plans), "no trigger's"
    unexpected = [
        f"{', '.join(sorted(scans))} in: {_shown(query)}"
        for query, scans in offenders.items()
        if not any(
            query.startswith(known) and scans <= allowed for known, allowed in ACROSS_WORKSPACES.items()
        )
    ]
    assert not unexpected, f"statements that do not state their workspace ({len(unexpected)}):\n" + "\n".join(
        unexpected
    )


AUTO_EXPLAIN = {
    "session_preload_libraries": "auto_explain",
    "auto_explain.log_min_duration": "0",
    "auto_explain.log_nested_statements": "on",
    "auto_explain.log_format": "json",
    "auto_explain.log_verbose": "on",
    "auto_explain.log_level": "notice",
    "client_min_messages": "notice",
}
"""Every statement's plan, nested ones too, as a notice to the client (settings only a superuser may
give at connection, before the connection becomes the server's role)."""


async def test_r1_the_checker_finds_a_statement_that_leaves_its_workspace_out(
    api: Api, engine: AsyncEngine
) -> None:
    """The controls, sent and checked as the request path's are: a statement that names its project
    but not its workspace is reported; said, it is not; a join on the workspace carries it to the
    table joined, a join on the item alone does not; another workspace is not this one."""
    workspace_id, human = await api.bootstrap()
    workspace = uuid.UUID(workspace_id)
    project = uuid.uuid4()
    unstated = select(items.c.id).where(items.c.project_id == project)
    stated = unstated.where(items.c.workspace_id == workspace)
    on_the_item = items.join(item_states, item_states.c.item_id == items.c.id)
    on_both = items.join(
        item_states,
        and_(item_states.c.workspace_id == items.c.workspace_id, item_states.c.item_id == items.c.id),
    )
    elsewhere = unstated.where(items.c.workspace_id == uuid.uuid4())
    either = unstated.where((items.c.workspace_id == workspace) | (items.c.id == project))
    sent_as = {
        "unstated": unstated,
        "stated": stated,
        "joined on the item": select(item_states.c.since)
        .select_from(on_the_item)
        .where(items.c.workspace_id == workspace),
        "joined on both": select(item_states.c.since)
        .select_from(on_both)
        .where(items.c.workspace_id == workspace),
        "elsewhere": elsewhere,
        "in an OR": either,
    }
    found = {}
    for name, statement in sent_as.items():
        with sent(engine) as statements:
            async with database.transaction(engine, read=True) as tx:
                await token.authenticate(tx, human.token)
                await tx.execute(statement)
        checked = [(sql, parameters) for sql, parameters in statements if "mneia_authenticate" not in sql]
        found[name] = [
            offender.split(" in: ")[0] for offender in (await check(api.admin_engine, checked, workspace))[1]
        ]
    assert found == {
        "unstated": ["items items"],
        "stated": [],
        "joined on the item": ["item_states item_states"],
        "joined on both": [],
        "elsewhere": ["items items"],
        "in an OR": ["items items"],
    }


# --- on Citus: the coordinator's plans --------------------------------------------------------


def task_counts(plan: Any) -> list[int]:
    """Every Citus job's task count in an EXPLAIN's JSON, its sub-plans' too: how many shards each
    part of the statement reads or writes. None for a statement on no distributed table."""
    found, pending = [], [plan]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if "Task Count" in node:
                found.append(int(node["Task Count"]))
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return found


async def fan_outs(
    admin_engine: AsyncEngine, statements: list[tuple[str, tuple[Any, ...]]]
) -> tuple[int, int, list[str]]:
    """Each distinct statement EXPLAINed on the coordinator as the administrator, every parameter a
    constant, as ``check`` does: how many were planned, how many read a distributed table, and each
    that reaches more than one shard (its task counts)."""
    async with admin_engine.connect() as connection:
        driver = (await connection.get_raw_connection()).driver_connection
        assert isinstance(driver, asyncpg.Connection)
        await driver.execute(f"SET plan_cache_mode = {database.PLAN_CACHE_MODE}")
        explained: set[tuple[str, str]] = set()
        distributed = 0
        offenders: dict[str, list[int]] = {}
        for statement, parameters in statements:
            if (statement, repr(parameters)) in explained:
                continue
            explained.add((statement, repr(parameters)))
            if statement.lstrip().split(None, 1)[0].upper() not in EXPLAINED:
                continue
            answer = await driver.fetchval(f"EXPLAIN (FORMAT JSON) {statement}", *parameters)
            counts = task_counts(json.loads(answer) if isinstance(answer, str) else answer)
            distributed += bool(counts)
            if any(count > 1 for count in counts):
                offenders[statement] = counts
        await driver.execute("RESET plan_cache_mode")
    return (
        len(explained),
        distributed,
        [f"tasks {counts} in: {_shown(sql)}" for sql, counts in offenders.items()],
    )


@pytest.mark.skipif(
    not ON_CLUSTER, reason="reads a Citus coordinator's plans: MNEIA_TEST_CITUS=1 (.ci/run's Citus stage)"
)
async def test_r1_on_citus_no_statement_of_the_request_path_fans_out(
    api: Api, engine: AsyncEngine, nodes: Nodes
) -> None:
    """R1, issue 25: on a Citus cluster, the representative run through the routed application (each
    request on its workspace's node, as ``mneia serve`` routes it); every statement it sent is planned
    by the coordinator, and none reaches more than one shard. A slice's statements read the
    workspace's own shards on its node (``Driven.on``): each names exactly them, and is planned on
    the coordinator as it reads the tables. The control: the same read without its workspace is
    planned over every shard, and with it over one."""
    workspace_id, human = await api.bootstrap()
    with sent(engine) as statements:
        await representative_run(api, engine, human)
    own = await nodes.shards(uuid.UUID(workspace_id))
    on_own_shards = {statement.on(own).sql for _, pair in candidates.NAMED for statement in pair}
    on_shards = [sql for sql, _ in statements if sql in database.ON_TABLES]
    assert on_shards and set(on_shards) <= on_own_shards, "a slice reads its own workspace's shards"
    statements = [(database.ON_TABLES.get(sql, sql), parameters) for sql, parameters in statements]
    explained, distributed, offenders = await fan_outs(api.admin_engine, statements)
    assert explained > 200 and distributed > 150, (explained, distributed)
    assert not offenders, f"statements that reach several shards ({len(offenders)}):\n" + "\n".join(offenders)
    unstated = select(items.c.id).where(items.c.project_id == uuid.uuid4())
    stated = unstated.where(items.c.workspace_id == uuid.UUID(workspace_id))
    found = {}
    for name, statement in {"unstated": unstated, "stated": stated}.items():
        driven = database.Driven(statement)
        found[name] = (await fan_outs(api.admin_engine, [(driven.sql, tuple(driven.arguments({})))]))[2]
    assert found["stated"] == [] and len(found["unstated"]) == 1, found
    assert "tasks [32]" in found["unstated"][0], found


MULTI_SHARD = (
    "SELECT query_execution_multi_shard, query_execution_single_shard FROM citus_stat_counters"
    " WHERE name = current_database()"
)


@asynccontextmanager
async def counted(admin_engine: AsyncEngine) -> AsyncIterator[dict[str, tuple[int, int]]]:
    """Citus's executor counters on every node of the cluster (``citus.enable_stat_counters``, on
    for the run, off after): the multi-shard and single-shard executions each node ran for this
    database while the block ran, by node, filled in when the block ends."""
    async with admin_engine.connect() as connection:
        rows = (
            await connection.execute(text("SELECT nodename, nodeport FROM pg_dist_node ORDER BY nodeid"))
        ).all()
    url = admin_engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    nodes = {f"{host}:{port}": make_url(url).set(host=host, port=port) for host, port in rows}
    connections = {}
    for name, node_url in nodes.items():
        connections[name] = await asyncpg.connect(node_url.render_as_string(hide_password=False))
    found: dict[str, tuple[int, int]] = {}
    try:
        for connection in connections.values():
            await connection.execute("ALTER SYSTEM SET citus.enable_stat_counters = on")
            await connection.execute("SELECT pg_reload_conf()")
        for connection in connections.values():
            async with asyncio.timeout(PATIENCE):
                while await connection.fetchval("SHOW citus.enable_stat_counters") != "on":  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
        before = {name: tuple(await c.fetchrow(MULTI_SHARD) or (0, 0)) for name, c in connections.items()}
        yield found
        for name, connection in connections.items():
            after = tuple(await connection.fetchrow(MULTI_SHARD) or (0, 0))
            found[name] = (after[0] - before[name][0], after[1] - before[name][1])
    finally:
        for connection in connections.values():
            await connection.execute("ALTER SYSTEM RESET citus.enable_stat_counters")
            await connection.execute("SELECT pg_reload_conf()")
            await connection.close()


@pytest.mark.skipif(
    not ON_CLUSTER,
    reason="reads a Citus cluster's executor counters: MNEIA_TEST_CITUS=1 (.ci/run's Citus stage)",
)
async def test_r1_on_citus_nothing_the_request_path_runs_reaches_several_shards_its_functions_included(
    api: Api, engine: AsyncEngine, nodes: Nodes
) -> None:
    """R1, issue 25: what the statements' plans cannot show, the statements the database's own
    functions and triggers run on the workers (authentication, the guards, the events, the
    counters), counted by Citus's executor on every node: the representative run executes nothing
    over several shards, its ``myMemberships`` included (a person's workspaces read from their
    links since migration 0037, each actor and workspace by its key), counted alone as well. The
    control: one read without its workspace, on a worker, is counted as one."""
    _, human = await api.bootstrap()
    async with counted(api.admin_engine) as memberships:
        found = await api.run(human.token, "{ myMemberships { workspace { name } actor { name } } }")
    assert len(found["myMemberships"]) == 1, found
    assert sum(multi for multi, _ in memberships.values()) == 0, memberships
    async with counted(api.admin_engine) as ran:
        await representative_run(api, engine, human)
    assert sum(single for _, single in ran.values()) > 200, ran  # the run's statements were counted
    assert sum(multi for multi, _ in ran.values()) == 0, ran
    # An OpenID sign-in, in its steps, with an invitation to accept: its invitations found by their
    # email and its memberships by the person's links (migrations 0037, 0038), nothing over several.
    email = f"counted-{uuid.uuid4().hex[:8]}@example.com"
    await api.run(human.token, "mutation($e: String!) { createInvitation(email: $e) { id } }", e=email)
    async with counted(api.admin_engine) as signed_in:
        joined = await identity.sign_in_routed(nodes, "https://idp.example", f"sub|{email}", email, "Counted")
    assert len(joined) == 1, joined
    assert sum(multi for multi, _ in signed_in.values()) == 0, signed_in
    async with api.admin_engine.connect() as connection:
        worker = (
            await connection.execute(
                text("SELECT nodename, nodeport FROM pg_dist_node WHERE groupid > 0 LIMIT 1")
            )
        ).one()
    at = api.admin_engine.url.set(drivername="postgresql", host=worker[0], port=worker[1])
    async with counted(api.admin_engine) as control:
        unstated = await asyncpg.connect(at.render_as_string(hide_password=False))
        try:
            await unstated.fetchval("SELECT count(*) FROM items")
        finally:
            await unstated.close()
    assert sum(multi for multi, _ in control.values()) == 1, control


def test_r1_the_checker_reads_a_policy_or_a_parameterised_join_and_a_generic_plan() -> None:
    """How the checker reads what row-level security and the planner write (the second run's plans):
    an OR fixes the workspace when each of its parts does (a policy's branches, each read by an
    index of its own), not when one does not; a scan given another's key as a join's parameter is
    fixed by that one."""
    ws, other = "0193aaaa-0000-7000-8000-000000000001", "0193aaaa-0000-7000-8000-000000000002"
    keys = {"api_tokens": "workspace_id", "items": "workspace_id", "item_states": "workspace_id"}

    def scan(table: str, alias: str, **conditions: str) -> dict[str, Any]:
        return {"Node Type": "Bitmap Heap Scan", "Relation Name": table, "Alias": alias, **conditions}

    def read(*nodes: dict[str, Any]) -> list[str]:
        plan = Plan(ws, keys)
        plan.read({"Node Type": "Nested Loop", "Plans": list(nodes)})
        return plan.unpinned()

    both = (
        f"(((t.workspace_id = $7) AND (t.workspace_id = '{ws}'::uuid))"
        f" OR ((t.workspace_id = '{ws}'::uuid) AND (t.token_hash = $11)))"
    )
    one = f"(((t.workspace_id = $7) AND (t.workspace_id = '{ws}'::uuid)) OR (t.token_hash = $11))"
    assert read(scan("api_tokens", "t", **{"Recheck Cond": both})) == []
    assert read(scan("api_tokens", "t", **{"Recheck Cond": one})) == ["api_tokens t"]
    assert read(scan("api_tokens", "t", **{"Filter": f"(t.workspace_id = '{other}'::uuid)"})) == [
        "api_tokens t"
    ]
    item = scan(
        "items", "items", **{"Index Cond": f"((items.workspace_id = '{ws}'::uuid) AND (items.id = $1))"}
    )
    state = scan(
        "item_states",
        "s",
        **{"Index Cond": "((s.workspace_id = items.workspace_id) AND (s.item_id = items.id))"},
    )
    initplan = scan("item_states", "s", **{"Index Cond": "((s.workspace_id = $9) AND (s.item_id = $10))"})
    assert read(item, state) == []
    assert read(item, initplan) == ["item_states s"]
    # A function's generic plan states the workspace by a parameter: read so only when asked.
    generic = scan("items", "i", **{"Index Cond": "((i.workspace_id = $1) AND (i.id = $2))"})
    assert read(generic) == ["items i"]
    asked = Plan(ws, keys, parameters=True)
    asked.read(generic)
    assert asked.unpinned() == []
    unstated = Plan(ws, keys, parameters=True)
    unstated.read(scan("items", "i", **{"Index Cond": "(i.id = $2)"}))
    assert unstated.unpinned() == ["items i"]
    # A key among no values reads nothing, whatever else the plan shows of the statement.
    assert read(scan("items", "i", **{"Index Cond": "(i.id = ANY ('{}'::uuid[]))"})) == []
    assert read(scan("items", "i", **{"Index Cond": "(i.id = ANY ('{01a2}'::uuid[]))"})) == ["items i"]
    either = "((i.id = ANY ('{}'::uuid[])) OR (i.scope = 'WORKSPACE'::text))"
    assert read(scan("items", "i", **{"Filter": either})) == ["items i"]
