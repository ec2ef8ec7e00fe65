"""Subscriptions: disputes and proposals as they are raised (R8, R15).

Each announcement is re-read in a fresh transaction under the subscriber's
own context (its token is authenticated again, so a revoked token stops the
stream), so a subscriber sees exactly what a query would show it: never a
row of another workspace or outside its scope.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

import strawberry

from mneia.errors import NotFound
from mneia.resolvers.context import Context, Info
from mneia.resolvers.inputs import parse_id
from mneia.schema.dispute import Dispute
from mneia.schema.proposal import Proposal
from mneia.storage import dispute, notification, project, proposal
from mneia.storage.database import Tx


class _InProject(Protocol):
    @property
    def project_id(self) -> Any: ...


R = TypeVar("R", bound=_InProject)


async def _announced(
    context: Context,
    kind: str,
    project_id: strawberry.ID | None,
    fetch: Callable[[Tx, int], Awaitable[R | None]],
) -> AsyncGenerator[R, None]:
    project_key = parse_id(project_id, "projectId") if project_id is not None else None
    async with context.authenticated() as tx:
        if project_key is not None and await project.get(tx, project_key) is None:
            raise NotFound("project", project_id)
        channel = await notification.channel(tx)
    assert channel is not None, "an authenticated transaction knows its workspace's channel"
    assert context.hub is not None, "subscriptions need the application's notification hub"
    async with context.hub.subscription(channel) as queue:
        while True:
            note = await queue.get()
            if note.kind != kind:
                continue
            # The lock and the transaction stay held while the event's fields resolve.
            async with context.authenticated() as tx:
                found = await fetch(tx, note.seq)
                if found is not None and project_key in (None, found.project_id):
                    yield found


async def dispute_raised(
    info: Info, project_id: strawberry.ID | None = None
) -> AsyncGenerator[Dispute, None]:
    async for record in _announced(info.context, "dispute", project_id, dispute.by_seq):
        yield Dispute.of(record)


async def proposal_raised(
    info: Info, project_id: strawberry.ID | None = None
) -> AsyncGenerator[Proposal, None]:
    async for record in _announced(info.context, "proposal", project_id, proposal.by_seq):
        yield Proposal.of(record)
