"""Statements the driver sends itself (storage.database.Driven) behave as SQLAlchemy's would.

The request boundary's hot statements (authentication, a write's access
check, the insert of an item) skip SQLAlchemy's execution. They must send and
read the same values, fail with the same errors (so that the one error
translation serves both), and share the transaction and its fate with the
statements SQLAlchemy runs.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import bindparam, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import app_url
from mneia.storage import bulk, failures, item, project, token
from mneia.storage.database import (
    ON_TABLES,
    Driven,
    NotOnShards,
    TransactionEnded,
    create_engine,
    transaction,
)
from mneia.storage.tables import item_states, items
from mneia.vocabulary import ItemKind, ItemStatus, Scope
from tests.graphql import World
from tests.support import rows

pytestmark = pytest.mark.asyncio

NAME = "mneia-driven-test"


def _new(world: World, **given: Any) -> item.NewItem:
    return item.NewItem(project_id=uuid.UUID(world.project_id), **given)


async def _both_ways(engine: AsyncEngine, world: World, new: item.NewItem) -> tuple[Any, Any]:
    """The item inserted through the driver, and read back through SQLAlchemy, in one transaction."""
    async with transaction(engine) as tx:
        await token.authenticate(tx, world.agent.token)
        (written,) = await bulk.create_many(tx, [new], confirmed=[False])
        read = await item.get(tx, written.id)
        tx.fail()  # leave nothing behind
    return written, read


contents = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(list(ItemKind)),
        "statement": st.text(
            st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40
        ).filter(str.strip),
        "confidence": st.none() | st.floats(0, 1),
        "scope": st.sampled_from([Scope.PROJECT, Scope.WORKSPACE]),
        "decay_after": st.none() | st.timedeltas(timedelta(seconds=1), timedelta(days=3650)),
    }
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(given_content=contents)
async def test_r4_an_item_written_by_the_driver_reads_back_the_same_through_sqlalchemy(
    engine: AsyncEngine, world: World, given_content: dict[str, Any]
) -> None:
    """Every column's value (enums, arrays, intervals, floats, moments) is what SQLAlchemy reads."""
    written, read = await _both_ways(engine, world, _new(world, **given_content))
    assert written == read
    assert type(written.kind) is ItemKind and type(written.scope) is Scope
    assert written.decay_after == given_content["decay_after"]


async def test_r1_the_driver_runs_in_the_transaction_sqlalchemy_runs_in(
    engine: AsyncEngine, world: World
) -> None:
    """Authenticated by a driven statement, the context binds what SQLAlchemy reads next; a rolled-back
    transaction keeps none of the driver's writes."""
    async with transaction(engine) as tx:
        actor = await token.authenticate(tx, world.agent.token)
        assert actor is not None
        bound = (await tx.execute(text("SELECT mneia_actor()"))).scalar_one()
        assert bound == actor.id
        (written,) = await bulk.create_many(
            tx, [_new(world, kind=ItemKind.FACT, statement="rolled back")], confirmed=[False]
        )
        tx.fail()
    async with transaction(engine) as tx:
        await token.authenticate(tx, world.agent.token)
        assert await item.get(tx, written.id) is None


async def test_r7_a_refusal_by_the_database_is_the_same_error_either_way(
    engine: AsyncEngine, world: World
) -> None:
    """A unique violation from a driven statement names its constraint, and is translated as any other."""
    same_id = Driven(text("INSERT INTO seal_keys (id) VALUES (1)"))  # refused: no grant at all
    async with transaction(engine) as tx:
        await token.authenticate(tx, world.agent.token)
        with pytest.raises(DBAPIError) as caught:
            await tx.fetch(same_id, {})
        tx.fail()
    assert failures.sqlstate(caught.value) == failures.INSUFFICIENT_PRIVILEGE
    assert not caught.value.connection_invalidated
    translated = failures.translate(caught.value, "insert")
    assert translated is not None and translated.code == "FORBIDDEN"

    duplicate = Driven(
        text(
            "INSERT INTO project_members (workspace_id, project_id, actor_id, added_by)"
            " SELECT workspace_id, project_id, actor_id, added_by FROM project_members"
            " WHERE project_id = CAST(:project AS uuid) LIMIT 1"
        )
    )
    async with transaction(engine) as tx:
        await token.authenticate(tx, world.human.token)
        with pytest.raises(DBAPIError) as caught:
            await tx.fetch(duplicate, {"project": world.project_id})
        tx.fail()
    assert failures.sqlstate(caught.value) == failures.UNIQUE_VIOLATION
    assert failures.constraint_name(caught.value), caught.value
    conflict = failures.translate(caught.value, "addMember")
    assert conflict is not None and conflict.code == "CONFLICT"


