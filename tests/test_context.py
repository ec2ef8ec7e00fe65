"""A context that cannot be forged, functions that cannot be shadowed, silent announcements (R1, R3, R15).

All as the server's role (``mneia_app``), over raw SQL, as an attacker holding
its password would try:
- writing the context's settings by hand, or copying a sealed context from
  another transaction, or changing one field of a sealed context;
- calling what seals a context, or reading the key;
- creating temporary tables (and so shadowing names) that the policy and
  trigger functions might otherwise read instead of ours;
- listening for another tenant's announcements.
Each forging attempt has a control: the same reads through a real token.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from mneia.storage import token
from mneia.storage.database import transaction
from tests.graphql import Api, Who, World
from tests.support import (
    INSUFFICIENT_PRIVILEGE,
    SET_CONTEXT,
    as_caller,
    as_nobody,
    authenticate,
    confirmed_item,
    node_engine,
    sqlstate,
    visible_item_ids,
)

SETTINGS = (
    "workspace_id",
    "actor_id",
    "actor_kind",
    "projects",
    "teams",
    "team_projects",
    "token_expires",
    "seal",
)
READ_SETTINGS = text(
    "SELECT " + ", ".join(f"current_setting('mneia.{name}', true) AS {name}" for name in SETTINGS)
)
WRITE_SETTING = text("SELECT set_config('mneia.' || CAST(:name AS text), CAST(:value AS text), true)")
SEEN = text(
    "SELECT (SELECT count(*) FROM items) AS items, (SELECT count(*) FROM actors) AS actors,"
    " (SELECT count(*) FROM projects) AS projects, (SELECT count(*) FROM workspaces) AS workspaces"
)
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


async def seen(connection: AsyncConnection) -> dict[str, int]:
    return dict((await connection.execute(SEEN)).one()._mapping)


def nothing() -> dict[str, int]:
    return {"items": 0, "actors": 0, "projects": 0, "workspaces": 0}


@pytest.fixture
async def stocked(api: Api, world: World) -> World:
    """The world with an item of the human's and one of the agent's."""
    await confirmed_item(api, world, "Invoices are immutable", agent_asserted=False)
    await api.assert_item(world.agent.token, projectId=world.project_id, statement="Retry on 503")
    return world


async def forge(connection: AsyncConnection, settings: dict[str, Any]) -> None:
    for name, value in settings.items():
        await connection.execute(WRITE_SETTING, {"name": name, "value": "" if value is None else str(value)})


# --- forging ---------------------------------------------------------------------------------------


async def test_r1_a_context_written_by_hand_is_nobodys(engine: AsyncEngine, stocked: World) -> None:
    human = stocked.human
    async with as_caller(engine, human) as connection:
        control = await seen(connection)
    assert all(count > 0 for count in control.values()), control

    async with as_nobody(engine, near=human) as connection:
        await connection.execute(SET_CONTEXT, {"ws": stocked.workspace_id, "actor": human.id})
        await forge(connection, {"actor_kind": "HUMAN", "projects": "{" + stocked.project_id + "}"})
        assert await seen(connection) == nothing()
        assert (await connection.execute(text("SELECT mneia_workspace(), mneia_actor()"))).one() == (
            None,
            None,
        )
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(
                text(
                    "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by)"
                    " VALUES (:ws, gen_random_uuid(), :project, 'FACT', 'forged', :actor)"
                ),
                {"ws": stocked.workspace_id, "project": stocked.project_id, "actor": human.id},
            )
    assert sqlstate(caught.value) == INSUFFICIENT_PRIVILEGE


async def test_r1_a_sealed_context_is_worthless_in_another_transaction(
    engine: AsyncEngine, stocked: World
) -> None:
    """Copied whole, seal included, into a later transaction (even on the same connection): nobody."""
    async with (await node_engine(engine, stocked.human)).connect() as connection:
        async with connection.begin():
            await authenticate(connection, stocked.human)
            sealed = dict((await connection.execute(READ_SETTINGS)).one()._mapping)
            assert (await seen(connection))["items"] > 0
        async with connection.begin():
            await forge(connection, sealed)
            assert dict((await connection.execute(READ_SETTINGS)).one()._mapping) == sealed
            assert await seen(connection) == nothing()
    async with as_nobody(engine, near=stocked.human) as other:
        await forge(other, sealed)
        assert await seen(other) == nothing()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("actor_kind", "HUMAN"),
        ("actor_id", "human"),
        ("projects", "{}"),
        ("team_projects", "{00000000-0000-0000-0000-000000000000}"),
    ],
)
async def test_r3_changing_one_field_of_a_sealed_context_unbinds_it(
    engine: AsyncEngine, stocked: World, name: str, value: str
) -> None:
    """An agent that calls itself human, or anyone else, or widens its projects, is nobody from then on."""
    async with as_caller(engine, stocked.agent) as connection:
        assert (await seen(connection))["items"] > 0  # control
        await forge(connection, {name: stocked.human.id if value == "human" else value})
        assert await seen(connection) == nothing()
        assert (await connection.execute(text("SELECT mneia_actor_is_human()"))).scalar_one() is False


async def test_r1_a_failed_authentication_unbinds(engine: AsyncEngine, stocked: World) -> None:
    async with as_caller(engine, stocked.human) as connection:
        assert (await seen(connection))["items"] > 0  # control
        unknown = await connection.execute(text("SELECT * FROM mneia_authenticate('not a digest', NULL)"))
        assert unknown.all() == []
        assert await seen(connection) == nothing()


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM seal_keys",
        "SELECT mneia_context_seal()",
        "SELECT mneia_bind(gen_random_uuid(), gen_random_uuid())",
        "SELECT mneia_unbind()",
        "SELECT * FROM mneia_bootstrap(gen_random_uuid(), 'evil corp', 'mallory', 'digest', 'local')",
        "SELECT mneia_rotate_seal_key()",
        "SELECT mneia_random_bytes()",
        "SELECT mneia_channel_of(gen_random_uuid())",
        "SELECT mneia_presented_token()",
    ],
)
async def test_r1_the_server_role_cannot_reach_the_key_or_what_seals_a_context(
    engine: AsyncEngine, stocked: World, statement: str
) -> None:
    async with as_caller(engine, stocked.human) as connection:
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(text(statement))
    assert sqlstate(caught.value) == INSUFFICIENT_PRIVILEGE
    assert "permission denied" in str(caught.value.orig)


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT lo_create(0)",
        "SELECT lo_from_bytea(0, 'x')",
        "SELECT pg_advisory_lock(21)",
        "SELECT pg_try_advisory_xact_lock(21)",
        "SELECT pg_notify('any channel', 'hello')",
        "SELECT n_live_tup FROM pg_stat_user_tables",
        "SELECT pg_stat_get_live_tuples('items'::regclass)",
        "SELECT heap_blks_read FROM pg_statio_user_tables",
    ],
)
@pytest.mark.parametrize("bound", [True, False], ids=["bound", "nobody"])
async def test_issue_21_the_server_role_has_none_of_postgresqls_extras(
    engine: AsyncEngine, stocked: World, statement: str, bound: bool
) -> None:
    """As mneia_app, pg_stat_user_tables showed every tenant's row counts, and large objects,
    advisory locks and pg_notify on any channel were allowed (migration 0012 revokes them from
    PUBLIC when a superuser migrates, as here). The announcements still reach their subscribers:
    the owner keeps pg_notify (tests/test_subscriptions.py)."""
    opened = as_caller(engine, stocked.agent) if bound else as_nobody(engine, near=stocked.agent)
    async with opened as connection:
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(text(statement))
    assert sqlstate(caught.value) == INSUFFICIENT_PRIVILEGE, caught.value


# --- shadowing -------------------------------------------------------------------------------------

# Created inside the test's transaction (so they vanish with its rollback, and
# the pooled connection goes back clean).
MEMBER_TABLES = (
    "CREATE TEMP TABLE project_members (workspace_id uuid, project_id uuid, actor_id uuid,"
    " added_by uuid, added_at timestamptz)",
    "CREATE TEMP TABLE team_members (workspace_id uuid, team_id uuid, actor_id uuid, added_by uuid,"
    " added_at timestamptz)",
    "CREATE TEMP TABLE actors (workspace_id uuid, id uuid, kind text, name text, identity_id uuid,"
    " created_by uuid, created_at timestamptz)",
    "CREATE TEMP TABLE projects (workspace_id uuid, id uuid, name text, team_id uuid, created_by uuid,"
    " created_at timestamptz)",
)


async def shadow(connection: AsyncConnection, world: World, outsider: Who) -> None:
    """Temporary tables that say ``outsider`` works in the world's project and is human."""
    for statement in MEMBER_TABLES:
        await connection.execute(text(statement))
    row = {"ws": world.workspace_id, "project": world.project_id, "who": outsider.id}
    await connection.execute(
        text("INSERT INTO project_members VALUES (:ws, :project, :who, :who, now())"), row
    )
    await connection.execute(
        text("INSERT INTO actors VALUES (:ws, :who, 'HUMAN', 'x', NULL, NULL, now())"), row
    )
    await connection.execute(text("INSERT INTO projects VALUES (:ws, :project, 'x', NULL, :who, now())"), row)


