"""The ASGI application: GraphQL (and GraphiQL in a browser) at /graphql, the review inbox at /inbox,
MCP at /mcp, /healthz and /readyz.

How /graphql speaks HTTP (bodies, media types, status codes, persisted
queries) is ``mneia.http``'s; CORS, off unless origins are configured, wraps
the whole application so that preflights never reach a route.
"""

from __future__ import annotations

import collections
import gc
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.unset import UNSET, UnsetType

from mneia import graphiql, inbox
from mneia.config import Settings
from mneia.errors import Unauthenticated
from mneia.http.body import decoded
from mneia.http.limits import BodyLimit
from mneia.http.persisted import PersistedQueries
from mneia.http.probe import Probes
from mneia.http.refusal import Refusal
from mneia.http.view import GraphQLOverHTTP
from mneia.inbox import oidc
from mneia.mcp.http import Endpoint
from mneia.resolvers.request.context import Context, bearer_token
from mneia.resolvers.root import MneiaSchema, build_schema
from mneia.storage.directory import Directory
from mneia.storage.node import Nodes
from mneia.storage.notification import Hub

# What a browser app may send across origins: the bearer token, JSON, the
# media type it accepts, and Apollo Client's optional client awareness headers.
CORS_HEADERS = (
    "Authorization",
    "Content-Type",
    "Accept",
    "apollographql-client-name",
    "apollographql-client-version",
)


WEBSOCKET_HOLDER = "mneia.websocket_holder"
"""Where a websocket's scope keeps the token it is counted under, until it closes."""


