"""The fixed cost of a request: ``{ __typename }`` over HTTP, beside a bare Starlette app's answer.

Two child processes serve on 127.0.0.1, each under uvicorn with the options
every Mneia server gets (``mneia.http.transport.server_options``):

- the real application (``common.py --serve``, built as ``mneia serve``
  builds each worker), on a fresh database with one workspace and its
  human's token;
- the ceiling: a bare Starlette app whose one route answers POST /graphql
  with the same JSON, ``{"data":{"__typename":"Query"}}``, reading the body
  and nothing else (no GraphQL, no token, no database).

One client (this process, asyncio over plain sockets with keep-alive: the
same bytes to both, the request made once) sends ``{ __typename }`` with the
token in closed loops of 1, 4 and 16 connections (``--connections``), in
rounds of ``--round`` seconds taken in turn, ceiling then server, so that
both see the same machine. An answer that is not HTTP 200 with exactly that
body fails the run.

Each line gives p50/p95/p99 (nearest rank over every request of its rounds),
requests/s, and the serving process's CPU per request from /proc; the ratio
column is the server's p50 over the ceiling's. Load average at the start and
the end. The issue's target: p50 <= 3 ms (one connection).

    .venv/bin/python benchmarks/request.py                              # 1, 4, 16 connections
    .venv/bin/python benchmarks/request.py --connections 1 --seconds 4  # quick

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL), as for the
other benchmarks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from common import (
    BenchmarkBroken,
    Series,
    _child_serving,
    free_port,
    on_fresh_database,
)

QUERY = b'{"query":"{ __typename }"}'
ANSWER = b'{"data":{"__typename":"Query"}}'
TARGET_P50_MS = 3.0
COMMON = Path(__file__).resolve().parent / "common.py"


# ---------------------------------------------------------------------------
# The ceiling: a child process, Starlette on uvicorn, the same answer


def ceiling_app() -> object:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def graphql(request: Request) -> Response:
        await request.body()
        return Response(ANSWER, media_type="application/json")

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[Route("/graphql", graphql, methods=["POST"]), Route("/healthz", healthz)])


def serve_ceiling(port: int) -> None:
    """Child process entry point: the bare app on 127.0.0.1:port, with Mneia's server options."""
    import uvicorn

    from mneia.http.transport import server_options

    uvicorn.run(
        ceiling_app(),  # type: ignore[arg-type]
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        **server_options(),
    )


# ---------------------------------------------------------------------------
# The client: keep-alive HTTP/1.1 over asyncio streams, one request's bytes made once


def request_bytes(token: str | None) -> bytes:
    headers = [
        "POST /graphql HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Accept: application/json",
        f"Content-Length: {len(QUERY)}",
    ]
    if token:
        headers.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + QUERY


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> None:
    """One request and its whole answer, checked."""
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status = head[9:12]
    length = None
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise BenchmarkBroken(f"an answer without Content-Length: {head[:200]!r}")
    body = await reader.readexactly(length)
    if status != b"200" or body != ANSWER:
        raise BenchmarkBroken(f"HTTP {status.decode()}: {body[:300]!r}")


@dataclass
class Target:
    name: str
    port: int
    pid: int
    request: bytes
    series: Series = field(init=False)
    requests: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def __post_init__(self) -> None:
        self.series = Series(self.name, None)

    def cpu(self) -> float:
        times = psutil.Process(self.pid).cpu_times()
        return times.user + times.system


async def connection_loop(target: Target, until: float, samples: list[float]) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", target.port)
    done = 0
    try:
        while time.perf_counter() < until:
            started = time.perf_counter()
            await exchange(reader, writer, target.request)
            samples.append((time.perf_counter() - started) * 1000)
            done += 1
    finally:
        writer.close()
        await writer.wait_closed()
    return done


async def one_round(target: Target, connections: int, seconds: float, record: bool) -> None:
    samples: list[float] = []
    cpu_before, started = target.cpu(), time.perf_counter()
    counts = await asyncio.gather(
        *(connection_loop(target, started + seconds, samples) for _ in range(connections))
    )
    elapsed, cpu_after = time.perf_counter() - started, target.cpu()
    if record:
        target.series.samples.extend(samples)
        target.requests += sum(counts)
        target.seconds += elapsed
        target.cpu_seconds += cpu_after - cpu_before


