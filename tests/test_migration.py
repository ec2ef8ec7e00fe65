"""The migrations: ``upgrade head`` on an empty database, back down step by step, and up again.

Compared by catalogue snapshot (scripts.catalog), object by object: going down
one revision arrives at exactly what that revision built, and going up again
at exactly what it was. The roles are cluster-wide and other test databases
may be using them, so downgrade keeps them when they are still needed;
everything else it removes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from scripts import catalog
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine

from mneia.config import OWNER_ROLE, app_url, async_url
from mneia.storage import database, event, migration, token, workspace
from mneia.storage.tables import metadata
from tests.database import scratch_database
from tests.support import bootstrapped_before_0024, bootstrapped_before_0029
from tests.test_declared import OWNER_ONLY

BIND = text("SELECT mneia_bind(CAST(:ws AS uuid), CAST(:actor AS uuid))")


def schema_objects(snapshot: catalog.Snapshot) -> catalog.Snapshot:
    """The snapshot without the cluster-wide roles and their database-wide default privileges."""
    return {key: value for key, value in snapshot.items() if key[0] not in ("role", "default privileges")}


async def test_upgrade_downgrade_upgrade_on_an_empty_database(server: str) -> None:
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url)
        head = await catalog.snapshot_of(url)
        # Every table storage/tables.py declares, and those only the owner reads.
        assert sum(1 for key in head if key[0] == "table") == len(metadata.tables) + len(OWNER_ONLY)
        assert sum(1 for key in head if key[0] == "policy") >= 30

        await asyncio.to_thread(migration.downgrade, url)
        assert schema_objects(await catalog.snapshot_of(url)) == {}

        await asyncio.to_thread(migration.upgrade, url)
        assert await catalog.snapshot_of(url) == head


async def test_each_downgrade_returns_to_what_the_revision_before_built(server: str) -> None:
    async with scratch_database(server) as stepped, scratch_database(server) as direct:
        await asyncio.to_thread(migration.upgrade, stepped)
        await asyncio.to_thread(migration.downgrade, stepped, "0001_foundation")
        await asyncio.to_thread(migration.upgrade, direct, "0001_foundation")
        went_back, built = await catalog.snapshot_of(stepped), await catalog.snapshot_of(direct)
        assert catalog.differences(built, went_back) == []


async def test_0004_rebuilds_the_states_of_the_items_already_there(server: str) -> None:
    """R9 across the upgrade: an item that 0003's trigger logged gets one state per instant it changed."""
    asserted = datetime(2026, 1, 5, tzinfo=UTC)
    confirmed = asserted + timedelta(days=2)
    project, item = uuid.uuid4(), uuid.uuid4()
    history = (
        "INSERT INTO projects (workspace_id, id, name, created_by) VALUES (:ws, :p, 'old', :actor)",
        "INSERT INTO project_members (workspace_id, project_id, actor_id, added_by)"
        " VALUES (:ws, :p, :actor, :actor)",
        "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by,"
        " asserted_at, confirmed_by, confirmed_at)"
        " VALUES (:ws, :i, :p, 'FACT', 'old fact', :actor, :a, :actor, :c)",
    )
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url, "0003_tokens")
        admin = create_async_engine(async_url(url))
        try:
            made = await bootstrapped_before_0024(admin)
            bound = {"ws": str(made.workspace_id), "actor": str(made.actor_id)}
            # As an administrator loading history: the owner, bound to Alice, trusted with its times;
            # then a change in a later transaction, at its time.
            for statements in (
                history,
                ("UPDATE items SET status = 'RETIRED', status_reason = 'gone' WHERE id = :i",),
            ):
                async with admin.connect() as connection, connection.begin():
                    await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
                    await connection.execute(BIND, bound)
                    for statement in statements:
                        values = {**bound, "p": project, "i": item, "a": asserted, "c": confirmed}
                        await connection.execute(text(statement), values)
                    retired = (await connection.execute(text("SELECT now()"))).scalar_one()

            await asyncio.to_thread(migration.upgrade, url)
            async with admin.connect() as connection:
                states = (
                    await connection.execute(
                        text(
                            "SELECT since, until, status, status_reason, confirmed_at FROM item_states"
                            " WHERE item_id = :i ORDER BY since"
                        ),
                        {"i": item},
                    )
                ).all()
        finally:
            await admin.dispose()
    forever = datetime.max  # asyncpg reads infinity as a naive datetime.max
    assert [tuple(state) for state in states] == [
        (asserted, confirmed, "ACTIVE", None, None),
        (confirmed, retired, "ACTIVE", None, confirmed),
        (retired, forever, "RETIRED", "gone", confirmed),
    ]


