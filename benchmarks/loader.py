"""The foundation loader's items/s at several migrations, interleaved on one server.

``benchmarks/foundation.py`` loads its items as the owner role (trusted: a year
of history carries its own times), one INSERT ... SELECT FROM unnest(...) per
batch, every trigger on: the items' events and states, their audience copies,
the counters. This script measures that load alone, on one database per
revision (by default the one before head, and head) on the same server, in
rounds whose order rotates, so a change of the machine's speed falls on all.
It prints each round, then for each database the median round's items/s and
the CPU its backend spent an item (read from /proc, so less swayed by other
work on the machine than the wall clock), each beside the first database's,
and the load average before and after.

    .venv/bin/python benchmarks/loader.py --database-url postgresql://postgres@127.0.0.1:5432/postgres
    .venv/bin/python benchmarks/loader.py --revisions 0025_policies_read_their_own_row,previous,head

Each database gets the same world as foundation.py's (two workspaces, 20
projects each, made through the API by the server at that database) and the
same items, drawn from the same seed. The databases are dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import psutil
from alembic.script import ScriptDirectory
from common import create_database, drop_database, running_server, with_database
from foundation import Space, build_space, bulk_load, plan_items
from sqlalchemy import text

from mneia.storage import migration
from mneia.storage.database import create_engine


@dataclass
class Arm:
    """One database at one revision, and what was loaded into it."""

    label: str
    revision: str
    url: str
    spaces: list[Space]
    seconds: float = 0.0
    cpu: float = 0.0
    items: int = 0
    rates: list[float] = field(default_factory=list)


@contextmanager
def migrated(server_url: str, revision: str) -> Iterator[str]:
    name = f"mneia_loader_{uuid.uuid4().hex[:10]}"
    asyncio.run(create_database(server_url, name))
    url = with_database(server_url, name)
    try:
        migration.upgrade(url, revision)
        yield url
    finally:
        asyncio.run(drop_database(server_url, name))


async def world(url: str, projects: int) -> list[Space]:
    admin = create_engine(url, pool_size=2)
    try:
        with running_server(url) as base:
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                return [await build_space(http, admin, f"load-{letter}", projects) for letter in ("a", "b")]
    finally:
        await admin.dispose()


async def load_round(arm: Arm, per_workspace: int, seed: int, now: datetime) -> tuple[float, float]:
    """Load one round into ``arm``'s database: its seconds, and the CPU seconds of its backend."""
    rng = random.Random(seed)  # every arm draws the same items
    admin = create_engine(arm.url, pool_size=1)  # one connection, held: its backend is the load's
    try:
        async with admin.connect() as connection:
            backend = psutil.Process((await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one())
        plans = [plan_items(space, per_workspace, rng, now) for space in arm.spaces]
        cpu_before = sum(backend.cpu_times()[:2])
        started = time.perf_counter()
        for space, plan in zip(arm.spaces, plans, strict=True):
            await bulk_load(admin, space, plan)
        elapsed = time.perf_counter() - started
        cpu = sum(backend.cpu_times()[:2]) - cpu_before
    finally:
        await admin.dispose()
    arm.seconds += elapsed
    arm.cpu += cpu
    arm.items += per_workspace * len(arm.spaces)
    arm.rates.append(per_workspace * len(arm.spaces) / elapsed)
    return elapsed, cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL"))
    parser.add_argument(
        "--revisions",
        default="previous,head",
        help="comma-separated revisions, one database each ('previous': the one before head)",
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--items-per-workspace", type=int, default=10_000, help="a round's items per workspace"
    )
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if not args.database_url:
        raise SystemExit("--database-url (or DATABASE_URL): an admin URL of the server to load")
    script = ScriptDirectory.from_config(migration.config(args.database_url))
    head = script.get_current_head()
    assert head is not None
    previous = script.get_revision(head).down_revision
    assert isinstance(previous, str)
    revisions = [previous if r == "previous" else r for r in args.revisions.split(",")]
    per_round = 2 * args.items_per_workspace
    with ExitStack() as stack:
        arms = []
        for revision in revisions:
            url = stack.enter_context(migrated(args.database_url, revision))
            arms.append(Arm(revision, revision, url, asyncio.run(world(url, args.projects))))
        width = max(len(arm.label) for arm in arms)
        now = datetime.now(UTC)
        print(
            f"loader A/B: {args.rounds} rounds of {per_round:,} items (2 workspaces) per database, "
            f"the order rotating each round; {os.cpu_count()} cores"
        )
        print("load average before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
        for number in range(args.rounds):
            shift = number % len(arms)
            order = arms[shift:] + arms[:shift]
            figures = []
            for arm in order:
                elapsed, cpu = asyncio.run(load_round(arm, args.items_per_workspace, args.seed + number, now))
                used = cpu * 1e6 / per_round
                figures.append(f"{arm.label} {per_round / elapsed:,.0f}/s ({used:,.0f} us CPU an item)")
            print(f"round {number + 1}: " + ", ".join(figures) + f"; load average {os.getloadavg()[0]:.2f}")
            sys.stdout.flush()
        print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
        first = statistics.median(arms[0].rates)
        first_cpu = arms[0].cpu / arms[0].items
        for arm in arms:
            rate = statistics.median(arm.rates)
            cpu = arm.cpu / arm.items
            print(
                f"{arm.label:{width}}  {arm.items:,} items in {arm.seconds:.1f} s; median round "
                f"{rate:,.0f} items/s ({rate / first:.3f} x {arms[0].label}); the backend's CPU "
                f"{cpu * 1e6:,.0f} us an item ({first_cpu / cpu:.3f} x as fast), "
                f"{1 / cpu:,.0f} items/s of CPU"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
