"""The review inbox at /inbox: where people confirm, settle, decide and resolve, in a browser.

Server-rendered (Jinja2) with htmx, both shipped in the wheel: nothing is
loaded from another origin and nothing is built. A person signs in with a
human's bearer token, which mints the session a token of its own, kept in an
HttpOnly, SameSite=Strict cookie and revoked at sign-out (inbox.cookie);
agents' tokens are refused. Every read and every action is an operation of
the API's own schema run in-process with the session's token
(inbox.operation), so the inbox passes through exactly the API's
authorisation and row-level security.
"""

from __future__ import annotations

from functools import partial

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp
from strawberry.schema.base import BaseSchema

from mneia.inbox import session_graphql
from mneia.inbox.assets import assets
from mneia.inbox.operation import Api
from mneia.inbox.page import SIGN_IN, Inbox
from mneia.storage.node import Nodes
from mneia.storage.notification import Hub


def routes(
    schema: BaseSchema, engine: AsyncEngine, hub: Hub, endpoint: ASGIApp, nodes: Nodes | None = None
) -> list[BaseRoute]:
    """The inbox's pages; ``endpoint`` is /graphql's, which /inbox/graphql hands requests to."""
    inbox = Inbox(Api(schema, engine, hub, nodes))
    return [
        Route("/inbox/graphiql", partial(session_graphql.page, inbox), methods=["GET"]),
        Route("/inbox/graphql", session_graphql.SessionGraphQL(inbox, endpoint), methods=["POST"]),
        Route("/inbox", inbox.page, methods=["GET"]),
        Route("/inbox/panel", inbox.panel, methods=["GET"]),
        Route("/inbox/events", inbox.events, methods=["GET"]),
        Route(SIGN_IN, inbox.sign_in, methods=["POST"]),
        Route("/inbox/sign-out", inbox.sign_out, methods=["POST"]),
        Route("/inbox/act", inbox.act, methods=["POST"]),
        assets,
    ]
