"""The nodes of a Citus cluster as the server sees them: where each workspace lives, a pool per node.

On Citus each request runs on the node that holds its workspace (docs/scale-out.md): the token
names the workspace, ``Nodes.engine`` gives the pool of its node, and the whole transaction
runs there, so the tenant context never leaves the backend that authenticated. The map comes
from Citus's metadata on the coordinator (the placement of the workspace's shard of
``workspaces``, which every colocated table follows) and is cached: a workspace's node changes
only when its shard group moves. Then authentication on the old node binds nobody (the shards
are gone from it), and the caller asks ``moved`` once: the entry is read again, and a new node
is tried once, never more.

Every pool is built from the server's own URL with the node's host and port (the same role,
password and database): the workers must accept ``mneia_app`` as the coordinator does, at the
addresses in ``pg_dist_node``.

What must stay true: off Citus no ``Nodes`` exists and nothing here runs; what is read here is
Citus's catalogue, never a tenant's row.
"""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage.citus import NODE_OF, SHARDS_OF
from mneia.storage.database import create_engine

Address = tuple[str, int]
_PRIMARIES = text(
    "SELECT nodename, nodeport FROM pg_dist_node WHERE noderole = 'primary' AND isactive ORDER BY nodeid"
)


class NoNode(LookupError):
    """Citus's metadata names no active node for the workspace (a cluster being rebuilt)."""


class Nodes:
    """The workspace → node map of one Citus cluster, and one pool per node it has named.

    ``coordinator``: the server's engine on the coordinator; the map is read through it (as the
    server's role: Citus's catalogue is readable by every role), and requests that read no
    tenant table (introspection, the probes) run on it.
    """

    def __init__(self, coordinator: AsyncEngine, *, pool_size: int = 20) -> None:
        self.coordinator = coordinator
        self.pool_size = pool_size
        self._where: dict[uuid.UUID, Address] = {}
        self._shards: dict[uuid.UUID, dict[str, str]] = {}
        self._engines: dict[Address, AsyncEngine] = {}

    async def engine(self, workspace_id: uuid.UUID) -> AsyncEngine:
        """The pool of the node holding the workspace: read from the cache, else from the coordinator."""
        address = self._where.get(workspace_id)
        if address is None:
            address = self._where[workspace_id] = await self._node_of(workspace_id)
        return self._engine_at(address)

    async def moved(self, workspace_id: uuid.UUID, tried: AsyncEngine) -> AsyncEngine | None:
        """After authentication on ``tried`` bound nobody: the workspace's node read again; its pool
        when that is another node (the shard group moved), None when it is the same (the token is
        simply unknown, revoked or expired there)."""
        address = self._where[workspace_id] = await self._node_of(workspace_id)
        self._shards.pop(workspace_id, None)
        engine = self._engine_at(address)
        return None if engine is tried else engine

    async def shards(self, workspace_id: uuid.UUID) -> dict[str, str]:
        """Each distributed table's shard holding the workspace (``items`` → ``items_102008``), for
        the statements that read them directly on its node (``Driven.on``): read from the
        coordinator once, then cached until the workspace moves or a shard is found gone."""
        found = self._shards.get(workspace_id)
        if found is None:
            async with self.coordinator.connect() as connection:
                rows = (await connection.execute(SHARDS_OF, {"id": str(workspace_id)})).all()
            found = self._shards[workspace_id] = {str(row.name): str(row.shard) for row in rows}
        return found

    def forget_shards(self, workspace_id: uuid.UUID) -> None:
        """A shard named for the workspace is gone (split since): read them again next time."""
        self._shards.pop(workspace_id, None)

    async def primaries(self) -> list[AsyncEngine]:
        """The pool of every active primary node, as the coordinator lists them now (the
        coordinator's own engine for the coordinator, when it is registered as a node)."""
        async with self.coordinator.connect() as connection:
            rows = (await connection.execute(_PRIMARIES)).all()
        own = (self.coordinator.url.host, self.coordinator.url.port)
        return [
            self.coordinator
            if (row.nodename, row.nodeport) == own
            else self._engine_at((row.nodename, row.nodeport))
            for row in rows
        ]

    def pools(self) -> tuple[AsyncEngine, ...]:
        """Every node's pool opened so far (the coordinator's engine is not among them)."""
        return tuple(self._engines.values())

    async def dispose(self) -> None:
        """Close every node's pool (the coordinator's engine is its owner's to dispose)."""
        engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            await engine.dispose()

    async def _node_of(self, workspace_id: uuid.UUID) -> Address:
        async with self.coordinator.connect() as connection:
            row = (await connection.execute(NODE_OF, {"id": str(workspace_id)})).one_or_none()
        if row is None:
            raise NoNode(f"Citus's metadata names no active node for workspace {workspace_id}")
        return (str(row.nodename), int(row.nodeport))

    def _engine_at(self, address: Address) -> AsyncEngine:
        engine = self._engines.get(address)
        if engine is None:
            engine = self._engines[address] = create_engine(
                self._url(*address), pool_size=self.pool_size, settings=SHARDS_SHOWN
            )
        return engine

    def _url(self, host: str, port: int) -> str:
        """The coordinator's URL (role, password, database) with another node's host and port."""
        return self.coordinator.url.set(host=host, port=port).render_as_string(hide_password=False)


SHARDS_SHOWN = {"citus.override_table_visibility": "off"}
"""What each connection to a node starts with. Citus hides the shards from ``pg_class`` by
default, through a filter it runs on each catalogue row; the driver reads the catalogue on each
new connection for the types it has not met, and on a worker (thousands of shard relations) that
took 9.6 to 23 s per connection (benchmarks/scale_out.py found it; 20 ms with it off):
at 16 connections every request waited. Seeing the shards' names gives the server's role nothing
of their rows, which their own policies keep."""
