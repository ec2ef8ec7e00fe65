"""Workspaces (tenants) and the administrator's bootstrap of a workspace's first human."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import OWNER_ROLE
from mneia.storage import token
from mneia.storage.database import Tx, from_row, transaction
from mneia.storage.ids import new_id
from mneia.storage.tables import actors, identities, workspaces


@dataclass(frozen=True, slots=True)
class WorkspaceRecord:
    id: uuid.UUID
    name: str


@dataclass(frozen=True, slots=True)
class Bootstrap:
    workspace_id: uuid.UUID
    actor_id: uuid.UUID
    token: str


async def get(tx: Tx, workspace_id: uuid.UUID) -> WorkspaceRecord | None:
    row = (
        await tx.execute(select(workspaces.c.id, workspaces.c.name).where(workspaces.c.id == workspace_id))
    ).first()
    return from_row(WorkspaceRecord, row) if row else None


async def bootstrap(admin_engine: AsyncEngine, workspace_name: str, human_name: str) -> Bootstrap:
    """Create a workspace, its first human actor and that human's token.

    Runs over the administrator's connection as the owner role, bound by the
    same row-level security as everyone (the owner's bootstrap policies).
    """
    workspace_id, actor_id, identity_id = new_id(), new_id(), new_id()
    async with transaction(admin_engine) as tx:
        await tx.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
        await tx.set_context(workspace_id, actor_id)
        await tx.execute(insert(workspaces).values(id=workspace_id, name=workspace_name))
        await tx.execute(insert(identities).values(id=identity_id, display_name=human_name))
        await tx.execute(
            insert(actors).values(
                workspace_id=workspace_id,
                id=actor_id,
                kind="HUMAN",
                name=human_name,
                identity_id=identity_id,
            )
        )
        secret = await token.create(tx, workspace_id, actor_id, created_by=None)
    return Bootstrap(workspace_id, actor_id, secret)
