"""The migrations: ``upgrade head`` on an empty database, back down step by step, and up again.

Compared by catalogue snapshot (storage.catalog), object by object: going down
one revision arrives at exactly what that revision built, and going up again
at exactly what it was. The roles are cluster-wide and other test databases
may be using them, so downgrade keeps them when they are still needed;
everything else it removes.
"""

from __future__ import annotations

import asyncio

from mneia.storage import catalog, migration
from tests.database import scratch_database


def schema_objects(snapshot: catalog.Snapshot) -> catalog.Snapshot:
    """The snapshot without the cluster-wide roles and their database-wide default privileges."""
    return {key: value for key, value in snapshot.items() if key[0] not in ("role", "default privileges")}


async def test_upgrade_downgrade_upgrade_on_an_empty_database(server: str) -> None:
    async with scratch_database(server) as url:
        await asyncio.to_thread(migration.upgrade, url)
        head = await catalog.snapshot_of(url)
        assert sum(1 for key in head if key[0] == "table") == 16
        assert sum(1 for key in head if key[0] == "policy") >= 30

        await asyncio.to_thread(migration.downgrade, url)
        assert schema_objects(await catalog.snapshot_of(url)) == {}

        await asyncio.to_thread(migration.upgrade, url)
        assert await catalog.snapshot_of(url) == head


async def test_each_downgrade_returns_to_what_the_revision_before_built(server: str) -> None:
    async with scratch_database(server) as stepped, scratch_database(server) as direct:
        await asyncio.to_thread(migration.upgrade, stepped)
        await asyncio.to_thread(migration.downgrade, stepped, "0001_foundation")
        await asyncio.to_thread(migration.upgrade, direct, "0001_foundation")
        went_back, built = await catalog.snapshot_of(stepped), await catalog.snapshot_of(direct)
        assert catalog.differences(built, went_back) == []
