"""What benchmarks/scale_out.py serves: the app of each node, each request handed to its workspace's.

On Citus every request runs on the worker that holds its workspace, connected
as ``mneia_app`` straight to it (docs/scale-out.md): the server reads the
workspace from the token and hands the request to an application built over
that node's engine (``create_app``), so the whole transaction runs there by
local execution. ``Router`` does that for the benchmark, as the server's own
router will: a map from workspace to node, one ``create_app`` per node. On
plain PostgreSQL it holds one node, so both engines pay the same dispatch.

It is also the child process's entry point for the throughput runs: the
server under load never shares an interpreter with the client driving it.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from mneia.app import create_app
from mneia.storage import token
from mneia.storage.database import create_engine

SHARDS_SHOWN = {"citus.override_table_visibility": "off"}
"""What each connection to a Citus worker is started with, unless the run keeps Citus's default.

Citus hides the shards from ``pg_class`` for every query by default, through a
filter on each of its rows. asyncpg introspects the types it has not met
before on each new connection (``WITH RECURSIVE typeinfo_tree ...`` over
``pg_type`` and ``pg_class``): on a worker holding 32 shards of each table that
query took 9.6 to 23 s as ``mneia_app``, and 20 ms with the shards shown. At 16
connections, each new pooled connection stalled that long and the requests
waiting on them timed out after 60 s. The setting changes what catalog queries
list, nothing a table query reads."""


@dataclass(frozen=True)
class Routes:
    """Where each workspace's requests go: a node's ``mneia_app`` URL, by the node's name, and what
    each connection to a node starts with (``settings``)."""

    nodes: dict[str, str]
    homes: dict[uuid.UUID, str]
    settings: dict[str, str] = field(default_factory=dict)

    def dump(self, path: Path) -> Path:
        homes = {str(workspace): node for workspace, node in self.homes.items()}
        path.write_text(json.dumps({"nodes": self.nodes, "homes": homes, "settings": self.settings}))
        return path

    @staticmethod
    def load(path: Path) -> Routes:
        read = json.loads(path.read_text())
        homes = {uuid.UUID(ws): node for ws, node in read["homes"].items()}
        return Routes(read["nodes"], homes, read["settings"])


def node_engine(url: str, settings: Mapping[str, str], pool_size: int) -> AsyncEngine:
    """The server's engine (``storage.database.create_engine``), its connections started with
    ``settings`` too."""
    engine = create_engine(url, pool_size=pool_size)
    if settings:

        @event.listens_for(engine.sync_engine, "do_connect")
        def started_with(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
            params["server_settings"] = {**params.get("server_settings", {}), **settings}

    return engine


class Router:
    """An ASGI app: each request to the app of the node holding the workspace its token names."""

    def __init__(self, routes: Routes, pool_size: int = 20) -> None:
        self.routes = routes
        self.engines: dict[str, AsyncEngine] = {
            node: node_engine(url, routes.settings, pool_size) for node, url in routes.nodes.items()
        }
        self.apps: dict[str, Starlette] = {node: create_app(engine) for node, engine in self.engines.items()}

    def app_for(self, scope: Scope) -> Starlette:
        """The app of the token's workspace's node; a request without one (``/healthz``) to any node."""
        authorization = dict(scope.get("headers") or []).get(b"authorization", b"").decode()
        workspace = token.workspace_of(authorization.removeprefix("Bearer ").strip())
        if workspace is None:
            return next(iter(self.apps.values()))
        node = self.routes.homes.get(workspace)
        if node is None:
            raise LookupError(f"no node known for workspace {workspace}")
        return self.apps[node]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Router]:
        """Every node's app started (its lifespan), for as long as the block lasts."""
        async with AsyncExitStack() as stack:
            for app in self.apps.values():
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await receive()  # startup
            async with self.running():
                await send({"type": "lifespan.startup.complete"})
                await receive()  # shutdown
            await send({"type": "lifespan.shutdown.complete"})
            return
        await self.app_for(scope)(scope, receive, send)


def serve(routes: Path, port: int) -> None:
    """Child process entry point: the router on 127.0.0.1:port, one uvicorn worker, as ``mneia serve``."""
    import uvicorn

    from mneia.http.transport import server_options

    options: Mapping[str, Any] = server_options()
    uvicorn.run(
        Router(Routes.load(routes)),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        **options,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="the router under test (started by scale_out.py)")
    parser.add_argument("--routes", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    arguments = parser.parse_args()
    serve(arguments.routes, arguments.port)