class MneiaGraphQL(GraphQLOverHTTP):
    def __init__(
        self,
        engine: AsyncEngine,
        hub: Hub,
        settings: Settings,
        nodes: Nodes | None = None,
        directory: Directory | None = None,
    ) -> None:
        super().__init__(
            build_schema(),
            graphql_ide="graphiql",
            subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL],
            allowed_origins=settings.cors_origins,
            persisted_queries=PersistedQueries(settings.persisted_query_bytes),
            max_response_bytes=settings.max_response_bytes,
        )
        self.engine = engine
        self.hub = hub
        self.nodes = nodes
        self.directory = directory
        self.max_websockets_per_token = settings.max_websockets_per_token
        self.websockets: collections.Counter[str] = collections.Counter()
        """Open websocket connections by token digest, in this process."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await super().__call__(scope, receive, send)
            return
        try:
            await super().__call__(scope, receive, send)
        finally:
            holder = scope.get(WEBSOCKET_HOLDER)
            if holder is not None:
                self.websockets[holder] -= 1
                if self.websockets[holder] <= 0:
                    del self.websockets[holder]

    def decode_json(self, data: str | bytes) -> object:
        """A websocket message is JSON under a body's rules (mneia.http.body), so one nested 1,000
        deep is refused as malformed, not a crash of the connection (F9)."""
        try:
            return decoded(data, "the message")
        except Refusal as refusal:
            raise json.JSONDecodeError(refusal.message, "", 0) from None

    async def get_context(self, request: Request, response: Response | None = None) -> Context:  # type: ignore[override]
        return Context(
            engine=self.engine,
            bearer=bearer_token(request.headers.get("authorization")),
            hub=self.hub,
            nodes=self.nodes,
            directory=self.directory,
            request=request,
            response=response,
        )

    async def render_graphql_ide(self, request: Request) -> Response:
        return graphiql.page(request)

    def authenticated(self, context: Context) -> bool:
        return context.accepted

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:  # type: ignore[override]
        """Refuse a websocket whose token (header or connection_init payload) is missing or unknown."""
        try:
            async with context.authenticated():
                pass
        except Unauthenticated as error:
            raise ConnectionRejectionError({"message": error.message}) from error
        holder = context.token_digest()
        if self.websockets[holder] >= self.max_websockets_per_token:
            limit = self.max_websockets_per_token
            raise ConnectionRejectionError(
                {
                    "message": f"this token has {limit} websocket connections open already"
                    " (MNEIA_MAX_WEBSOCKETS_PER_TOKEN)",
                    "extensions": {
                        "code": "BAD_USER_INPUT",
                        "limit": "maxWebsocketsPerToken",
                        "maximum": limit,
                    },
                }
            )
        self.websockets[holder] += 1
        context.request.scope[WEBSOCKET_HOLDER] = holder
        return UNSET


def _cors(origins: tuple[str, ...]) -> list[Middleware]:
    if not origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=list(origins),
            allow_methods=["GET", "POST"],
            allow_headers=list(CORS_HEADERS),
            expose_headers=["WWW-Authenticate"],
            max_age=600,
        )
    ]


def create_app(
    engine: AsyncEngine,
    *,
    dispose_engine: bool = True,
    settings: Settings | None = None,
    workers_dir: Path | None = None,
    nodes: Nodes | None = None,
    regions: Mapping[str, AsyncEngine] | None = None,
    regions_nodes: dict[str, Nodes] | None = None,
) -> Starlette:
    """The whole application. ``workers_dir``: one worker of several's, where each listens on a
    Unix socket of its own (mcp.affinity). ``regions``: in a process serving several
    (http.region.serving), each one's engine by name, where OpenID sign-in looks for a person;
    ``regions_nodes``: the nodes of each of them that is a Citus cluster, for the same, kept as
    given (not copied), so that a region found to be one later is seen too.

    ``nodes``: on a Citus cluster (``engine`` on its coordinator), where each workspace lives:
    every request with a token runs on its workspace's node (storage.node); what reads no
    tenant table runs on the coordinator (the probes: the revision is there only). None on one
    server: one engine, nothing added."""
    settings = settings or Settings.from_env()
    signing_in = settings.oidc
    directory = (
        Directory(
            settings.directory_url, oidc.directory_key(signing_in), settings.region, signing_in.public_url
        )
        if signing_in is not None and settings.directory_url
        else None
    )
    hub = Hub(
        engine.url.render_as_string(hide_password=False), per_holder=settings.max_subscriptions_per_token
    )
    graphql = MneiaGraphQL(engine, hub, settings, nodes, directory)
    # The caller's own map (http.region.serving adds a region found to be Citus later), with
    # this region's nodes in it when it is a cluster.
    citus_regions = regions_nodes if regions_nodes is not None else {}
    if nodes is not None:
        citus_regions[settings.region] = nodes
    probes = Probes(engine)
    mcp = Endpoint(cast(MneiaSchema, graphql.schema), engine, hub, workers_dir, nodes)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        # Everything alive now (modules, the schema) lives as long as the server:
        # keep it out of the collector's full passes, which otherwise walk it all.
        gc.collect()
        gc.freeze()
        async with mcp.running():
            yield
        await hub.close()
        if dispose_engine:
            if nodes is not None:
                await nodes.dispose()
            await engine.dispose()

    app = Starlette(
        routes=[
            # Every method reaches the view, which answers 405 in JSON with an Allow header.
            Route("/graphql", graphql),
            WebSocketRoute("/graphql", graphql),
            mcp.route,
            Route("/healthz", probes.healthz),
            Route("/readyz", probes.readyz),
            graphiql.assets,
            *inbox.routes(graphql.schema, engine, hub, graphql, nodes),
            *oidc.routes(signing_in, engine, settings.region, regions, directory, citus_regions),
        ],
        # CORS outermost, so that a browser can read a refusal of the body limit too.
        middleware=[*_cors(settings.cors_origins), Middleware(BodyLimit, limit=settings.max_body_bytes)],
        lifespan=lifespan,
    )
    # The inbox's sign-in page offers the provider's sign-in when there is one (docs/identity.md).
    app.state.oidc_issuer = signing_in.issuer if signing_in else None
    return app