# ---------------------------------------------------------------------------
# The run


@dataclass(frozen=True)
class Options:
    connections: list[int]
    seconds: float
    round: float
    warmup: float


def line(target: Target, connections: int, ceiling: Target | None) -> str:
    series = target.series
    p50, p95, p99 = (series.quantile(q) for q in (0.50, 0.95, 0.99))
    rate = target.requests / target.seconds
    cpu = target.cpu_seconds * 1000 / target.requests
    ratio = f"{p50 / ceiling.series.quantile(0.50):>7.1f}x" if ceiling else f"{'':>8}"
    text = (
        f"{target.name:<22}{connections:>5}{len(series.samples):>8}{p50:>8.2f}{p95:>8.2f}{p99:>8.2f}"
        f"{rate:>9.0f}{cpu:>9.3f}{ratio}"
    )
    if ceiling and connections == 1:
        text += f"   p50 <= {TARGET_P50_MS:g} ms: {'met' if p50 <= TARGET_P50_MS else 'MISSED'}"
    return text


HEADER = (
    f"{'':<22}{'conns':>5}{'n':>8}{'p50':>8}{'p95':>8}{'p99':>8}{'req/s':>9}{'cpu/req':>9}{'p50 x':>8}"
    "   (ms; the server process's cpu)"
)


async def measure(ceiling: Target, server: Target, options: Options) -> list[str]:
    lines = []
    for connections in options.connections:
        for target in (ceiling, server):
            await one_round(target, connections, options.warmup, record=False)
            target.series = Series(target.name, None)
            target.requests, target.seconds, target.cpu_seconds = 0, 0.0, 0.0
        rounds = max(1, round(options.seconds / options.round))
        for _ in range(rounds):
            for target in (ceiling, server):
                await one_round(target, connections, options.round, record=True)
        lines += [line(ceiling, connections, None), line(server, connections, ceiling)]
        print(lines[-2], flush=True)
        print(lines[-1], flush=True)
    return lines


async def token_for(url: str) -> str:
    from mneia.storage import workspace
    from mneia.storage.database import create_engine

    admin = create_engine(url, pool_size=1)
    try:
        made = await workspace.bootstrap(admin, "request-bench", "alice")
    finally:
        await admin.dispose()
    return made.token


async def run(options: Options, url: str, version: str) -> None:
    secret = await token_for(url)
    print(f"database     {version}")
    print(f"cpu cores    {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} at the start")
    print(
        f"request      POST /graphql {QUERY.decode()} with a bearer token; {options.seconds:g} s per line"
        f" in rounds of {options.round:g} s, ceiling and server in turn"
    )
    ceiling_port, server_port = free_port(), free_port()
    ceiling_command = [sys.executable, __file__, "--ceiling", "--port", str(ceiling_port)]
    server_command = [sys.executable, str(COMMON), "--serve", url, "--port", str(server_port)]
    with (
        _child_serving("the ceiling", ceiling_command, ceiling_port, 30) as (_, ceiling_child),
        _child_serving("the server", server_command, server_port, 30) as (_, server_child),
    ):
        ceiling = Target("ceiling (Starlette)", ceiling_port, ceiling_child.pid, request_bytes(secret))
        server = Target("mneia", server_port, server_child.pid, request_bytes(secret))
        print(HEADER, flush=True)
        await measure(ceiling, server, options)
    print(f"load average {os.getloadavg()[0]:.2f} at the end (above 2: other work shared the cores)")


def numbers(value: str) -> list[int]:
    try:
        parsed = [int(part) for part in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list of numbers") from None
    if not parsed or min(parsed) < 1:
        raise argparse.ArgumentTypeError("every number must be at least 1")
    return parsed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--connections", type=numbers, default=[1, 4, 16], help="default 1,4,16")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per line and target")
    parser.add_argument("--round", type=float, default=1.0, help="seconds of one round (default 1)")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of warm-up per line and target")
    parser.add_argument("--ceiling", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ceiling:
        serve_ceiling(args.port)
        return 0
    if args.seconds <= 0 or args.round <= 0:
        parser.error("--seconds and --round must be positive")
    options = Options(args.connections, args.seconds, args.round, args.warmup)
    on_fresh_database(run, options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
