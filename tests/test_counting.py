"""Counts that do not scan (issue 24, docs/counting.md): ``totalCount`` from the kept counters
(storage/sql/counts.sql) and, for every other filter, a count bounded at ``storage.count.LIMIT``.

The counters must be exactly what counting the reader's visible rows gives (R2: a count never
tells of an item the reader cannot see), in every scope, after every kind of change, with
writers racing each other and the fold, and across the migration that introduces them.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from mneia.config import OWNER_ROLE, async_url
from mneia.storage import count, migration
from mneia.storage.item import authority_of
from mneia.vocabulary import Authority, ItemStatus
from tests.database import scratch_database
from tests.graphql import Api, Who
from tests.support import (
    CONFIRM_ITEM,
    MAKE_LOAD_BEARING,
    RETIRE_ITEM,
    as_caller,
    bootstrapped_before_0024,
    rows,
)

PAGE = """query($p: ID!, $f: ItemFilter) {
  items(projectId: $p, first: 100, filter: $f) { totalCount totalCountIsExact nodes { id } }
}"""

# Filters the counters answer (R2, R4): every combination a reader might ask for in the inbox.
COUNTED_FILTERS: list[dict[str, Any] | None] = [
    None,
    {"statuses": ["ACTIVE"]},
    {"statuses": ["RETIRED", "DISPUTED"]},
    {"kinds": ["DECISION"]},
    {"kinds": ["FACT", "CONSTRAINT"], "statuses": ["ACTIVE"]},
    {"loadBearing": True},
    {"loadBearing": False, "statuses": ["ACTIVE"]},
    {"authorities": ["AGENT_ASSERTED"]},
    {"authorities": ["HUMAN_CONFIRMED"], "kinds": ["DECISION"]},
    {"authorities": ["DISPUTED", "HUMAN_CONFIRMED"]},
]


def matches(row: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    """The filter in Python over an item row: what the counters must agree with."""
    wanted = wanted or {}
    authority = authority_of(ItemStatus(row["status"]), row["confirmed_by"] is not None)
    return (
        ("statuses" not in wanted or row["status"] in wanted["statuses"])
        and ("kinds" not in wanted or row["kind"] in wanted["kinds"])
        and ("loadBearing" not in wanted or row["load_bearing"] is wanted["loadBearing"])
        and ("authorities" not in wanted or authority in [Authority(a) for a in wanted["authorities"]])
    )


async def visible_rows(engine: AsyncEngine, who: Who, project_id: str) -> list[dict[str, Any]]:
    """The project's items ``who`` may see, as the database's own policy returns them."""
    async with as_caller(engine, who) as connection:
        found = await connection.execute(
            text("SELECT id, status, kind, load_bearing, confirmed_by FROM items WHERE project_id = :p"),
            {"p": uuid.UUID(project_id)},
        )
        return [dict(row._mapping) for row in found]


async def assert_counts_agree(api: Api, engine: AsyncEngine, who: Who, project_id: str) -> None:
    """For each counted filter: totalCount is exact and equals the visible rows that match."""
    visible = await visible_rows(engine, who, project_id)
    fields = " ".join(
        f"f{n}: items(projectId: $p, filter: $f{n}) {{ totalCount totalCountIsExact }}"
        for n in range(len(COUNTED_FILTERS))
    )
    params = ", ".join(f"$f{n}: ItemFilter" for n in range(len(COUNTED_FILTERS)))
    answer = await api.run(
        who.token,
        f"query($p: ID!, {params}) {{ {fields} }}",
        p=project_id,
        **{f"f{n}": wanted for n, wanted in enumerate(COUNTED_FILTERS)},
    )
    for n, wanted in enumerate(COUNTED_FILTERS):
        expected = sum(1 for row in visible if matches(row, wanted))
        assert answer[f"f{n}"] == {"totalCount": expected, "totalCountIsExact": True}, (who, wanted)


async def counter_rows(admin_engine: AsyncEngine, project_id: str) -> list[dict[str, Any]]:
    return await rows(
        admin_engine, "SELECT * FROM item_counts WHERE project_id = :p", p=uuid.UUID(project_id)
    )


# --- R2: the scopes, case by case ----------------------------------------------------------------


@dataclass
class Scoped:
    project_id: str
    owner: Who  # a human, the project's creator
    member: Who  # an agent, a direct member
    outsider: Who  # a human of the workspace who is no member
    grantee: Who  # an agent, no member, named by a GRANTS item


async def scoped_world(api: Api) -> Scoped:
    _, owner = await api.bootstrap("owner")
    member = await api.actor(owner.token, "AGENT", "member")
    outsider = await api.actor(owner.token, "HUMAN", "outsider")
    grantee = await api.actor(owner.token, "AGENT", "grantee")
    project_id = await api.project(owner.token, "counted")
    await api.add_member(owner.token, project_id, member.id)
    return Scoped(project_id, owner, member, outsider, grantee)


async def total(api: Api, who: Who, project_id: str, wanted: dict[str, Any] | None = None) -> int:
    answer = await api.run(who.token, PAGE, p=project_id, f=wanted)
    page = answer["items"]
    assert page["totalCountIsExact"] is True
    return int(page["totalCount"])


async def test_r2_counts_never_include_what_the_reader_cannot_see(api: Api, engine: AsyncEngine) -> None:
    """PRIVATE counts for its asserter alone, PROJECT for the members, WORKSPACE for all, GRANTS
    for the asserter and the listed actors, once each, even when the asserter lists itself."""
    w = await scoped_world(api)
    p = w.project_id
    await api.assert_item(w.member.token, projectId=p, statement="the member's private note", scope="PRIVATE")
    await api.assert_item(w.member.token, projectId=p, statement="for the project", scope="PROJECT")
    await api.assert_item(w.owner.token, projectId=p, statement="for everyone", scope="WORKSPACE")
    await api.assert_item(
        w.owner.token,
        projectId=p,
        statement="for the grantee",
        scope="GRANTS",
        grantActorIds=[w.grantee.id, w.owner.id],
    )
    seen = {
        "owner": await total(api, w.owner, p),
        "member": await total(api, w.member, p),
        "outsider": await total(api, w.outsider, p),
        "grantee": await total(api, w.grantee, p),
    }
    assert seen == {"owner": 3, "member": 3, "outsider": 1, "grantee": 2}
    for who in (w.owner, w.member, w.outsider, w.grantee):
        await assert_counts_agree(api, engine, who, p)


async def test_r2_a_reader_cannot_read_the_counts_of_hidden_audiences(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine
) -> None:
    """The counters' own policy: reading item_counts raw as the server's role shows a reader the
    rows of its audiences only, so their sum is its visible count and nothing more leaks."""
    w = await scoped_world(api)
    for n in range(3):
        await api.assert_item(
            w.member.token, projectId=w.project_id, statement=f"private {n}", scope="PRIVATE"
        )
    assert len(await counter_rows(admin_engine, w.project_id)) >= 1
    async with as_caller(engine, w.outsider) as connection:
        raw = await connection.execute(text("SELECT coalesce(sum(n), 0) FROM item_counts"))
        assert raw.scalar_one() == 0
    async with as_caller(engine, w.member) as connection:
        raw = await connection.execute(text("SELECT coalesce(sum(n), 0) FROM item_counts"))
        assert raw.scalar_one() == 3


async def test_r4_counts_follow_every_change_of_status_authority_and_load_bearing(
    api: Api, engine: AsyncEngine
) -> None:
    """A confirmation, a retirement, a load-bearing setting and a dispute each move an item from
    one counter row to another: the counted filters agree with the rows after each."""
    w = await scoped_world(api)
    p = w.project_id
    made = [
        (await api.assert_item(w.member.token, projectId=p, statement=f"fact {n}", kind=kind))["id"]
        for n, kind in enumerate(["FACT", "DECISION", "CONSTRAINT", "DECISION"])
    ]
    await api.run(w.owner.token, CONFIRM_ITEM, i=made[0])
    await api.run(w.owner.token, MAKE_LOAD_BEARING, i=made[2])
    await api.run(w.owner.token, RETIRE_ITEM, i=made[1], r="no longer true")
    await api.assert_item(w.member.token, projectId=p, statement="the opposite", contradicts=[made[3]])
    for who in (w.owner, w.member, w.outsider):
        await assert_counts_agree(api, engine, who, p)


# --- R2 as a property: random worlds and changes -------------------------------------------------

SCOPES = ("PRIVATE", "PROJECT", "TEAM", "WORKSPACE", "GRANTS")
KINDS = ("FACT", "DECISION", "CONSTRAINT")
CHANGES = ("none", "confirm", "retire", "load-bearing")


@st.composite
def items_to_write(draw: st.DrawFn) -> list[tuple[int, str, str, frozenset[int], str]]:
    """(asserter, scope, kind, grantees, change) for up to 12 items; actors are indexes 0..3."""
    return draw(
        st.lists(
            st.tuples(
                st.integers(0, 3),
                st.sampled_from(SCOPES),
                st.sampled_from(KINDS),
                st.frozensets(st.integers(0, 4), min_size=1, max_size=3),
                st.sampled_from(CHANGES),
            ),
            max_size=12,
        )
    )


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(written=items_to_write())
async def test_r2_r4_counters_equal_counting_the_visible_rows(
    api: Api, engine: AsyncEngine, written: list[tuple[int, str, str, frozenset[int], str]]
) -> None:
    """Two humans (0 the owner, 1 through the team) and two agents (2 a member, 3 through the team),
    a team project, and a human of the workspace outside it (4): every reader's counted totals equal
    counting the rows the item policy lets it see, after random writes and changes."""
    _, owner = await api.bootstrap("h0")
    actors = [
        owner,
        await api.actor(owner.token, "HUMAN", "h1"),
        await api.actor(owner.token, "AGENT", "a2"),
        await api.actor(owner.token, "AGENT", "a3"),
        await api.actor(owner.token, "HUMAN", "h4"),
    ]
    team = await api.run(owner.token, 'mutation { createTeam(name: "t", function: "work") { id } }')
    team_id = team["createTeam"]["id"]
    for index in (1, 3):
        await api.run(
            owner.token,
            "mutation($t: ID!, $a: ID!) { addTeamMember(teamId: $t, actorId: $a) { id } }",
            t=team_id,
            a=actors[index].id,
        )
    project_id = await api.project(owner.token, "property", team_id)
    await api.add_member(owner.token, project_id, actors[2].id)
    for number, (asserter, scope, kind, grantees, change) in enumerate(written):
        fields: dict[str, Any] = {"projectId": project_id, "statement": f"item {number}", "scope": scope}
        fields["kind"] = kind
        if scope == "GRANTS":
            fields["grantActorIds"] = [actors[index].id for index in sorted(grantees)]
        item_id = (await api.assert_item(actors[asserter].token, **fields))["id"]
        if change == "confirm":
            await api.post(owner.token, CONFIRM_ITEM, {"i": item_id})  # refused where hidden: no matter
        elif change == "retire":
            await api.post(actors[asserter].token, RETIRE_ITEM, {"i": item_id, "r": "gone"})
        elif change == "load-bearing":
            await api.post(owner.token, MAKE_LOAD_BEARING, {"i": item_id})
    for who in actors:
        await assert_counts_agree(api, engine, who, project_id)


# --- concurrent writers and the fold -------------------------------------------------------------


async def test_r2_concurrent_writers_and_folds_lose_no_count(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine
) -> None:
    """Eight actors write 80 items into one project at once while folds run: no write fails (the
    counters never make writers wait on each other or deadlock), and the totals are exact."""
    w = await scoped_world(api)
    writers = [w.owner, w.member]
    for n in range(6):
        agent = await api.actor(w.owner.token, "AGENT", f"writer-{n}")
        await api.add_member(w.owner.token, w.project_id, agent.id)
        writers.append(agent)

    async def write(who: Who, n: int) -> None:
        for k in range(10):
            made = await api.assert_item(
                who.token, projectId=w.project_id, statement=f"{n}-{k}", kind=KINDS[k % 3]
            )
            if k % 4 == 0:
                await api.run(w.owner.token, CONFIRM_ITEM, i=made["id"])

    async def folds() -> int:
        done = 0
        for _ in range(5):
            done += await count.fold(admin_engine)
        return done

    await asyncio.gather(*(write(who, n) for n, who in enumerate(writers)), folds())
    assert await total(api, w.owner, w.project_id) == 80
    await assert_counts_agree(api, engine, w.owner, w.project_id)
    # Folded: one row per audience left, all in slot 0, the same totals.
    await count.fold(admin_engine)
    left = await counter_rows(admin_engine, w.project_id)
    assert {row["slot"] for row in left} == {0}
    keys = [tuple(row[k] for k in ("scope", "actor_id", "via_grant", "status", "kind")) for row in left]
    assert len(keys) == len(
        set((k, r["load_bearing"], r["confirmed"]) for k, r in zip(keys, left, strict=True))
    )
    assert await total(api, w.owner, w.project_id) == 80
    await assert_counts_agree(api, engine, w.member, w.project_id)


# --- the bounded count ---------------------------------------------------------------------------


async def test_a_filter_the_counters_cannot_answer_is_counted_up_to_the_limit(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text (and staleness, a past moment...) counts the matching rows, at most LIMIT: exact below
    it, the limit and ``totalCountIsExact: false`` above it. LIMIT is lowered to keep the test small;
    the code path is the one a 10,000-row count takes."""
    monkeypatch.setattr(count, "LIMIT", 4)
    w = await scoped_world(api)
    for n in range(6):
        await api.assert_item(w.owner.token, projectId=w.project_id, statement=f"refunds are batched {n}")
    await api.assert_item(w.owner.token, projectId=w.project_id, statement="invoices carry the year")
    await api.assert_item(w.owner.token, projectId=w.project_id, statement="invoices are numbered")

    async def page(wanted: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = (await api.run(w.owner.token, PAGE, p=w.project_id, f=wanted))["items"]
        return answer

    many, few = await page({"text": "refunds"}), await page({"text": "invoices"})
    assert (many["totalCount"], many["totalCountIsExact"], len(many["nodes"])) == (4, False, 6)
    assert (few["totalCount"], few["totalCountIsExact"]) == (2, True)
    # The counters are not bounded: the whole project is counted exactly.
    everything = await page({})
    assert (everything["totalCount"], everything["totalCountIsExact"]) == (8, True)


# --- the migration -------------------------------------------------------------------------------


BIND = text("SELECT mneia_bind(CAST(:ws AS uuid), CAST(:actor AS uuid))")
ITEM = text(
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, scope, grant_actor_ids, asserted_by)"
    " VALUES (:ws, :i, :p, :k, :s, :scope, :g, :actor)"
)