@pytest.fixture
async def outsider(api: Api, stocked: World) -> Who:
    """An agent of the world's workspace that works in none of its projects."""
    return await api.actor(stocked.human.token, "AGENT", "outsider")


async def test_r2_temporary_tables_do_not_widen_what_an_actor_sees(
    engine: AsyncEngine, stocked: World, outsider: Who
) -> None:
    before = await visible_item_ids(engine, outsider)
    member = await visible_item_ids(engine, stocked.agent)
    assert member - before, "control: a member sees items the outsider does not"
    async with as_nobody(engine, near=outsider) as connection:
        await shadow(connection, stocked, outsider)
        await authenticate(connection, outsider)
        found = {str(row[0]) for row in await connection.execute(text("SELECT id FROM public.items"))}
        human = (await connection.execute(text("SELECT mneia_actor_is_human()"))).scalar_one()
    assert found == before
    assert human is False


async def test_r3_a_temporary_actors_table_cannot_make_an_agent_confirm(
    api: Api, engine: AsyncEngine, stocked: World
) -> None:
    agent = stocked.agent
    own = await api.assert_item(agent.token, projectId=stocked.project_id, statement="Cache for a day")
    async with as_nobody(engine, near=agent) as connection:
        await shadow(connection, stocked, agent)
        await authenticate(connection, agent)
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(
                text("UPDATE public.items SET confirmed_by = :me, confirmed_at = now() WHERE id = :item"),
                {"me": agent.id, "item": own["id"]},
            )
    assert "HUMAN_REQUIRED" in str(caught.value.orig)


