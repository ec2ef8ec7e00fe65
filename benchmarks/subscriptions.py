"""Subscription benchmark: 200 ``disputeRaised`` subscribers × 10 events, over graphql-transport-ws.

The real command, ``mneia serve --workers N``, serves in a child process;
this process holds the subscribers' websockets and raises the disputes over
HTTP, one every ``--gap`` seconds, so that each event's fan-out is timed on
its own. A delivery's latency runs from the moment the ``disputeItem``
request is sent to the moment its event is read off a subscriber's socket,
so it includes the write itself (printed apart as ``disputeItem``).

The subscribers present ``--tokens`` distinct tokens (of as many actors),
round-robin: an event is re-read once per token (one visibility class), so
the figures depend on it. Each count given is run in turn, on fresh
subscribers; 200 tokens for 200 subscribers is the worst case, one
transaction per subscriber per event.

It also prints what revoking a token costs each way (F16): the time from a
``revokeToken`` answer to the end of that token's streams (the revocation is
announced), and what a periodic re-check would spend per period instead:
authenticating every subscriber's token once, in one transaction each.

    .venv/bin/python benchmarks/subscriptions.py             # 200 subscribers, 10 events, tokens 20 and 200
    .venv/bin/python benchmarks/subscriptions.py --smoke     # 20 subscribers, 3 events

The database server is chosen as in ``foundation.py`` (``DATABASE_URL``, else
``MNEIA_BENCH_DATABASE_URL``, else embedded); the bench database is dropped at
the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx
from common import (
    HEADER,
    Series,
    database_server,
    fresh_database,
    gql,
    mneia_serve,
    server_version,
)
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from mneia.config import app_url
from mneia.storage import token, workspace
from mneia.storage.database import create_engine, transaction

TARGET_MS = 100.0  # issue 7: 200 subscribers × 10 events, p95 <= 100 ms
PROTOCOL = Subprotocol("graphql-transport-ws")
DISPUTE_RAISED = """subscription { disputeRaised {
  id status reason raisedAt raisedBy { id name }
  item { id statement authority } contested { id statement authority } } }"""
ASSERT = (
    "mutation($p: ID!, $s: String!) { assertItem(input: {projectId: $p, kind: FACT, statement: $s}) { id } }"
)
DISPUTE = 'mutation($i: ID!, $c: ID!) { disputeItem(id: $i, contestedId: $c, reason: "bench") { id } }'
CREATE_ACTOR = (
    "mutation($n: String!) { createActor(kind: AGENT, name: $n) { actor { id } token issued { id } } }"
)
ADD_MEMBER = "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }"
REVOKE = "mutation($i: ID!) { revokeToken(id: $i) { revokedAt } }"


@dataclass
class Subscriber:
    ws: ClientConnection
    token_id: str
    arrivals: dict[str, float] = field(default_factory=dict)
    ended_at: float | None = None
    reader: asyncio.Task[None] | None = None

    async def read(self) -> None:
        async for raw in self.ws:
            message = json.loads(raw)
            if message["type"] == "next" and message["payload"].get("data"):
                self.arrivals[message["payload"]["data"]["disputeRaised"]["id"]] = time.perf_counter()
            elif message["type"] in ("next", "complete", "error") and self.ended_at is None:
                self.ended_at = time.perf_counter()


async def subscribe(url: str, secret: str, token_id: str) -> Subscriber:
    ws = await connect(url, subprotocols=[PROTOCOL], open_timeout=30, max_queue=None)
    await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {secret}"}}))
    ack = json.loads(await asyncio.wait_for(ws.recv(), 30))
    if ack["type"] != "connection_ack":
        raise SystemExit(f"connection refused: {ack}")
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": DISPUTE_RAISED}}))
    subscriber = Subscriber(ws, token_id)
    subscriber.reader = asyncio.create_task(subscriber.read())
    return subscriber


async def until_delivered(subscribers: Sequence[Subscriber], dispute_id: str, within: float = 30) -> None:
    async with asyncio.timeout(within):
        while not all(dispute_id in s.arrivals for s in subscribers):  # noqa: ASYNC110 - a poll
            await asyncio.sleep(0.005)


@dataclass
class World:
    human: str
    project: str
    tokens: list[tuple[str, str]]  # (secret, token id) of agents in the project
    pairs: list[tuple[str, str]]


async def build(http: httpx.AsyncClient, url: str, tokens: int, events: int) -> World:
    admin = create_engine(url, pool_size=2)
    made = await workspace.bootstrap(admin, "bench-subscriptions", "alice")
    await admin.dispose()
    human = made.token
    project = (await gql(http, human, 'mutation { createProject(name: "bench") { id } }'))["createProject"][
        "id"
    ]
    agents: list[tuple[str, str]] = []
    for n in range(tokens):
        created = (await gql(http, human, CREATE_ACTOR, n=f"agent-{n}"))["createActor"]
        await gql(http, human, ADD_MEMBER, p=project, a=created["actor"]["id"])
        agents.append((created["token"], created["issued"]["id"]))
    pairs = []
    for n in range(2 * events + 8):
        a = (await gql(http, human, ASSERT, p=project, s=f"Port {n}"))["assertItem"]["id"]
        b = (await gql(http, human, ASSERT, p=project, s=f"Port {n} again"))["assertItem"]["id"]
        pairs.append((b, a))
    return World(human, project, agents, pairs)


async def fan_out(
    base: str, url: str, subscribers_n: int, tokens_n: int, events: int, gap: float
) -> tuple[Series, Series, Series, Series]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        world = await build(http, url, tokens_n, events)
        pairs = iter(world.pairs)
        ws_url = base.replace("http://", "ws://") + "/graphql"
        cycle = itertools.cycle(world.tokens)
        subscribers = [await subscribe(ws_url, *next(cycle)) for _ in range(subscribers_n)]

        # Warm up: every subscription registered, every code path run once.
        for _ in range(2):
            item, contested = next(pairs)
            warm = (await gql(http, world.human, DISPUTE, i=item, c=contested))["disputeItem"]["id"]
            await until_delivered(subscribers, warm)

        label = f"{subscribers_n} subscribers, {tokens_n} tokens"
        delivery = Series(f"delivery ({label})", TARGET_MS)
        writes = Series("  disputeItem (the write)", None)
        for _ in range(events):
            item, contested = next(pairs)
            sent = time.perf_counter()
            dispute_id = (await gql(http, world.human, DISPUTE, i=item, c=contested))["disputeItem"]["id"]
            writes.samples.append((time.perf_counter() - sent) * 1000)
            await until_delivered(subscribers, dispute_id)
            delivery.samples.extend((s.arrivals[dispute_id] - sent) * 1000 for s in subscribers)
            await asyncio.sleep(gap)

        # F16: revoke one token; its streams end at once, announced, without another event.
        secret, token_id = world.tokens[0]
        revoked = [s for s in subscribers if s.token_id == token_id]
        asked = time.perf_counter()
        await gql(http, world.human, REVOKE, i=token_id)
        async with asyncio.timeout(10):
            while any(s.ended_at is None for s in revoked):  # noqa: ASYNC110 - a poll
                await asyncio.sleep(0.002)
        ended = Series("  revoked token: streams ended", 1000.0)
        ended.samples.extend((s.ended_at - asked) * 1000 for s in revoked if s.ended_at is not None)

        recheck = await periodic_recheck(url, [secret for secret, _ in world.tokens], subscribers_n)

        for s in subscribers:
            await s.ws.close()
            if s.reader is not None:
                await s.reader
    return delivery, writes, ended, recheck


async def periodic_recheck(url: str, secrets: Sequence[str], subscribers_n: int) -> Series:
    """What a periodic re-check would cost each period: every subscriber's token authenticated once."""
    engine = create_engine(app_url(url), pool_size=4)
    series = Series(f"  periodic re-check, {subscribers_n} tokens", None)
    try:
        for _ in range(3):
            started = time.perf_counter()
            for n in range(subscribers_n):
                async with transaction(engine) as tx:
                    await token.authenticate(tx, secrets[n % len(secrets)])
            series.samples.append((time.perf_counter() - started) * 1000)
    finally:
        await engine.dispose()
    return series


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--subscribers", type=int, default=200)
    parser.add_argument("--events", type=int, default=10)
    parser.add_argument(
        "--tokens", default="20,200", help="distinct tokens among the subscribers, comma-separated"
    )
    parser.add_argument("--gap", type=float, default=0.25, help="seconds between two events")
    parser.add_argument("--workers", type=int, default=1, help="mneia serve --workers (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    parser.add_argument("--smoke", action="store_true", help="20 subscribers, 3 events, tokens 4 and 20")
    args = parser.parse_args(argv)
    if args.smoke:
        args.subscribers, args.events, args.tokens = 20, 3, "4,20"
    return args


def run(args: argparse.Namespace, server: str) -> None:
    for tokens_n in [int(n) for n in args.tokens.split(",")]:
        with fresh_database(server, args.keep) as url:
            version = asyncio.run(server_version(url))
            with mneia_serve(url, args.workers) as (base, _):
                figures = asyncio.run(fan_out(base, url, args.subscribers, tokens_n, args.events, args.gap))
        print(
            f"\nPostgreSQL {version}; {args.subscribers} subscribers, {tokens_n} tokens,"
            f" {args.events} events, {args.workers} worker(s)"
        )
        print(HEADER)
        for series in figures:
            print(series.row())


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    started = time.perf_counter()
    with database_server(args.keep) as server:
        run(args, server)
    print(f"total        {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
