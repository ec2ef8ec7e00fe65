"""Regions at the edge: each request goes to the application of the region its token names.

A region is a database of its own holding whole workspaces (docs/scale-out.md,
Regions), and a token of a workspace outside the default region names its
region before its secret (storage.token). ``Regions`` wraps one whole
application per region, each with its own engine (its own pool, its own
credentials), and hands each request to one of them by reading the token
alone: nothing is read from any database to route, and a token of a region
not served here is refused before any application sees it, so no database is
read for it either (HTTP 421 with a GraphQL error; a websocket is closed with
4403). ``mneia serve --region eu`` is the case of one region.

Where the token is read, as the applications read it:

- ``Authorization: Bearer …`` (GraphQL over HTTP, MCP, a websocket's upgrade);
- the inbox's session cookie (``mneia_inbox``: the session token's secret);
- a websocket's ``connection_init`` payload (``Authorization`` or ``token``),
  which arrives after the handshake: with several regions ``Regions`` accepts
  the connection itself (``graphql-transport-ws``), reads that first message,
  and hands the connection to the region's application with the handshake and
  the message replayed and its own accept swallowed; with one, the application
  does its own handshake and the message is checked on its way in.

- the inbox's sign-in form (``POST /inbox/sign-in``), whose token is pasted
  into its body: with several regions, that one body is read here (a form of
  at most ``inbox.page.MAX_FORM_BYTES``) and replayed to the region's
  application; a token of a region not served gets the sign-in page again,
  saying so.

A request naming no region (no token, or a token of the default region's
form: introspection, GraphiQL, /healthz, /readyz, the inbox's sign-in page,
OpenID sign-in) goes to the default region, whose OpenID sign-in looks for
the person in every region served here (inbox.oidc).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from functools import partial
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL

from mneia.config import Settings
from mneia.http.refusal import Refusal
from mneia.inbox import cookie
from mneia.inbox.page import MAX_FORM_BYTES, SIGN_IN, sign_in_page
from mneia.resolvers.request.context import bearer_token, pasted_token
from mneia.storage.token import region_of

log = logging.getLogger("mneia")

FORBIDDEN = 4403
"""graphql-transport-ws's close code for a connection refused its connection_init."""
MISDIRECTED = 421
"""HTTP's "the request was directed at a server that is not able to produce a response"."""


