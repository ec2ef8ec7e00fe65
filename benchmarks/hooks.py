"""Hooks benchmark: how long ``mneia hook`` takes as a client runs it, beside Python's own start-up.

A client starts its hooks as processes at each session's start and end and
gives them a second or less (Claude Code's SessionEnd 1.5 s, Codex's 1 s),
so what counts is the whole process: interpreter start-up, imports, the
work, exit. Each sample here is one run of the installed ``mneia`` console
script (``.venv/bin/mneia hook claude-code``, through ``mneia.launch``), its
payload on stdin, timed from spawn to exit, sequentially:

- *python -c pass*: the same interpreter starting and doing nothing, one
  run before each hook run, in every phase: the floor any hook stands on;
- *SessionEnd*: the payload spooled (no network), in a state directory of
  its own so that its spool never starts a background sync in the others;
- *SessionStart, server up*: ``resume`` fetched from ``mneia serve`` (one
  worker, a child process) for a project with a checkpoint, a load-bearing
  constraint and 200 facts, rendered under 9,000 characters, cached; with
  the hook's default deadline (0.6 s), so a slow answer falls back to the
  cache: how many did is printed;
- *SessionStart, server down*: the same after the server stopped: the
  connection is refused and the cached resume is shown;
- *SessionStart, server silent*: a socket on the server's address that
  accepts and never answers (a hung server, a blackholed route): the hook
  gives up at its deadline, 0.6 s after it started, and shows the cache.

Targets: SessionStart with the server down or silent p95 <= 1,000 ms, SessionEnd p95
<= 200 ms. The load average (1 minute) is printed before and after: on a
shared machine the figures move with it. A missed target is reported, not
failed.

    .venv/bin/python benchmarks/hooks.py                  # 40 samples per series
    .venv/bin/python benchmarks/hooks.py --samples 10     # smoke

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL), as for the other
benchmarks; ``--keep`` keeps the bench database.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from common import HEADER, BenchmarkBroken, Series, mneia_serve, on_fresh_database

from mneia.storage import workspace
from mneia.storage.database import create_engine

SCRIPT = Path(sys.executable).parent / "mneia"
SESSION = "1af7fc5e-8455-4414-9ccd-011d40f70b2a"
START_TARGET_MS = 1000.0
END_TARGET_MS = 200.0
FACTS = 200


def start_payload() -> bytes:
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": f"/home/ada/.claude/projects/-work-payments/{SESSION}.jsonl",
            "cwd": "/work/payments",
            "permission_mode": "default",
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    ).encode()


def end_payload(n: int) -> bytes:
    return json.dumps(
        {
            "session_id": f"{SESSION}-{n}",
            "transcript_path": f"/home/ada/.claude/projects/-work-payments/{SESSION}.jsonl",
            "cwd": "/work/payments",
            "permission_mode": "default",
            "hook_event_name": "SessionEnd",
            "reason": "prompt_input_exit",
        }
    ).encode()


def timed_run(command: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, env=env, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise BenchmarkBroken(f"{command} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed, done.stdout


def context_of(stdout: bytes) -> str:
    try:
        text = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        raise BenchmarkBroken(f"SessionStart printed no additionalContext: {stdout[:300]!r}") from None
    return str(text)


def gql(base: str, token: str, query: str, **variables: Any) -> dict[str, Any]:
    response = httpx.post(
        f"{base}/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    body = response.json()
    if body.get("errors"):
        raise BenchmarkBroken(json.dumps(body["errors"])[:1000])
    data: dict[str, Any] = body["data"]
    return data


def build_project(base: str, human: str) -> tuple[str, str]:
    """A project worth resuming, and an agent's token for it: (agent token, project id)."""
    project = gql(base, human, 'mutation { createProject(name: "payments") { id } }')["createProject"]["id"]
    made = gql(
        base, human, 'mutation { createActor(kind: AGENT, name: "claude-code") { actor { id } token } }'
    )
    agent, agent_id = made["createActor"]["token"], made["createActor"]["actor"]["id"]
    gql(
        base,
        human,
        "mutation ($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }",
        p=project,
        a=agent_id,
    )
    session = gql(
        base,
        agent,
        "mutation ($i: StartSessionInput!) { startSession(input: $i) { id } }",
        i={
            "projectId": project,
            "task": "Add partial refunds",
            "client": {"tool": "claude-code", "version": "2.1.3"},
            "externalId": SESSION,
        },
    )["startSession"]["id"]
    assert_item = "mutation ($i: AssertItemInput!) { assertItem(input: $i) { id } }"
    constraint = gql(
        base,
        agent,
        assert_item,
        i={
            "projectId": project,
            "sessionId": session,
            "kind": "CONSTRAINT",
            "statement": "Refunds must never exceed the captured amount",
            "suggestLoadBearing": True,
        },
    )["assertItem"]["id"]
    gql(
        base,
        human,
        "mutation ($i: ID!) { confirmItem(id: $i) { id } setLoadBearing(id: $i, loadBearing: true) { id } }",
        i=constraint,
    )
    for n in range(FACTS):
        statement = f"Project work note {n}: the refund ledger reconciles against the PSP report nightly."
        gql(base, agent, assert_item, i={"projectId": project, "kind": "FACT", "statement": statement})
    gql(
        base,
        agent,
        "mutation ($i: CheckpointInput!) { checkpoint(input: $i) { id } }",
        i={
            "sessionId": session,
            "summary": "Refund endpoint drafted; partial captures fail in the PSP sandbox.",
            "nextSteps": ["Write the refund tests", "Ask the PSP about partial captures"],
        },
    )
    return agent, project


