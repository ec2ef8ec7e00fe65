"""Handoff benchmark: what ``resume`` costs beside ``rehydrate`` alone, at 100,000 items.

The project and its text are ``rehydrate.py``'s latency corpus (100,000
items by default, 50 of them ACTIVE load-bearing constraints, a share
replaced recently, disputed, retired or decaying; a 4,000-word Zipf
vocabulary). Then an agent works one session and stops: its ``checkpoint``
asserts five items (one contradicting a ruling, one suggested load-bearing)
beside one asserted earlier in the session, replaces two (that one, and a
human ruling, so a proposal waits), with a summary, two next steps and an
open question; the project has pending proposals and (1% of its items
disputed) open disputes for the handoff to name.

One httpx client then asks, sequentially and in turn, ``rehydrate`` and
``resume`` with the same task and a 4,000-token budget (tasks with common,
middling and rare words, Alice and an agent in turn), selecting the same
slice fields; ``resume`` also its ``rendered`` and the handoff's ``id`` and
``tokens``. Target: resume p95 within 5 ms of rehydrate's.

    .venv/bin/python benchmarks/handoff.py                            # 100,000 items
    .venv/bin/python benchmarks/handoff.py --size 5000 --samples 40   # smoke

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL), as for the other
benchmarks.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from common import (
    HEADER,
    BenchmarkBroken,
    Series,
    gql,
    on_fresh_database,
    running_server,
    timed,
    vacuum_analyze,
)
from rehydrate import (
    LATENCY_BUDGET,
    LOAD_BEARING,
    Words,
    World,
    build_world,
    latency_batch,
    latency_tasks,
    load,
    vocabulary,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.rehydration import handoff_text, tokens
from mneia.storage.database import create_engine

TARGET_MS = 5.0
SLICE_FIELDS = """tokensUsed overBudget encoding rendered
  entries { item { id status } reason score tokens }
  supersessions { previous { id } replacement { id } reason at }
  omitted { kind count }"""
REHYDRATE = f"query Rehydrate($i: RehydrateInput!) {{ rehydrate(input: $i) {{ {SLICE_FIELDS} }} }}"
RESUME = f"""query Resume($i: ResumeInput!) {{ resume(input: $i) {{
  tokensUsed overBudget rendered handoff {{ id tokens }} slice {{ {SLICE_FIELDS} }} }} }}"""
START = """mutation($p: ID!) { startSession(input: {projectId: $p, task: "Stop and hand over",
  client: {tool: "claude-code", version: "1.0.98"}, externalId: "bench", deepLink: "claude --resume bench"})
  { id } }"""
ASSERT = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id } }"
CHECKPOINT = "mutation($i: CheckpointInput!) { checkpoint(input: $i) { id tokens itemsAsserted { id } } }"
RULINGS = """query($p: ID!) { items(projectId: $p, first: 2,
  filter: {kinds: [CONSTRAINT], statuses: [ACTIVE], loadBearing: true}) { nodes { id } } }"""


async def stop(http: httpx.AsyncClient, world: World, words: Words, rng: random.Random) -> dict[str, Any]:
    """The agent's session and its checkpoint: the handoff every resume then reads."""
    project = str(world.projects["latency"])
    session = (await gql(http, world.agent.token, START, p=project))["startSession"]["id"]
    rulings = [n["id"] for n in (await gql(http, world.alice.token, RULINGS, p=project))["items"]["nodes"]]

    def said(kind: str, **more: Any) -> dict[str, Any]:
        return {"projectId": project, "kind": kind, "statement": words.sentence(rng, 6, 16), **more}

    earlier = await gql(http, world.agent.token, ASSERT, i=said("FACT", sessionId=session))
    replaced = earlier["assertItem"]["id"]
    items = [said(kind) for kind in ("FACT", "DECISION", "TASK")]
    items.append(said("CONSTRAINT", suggestLoadBearing=True))
    items.append(said("FACT", contradicts=[rulings[1]]))
    left = await gql(
        http,
        world.agent.token,
        CHECKPOINT,
        i={
            "sessionId": session,
            "summary": words.sentence(rng, 10, 20) + ".\n" + words.sentence(rng, 6, 12) + ".",
            "nextSteps": [words.sentence(rng, 4, 8) for _ in range(2)],
            "openQuestions": [words.sentence(rng, 4, 8) + "?"],
            "items": items,
            "supersessions": [
                {"targetId": replaced, "reason": words.sentence(rng, 4, 8), "replacement": said("FACT")},
                {
                    "targetId": rulings[0],
                    "reason": words.sentence(rng, 4, 8),
                    "replacement": said("CONSTRAINT"),
                },
            ],
            "idempotencyKey": "bench-stop",
        },
    )
    return dict(left["checkpoint"])


@dataclass
class Options:
    size: int
    samples: int
    warmup: int
    seed: int
    keep: bool


@dataclass
class Measured:
    alone: Series
    resumed: Series
    widened: Series
    handoff_tokens: int
    used: int
    over_budget: int


