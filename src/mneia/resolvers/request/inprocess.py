"""The API run in-process for one token: what ``/graphql`` would answer that token, without HTTP.

MCP over HTTP (``mcp.http``) and the inbox (``inbox.operation``) reach the API
this way: the same Strawberry schema, extensions and request ``Context`` as an
HTTP request, so one transaction per operation, authenticated by the database
and bound by row-level security, committed only when the operation produced no
error. Neither writes SQL or checks a permission of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from strawberry.schema.base import BaseSchema

from mneia.resolvers.request.context import Context
from mneia.storage.node import Nodes
from mneia.storage.notification import Hub


@dataclass(frozen=True)
class InProcess:
    schema: BaseSchema
    engine: AsyncEngine
    hub: Hub | None
    nodes: Nodes | None = None  # on Citus: each token's transaction on its workspace's node

    def context(self, token: str) -> Context:
        """The request context an HTTP request with this bearer token would have."""
        return Context(engine=self.engine, bearer=token, hub=self.hub, nodes=self.nodes)

    async def execute(
        self, token: str, document: str, variables: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The operation's data and its errors, each as the HTTP answer would carry it."""
        result = await self.schema.execute(
            document, variable_values=variables or {}, context_value=self.context(token)
        )
        return result.data, [dict(error.formatted) for error in result.errors or []]