async def test_r8_temporary_disputes_cannot_reactivate_a_disputed_item(
    api: Api, engine: AsyncEngine, stocked: World
) -> None:
    """The guard counts the real open disputes, not a temporary table's."""
    contested = await confirmed_item(api, stocked, "Ship on Fridays", agent_asserted=False)
    disputed = await api.assert_item(
        stocked.agent.token,
        projectId=stocked.project_id,
        statement="Never ship on Fridays",
        contradicts=[contested["id"]],
    )
    async with as_nobody(engine, near=stocked.human) as connection:
        await connection.execute(
            text(
                "CREATE TEMP TABLE disputes (workspace_id uuid, item_id uuid, kept_item_id uuid, status text,"
                " resolved_by uuid, resolved_at timestamptz)"
            )
        )
        await connection.execute(
            text("INSERT INTO disputes VALUES (:ws, :item, :item, 'RESOLVED', :who, now())"),
            {"ws": stocked.workspace_id, "item": disputed["id"], "who": stocked.human.id},
        )
        await authenticate(connection, stocked.human)
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(
                text("UPDATE public.items SET status = 'ACTIVE' WHERE id = :item"), {"item": disputed["id"]}
            )
    assert sqlstate(caught.value) == INSUFFICIENT_PRIVILEGE


