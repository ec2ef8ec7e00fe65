"""The ASGI application: GraphQL (and GraphiQL in a browser) at /graphql, /healthz."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.unset import UNSET, UnsetType

from mneia import graphiql
from mneia.errors import Unauthenticated
from mneia.resolvers.context import Context, bearer_token
from mneia.resolvers.root import build_schema
from mneia.storage.notification import Hub


class MneiaGraphQL(GraphQL):
    def __init__(self, engine: AsyncEngine, hub: Hub) -> None:
        super().__init__(
            build_schema(),
            graphql_ide="graphiql",
            subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL],
        )
        self.engine = engine
        self.hub = hub

    async def get_context(self, request: Request, response: Response | None = None) -> Context:  # type: ignore[override]
        return Context(
            engine=self.engine,
            bearer=bearer_token(request.headers.get("authorization")),
            hub=self.hub,
            request=request,
            response=response,
        )

    async def render_graphql_ide(self, request: Request) -> Response:
        return graphiql.page(request)

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:  # type: ignore[override]
        """Refuse a websocket whose token (header or connection_init payload) is missing or unknown."""
        try:
            async with context.authenticated():
                pass
        except Unauthenticated as error:
            raise ConnectionRejectionError({"message": error.message}) from error
        return UNSET


def create_app(engine: AsyncEngine, *, dispose_engine: bool = True) -> Starlette:
    hub = Hub(engine.url.render_as_string(hide_password=False))
    graphql = MneiaGraphQL(engine, hub)

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        # Everything alive now (modules, the schema) lives as long as the server:
        # keep it out of the collector's full passes, which otherwise walk it all.
        gc.collect()
        gc.freeze()
        yield
        await hub.close()
        if dispose_engine:
            await engine.dispose()

    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Route("/healthz", healthz),
            graphiql.assets,
        ],
        lifespan=lifespan,
    )