async def measure(base: str, world: World, tasks: list[str], options: Options) -> Measured:
    """``rehydrate`` and ``resume`` in turn, same task and budget; and ``resume`` with the budget
    widened by what the handoff and its heading take, so its slice has the same 4,000 tokens as
    rehydrate's and the difference is the handoff's own cost."""
    project = str(world.projects["latency"])
    readers = [world.alice, world.agent]
    measured = Measured(
        Series(f"rehydrate, {options.size:,} items", None),
        Series(f"resume, {options.size:,} items", None),
        Series("resume, budget + handoff's", None),
        0,
        0,
        0,
    )
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for n in range(options.warmup + options.samples):
            reader, task = readers[n % 2], tasks[n % len(tasks)]
            asked = {"projectId": project, "task": task, "tokenBudget": LATENCY_BUDGET}
            spent = measured.handoff_tokens + tokens.count(handoff_text.for_task(task))
            wider = {**asked, "tokenBudget": LATENCY_BUDGET + spent}
            # In turn, which goes first rotating, so the machine's moods fall on each alike.
            order = [("rehydrate", REHYDRATE, asked), ("resume", RESUME, asked), ("widened", RESUME, wider)]
            order = order[n % 3 :] + order[: n % 3]
            answers: dict[str, tuple[float, Any]] = {}
            for name, query, variables in order:
                answers[name] = await timed(lambda q=query, v=variables: gql(http, reader.token, q, i=v))  # noqa: B023
            slice_ms, sliced = answers["rehydrate"]
            resume_ms, back = answers["resume"]
            widened_ms, _ = answers["widened"]
            found = back["resume"]
            if found["handoff"] is None or (found["tokensUsed"] > LATENCY_BUDGET and not found["overBudget"]):
                raise BenchmarkBroken(f"resume: {found['tokensUsed']} tokens, handoff {found['handoff']}")
            guaranteed = {
                e["item"]["id"] for e in sliced["rehydrate"]["entries"] if e["reason"] == "GUARANTEED"
            }
            if guaranteed != {
                e["item"]["id"] for e in found["slice"]["entries"] if e["reason"] == "GUARANTEED"
            }:
                raise BenchmarkBroken("resume's slice lost a guaranteed constraint")
            measured.handoff_tokens = found["handoff"]["tokens"]
            if n >= options.warmup:
                measured.alone.samples.append(slice_ms)
                measured.resumed.samples.append(resume_ms)
                measured.widened.samples.append(widened_ms)
                measured.used += found["tokensUsed"]
                measured.over_budget += found["overBudget"]
    measured.used //= options.samples
    return measured


async def run(options: Options, url: str, version: str) -> None:
    rng = random.Random(options.seed)
    admin: AsyncEngine = create_engine(url, pool_size=2)
    now = datetime.now(UTC)
    try:
        with running_server(url) as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                world = await build_world(http, admin)
            words = Words(vocabulary(rng, 4000))
            tasks = latency_tasks(words)
            started = time.perf_counter()
            await load(
                admin,
                world,
                world.projects["latency"],
                latency_batch(world, rng, words, options.size, now, True),
            )
            await vacuum_analyze(url)
            loading = time.perf_counter() - started
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                left = await stop(http, world, words, rng)
            load_before = os.getloadavg()[0]
            measured = await measure(base, world, tasks, options)
            load_after = os.getloadavg()[0]
    finally:
        await admin.dispose()

    print(f"database     {version}")
    print("server       uvicorn, 1 worker, child process; client httpx over TCP, sequential")
    print(f"cpu cores    {os.cpu_count()}; load average {load_before:.2f} before, {load_after:.2f} after")
    print(f"loading      {loading:.1f} s ({options.size:,} items, bulk insert as the owner, VACUUM ANALYZE)")
    print(
        f"handoff      {len(left['itemsAsserted'])} items asserted in its session, {measured.handoff_tokens}"
        f" tokens rendered for a reader; resume used {measured.used} of {LATENCY_BUDGET} tokens on average,"
        f" over budget {measured.over_budget} times of {options.samples} (the handoff and the guaranteed"
        " constraints alone)"
    )
    print(
        f"requests     {options.samples} of each after {options.warmup} warm-up, in turn, {len(tasks)} tasks,"
        " Alice and an agent in turn"
    )
    print()
    print(HEADER)
    for series in (measured.alone, measured.resumed, measured.widened):
        print(series.row())
    for series in (measured.resumed, measured.widened):
        p50 = series.quantile(0.5) - measured.alone.quantile(0.5)
        p95 = series.quantile(0.95) - measured.alone.quantile(0.95)
        verdict = "met" if p95 <= TARGET_MS else "MISSED"
        difference = f"{series.name} - rehydrate: p50 {p50:+.2f} ms, p95 {p95:+.2f} ms"
        print(f"{difference}   (p95 within {TARGET_MS:.0f} ms: {verdict})")


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.size <= LOAD_BEARING or args.samples < 1:
        raise SystemExit(f"a size above {LOAD_BEARING} items and at least one sample")
    on_fresh_database(
        run, Options(args.size, args.samples, args.warmup, args.seed, args.keep), keep=args.keep
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