class Regions:
    """One ASGI application in front of one application per region."""

    def __init__(
        self,
        apps: Mapping[str, Starlette],
        default: str,
        later: Mapping[str, Callable[[], Awaitable[Starlette | None]]] | None = None,
    ) -> None:
        """``later``: for a region whose kind of database is not known yet (it did not answer when
        the server started), what waits until it is and returns the application that replaces
        the region's, or None when the one served is right (``serving``)."""
        if default not in apps:
            raise ValueError(f"the default region {default!r} is not among those served ({', '.join(apps)})")
        self.apps = dict(apps)
        self.default = default
        self.later = dict(later or {})
        self.settled: set[str] = set()
        """The regions of ``later`` whose database has answered since, replaced or not."""

    def refusal(self, region: str) -> Refusal:
        served = ", ".join(sorted(self.apps))
        return Refusal(
            MISDIRECTED,
            f"this token is of region {region!r}, which this server does not serve (it serves {served})",
            code="UNAUTHENTICATED",
            extensions={"region": region, "served": sorted(self.apps)},
        )

    def app_for(self, token: str | None) -> Starlette | Refusal:
        """The application of the token's region: the default's for no token or one naming none."""
        region = region_of(token) if token else None
        if region is None:
            return self.apps[self.default]
        return self.apps.get(region) or self.refusal(region)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "websocket" and _header_token(scope) is None:
            await self._websocket(scope, receive, send)
            return
        if len(self.apps) > 1 and _pasting(scope):
            # What is pasted signs in, whatever session the browser's cookie holds already.
            await self._pasted(scope, receive, send)
            return
        chosen = self.app_for(_header_token(scope) or _cookie_token(scope))
        if isinstance(chosen, Refusal):
            await _refuse(scope, send, chosen)
            return
        await chosen(scope, receive, send)

    async def _pasted(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The inbox's sign-in form: routed by the token pasted into it, its body replayed."""
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body") or size > MAX_FORM_BYTES:
                break
        body = b"".join(message.get("body", b"") for message in messages)
        pasted = dict(parse_qsl(body.decode("latin-1"), max_num_fields=50)).get("token", "")
        chosen = self.app_for(pasted_token(pasted) if size <= MAX_FORM_BYTES else None)
        if isinstance(chosen, Refusal):
            await sign_in_page(Request(scope), MISDIRECTED, chosen.message)(scope, receive, send)
            return
        await chosen(scope, _replayed(messages, receive), send)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Every region's application started (its engine, its listener, MCP), and stopped after;
        meanwhile, each region in ``later`` replaced as soon as its replacement is known."""
        async with AsyncExitStack() as stack:
            for app in self.apps.values():
                await stack.enter_async_context(app.router.lifespan_context(app))
            waits = [
                asyncio.create_task(self._replace(name, found, stack)) for name, found in self.later.items()
            ]
            try:
                yield
            finally:
                for wait in waits:
                    wait.cancel()
                await asyncio.gather(*waits, return_exceptions=True)

    async def _replace(
        self, region: str, found: Callable[[], Awaitable[Starlette | None]], stack: AsyncExitStack
    ) -> None:
        """The region's application replaced by what ``found`` returns, once started. The one it
        replaces stops with the others, at the end: requests it holds now finish there."""
        try:
            app = await found()
            if app is not None:
                await stack.enter_async_context(app.router.lifespan_context(app))
                self.apps[region] = app
        except Exception:
            log.exception("region %s: its application could not be rebuilt; it is served as before", region)
        self.settled.add(region)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(self.running())
            except Exception as error:
                await send({"type": "lifespan.startup.failed", "message": repr(error)})
                raise
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
            assert message["type"] == "lifespan.shutdown"
        await send({"type": "lifespan.shutdown.complete"})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A websocket whose token comes in ``connection_init``: accept, read it, then route."""
        if len(self.apps) == 1:
            # Nothing to choose: the application does its own handshake (its origin and subprotocol
            # checks answer as they do alone), and its connection_init is checked on the way in.
            await self.apps[self.default](scope, self._guarded(receive, send), send)
            return
        connect = await receive()
        if GRAPHQL_TRANSPORT_WS_PROTOCOL not in scope.get("subprotocols", []):
            # Not a protocol this server speaks: the default region's application refuses it.
            await self.apps[self.default](scope, _replayed([connect], receive), send)
            return
        await send({"type": "websocket.accept", "subprotocol": GRAPHQL_TRANSPORT_WS_PROTOCOL})
        first = await receive()
        if first["type"] != "websocket.receive":
            return  # gone before saying anything
        chosen = self.app_for(_init_token(first))
        if isinstance(chosen, Refusal):
            await send(
                {"type": "websocket.close", "code": FORBIDDEN, "reason": f"Forbidden: {chosen.message}"}
            )
            return
        await chosen(scope, _replayed([connect, first], receive), _accepted(send))

    def _guarded(self, receive: Receive, send: Send) -> Receive:
        """``receive``, closing the connection (4403) at a first message whose token names a region
        not served, before the application reads it: the application hears a disconnect."""
        first = True

        async def guarded() -> Message:
            nonlocal first
            message = await receive()
            if not first or message["type"] != "websocket.receive":
                return message
            first = False
            chosen = self.app_for(_init_token(message))
            if isinstance(chosen, Refusal):
                reason = f"Forbidden: {chosen.message}"
                await send({"type": "websocket.close", "code": FORBIDDEN, "reason": reason})
                return {"type": "websocket.disconnect", "code": FORBIDDEN}
            return message

        return guarded


def serving(
    regions: Sequence[tuple[str, str]],
    default: str,
    settings: Settings | None = None,
    workers_dir: Path | None = None,
    citus: frozenset[str] = frozenset(),
    unknown: frozenset[str] = frozenset(),
) -> Regions:
    """One application per region (``name``, the URL its server role connects with), each with an
    engine of its own, behind ``Regions``. An engine connects when first used: a region whose
    database is down fails its own requests, never the others'. ``workers_dir``: one worker of
    several's (mcp.affinity); every region's MCP endpoint passes a session's requests to the
    worker that holds it through the same socket, where ``Regions`` hands them to the region
    again. ``citus``: the regions whose database is a Citus coordinator's: each gets the map of
    its nodes (storage.node), as ``mneia serve`` on one Citus cluster, and OpenID sign-in at any
    region served here accepts its invitations on their workspaces' nodes.

    ``unknown``: the regions whose database did not answer when the server started, so that
    nobody knows yet whether it is a Citus coordinator's. Each is served as one server
    meanwhile (its requests fail while its database does not answer), and its database is
    asked again every ``ASK_EVERY`` seconds until it answers; if it is a coordinator's, the
    region's application is built again with the map of its nodes and takes over, as if the
    region had answered at the start."""
    from mneia.app import create_app
    from mneia.storage.database import create_engine
    from mneia.storage.node import Nodes

    settings = settings or Settings.from_env()
    engines = {name: create_engine(url) for name, url in regions}
    nodes = {name: Nodes(engine) for name, engine in engines.items() if name in citus}

    def application(name: str, nodes_here: Nodes | None = None) -> Starlette:
        return create_app(
            engines[name],
            settings=replace(settings, region=name),
            regions=engines,
            workers_dir=workers_dir,
            nodes=nodes_here,
            regions_nodes=nodes,
        )

    async def on_citus(name: str, url: str) -> Starlette | None:
        if not await answered_as_citus(url):
            return None
        nodes[name] = Nodes(engines[name])
        print(
            f"mneia: region {name}: answers now, a Citus coordinator: each request runs on the node"
            " that holds its workspace",
            flush=True,
        )
        return application(name, nodes[name])

    urls = dict(regions)
    return Regions(
        {name: application(name, nodes.get(name)) for name in engines},
        default,
        {name: partial(on_citus, name, urls[name]) for name in unknown if name in urls},
    )


ASK_EVERY = 1.0
"""Seconds between asking a region's database whose kind is not known yet whether it is Citus."""


async def answered_as_citus(url: str) -> bool:
    """Whether the database at ``url`` is a Citus coordinator's, asked until it answers."""
    from mneia.storage import citus

    while True:
        try:
            return await citus.detected(url)
        except Exception:  # noqa: BLE001 - not answering yet, whatever the way; asked again
            await asyncio.sleep(ASK_EVERY)


def _pasting(scope: Scope) -> bool:
    """A POST of the inbox's sign-in form."""
    return scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == SIGN_IN


def _header_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            return bearer_token(value.decode("latin-1"))
    return None


def _cookie_token(scope: Scope) -> str | None:
    """The inbox session's token (inbox.cookie: the secret, a dot, the token's id)."""
    for name, value in scope.get("headers", []):
        if name != b"cookie":
            continue
        try:
            jar = SimpleCookie(value.decode("latin-1"))
        except CookieError:
            return None
        kept = jar.get(cookie.SESSION)
        if kept is not None and kept.value:
            return kept.value.rpartition(".")[0] or kept.value
    return None


def _init_token(message: Message) -> str | None:
    """The token of a ``connection_init`` message's payload; None for any other message."""
    try:
        said = json.loads(message.get("text") or message.get("bytes") or b"")
    except ValueError:
        return None
    if not isinstance(said, dict) or said.get("type") != "connection_init":
        return None
    payload = said.get("payload")
    if not isinstance(payload, dict):
        return None
    given = payload.get("Authorization") or payload.get("authorization") or payload.get("token")
    return pasted_token(given) if isinstance(given, str) else None


def _replayed(messages: list[Message], receive: Receive) -> Receive:
    """``receive``, after the messages already read from it."""
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


def _accepted(send: Send) -> Send:
    """``send`` without the application's accept: the connection was accepted already."""

    async def forward(message: Message) -> None:
        if message["type"] != "websocket.accept":
            await send(message)

    return forward


async def _refuse(scope: Scope, send: Send, refusal: Refusal) -> None:
    if scope["type"] == "websocket":  # before the handshake: the client sees an HTTP 403
        await send({"type": "websocket.close", "code": FORBIDDEN, "reason": f"Forbidden: {refusal.message}"})
        return
    body = refusal.encoded()
    await send(
        {
            "type": "http.response.start",
            "status": refusal.status_code,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