# The seal, computed in SQL by hand from a seal_keys table and the context's fields.
HAND_SEAL = (
    "SELECT encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to(concat_ws('|',"
    " 'mneia-context-v2', CAST(:ws AS text), CAST(:actor AS text), 'HUMAN', '{}', '{}', '{}', '',"
    " pg_backend_pid(), (extract(epoch FROM transaction_timestamp()) * 1000000)::bigint), 'UTF8'))),"
    " 'hex') FROM {keys} k"
)


async def test_r1_the_seal_is_an_hmac_of_the_context(admin_engine: AsyncEngine, stocked: World) -> None:
    """The control for the forgery below: with the real key, the hand-made seal is the real one."""
    params = {
        "ws": stocked.workspace_id,
        "actor": str(uuid.uuid4()),
    }  # no record: kind and projects stay empty
    async with admin_engine.connect() as connection, connection.begin():
        await connection.execute(text("SELECT mneia_bind(CAST(:ws AS uuid), CAST(:actor AS uuid))"), params)
        await forge(connection, {"actor_kind": "HUMAN"})
        real = (
            await connection.execute(text(HAND_SEAL.replace("{keys}", "public.seal_keys")), params)
        ).scalar()
        await forge(connection, {"seal": real})
        assert (await connection.execute(text("SELECT mneia_sealed()"))).scalar_one() is True
        await connection.rollback()


async def test_r1_a_temporary_key_cannot_forge_a_seal(engine: AsyncEngine, stocked: World) -> None:
    """A seal computed with a key of the caller's own, kept in a temporary seal_keys, verifies nothing."""
    own_key = (
        "CREATE TEMP TABLE seal_keys AS SELECT CAST(1 AS smallint) AS id,"
        " decode(repeat('36', 64), 'hex') AS inner_pad, decode(repeat('5c', 64), 'hex') AS outer_pad,"
        " decode(repeat('00', 32), 'hex') AS channel_salt, now() AS rotated_at"
    )
    async with as_nobody(engine, near=stocked.human) as connection:
        await connection.execute(text(own_key))
        params = {"ws": stocked.workspace_id, "actor": stocked.human.id}
        forged = (
            await connection.execute(text(HAND_SEAL.replace("{keys}", "seal_keys")), params)
        ).scalar_one()
        context = {"workspace_id": stocked.workspace_id, "actor_id": stocked.human.id, "actor_kind": "HUMAN"}
        await forge(connection, {**context, "projects": "{}", "teams": "{}", "team_projects": "{}"})
        await forge(connection, {"seal": forged})
        assert await seen(connection) == nothing()


async def test_r1_every_function_pins_its_search_path(admin_engine: AsyncEngine) -> None:
    """No function of ours resolves a name through a temporary schema: pg_temp comes last, if at all."""
    async with admin_engine.connect() as connection:
        found = await connection.execute(
            text(
                "SELECT p.proname, p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                " WHERE n.nspname = 'public' AND p.proname LIKE 'mneia\\_%'"
            )
        )
        unpinned = {
            name: config
            for name, config in found
            if "search_path=pg_catalog, public, pg_temp" not in (config or [])
        }
    assert unpinned == {}


# --- announcements ---------------------------------------------------------------------------------


