"""``/mcp`` in ``mneia serve``: the MCP server over Streamable HTTP, for agents' bearer tokens only.

Each request's ``Authorization: Bearer`` token is checked by ``AgentTokens``,
the SDK's ``TokenVerifier`` for Mneia's tokens, through the SDK's bearer
middleware: an unknown, revoked or expired token gets 401; a human's token
gets 403 (``insufficient_scope``): whatever drives an MCP client is a model,
and a human's token there would let it act with a human's authority. The
transport is stateful: the SDK binds each MCP session to the token's actor
and keeps the handshake's ``clientInfo`` for the session's life, so the
client's name and version reach every Mneia session the connection starts.

Tools run the serving process's own GraphQL schema with the caller's token
(``LocalApi`` over ``resolvers.request.inprocess``): the same Strawberry
schema, extensions and request context as ``/graphql``, so they are authorised and confined by row-level
security exactly as ``/graphql`` is. The token is checked again there, in
every operation's transaction, so a revocation takes effect at once.

DNS-rebinding protection (the SDK's Host and Origin checks) is off: every
request must carry a token that a page from another origin does not have,
and ``mneia serve`` may be reached under any host name.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.authentication import AuthenticationError
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from mneia.errors import Unauthenticated
from mneia.mcp import server
from mneia.mcp.affinity import Affinity
from mneia.mcp.api import Api, raise_errors
from mneia.mcp.connection import PROJECT_HEADER, client_info, header
from mneia.resolvers.request.context import Context
from mneia.resolvers.request.inprocess import InProcess
from mneia.resolvers.root import MneiaSchema
from mneia.storage import failures, token
from mneia.storage.node import Nodes
from mneia.storage.notification import Hub

log = logging.getLogger(__name__)

PATH = "/mcp"
AGENT_SCOPE = "mneia:agent"
"""The scope an agent's token carries; ``/mcp`` requires it, and a human's token never has it."""
HUMAN_SCOPE = "mneia:human"
SESSION_HEADER = "mcp-session-id"
CLAUDE_SESSION_HEADER = "x-claude-code-session-id"
"""Claude Code's own session id, which it sends on its HTTP requests (2.1.86 and later)."""


class LocalApi:
    """The serving process's own schema, run for one token (``resolvers.request.inprocess``)."""

    def __init__(self, local: InProcess, token: str) -> None:
        self.local = local
        self.token = token

    async def run(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        data, errors = await self.local.execute(self.token, document, variables)
        if errors:
            raise_errors(errors)
        return dict(data or {})


class Unavailable(AuthenticationError):
    """The token could not be checked: the database is away (a 503 to retry, never a 401 or a 500)."""


def unavailable(_: HTTPConnection, error: Exception) -> Response:
    request_id = uuid.uuid4().hex[:12]
    log.warning("MCP request %s: the database is unavailable: %s", request_id, error.__cause__ or error)
    body = {
        "error": "temporarily_unavailable",
        "error_description": f"the database is unavailable; retry shortly (request {request_id})",
    }
    return JSONResponse(body, status_code=503, headers={"Retry-After": "1"})


class AgentTokens:
    """The SDK's ``TokenVerifier`` over Mneia's tokens: the actor, and its kind as a scope."""

    def __init__(self, engine: AsyncEngine, nodes: Nodes | None = None) -> None:
        self.engine = engine
        self.nodes = nodes

    async def verify_token(self, token_: str) -> AccessToken | None:
        # Authenticated as a request's transaction is (on Citus, on the token's node).
        context = Context(engine=self.engine, bearer=token_, nodes=self.nodes)
        try:
            async with context.authenticated():
                pass
        except Unauthenticated:
            return None
        except Exception as error:
            if failures.unavailable(error):
                raise Unavailable("the database is unavailable") from error
            raise
        actor = context.actor
        return AccessToken(
            token=token_,
            client_id=str(actor.id),
            subject=str(actor.id),
            scopes=[HUMAN_SCOPE if actor.is_human else AGENT_SCOPE],
        )


class HttpBackend:
    """A request's API (the caller's token on the local schema) and its connection (the MCP session)."""

    project_setting = "the X-Mneia-Project header"

    def __init__(
        self, schema: MneiaSchema, engine: AsyncEngine, hub: Hub | None, nodes: Nodes | None = None
    ) -> None:
        self.local = InProcess(schema, engine, hub, nodes)

    def _token(self) -> str:
        access = get_access_token()
        if access is None:  # the bearer middleware lets no such request through
            raise RuntimeError("an MCP request without an authenticated token")
        return access.token

    def api(self) -> Api:
        return LocalApi(self.local, self._token())

    def connection(self) -> Hashable:
        # A stateful connection is its MCP session; without one (a sessionless request),
        # the token and the client it names.
        return (header(SESSION_HEADER), token.digest(self._token()), *client_info())

    def project_hint(self) -> str | None:
        return header(PROJECT_HEADER)

    def external_id(self) -> str | None:
        value = header(CLAUDE_SESSION_HEADER)
        return " ".join(value.split())[:500] or None if value else None


class Endpoint:
    """The ``/mcp`` route and the lifespan its session manager needs."""

    def __init__(
        self,
        schema: MneiaSchema,
        engine: AsyncEngine,
        hub: Hub | None,
        workers_dir: Path | None = None,
        nodes: Nodes | None = None,
    ) -> None:
        self.server: MCPServer[Any] = server.build(HttpBackend(schema, engine, hub, nodes))
        app = self.server.streamable_http_app(
            streamable_http_path=PATH,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        guarded: ASGIApp = RequireAuthMiddleware(app, [AGENT_SCOPE])
        self.app: ASGIApp = AuthenticationMiddleware(
            AuthContextMiddleware(guarded),
            backend=BearerAuthBackend(AgentTokens(engine, nodes)),
            on_error=unavailable,
        )
        # One worker of several: a session's requests go to the worker that holds it.
        self.affinity = Affinity(self.app, workers_dir) if workers_dir is not None else None
        if self.affinity is not None:
            self.app = self.affinity

    @property
    def route(self) -> Route:
        return Route(PATH, self.app)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager, for as long as the block lasts.

        It runs in a task of its own: its task group must be left by the task
        that entered it, and whoever runs the application's lifespan (uvicorn,
        a test's fixture) may end it from another task than the one that
        started it.
        """
        started, stop = asyncio.Event(), asyncio.Event()

        async def manage() -> None:
            async with self.server.session_manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(manage())
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait((task, waiting), return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiting.cancel()
            task.result()  # raises what stopped it
        try:
            yield
        finally:
            stop.set()
            await task
            if self.affinity is not None:
                await self.affinity.close()
