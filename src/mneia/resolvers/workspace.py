"""The caller's workspace (the tenant)."""

from __future__ import annotations

from mneia.resolvers.request.context import Info
from mneia.schema.actor import Workspace
from mneia.storage import workspace


async def current_workspace(info: Info) -> Workspace:
    context = info.context
    record = await workspace.get(context.tx, context.actor.workspace_id)
    assert record is not None, "an authenticated actor's workspace is always visible"
    return Workspace.of(record)