async def test_r15_only_a_bound_transaction_learns_its_workspaces_channel(
    api: Api, engine: AsyncEngine, stocked: World
) -> None:
    _, stranger = await api.bootstrap("stranger")
    channel = text("SELECT mneia_channel()")
    async with as_nobody(engine) as connection:
        assert (await connection.execute(channel)).scalar_one() is None
    async with as_caller(engine, stocked.human) as connection:
        mine = (await connection.execute(channel)).scalar_one()
    async with as_caller(engine, stocked.agent) as connection:
        assert (await connection.execute(channel)).scalar_one() == mine
    async with as_caller(engine, stranger) as connection:
        theirs = (await connection.execute(channel)).scalar_one()
    assert mine != theirs
    assert stocked.workspace_id.replace("-", "") not in mine.replace("-", "")


CONTRADICT = """mutation($i: AssertItemInput!) { assertItem(input: $i) { id disputes { id } } }"""


async def test_r15_an_announcement_names_no_tenant(
    api: Api, engine: AsyncEngine, admin_url: str, stocked: World
) -> None:
    """The workspace's own channel hears a kind and a number; the old shared channel, nothing."""
    async with as_caller(engine, stocked.human) as connection:
        channel = (await connection.execute(text("SELECT mneia_channel()"))).scalar_one()
    heard: dict[str, list[str]] = {channel: [], "mneia": []}
    arrived = asyncio.Event()

    def hear(_connection: object, _pid: int, name: str, payload: str) -> None:
        heard[name].append(payload)
        arrived.set()

    # On the node that holds the workspace (on Citus its shards' triggers notify there).
    node = (await node_engine(engine, stocked.human)).url.render_as_string(hide_password=False)
    listener = await asyncpg.connect(node.replace("postgresql+asyncpg", "postgresql"))
    try:
        for name in heard:
            await listener.add_listener(name, hear)
        contested = await confirmed_item(api, stocked, "Deploys need two approvals", agent_asserted=False)
        variables = {
            "projectId": stocked.project_id,
            "kind": "FACT",
            "statement": "One approval is enough",
            "contradicts": [contested["id"]],
        }
        await api.run(stocked.agent.token, CONTRADICT, i=variables)
        async with asyncio.timeout(60):  # a busy machine's NOTIFY can take a while; none is a failure
            await arrived.wait()
    finally:
        await listener.close()
    assert heard["mneia"] == []
    (payload,) = heard[channel]
    announced = json.loads(payload)
    assert set(announced) == {"kind", "seq"} and announced["kind"] == "dispute"
    assert isinstance(announced["seq"], int)
    assert UUID.search(payload) is None


READ_ONLY_TRANSACTION = "25006"
VISIBLE_ITEMS = text("SELECT count(*) FROM items")
MAKE_PROJECT = text(  # what the human's context may do in a transaction that may write
    "INSERT INTO projects (workspace_id, id, name, created_by)"
    " VALUES (mneia_workspace(), gen_random_uuid(), 'Elsewhere', mneia_actor())"
)


@pytest.mark.parametrize("read", [True, False])
async def test_a_querys_transaction_reads_one_snapshot_and_cannot_write(
    api: Api, engine: AsyncEngine, stocked: World, read: bool
) -> None:
    """A GraphQL query's transaction (``read``) sees what was committed when it began, whatever
    commits meanwhile, and refuses any write, even one its actor could make; a mutation's (the
    control) sees each commit as it lands."""
    async with transaction(await node_engine(engine, stocked.human), read=read) as tx:
        assert await token.authenticate(tx, stocked.human.token) is not None
        before = (await tx.execute(VISIBLE_ITEMS)).scalar_one()
        await api.assert_item(stocked.human.token, projectId=stocked.project_id, statement="Said meanwhile")
        after = (await tx.execute(VISIBLE_ITEMS)).scalar_one()
        assert after == (before if read else before + 1)
        if read:
            with pytest.raises(DBAPIError) as caught:
                await tx.execute(MAKE_PROJECT)
            assert sqlstate(caught.value) == READ_ONLY_TRANSACTION, caught.value
        else:
            await tx.execute(MAKE_PROJECT)
        tx.fail()