def phase(
    name: str,
    series: Series,
    baseline: Series,
    command: list[str],
    stdin: Any,
    env: dict[str, str],
    samples: int,
    warmup: int,
) -> list[bytes]:
    """``samples`` runs of ``command`` (after ``warmup``), each after one baseline run; their outputs."""
    outputs = []
    for n in range(warmup + samples):
        base_ms, _ = timed_run([sys.executable, "-c", "pass"], b"", env)
        ms, out = timed_run(command, stdin(n) if callable(stdin) else stdin, env)
        if n >= warmup:
            baseline.samples.append(base_ms)
            series.samples.append(ms)
            outputs.append(out)
    print(f"measured {name}", file=sys.stderr)
    return outputs


async def run(options: argparse.Namespace, url: str, version: str) -> None:
    if not SCRIPT.is_file() or "mneia.launch" not in SCRIPT.read_text():
        raise SystemExit(f"{SCRIPT} is not the launch script: run .venv/bin/pip install -e . --no-deps")
    engine = create_engine(url, pool_size=1)
    try:
        made = await workspace.bootstrap(engine, f"bench-{uuid.uuid4().hex[:8]}", "alice")
    finally:
        await engine.dispose()
    state = Path(tempfile.mkdtemp(prefix="mneia-bench-hooks-"))
    base_env = {name: value for name, value in os.environ.items() if not name.startswith("MNEIA_")}
    baseline = Series("python -c pass", None)
    end = Series("SessionEnd", END_TARGET_MS)
    up = Series("SessionStart, server up", None)
    down = Series("SessionStart, server down", START_TARGET_MS)
    silent = Series("SessionStart, server silent", START_TARGET_MS)
    command = [str(SCRIPT), "hook", "claude-code"]
    load_before = os.getloadavg()[0]
    with mneia_serve(url, 1) as (base, _):
        agent, project = build_project(base, made.token)
        env = {**base_env, "MNEIA_URL": base, "MNEIA_TOKEN": agent, "MNEIA_PROJECT": project}
        start_env = {**env, "MNEIA_STATE_DIR": str(state / "start")}
        end_env = {**env, "MNEIA_STATE_DIR": str(state / "end")}
        phase("SessionEnd", end, baseline, command, end_payload, end_env, options.samples, options.warmup)
        spooled = len(list((state / "end" / "spool").glob("*.json")))
        texts = phase(
            "SessionStart, server up",
            up,
            baseline,
            command,
            start_payload(),
            start_env,
            options.samples,
            options.warmup,
        )
    live = [context_of(out) for out in texts]
    fell_back = sum(text.startswith("This is the cached") for text in live)
    outs = phase(
        "SessionStart, server down",
        down,
        baseline,
        command,
        start_payload(),
        start_env,
        options.samples,
        options.warmup,
    )
    port = int(base.rsplit(":", 1)[1])
    with socket.socket() as listener:  # the same address, accepting and never answering
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        outs += phase(
            "SessionStart, server silent",
            silent,
            baseline,
            command,
            start_payload(),
            start_env,
            options.samples,
            options.warmup,
        )
    cached = [context_of(out) for out in outs]
    if not all(text.startswith("This is the cached Mneia resume") for text in cached):
        raise BenchmarkBroken("with the server down, a SessionStart did not show the cached resume")
    load_after = os.getloadavg()[0]

    print(f"database     {version}")
    print(f"server       mneia serve, 1 worker, child process; hooks: {SCRIPT} hook claude-code, sequential")
    print(f"python       {sys.version.split()[0]} ({sys.executable})")
    print(f"cpu cores    {os.cpu_count()}; load average {load_before:.2f} before, {load_after:.2f} after")
    print(
        f"samples      {options.samples} per series after {options.warmup} warm-up; one `python -c pass` "
        "before each hook run"
    )
    print(
        f"resume       {max(len(t) for t in live):,} characters at most (limit 9,000); "
        f"{len(live) - fell_back}/{len(live)} answered live within the 0.6 s deadline,"
        f" {fell_back} from the cache"
    )
    print(f"spool        {spooled} entries written by the SessionEnd series")
    print()
    print(HEADER)
    for series in (baseline, end, up, down, silent):
        print(series.row())
    print()
    for series, target in ((down, START_TARGET_MS), (silent, START_TARGET_MS), (end, END_TARGET_MS)):
        p95 = series.quantile(0.95)
        verdict = "met" if p95 <= target else "not met"
        over = p95 - baseline.quantile(0.95)
        print(
            f"{series.name:<28} p95 {p95:7.1f} ms <= {target:.0f} ms: {verdict}"
            f" ({over:+.1f} ms over python -c pass)"
        )


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = arguments(argv)
    on_fresh_database(run, options, keep=options.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
