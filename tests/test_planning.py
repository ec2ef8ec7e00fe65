"""Every transaction plans its statements with their values in hand (storage.database.PLANNED_WITH_VALUES).

Tenants are skewed: a cached generic plan is made for no tenant in particular,
and for a project of a million items beside a thousand small ones it read and
sorted the whole project for a page of 51 (docs/performance.md). A plan made
for the values shows them where a generic plan shows its parameters ($1).
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import app_url
from mneia.storage.database import Tx, create_engine, transaction

pytestmark = pytest.mark.asyncio

PREPARED = text(
    "PREPARE mneia_planning_probe(uuid) AS SELECT id FROM items WHERE project_id = $1 ORDER BY id DESC"
)


async def _plan(tx: Tx, project: uuid.UUID) -> str:
    rows = await tx.execute(text(f"EXPLAIN EXECUTE mneia_planning_probe('{project}')"))
    return "\n".join(row[0] for row in rows)


@pytest.mark.parametrize("read", [False, True], ids=["write", "read"])
async def test_a_transaction_plans_a_prepared_statement_for_its_values(
    engine: AsyncEngine, read: bool
) -> None:
    project = uuid.uuid4()
    async with transaction(engine, read=read) as tx:
        await tx.execute(PREPARED)
        try:
            valued, parametric = f"project_id = '{project}'", "project_id = $"
            for _ in range(7):  # PostgreSQL weighs a generic plan from the sixth execution on
                custom = await _plan(tx, project)
                assert valued in custom and parametric not in custom
            # The control: the same statement in the same transaction, planned generically.
            await tx.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
            generic = await _plan(tx, project)
            assert parametric in generic and valued not in generic
        finally:
            await tx.execute(text("DEALLOCATE mneia_planning_probe"))


async def test_planning_with_values_ends_with_the_transaction(admin_url: str) -> None:
    """SET LOCAL: the pooled connection is handed back with the server's own default."""
    pooled = create_engine(app_url(admin_url), pool_size=1)
    try:
        async with transaction(pooled) as tx:
            assert (await tx.execute(text("SHOW plan_cache_mode"))).scalar_one() == "force_custom_plan"
        async with pooled.connect() as connection:
            assert (await connection.execute(text("SHOW plan_cache_mode"))).scalar_one() == "auto"
    finally:
        await pooled.dispose()
