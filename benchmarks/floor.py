"""The stack's floor for an assertion: what a server on Mneia's stack pays with none of Mneia in it.

``throughput.py --floor`` serves these beside ``mneia serve`` and raw SQL, in
the same turns. Each is the user's stack with nothing of Mneia's own on top:
uvicorn with the transport every Mneia server gets
(``http.transport.server_options``, the same listening sockets and worker
processes) and an asyncpg pool. Its one mutation takes the contract's
``AssertItemInput`` (the same class, so the same input coercion), runs the
raw ceiling's own transaction (``throughput.asserted``: authenticate, the
project and session, the INSERT) and answers the four fields the benchmark
asks for. Two kinds (``--kind``):

- ``strawberry``: Strawberry's stock ASGI view, with its parser and
  validation caches (``ParserCache``, ``ValidationCache``): the stack as its
  documentation serves it at its fastest;
- ``graphql-core``: no Strawberry view or execution around graphql-core. A
  Starlette endpoint reads the JSON body, parses and validates each document
  once, runs graphql-core's ``execute`` on Strawberry's schema and writes the
  answer with orjson: all that is left of GraphQL over HTTP.

What they leave out is exactly Mneia's: the request boundary (the document
checks, the cost rule, text checks, error translation, the answer's status
and media type), the checks of an assertion, SQLAlchemy's pool and the
storage layer. So their share of raw SQL is about the most a server on this
stack reaches for this transaction. They are a benchmark's yardstick, never
served to anyone: they trust their input as far as the ceiling does.

    .venv/bin/python benchmarks/floor.py --database-url URL --port 8123 --workers 2 --kind graphql-core
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from inspect import isawaitable
from typing import Any

import asyncpg
import orjson
import strawberry
import uvicorn
from common import ceiling_dsn
from sqlalchemy.engine import make_url
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from strawberry.asgi import GraphQL
from strawberry.extensions import ParserCache, ValidationCache
from strawberry.schema.config import StrawberryConfig
from strawberry.types import Info
from throughput import FLOOR_KINDS, Assertion, asserted
from uvicorn.supervisors import Multiprocess

from graphql import DocumentNode, execute, parse, validate
from mneia.cli import listening_socket
from mneia.http.transport import server_options
from mneia.schema.enums import Authority, ItemStatus, Scope
from mneia.schema.item import AssertItemInput
from mneia.schema.scalars import SCALARS
from mneia.storage.database import PLAN_CACHE_MODE

POOL_SIZE = 16
"""Connections per worker at most: as many as wrk's 16, so that no request waits for one."""
IDLE_SECONDS = 1.0


@strawberry.type(name="Item")
class FloorItem:
    id: strawberry.ID
    status: ItemStatus
    authority: Authority
    scope: Scope


@strawberry.type
class Query:
    @strawberry.field
    def ready(self) -> bool:
        return True


@strawberry.type
class Mutation:
    @strawberry.mutation
    async def assert_item(self, info: Info, input: AssertItemInput) -> FloorItem:  # noqa: A002 - the contract's name
        token = info.context["request"].headers["authorization"].removeprefix("Bearer ")
        case = Assertion(
            token,
            uuid.UUID(str(input.project_id)),
            uuid.UUID(str(input.session_id)),
            input.kind.value,
            input.statement,
            input.basis or "",
            input.confidence if input.confidence is not None else 1.0,
        )
        pool: asyncpg.Pool = info.context["request"].app.state.pool
        async with pool.acquire() as connection:
            row = await asserted(connection, case)
        confirmed = row["confirmed_by"] is not None
        return FloorItem(
            id=strawberry.ID(str(row["id"])),
            status=ItemStatus(row["status"]),
            authority=Authority.HUMAN_CONFIRMED if confirmed else Authority.AGENT_ASSERTED,
            scope=Scope(row["scope"]),
        )


async def _committed(connection: asyncpg.Connection) -> None:
    """A connection's reset on release: nothing, as every transaction here has ended by then. (asyncpg's
    default also unlocks advisory locks, which the app role may not call.)"""


def graphql_core_endpoint(schema: strawberry.Schema) -> Callable[[Request], Awaitable[Response]]:
    """GraphQL over HTTP with nothing but graphql-core: each document parsed and validated once."""
    documents: dict[str, DocumentNode] = {}

    def document_of(text: str) -> DocumentNode:
        document = documents.get(text)
        if document is None:
            document = parse(text)
            errors = validate(schema._schema, document)
            if errors:
                raise errors[0]
            documents[text] = document
        return document

    async def endpoint(request: Request) -> Response:
        body = orjson.loads(await request.body())
        result = execute(
            schema._schema,
            document_of(body["query"]),
            context_value={"request": request},
            variable_values=body.get("variables"),
            operation_name=body.get("operationName"),
        )
        if isawaitable(result):
            result = await result
        answer: dict[str, Any] = {"data": result.data}
        if result.errors:
            answer["errors"] = [error.formatted for error in result.errors]
        return Response(orjson.dumps(answer), media_type="application/json")

    return endpoint


def floor_app(url: str, kind: str) -> Starlette:
    """One worker's app, built in the worker: its own pool."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.pool = await asyncpg.create_pool(
            ceiling_dsn(url),
            min_size=0,
            max_size=POOL_SIZE,
            # Idle between its turns, so that the servers and the ceiling taking turns beside it find
            # the database's connection slots free.
            max_inactive_connection_lifetime=IDLE_SECONDS,
            server_settings={"plan_cache_mode": PLAN_CACHE_MODE},
            reset=_committed,
        )
        try:
            yield
        finally:
            await app.state.pool.close()

    async def healthz(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    config = StrawberryConfig(scalar_map=SCALARS)
    if kind == "strawberry":
        cached = strawberry.Schema(
            query=Query,
            mutation=Mutation,
            config=config,
            # Factories: Strawberry builds a fresh extension for each request; both caches are shared.
            extensions=[lambda: ParserCache(maxsize=None), lambda: ValidationCache(maxsize=None)],
        )
        graphql: Any = GraphQL(cached)
    else:
        plain = strawberry.Schema(query=Query, mutation=Mutation, config=config)
        graphql = graphql_core_endpoint(plain)
    return Starlette(
        routes=[Route("/graphql", graphql, methods=["POST"]), Route("/healthz", healthz)],
        lifespan=lifespan,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--kind", choices=FLOOR_KINDS, default="graphql-core")
    args = parser.parse_args(argv)
    make_url(args.database_url)  # refuses a malformed URL before any worker starts
    sock = listening_socket("127.0.0.1", args.port, workers=args.workers)
    config = uvicorn.Config(
        partial(floor_app, args.database_url, args.kind),
        factory=True,
        workers=args.workers,
        log_level="warning",
        access_log=False,
        lifespan="on",
        **server_options(),
    )
    try:
        if args.workers > 1:
            Multiprocess(config, sockets=[sock]).run()
        else:
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
