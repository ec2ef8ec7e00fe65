"""What the database's backends were doing during a run: ``pg_stat_activity`` sampled on every node.

A figure that collapses under load (a request that takes seconds where it
took milliseconds alone) says nothing of why; the backends' states and wait
events, sampled a few times a second on each node of the bench database,
say where the time went: on the CPU, waiting for a lock, or for a
connection to another node. Citus's own connections name themselves
(``citus_internal ...``), so they are counted apart from the server's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import asyncpg

_SAMPLE = """
SELECT CASE WHEN application_name LIKE 'citus%' THEN 'citus'
            ELSE coalesce(nullif(application_name, ''), backend_type) END,
       coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, 'on CPU')
         || CASE WHEN state = 'active'
                 THEN ': ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 80) ELSE '' END
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
"""

INTERVAL_S = 0.25


@dataclass
class Activity:
    """Backends seen per (node, who, state, wait), over ``samples`` samples."""

    samples: int = 0
    seen: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)
    most: Counter[str] = field(default_factory=Counter)
    """The most backends of the bench database seen at once, per node."""

    def summary(self, shown: int = 5) -> list[str]:
        if not self.samples:
            return []
        lines = [
            "    backends at once, at most: "
            + ", ".join(f"{node} {count}" for node, count in sorted(self.most.items()))
        ]
        for (node, who, state, wait), count in self.seen.most_common(shown):
            lines.append(f"    {count / self.samples:5.1f} on average: {node} {who} {state} {wait}")
        return lines


async def sampled(dsns: dict[str, str], stop: asyncio.Event) -> Activity:
    """Sample every node (its administrator's ``dsns``, by node name) until ``stop`` is set."""
    activity = Activity()
    connections = {node: await asyncpg.connect(dsn) for node, dsn in dsns.items()}
    try:
        while not stop.is_set():
            for node, connection in connections.items():
                rows: Sequence[asyncpg.Record] = await connection.fetch(_SAMPLE)
                activity.most[node] = max(activity.most[node], len(rows))
                for who, state, wait in rows:
                    activity.seen[(node, who, state, wait)] += 1
            activity.samples += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), INTERVAL_S)
    finally:
        for connection in connections.values():
            await connection.close()
    return activity
