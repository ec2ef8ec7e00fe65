"""The request body's limit, enforced while it streams in, before anything reads it whole.

Every route reads its body whole before it looks at it (a GraphQL request, an
MCP message, an inbox form), and authentication comes after. Without a bound,
one POST of 200 MB with no token held 400 MB of the server's memory until it
answered 401 (issue 21). ``BodyLimit`` wraps the whole application:

- a request whose ``Content-Length`` exceeds the limit is answered 413 at
  once, and not a byte of its body is read;
- a body sent without a length (chunked) is counted as it arrives, and the
  request is answered 413 the moment the count passes the limit: what the
  route had buffered is dropped with it, so at most the limit is ever held.

The answer is the refusal every client of /graphql parses (http.refusal):
``{"errors": [{"message": …, "extensions": {"code": "PAYLOAD_TOO_LARGE",
"limit": N}}]}``. Websockets are not HTTP bodies: their messages are bounded
by uvicorn's ``ws_max_size`` (16 MiB unless configured).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mneia.http.refusal import Refusal


class BodyTooLarge(Exception):
    """Raised through the route when the body passes the limit as it streams in."""


def refusal(limit: int) -> Refusal:
    return Refusal(
        413,
        f"the request body exceeds {limit} bytes",
        code="PAYLOAD_TOO_LARGE",
        extensions={"limit": limit},
        headers={"Connection": "close"},
    )


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimit:
    """At most ``limit`` bytes of request body reach the application (see the module's docstring)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.limit:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:
            if started:  # a route that answers before reading has nothing left to refuse
                return
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        refused = refusal(self.limit)
        body = refused.encoded()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        headers += [(name.lower().encode(), value.encode()) for name, value in refused.headers.items()]
        await send({"type": "http.response.start", "status": refused.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": body})