async def test_0021_keeps_the_history_a_row_does_not_imply_and_its_downgrade_writes_it_all(
    server: str,
) -> None:
    """R6/R9 across 0021: of three items (one never changed, one loaded with a later confirmation,
    one retired since), only the first loses its rows, and every log reads the same before,
    after, and back down again."""
    asserted = datetime(2026, 1, 5, tzinfo=UTC)
    project = uuid.uuid4()
    plain, loaded, retired = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    insert = (
        "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by, asserted_at,"
        " confirmed_by, confirmed_at) VALUES (:ws, :i, :p, 'FACT', 'a fact', :actor, :a, :by, :c)"
    )
    history = [
        ("INSERT INTO projects (workspace_id, id, name, created_by) VALUES (:ws, :p, 'old', :actor)", {}),
        (
            "INSERT INTO project_members (workspace_id, project_id, actor_id, added_by)"
            " VALUES (:ws, :p, :actor, :actor)",
            {},
        ),
        (insert, {"i": plain, "by": None, "c": None}),
        (insert, {"i": loaded, "by": "actor", "c": asserted + timedelta(days=2)}),
        (insert, {"i": retired, "by": None, "c": None}),
        ("UPDATE items SET status = 'RETIRED', status_reason = 'gone' WHERE id = :i", {"i": retired}),
    ]
    items_ = [plain, loaded, retired]

    async def logs(admin: Any, workspace: uuid.UUID) -> dict[uuid.UUID, list[tuple[Any, ...]]]:
        async with database.transaction(admin, read=True) as tx:
            tx.workspace_id = workspace  # the statement states it, as the server's do (issue 25)
            found = await event.of_items(tx, items_)
        return {key: [dataclasses.astuple(record) for record in log] for key, log in found.items()}

    async def held(admin: Any) -> dict[uuid.UUID, tuple[int, int]]:
        async with admin.connect() as connection:
            counted = await connection.execute(
                text(
                    "SELECT i.id, (SELECT count(*) FROM item_events e WHERE e.item_id = i.id),"
                    " (SELECT count(*) FROM item_states s WHERE s.item_id = i.id) FROM items i"
                )
            )
            return {row[0]: (row[1], row[2]) for row in counted}

    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url, "0020_dense_storage")
        admin = create_async_engine(async_url(url))
        try:
            made = await bootstrapped_before_0024(admin)
            bound = {"ws": str(made.workspace_id), "actor": str(made.actor_id)}
            for statement, values in history:
                async with admin.connect() as connection, connection.begin():
                    await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
                    await connection.execute(BIND, bound)
                    chosen = {**values, "by": bound["actor"] if values.get("by") else None}
                    await connection.execute(
                        text(statement), {**bound, "p": project, "a": asserted, **chosen}
                    )
            before, rows_before = await logs(admin, made.workspace_id), await held(admin)

            await asyncio.to_thread(migration.upgrade, url)
            after, rows_after = await logs(admin, made.workspace_id), await held(admin)

            await asyncio.to_thread(migration.downgrade, url, "0020_dense_storage")
            back, rows_back = await logs(admin, made.workspace_id), await held(admin)
        finally:
            await admin.dispose()

    assert rows_before[plain] == (1, 1) and rows_after[plain] == (0, 0) and rows_back[plain] == (1, 1)
    for kept in (loaded, retired):
        assert rows_after[kept] == rows_before[kept] == rows_back[kept]
    assert rows_before[loaded] == (2, 2) and rows_before[retired] == (2, 2)

    # The same log throughout, but for the never-changed item's assertion's id and order key
    # (``id`` and ``seq``: an event of 0020's, implied as its item's id and 0, written again).
    def unkeyed(found: dict[uuid.UUID, list[tuple[Any, ...]]]) -> dict[uuid.UUID, list[tuple[Any, ...]]]:
        return {key: [record[1:2] + record[3:] for record in log] for key, log in found.items()}

    assert unkeyed(after) == unkeyed(before) == unkeyed(back)
    assert [record[0] for record in after[plain]] == [plain]  # an assertion's event has its item's id


