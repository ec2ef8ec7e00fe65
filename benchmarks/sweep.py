"""Retention sweep benchmark: 100,000 due items redacted, and what a reader sees meanwhile (R16).

A project holds 100,000 RETIRED items, retired 60 days ago (loaded as the
owner, in bulk, with their events and states), beside 1,000 ACTIVE ones;
the workspace has a policy of P30D. Figures:

- *sweep*: ``storage.privacy.sweep`` redacting all of them, in this
  process, as ``mneia admin sweep`` runs it: items per minute;
- *page before* / *page during*: one ``items(projectId, first: 50)`` page
  through ``mneia serve`` (one worker, a child process), sequentially,
  before the sweep and while it runs.

Targets: at least 100,000 items/min on 2 cores, and the page's p95 during
the sweep within 2x of its p95 before. The load average is printed
beside them.

    .venv/bin/python benchmarks/sweep.py                  # 100,000 items
    .venv/bin/python benchmarks/sweep.py --items 10000    # smoke
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import httpx
from common import (
    HEADER,
    BenchmarkBroken,
    Series,
    gql,
    insert_items,
    mneia_serve,
    on_fresh_database,
    owner_transaction,
)

from mneia.storage import privacy, workspace
from mneia.storage.database import create_engine
from mneia.storage.ids import new_id

PAGE = "query($p: ID!) { items(projectId: $p, first: 50) { nodes { id statement authority } } }"
RATE_TARGET = 100_000.0  # items per minute
READ_RATIO = 2.0


def rows(
    project: uuid.UUID, actor: uuid.UUID, count: int, status: str, at: datetime
) -> list[dict[str, object]]:
    return [
        {
            "id": new_id(),
            "project_id": project,
            "kind": "FACT",
            "statement": f"fact {n}: the staging cluster ran release {n % 97} on node {n % 13}",
            "details": f"seen in the deploy log, run {n}",
            "basis": "deploy log",
            "confidence": None,
            "status": status,
            "status_reason": "no longer true" if status == "RETIRED" else None,
            "scope": "PROJECT",
            "grants": "",
            "asserted_by": actor,
            "asserted_at": at,
            "session_id": None,
            "decay_after": None,
            "load_bearing": False,
            "load_bearing_set_by": None,
            "load_bearing_set_at": None,
            "confirmed_by": actor,
            "confirmed_at": at,
        }
        for n in range(count)
    ]


async def pages(
    http: httpx.AsyncClient, token: str, project: str, series: Series, until: asyncio.Event | None, count: int
) -> None:
    """Pages read one after another: ``count`` of them, or until ``until`` is set."""
    done = 0
    while (until is None and done < count) or (until is not None and not until.is_set()):
        started = time.perf_counter()
        await gql(http, token, PAGE, p=project)
        series.samples.append((time.perf_counter() - started) * 1000)
        done += 1


async def run(options: argparse.Namespace, url: str, version: str) -> None:
    admin = create_engine(url, pool_size=4)
    made = await workspace.bootstrap(admin, f"sweep-{uuid.uuid4().hex[:6]}", "alice")
    project = new_id()
    retired_at = datetime.now(UTC) - timedelta(days=60)
    async with owner_transaction(admin, made.workspace_id, made.actor_id) as tx:
        from sqlalchemy import text

        await tx.execute(
            text("INSERT INTO projects (workspace_id, id, name, created_by) VALUES (:w, :p, 'ops', :a)"),
            {"w": made.workspace_id, "p": project, "a": made.actor_id},
        )
        await tx.execute(
            text(
                "INSERT INTO project_members (workspace_id, project_id, actor_id, added_by)"
                " VALUES (:w, :p, :a, :a)"
            ),
            {"w": made.workspace_id, "p": project, "a": made.actor_id},
        )
    loaded = time.perf_counter()
    for start in range(0, options.items, 20_000):
        async with owner_transaction(admin, made.workspace_id, made.actor_id) as tx:
            await insert_items(
                tx, rows(project, made.actor_id, min(20_000, options.items - start), "RETIRED", retired_at)
            )
    async with owner_transaction(admin, made.workspace_id, made.actor_id) as tx:
        await insert_items(tx, rows(project, made.actor_id, 1_000, "ACTIVE", datetime.now(UTC)))
        await privacy.set_policy(tx, None, [], ["RETIRED"], timedelta(days=30))
    print(
        f"loaded       {options.items:,} RETIRED + 1,000 ACTIVE items in {time.perf_counter() - loaded:.1f} s"
    )
    async with admin.connect() as connection:
        from sqlalchemy import text

        await connection.execute(text("COMMIT"))
        await connection.execute(text("VACUUM ANALYZE items, item_states, item_events"))

    load_before = os.getloadavg()[0]
    before, during = Series("page before the sweep", None), Series("page during the sweep", None)
    with mneia_serve(url, 1) as (base, _):
        async with httpx.AsyncClient(base_url=base, timeout=120) as http:
            await pages(http, made.token, str(project), before, None, options.pages)
            finished = asyncio.Event()

            async def sweeping() -> tuple[float, privacy.Swept]:
                started = time.perf_counter()
                try:
                    return time.perf_counter() - started, await privacy.sweep(admin, datetime.now(UTC))
                finally:
                    finished.set()

            reader = asyncio.create_task(pages(http, made.token, str(project), during, finished, 0))
            started = time.perf_counter()
            _, swept = await sweeping()
            seconds = time.perf_counter() - started
            await reader
    load_after = os.getloadavg()[0]
    await admin.dispose()
    if swept.redacted != options.items:
        raise BenchmarkBroken(f"the sweep redacted {swept.redacted} of {options.items}")
    during.target_ms = READ_RATIO * before.quantile(0.95)
    rate = swept.redacted / seconds * 60

    print(f"database     {version}")
    print("server       mneia serve, 1 worker, child process; the sweep in this process, as the owner")
    print(f"cpu cores    {os.cpu_count()}; load average {load_before:.2f} before, {load_after:.2f} after")
    print(
        f"sweep        {swept.redacted:,} items redacted in {seconds:.1f} s: {rate:,.0f} items/min"
        f" (target >= {RATE_TARGET:,.0f}: {'met' if rate >= RATE_TARGET else 'not met'})"
    )
    print()
    print(HEADER)
    for series in (before, during):
        print(series.row())
    ratio = during.quantile(0.95) / before.quantile(0.95)
    print()
    verdict = "met" if ratio <= READ_RATIO else "not met"
    print(f"page p95 during / before: {ratio:.2f}x (target <= {READ_RATIO:.0f}x: {verdict})")


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--pages", type=int, default=200, help="pages read before the sweep")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = arguments(argv)
    on_fresh_database(run, options, keep=options.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