async def test_f5_a_connection_lost_under_a_driven_statement_is_discarded_not_pooled(
    admin_url: str, admin_engine: AsyncEngine, world: World
) -> None:
    engine = create_engine(app_url(admin_url), pool_size=1, application_name=NAME)
    try:
        async with transaction(engine) as tx:
            await token.authenticate(tx, world.agent.token)
            async with admin_engine.connect() as admin:
                await admin.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = :n AND datname = current_database()"
                    ),
                    {"n": NAME},
                )
            with pytest.raises(DBAPIError) as caught:
                await project.access(tx, uuid.UUID(world.project_id))
            tx.fail()  # as the error boundary does: the ROLLBACK fails too, and is not raised
        assert caught.value.connection_invalidated
        assert failures.unavailable(caught.value)
        # The one pooled connection was discarded: the next transaction gets a live one.
        async with transaction(engine) as tx:
            assert await token.authenticate(tx, world.agent.token) is not None
            assert await project.access(tx, uuid.UUID(world.project_id)) is not None
    finally:
        await engine.dispose()


async def test_f5_a_driven_statement_after_the_transaction_ended_is_refused(
    engine: AsyncEngine, world: World
) -> None:
    async with transaction(engine) as tx:
        await token.authenticate(tx, world.agent.token)
    with pytest.raises(TransactionEnded):
        await project.access(tx, uuid.UUID(world.project_id))


async def test_the_driver_leaves_no_transaction_open_on_a_pooled_connection(
    admin_url: str, admin_engine: AsyncEngine, world: World
) -> None:
    """After commits, rollbacks and a failed statement, no connection of the pool is left in a
    transaction (pg_stat_activity: 'idle', never 'idle in transaction')."""
    engine = create_engine(app_url(admin_url), pool_size=2, application_name=NAME)
    try:
        async with transaction(engine) as tx:
            await token.authenticate(tx, world.agent.token)
        async with transaction(engine) as tx:
            await token.authenticate(tx, world.agent.token)
            tx.fail()
        with pytest.raises(DBAPIError):
            async with transaction(engine) as tx:
                await token.authenticate(tx, world.agent.token)
                await tx.fetch(Driven(text("SELECT 1 / 0")), {})
        states = await rows(
            admin_engine,
            "SELECT state FROM pg_stat_activity WHERE application_name = :n AND datname = current_database()",
            n=NAME,
        )
        assert states and {row["state"] for row in states} == {"idle"}, states
    finally:
        await engine.dispose()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    scopes=st.lists(
        st.sampled_from([Scope.PROJECT, Scope.PRIVATE, Scope.WORKSPACE]), min_size=1, max_size=12
    ),
    first=st.integers(1, 6),
)
async def test_r2_a_whole_projects_page_reads_what_the_general_listing_reads(
    engine: AsyncEngine, world: World, scopes: list[Scope], first: int
) -> None:
    """The page with no filter (``item.page``'s statements built once, sent by the driver) holds the
    items, the next page and the count that the general listing gives for a filter every item meets,
    for a reader who sees all of them (the agent) and one who does not see its private ones (R2)."""
    async with transaction(engine) as tx:
        await token.authenticate(tx, world.agent.token)
        new = [_new(world, kind=ItemKind.FACT, statement=f"fact {n}", scope=s) for n, s in enumerate(scopes)]
        await bulk.create_many(tx, new, confirmed=[False] * len(new))
        for reader in (world.agent, world.human):
            await token.authenticate(tx, reader.token)
            whole, every = item.ItemFilter(), item.ItemFilter(statuses=list(ItemStatus))
            after = None
            while True:
                quick = await item.page(tx, uuid.UUID(world.project_id), whole, first=first, after=after)
                general = await item.page(tx, uuid.UUID(world.project_id), every, first=first, after=after)
                assert quick.records == general.records and quick.has_next == general.has_next
                assert await quick.count() == await general.count()
                if not quick.has_next:
                    break
                after = quick.records[-1].id
        tx.fail()


