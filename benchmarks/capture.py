"""Capture benchmark: ``mneia import adr`` of 10,000 ADR-sized records, beside the raw SQL ceiling.

The records are benchmarks/data's 41 ADRs (Compliant Kubernetes), written as
MADR files again and again under new numbers (each copy's supersessions
pointing within the copy), so that each is the size and shape of a real one:
a title, a date, a status, a context and a decision, 6 supersession chains
per 41. The import runs as a user runs it: the installed command, as a
subprocess, through ``mneia serve`` (one worker, a child process), as a
human, in batches of 500 per request (``capture.upload``). Figures:

- *parse*: reading the directory into claims (``capture.adr.read``), in this
  process: the importer's own share;
- *import*: the whole command, from spawn to exit: parsing, redaction,
  GraphQL, every item's checks, events and ledger entry;
- *again*: the same command a second time: nothing is written (the ledger);
- *raw SQL*: the same number of items inserted as the owner in one
  ``INSERT … SELECT FROM unnest`` per 5,000 (benchmarks/common.insert_items),
  with the event triggers firing and no API at all: the ceiling.

Target: the import under 60 s on 2 cores. The ratio to raw SQL and the load
average are printed beside it: on a shared machine the absolute figures
move with the load, the ratio much less.

    .venv/bin/python benchmarks/capture.py                 # 10,000 records
    .venv/bin/python benchmarks/capture.py --records 1000  # smoke

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from common import BenchmarkBroken, gql, insert_items, mneia_serve, on_fresh_database, owner_transaction

from mneia.capture import adr
from mneia.storage import workspace
from mneia.storage.database import create_engine
from mneia.storage.ids import new_id

ADRS = Path(__file__).resolve().parent / "data" / "compliantkubernetes-adr" / "adrs.json"
SCRIPT = Path(sys.executable).parent / "mneia"
TARGET_S = 60.0


def write_records(directory: Path, count: int) -> int:
    """``count`` MADR files made of the 41 records, copy after copy; answers their total size."""
    records: list[dict[str, Any]] = json.loads(ADRS.read_text())["records"]
    numbers = [int(record["id"].split("-")[1]) for record in records]
    span = max(numbers) + 1
    size = 0
    for n in range(count):
        record, copy = records[n % len(records)], n // len(records)
        number = copy * span + numbers[n % len(records)]

        def renumbered(text: str, offset: int = copy * span) -> str:
            for other in numbers:
                text = text.replace(f"ADR-{other:04d}", f"ADR-{offset + other:04d}")
            return text

        body = (
            f"---\nstatus: {renumbered(record['status'])}\ndate: {record['date']}\n"
            f"deciders: Platform team\n---\n# {record['title']} ({copy + 1})\n\n"
            f"## Context and Problem Statement\n\n{record['context']}\n\n"
            f"## Decision Outcome\n\n{record['decision']}\n"
        )
        path = directory / f"{number:05d}-{record['id'].lower()}.md"
        path.write_text(body)
        size += len(body)
    return size


def timed(command: list[str], env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise BenchmarkBroken(f"{' '.join(command[:3])} failed: {done.stderr.strip()}")
    return seconds, json.loads(done.stdout)


async def raw_sql(
    url: str, workspace_id: uuid.UUID, actor_id: uuid.UUID, project: uuid.UUID, count: int
) -> float:
    """The ceiling: the same number of ADR-sized items in bulk, as the owner, triggers and all."""
    records: list[dict[str, Any]] = json.loads(ADRS.read_text())["records"]
    now = datetime.now(UTC)
    rows = []
    for n in range(count):
        record = records[n % len(records)]
        rows.append(
            {
                "id": new_id(),
                "project_id": project,
                "kind": "DECISION",
                "statement": f"{record['title']}: {record['decision']}",
                "details": record["context"],
                "basis": f"ADR {n:05d}.md",
                "confidence": None,
                "status": "ACTIVE",
                "status_reason": None,
                "scope": "PROJECT",
                "grants": "",
                "asserted_by": actor_id,
                "asserted_at": now,
                "session_id": None,
                "decay_after": None,
                "load_bearing": False,
                "load_bearing_set_by": None,
                "load_bearing_set_at": None,
                "confirmed_by": actor_id,
                "confirmed_at": now,
            }
        )
    admin = create_engine(url, pool_size=1)
    try:
        started = time.perf_counter()
        async with owner_transaction(admin, workspace_id, actor_id) as tx:
            await insert_items(tx, rows)
        return time.perf_counter() - started
    finally:
        await admin.dispose()


async def run(options: argparse.Namespace, url: str, version: str) -> None:
    admin = create_engine(url, pool_size=1)
    made = await workspace.bootstrap(admin, f"capture-{uuid.uuid4().hex[:6]}", "alice")
    await admin.dispose()
    scratch = Path(tempfile.mkdtemp(prefix="mneia-adr-bench-"))
    size = write_records(scratch, options.records)
    load_before = os.getloadavg()[0]
    with mneia_serve(url, 1) as (base, _):
        async with httpx.AsyncClient(base_url=base, timeout=600) as http:
            projects = {}
            for name in ("adr", "raw"):
                created = await gql(
                    http, made.token, "mutation($n: String!) { createProject(name: $n) { id } }", n=name
                )
                projects[name] = created["createProject"]["id"]
        started = time.perf_counter()
        parsed = adr.read(scratch)
        parse_s = time.perf_counter() - started
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MNEIA_")},
            "MNEIA_URL": base,
            "MNEIA_TOKEN": made.token,
            "MNEIA_PROJECT": projects["adr"],
        }
        command = [str(SCRIPT), "import", "adr", str(scratch), "--json"]
        import_s, first = timed(command, env)
        again_s, second = timed(command, env)
    raw_s = await raw_sql(url, made.workspace_id, made.actor_id, uuid.UUID(projects["raw"]), options.records)
    load_after = os.getloadavg()[0]
    (written,) = first["sources"]
    (rewritten,) = second["sources"]
    if written["written"] != len(parsed.claims) or rewritten["written"] != 0:
        raise BenchmarkBroken(
            f"wrote {written['written']} of {len(parsed.claims)}, then {rewritten['written']}"
        )

    print(f"database     {version}")
    print(f"server       mneia serve, 1 worker, child process; import: {SCRIPT} import adr, as a human")
    print(f"cpu cores    {os.cpu_count()}; load average {load_before:.2f} before, {load_after:.2f} after")
    print(
        f"records      {options.records:,} MADR files, {size / 1e6:.1f} MB, {len(parsed.claims):,} claims"
        f" ({sum(1 for c in parsed.claims if c.supersedes)} supersessions,"
        f" {sum(1 for c in parsed.claims if c.retired)} retired); {written['actions']}"
    )
    print()
    print(f"{'':<14}{'seconds':>9}{'items/s':>10}")
    for name, seconds in (("parse", parse_s), ("import", import_s), ("again", again_s), ("raw SQL", raw_s)):
        print(f"{name:<14}{seconds:9.2f}{options.records / seconds:10,.0f}")
    print()
    verdict = "met" if import_s < TARGET_S else "not met"
    print(
        f"import of {options.records:,} in {import_s:.1f} s < {TARGET_S:.0f} s: {verdict};"
        f" {import_s / raw_s:.1f}x the raw SQL ceiling"
    )


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = arguments(argv)
    on_fresh_database(run, options, keep=options.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
