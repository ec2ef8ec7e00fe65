"""Workspaces (tenants), and the administrator's acts: the first human of a workspace, a new sealing key."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia import config
from mneia.config import DEFAULT_REGION
from mneia.storage import citus, token
from mneia.storage.database import Tx, from_row, lone_engine, transaction
from mneia.storage.ids import new_id
from mneia.storage.tables import workspaces


@dataclass(frozen=True, slots=True)
class WorkspaceRecord:
    id: uuid.UUID
    name: str
    region: str
    """Where its rows live, fixed when it was created (docs/scale-out.md, Regions)."""


@dataclass(frozen=True, slots=True)
class Bootstrap:
    workspace_id: uuid.UUID
    actor_id: uuid.UUID
    token: str
    identity_id: uuid.UUID | None = None
    """The first human's person, for the regions' directory (storage.directory)."""
    region: str = DEFAULT_REGION


async def get(tx: Tx, workspace_id: uuid.UUID) -> WorkspaceRecord | None:
    row = (
        await tx.execute(
            select(workspaces.c.id, workspaces.c.name, workspaces.c.region).where(
                workspaces.c.id == workspace_id
            )
        )
    ).first()
    return from_row(WorkspaceRecord, row) if row else None


_BOOTSTRAP = text(
    "SELECT workspace_id, actor_id, identity_id"
    " FROM mneia_bootstrap(CAST(:id AS uuid), :workspace, :human, :digest, :region)"
)


async def bootstrap(
    admin_engine: AsyncEngine, workspace_name: str, human_name: str, region: str | None = None
) -> Bootstrap:
    """Create a workspace of ``region`` (default: ``MNEIA_REGION``, else ``local``), its first human
    actor and that human's token, which names the region unless it is the default.

    ``mneia_bootstrap`` (storage/sql/context.sql) does it inside the database,
    as the owner role and bound by the same row-level security as everyone;
    only an administrator's connection may call it. The token's secret never
    reaches the database, only its digest. On Citus it runs on the node that
    will hold the workspace, as the administrator there.
    """
    region = config.region(region)
    workspace_id = new_id()  # here, not in the database: the token names it
    secret = token.mint(workspace_id, region)
    home = await citus.home(admin_engine, workspace_id)  # on Citus, the node that will hold it
    engine = admin_engine if home is None else lone_engine(home)
    try:
        async with transaction(engine) as tx:
            made = (
                await tx.execute(
                    _BOOTSTRAP,
                    {
                        "id": str(workspace_id),
                        "workspace": workspace_name,
                        "human": human_name,
                        "digest": token.digest(secret),
                        "region": region,
                    },
                )
            ).one()
    finally:
        if engine is not admin_engine:
            await engine.dispose()
    return Bootstrap(made.workspace_id, made.actor_id, secret, made.identity_id, region)


_ROTATE = text("SELECT mneia_rotate_seal_key()")


async def rotate_seal_key(admin_engine: AsyncEngine) -> None:
    """A new key for sealing request contexts (storage/sql/context.sql); the administrator's act.

    Transactions bound under the old key fail closed; tokens and data are untouched.
    """
    async with transaction(admin_engine) as tx:
        await tx.execute(_ROTATE)
        await citus.spread_seal_key(tx)  # on Citus, to every node
