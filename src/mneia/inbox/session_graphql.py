"""GraphiQL for the person signed in to the inbox: /inbox/graphiql, whose operations go to /inbox/graphql.

The inbox's session token lives in an HttpOnly cookie scoped to /inbox, so no
script ever holds it, and /graphql reads bearer tokens only. So /inbox/graphql
takes the cookie's session (checked as every inbox page checks it), requires
the page's CSRF token in ``X-Mneia-CSRF`` (the cookie is SameSite=Strict too),
and hands the request to the same GraphQL endpoint as /graphql with that
token as its bearer: one request boundary, the same limits, errors and
row-level security. Whatever Authorization or Cookie the browser sent is
dropped first.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mneia import graphiql
from mneia.inbox.page import Inbox, Refused

CSRF_HEADER = "x-mneia-csrf"


def _refusal(status: int, code: str, message: str) -> Response:
    body = {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    return JSONResponse(body, status_code=status)


class SessionGraphQL:
    """POST /inbox/graphql: the GraphQL endpoint, as the inbox's signed-in person."""

    def __init__(self, inbox: Inbox, endpoint: ASGIApp) -> None:
        self.inbox = inbox
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        try:
            person = await self.inbox.person(request)
        except Refused:
            await _refusal(401, "UNAUTHENTICATED", "sign in to the inbox at /inbox first")(
                scope, receive, send
            )
            return
        given = request.headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(given.encode(), person.csrf.encode()):
            message = "X-Mneia-CSRF is missing or not this session's: reload /inbox/graphiql"
            await _refusal(403, "FORBIDDEN", message)(scope, receive, send)
            return
        headers = [
            (name, value)
            for name, value in scope["headers"]
            if name not in (b"authorization", b"cookie", CSRF_HEADER.encode())
        ]
        headers.append((b"authorization", f"Bearer {person.token}".encode()))
        await self.endpoint(
            {**scope, "headers": headers, "path": "/graphql", "raw_path": b"/graphql"}, receive, send
        )


async def page(inbox: Inbox, request: Request) -> Response:
    """GET /inbox/graphiql: the GraphiQL page for the signed-in person (else the sign-in page)."""
    try:
        person = await inbox.person(request)
    except Refused as refused:
        return refused.response
    return graphiql.page_for("/inbox/graphql", person.csrf)
