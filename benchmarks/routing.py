"""What benchmarks/scale_out.py serves: the server's own application, routed as ``mneia serve`` routes.

On Citus ``mneia serve`` builds its application over the coordinator with a
workspace → node map (``storage.node.Nodes``): each request runs on the node
that holds its token's workspace, connected as ``mneia_app`` straight to it,
so the whole transaction runs there by local execution (docs/scale-out.md).
``Router`` builds exactly that application; on plain PostgreSQL the same
application without the map, one engine. ``Routes`` also says where each
workspace lives, for the replay of its statements (``replay.py``).

It is also the child process's entry point for the throughput runs: the
server under load never shares an interpreter with the client driving it.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import Receive, Scope, Send

from mneia.app import create_app
from mneia.storage.database import create_engine
from mneia.storage.node import Nodes


@dataclass(frozen=True)
class Routes:
    """The server's ``mneia_app`` URL (the coordinator's on Citus), whether it is a Citus cluster's,
    and, for the replay, each workspace's node (a ``mneia_app`` URL by the node's name) with what
    a connection there starts with (``settings``: storage.node's)."""

    server: str
    citus: bool
    nodes: dict[str, str]
    homes: dict[uuid.UUID, str]
    settings: dict[str, str] = field(default_factory=dict)

    def dump(self, path: Path) -> Path:
        homes = {str(workspace): node for workspace, node in self.homes.items()}
        path.write_text(
            json.dumps(
                {
                    "server": self.server,
                    "citus": self.citus,
                    "nodes": self.nodes,
                    "homes": homes,
                    "settings": self.settings,
                }
            )
        )
        return path

    @staticmethod
    def load(path: Path) -> Routes:
        read = json.loads(path.read_text())
        homes = {uuid.UUID(ws): node for ws, node in read["homes"].items()}
        return Routes(read["server"], read["citus"], read["nodes"], homes, read["settings"])


class Router:
    """The server's application over ``routes.server``, with the node map on Citus (as ``mneia serve``)."""

    def __init__(self, routes: Routes, pool_size: int = 20) -> None:
        self.routes = routes
        self.engine = create_engine(routes.server, pool_size=pool_size)
        self.nodes = Nodes(self.engine, pool_size=pool_size) if routes.citus else None
        self.app = create_app(self.engine, dispose_engine=False, nodes=self.nodes)

    async def engines(self) -> list[AsyncEngine]:
        """Every engine a request may use: the server's, and on Citus each node's that holds a
        workspace (opened now, so that the replay's recorder can watch them all)."""
        found = [self.engine]
        if self.nodes is not None:
            for workspace in self.routes.homes:
                engine = await self.nodes.engine(workspace)
                if engine not in found:
                    found.append(engine)
        return found

    async def dispose(self) -> None:
        if self.nodes is not None:
            await self.nodes.dispose()
        await self.engine.dispose()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Router]:
        """The application started (its lifespan), for as long as the block lasts."""
        async with self.app.router.lifespan_context(self.app):
            yield self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


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