async def test_a_refusal_relayed_without_its_constraint_names_it_from_its_message(
    engine: AsyncEngine, world: World
) -> None:
    """On Citus a shard's refusal relayed by another node (a reference table's other placement)
    comes with PostgreSQL's message alone, no constraint field: ``failures.constraint_name`` reads
    the name there, without the shard's id, so that it is translated as on one server. The real
    message of a real refusal, rebuilt without its fields as Citus relays it."""
    duplicate = Driven(
        text(
            "INSERT INTO project_members (workspace_id, project_id, actor_id, added_by)"
            " SELECT workspace_id, project_id, actor_id, added_by FROM project_members"
            " WHERE project_id = CAST(:project AS uuid) LIMIT 1"
        )
    )
    async with transaction(engine) as tx:
        await token.authenticate(tx, world.human.token)
        with pytest.raises(DBAPIError) as caught:
            await tx.fetch(duplicate, {"project": world.project_id})
        tx.fail()
    declared = failures.constraint_name(caught.value)
    assert declared
    message = str(caught.value.orig).replace(f'"{declared}"', f'"{declared}_102040"')
    relayed = DBAPIError("INSERT", None, asyncpg.exceptions.UniqueViolationError(message))
    assert getattr(relayed.orig, "constraint_name", None) is None
    assert failures.constraint_name(relayed) == declared
    conflict = failures.translate(relayed, "addMember")
    assert conflict is not None and conflict.code == "CONFLICT"


async def test_a_statement_on_shards_reads_each_named_relation_in_place_of_its_table(
    admin_engine: AsyncEngine,
) -> None:
    """``Driven.on`` (issue 25): a ``shardable`` statement compiled with each table's shard reads
    those relations, every reference (aliased or not) included, and answers as it would on the
    tables; a statement reading a table the mapping leaves out is refused when compiled, and a
    statement not ``shardable`` stays as it is."""
    walked = items.alias("walked")
    statement = (
        select(items.c.id, walked.c.project_id)
        .select_from(items.join(walked, walked.c.id == items.c.id))
        .where(items.c.workspace_id == bindparam("workspace"))
    )
    driven = Driven(statement, shardable=True)
    on_shard = driven.on({"items": "items_102008"})
    assert "items_102008 AS items" in on_shard.sql and "items_102008 AS walked" in on_shard.sql
    assert driven.sends(on_shard.sql) and ON_TABLES[on_shard.sql] == driven.sql
    assert driven.on({"items": "items_102008"}) is on_shard  # compiled once
    assert Driven(statement).on({"items": "items_102008"}).sql == driven.sql
    with pytest.raises(NotOnShards, match="item_states"):
        Driven(select(item_states.c.item_id), shardable=True).on({"items": "items_102008"})
    workspace_id, row_id, project_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    async with admin_engine.connect() as connection, connection.begin():
        await connection.execute(text("CREATE TEMPORARY TABLE items_102008 AS SELECT * FROM items LIMIT 0"))
        await connection.execute(
            text("INSERT INTO items_102008 (workspace_id, id, project_id) VALUES (:w, :i, :p)"),
            {"w": workspace_id, "i": row_id, "p": project_id},
        )
        driver = (await connection.get_raw_connection()).driver_connection
        assert isinstance(driver, asyncpg.Connection)
        arguments = on_shard.arguments({"workspace": workspace_id})
        assert [tuple(r) for r in await driver.fetch(on_shard.sql, *arguments)] == [(row_id, project_id)]
        assert await driver.fetch(driven.sql, *arguments) == []  # the table itself holds no such row
        await connection.rollback()