async def test_0024_tokens_minted_before_it_still_authenticate_and_new_ones_after_its_downgrade(
    server: str,
) -> None:
    """A token of 0023 (no workspace in it) is found by its digest alone after the upgrade; one
    minted at 0024 (naming its workspace) still authenticates once the schema is back at 0023."""

    async def authenticated(url: str, secret: str) -> uuid.UUID | None:
        engine = database.create_engine(app_url(url), pool_size=1)
        try:
            async with database.transaction(engine, read=True) as tx:
                found = await token.authenticate(tx, secret)
        finally:
            await engine.dispose()
        return found.id if found else None

    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url, "0023_replacements_by_workspace")
        admin = create_async_engine(async_url(url))
        try:
            old = await bootstrapped_before_0024(admin)
            assert token.workspace_of(old.token) is None
            await asyncio.to_thread(migration.upgrade, url)
            assert await authenticated(url, old.token) == old.actor_id
            new = await workspace.bootstrap(admin, "current", "bob")
            assert token.workspace_of(new.token) == new.workspace_id
            assert await authenticated(url, new.token) == new.actor_id
            assert await authenticated(url, old.token + "x") is None  # control

            await asyncio.to_thread(migration.downgrade, url, "0023_replacements_by_workspace")
            async with admin.connect() as connection:
                found = await connection.execute(
                    text("SELECT id FROM mneia_authenticate(:digest)"), {"digest": token.digest(new.token)}
                )
                assert found.scalar_one() == new.actor_id
        finally:
            await admin.dispose()


async def test_0025_fills_the_creators_its_policies_read_from_the_rows(server: str) -> None:
    """A token, a team member and a project member written at 0024 carry their creators after 0025,
    read from actors, teams and projects as the policies read them before."""
    agent, team, project = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    setup = (
        "INSERT INTO actors (workspace_id, id, kind, name, created_by)"
        " VALUES (:ws, :agent, 'AGENT', 'a', :actor)",
        "INSERT INTO api_tokens (workspace_id, id, actor_id, token_hash, created_by)"
        " VALUES (:ws, gen_random_uuid(), :agent, 'digest', :actor)",
        "INSERT INTO teams (workspace_id, id, name, function, created_by)"
        " VALUES (:ws, :team, 't', 'f', :actor)",
        "INSERT INTO team_members (workspace_id, team_id, actor_id, added_by)"
        " VALUES (:ws, :team, :agent, :actor)",
        "INSERT INTO projects (workspace_id, id, name, created_by) VALUES (:ws, :project, 'p', :actor)",
        "INSERT INTO project_members (workspace_id, project_id, actor_id, added_by)"
        " VALUES (:ws, :project, :agent, :actor)",
    )
    copied = (
        "SELECT (SELECT actor_created_by FROM api_tokens WHERE actor_id = :agent),"
        " (SELECT team_created_by FROM team_members WHERE actor_id = :agent),"
        " (SELECT project_created_by FROM project_members WHERE actor_id = :agent)"
    )
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url, "0024_tokens_name_workspace")
        admin = create_async_engine(async_url(url))
        try:
            made = await bootstrapped_before_0029(admin)
            values = {"ws": made.workspace_id, "actor": made.actor_id, "agent": agent, "team": team}
            async with admin.connect() as connection, connection.begin():
                await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
                await connection.execute(BIND, {"ws": str(made.workspace_id), "actor": str(made.actor_id)})
                for statement in setup:
                    await connection.execute(text(statement), {**values, "project": project})
            await asyncio.to_thread(migration.upgrade, url)
            async with admin.connect() as connection:
                found = (await connection.execute(text(copied), {"agent": agent})).one()
        finally:
            await admin.dispose()
    assert tuple(found) == (made.actor_id,) * 3