async def test_0018_counts_the_items_already_there(server: str) -> None:
    """Upgrading a database that holds items fills the counters with exactly their counts."""
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url, "0016_privacy")
        admin = create_async_engine(async_url(url))
        try:
            made = await bootstrapped_before_0024(admin)
            bound = {"ws": str(made.workspace_id), "actor": str(made.actor_id)}
            project, bob = uuid.uuid4(), uuid.uuid4()
            setup = (
                "INSERT INTO actors (workspace_id, id, kind, name) VALUES (:ws, :bob, 'HUMAN', 'bob')",
                "INSERT INTO projects (workspace_id, id, name, created_by) VALUES (:ws, :p, 'old', :actor)",
                "INSERT INTO project_members (workspace_id, project_id, actor_id, added_by)"
                " VALUES (:ws, :p, :actor, :actor)",
            )
            written = [
                ("FACT", "PROJECT", []),
                ("FACT", "PROJECT", []),
                ("DECISION", "PRIVATE", []),
                ("FACT", "GRANTS", [bob]),
            ]
            # As an administrator loading history: the owner, bound to Alice (again once she is a member).
            for step in ("setup", "items"):
                async with admin.connect() as connection, connection.begin():
                    await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
                    await connection.execute(BIND, bound)
                    if step == "setup":
                        for statement in setup:
                            await connection.execute(text(statement), {**bound, "p": project, "bob": bob})
                        continue
                    for n, (kind, scope, grants) in enumerate(written):
                        values = {"i": uuid.uuid4(), "p": project, "k": kind, "scope": scope, "g": grants}
                        await connection.execute(ITEM, {**bound, **values, "s": f"old {n}"})
            await asyncio.to_thread(migration.upgrade, url)
            async with admin.connect() as connection:
                found = (
                    await connection.execute(
                        text(
                            "SELECT scope, kind, via_grant, sum(n)::int AS n FROM item_counts"
                            " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
                        )
                    )
                ).all()
        finally:
            await admin.dispose()
    assert [tuple(row) for row in found] == [
        ("GRANTS", "FACT", False, 1),
        ("GRANTS", "FACT", True, 1),
        ("PRIVATE", "DECISION", False, 1),
        ("PROJECT", "FACT", False, 2),
    ]