async def test_0026_copies_each_items_audience_onto_the_rows_shown_with_it(server: str) -> None:
    """Events, states, a proposal, a dispute and a handoff written at 0025 carry, after 0026, the
    audiences of their items and the actor and project of their session, read from the records."""
    ids = {name: uuid.uuid4() for name in ("project", "one", "two", "three", "session")}
    setup = (
        "INSERT INTO projects (workspace_id, id, name, created_by) VALUES (:ws, :project, 'p', :actor)",
        "INSERT INTO project_members (workspace_id, project_id, actor_id, added_by)"
        " VALUES (:ws, :project, :actor, :actor)",
        "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by, scope)"
        " VALUES (:ws, :one, :project, 'FACT', 'one', :actor, 'PRIVATE'),"
        " (:ws, :two, :project, 'FACT', 'two', :actor, 'GRANTS'),"
        " (:ws, :three, :project, 'FACT', 'three', :actor, 'WORKSPACE')",
        "UPDATE items SET grant_actor_ids = ARRAY[CAST(:actor AS uuid)] WHERE id = :two",
        "UPDATE items SET status = 'RETIRED', status_reason = 'gone' WHERE id = :one",
        "INSERT INTO proposals (workspace_id, id, project_id, kind, target_id, proposed_by)"
        " VALUES (:ws, gen_random_uuid(), :project, 'LOAD_BEARING', :two, :actor)",
        "INSERT INTO disputes (workspace_id, id, project_id, item_id, contested_id, raised_by)"
        " VALUES (:ws, gen_random_uuid(), :project, :three, :two, :actor)",
        "INSERT INTO sessions (workspace_id, id, project_id, actor_id)"
        " VALUES (:ws, :session, :project, :actor)",
        "INSERT INTO handoffs (workspace_id, id, project_id, session_id, created_by, summary, request_digest)"
        " VALUES (:ws, gen_random_uuid(), :project, :session, :actor, 'done', 'digest')",
    )
    copied = (
        "SELECT (SELECT array_agg(DISTINCT (item_project_id, item_scope, item_asserted_by)::text)"
        "        FROM item_events WHERE item_id = :one) AS events,"
        " (SELECT array_agg(DISTINCT (item_project_id, item_scope, item_asserted_by)::text)"
        "        FROM item_states WHERE item_id = :one) AS states,"
        " (SELECT (target_scope, target_asserted_by, target_grants)::text FROM proposals) AS proposal,"
        " (SELECT (item_scope, contested_scope, contested_grants)::text FROM disputes) AS dispute,"
        " (SELECT (session_actor_id, session_project_id)::text FROM handoffs) AS handoff"
    )
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url, "0025_policies_read_their_own_row")
        admin = create_async_engine(async_url(url))
        try:
            made = await bootstrapped_before_0029(admin)
            values = {"ws": made.workspace_id, "actor": made.actor_id, **ids}
            async with admin.connect() as connection, connection.begin():
                await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
                await connection.execute(BIND, {"ws": str(made.workspace_id), "actor": str(made.actor_id)})
                for statement in setup:
                    await connection.execute(text(statement), values)
            await asyncio.to_thread(migration.upgrade, url)
            async with admin.connect() as connection:
                found = (await connection.execute(text(copied), ids)).one()
        finally:
            await admin.dispose()
    p, a = ids["project"], made.actor_id
    assert found.events == found.states == [f"({p},PRIVATE,{a})"]
    assert found.proposal == f"(GRANTS,{a},{{{a}}})"
    assert found.dispute == f"(WORKSPACE,GRANTS,{{{a}}})"
    assert found.handoff == f"({a},{p})"


async def test_0029_gives_the_workspaces_there_the_migrated_servers_region_and_fixes_it(server: str) -> None:
    """A workspace made before 0029 takes the region the migration is told (the server's); a new one
    states its own, which its token names; nobody, not even the administrator, updates a region."""
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url, "0028_holds_read_apart")
        admin = create_async_engine(async_url(url))
        try:
            old = await bootstrapped_before_0029(admin)
            await asyncio.to_thread(partial(migration.upgrade, url, region="eu-west"))
            new = await workspace.bootstrap(admin, "new", "bob", region="us")
            async with admin.connect() as connection:
                found = dict((await connection.execute(text("SELECT id, region FROM workspaces"))).all())
                await connection.execute(text("UPDATE workspaces SET name = 'renamed'"))  # the control
                with pytest.raises(DBAPIError, match="region is fixed when it is created"):
                    await connection.execute(text("UPDATE workspaces SET region = 'us'"))
        finally:
            await admin.dispose()
    assert found == {old.workspace_id: "eu-west", new.workspace_id: "us"}
    assert token.region_of(new.token) == "us" and token.region_of(old.token) is None
