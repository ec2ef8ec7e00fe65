"""Issue 21: a connection gets what the edge allows it (``mneia.http.transport.Edge``), and no more.

1,000 sockets sending endless headers and 300 sending a body at a byte a second
were all still open after 20 s. Here uvicorn serves the real application
with short deadlines (1 s) so that each refusal shows quickly; each test waits
for the server's answer (a generous limit, never a sleep), and a request sent
in time is served as before.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.http.transport import Edge, server_options
from tests.live import PATIENCE, cli_env, serving, uvicorn_serving

QUICK = Edge(header_seconds=1.0, body_seconds=1.0, max_connections=50)


@pytest.fixture(scope="module")
async def port(engine: AsyncEngine) -> AsyncIterator[int]:
    app = create_app(engine, dispose_engine=False)
    async with uvicorn_serving(app, QUICK) as served:
        yield served


async def answer_of(port: int, sent: bytes) -> tuple[bytes, float]:
    """Send ``sent`` and nothing more; what the server answers before it closes, and when."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        writer.write(sent)
        await writer.drain()
        async with asyncio.timeout(PATIENCE):
            answered = await reader.read()  # until the server closes
        return answered, time.monotonic() - started
    finally:
        writer.close()


def refusal(answered: bytes) -> tuple[int, dict[str, object]]:
    head, _, body = answered.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"connection: close" in head.lower(), head
    return status, json.loads(body)["errors"][0]


async def test_a_connection_that_sends_nothing_is_closed_after_the_header_deadline(port: int) -> None:
    answered, took = await answer_of(port, b"")
    status, error = refusal(answered)
    assert (status, error["extensions"]) == (408, {"code": "REQUEST_TIMEOUT"})
    assert took >= QUICK.header_seconds * 0.9


async def test_headers_that_never_end_are_closed_after_the_header_deadline(port: int) -> None:
    answered, _ = await answer_of(port, b"POST /graphql HTTP/1.1\r\nHost: mneia\r\nX-Slow: a")
    assert refusal(answered)[0] == 408


async def test_headers_past_their_size_are_refused_431(port: int) -> None:
    endless = b"GET /healthz HTTP/1.1\r\nHost: mneia\r\n" + b"X-More: b\r\n" * 7000  # about 77 KB
    answered, took = await answer_of(port, endless)
    status, error = refusal(answered)
    assert (status, error["extensions"]) == (431, {"code": "HEADERS_TOO_LARGE"})
    assert took < QUICK.header_seconds, "refused as soon as the size passed, not at the deadline"


async def test_a_body_that_trickles_is_closed_after_the_body_deadline(port: int) -> None:
    head = b"POST /graphql HTTP/1.1\r\nHost: mneia\r\nContent-Type: application/json\r\n"
    head += b"Content-Length: 100\r\n\r\n"
    answered, took = await answer_of(port, head + b'{"query"')
    status, error = refusal(answered)
    assert (status, error["extensions"]) == (408, {"code": "REQUEST_TIMEOUT"})
    assert took >= QUICK.body_seconds * 0.9


async def test_a_request_sent_in_time_is_served_and_the_connection_kept(port: int) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as client:
        for _ in range(3):  # one connection, kept alive between requests
            assert (await client.get("/healthz")).status_code == 200


async def test_past_the_connection_limit_a_request_is_answered_503(engine: AsyncEngine) -> None:
    """uvicorn's own ``limit_concurrency``, set from ``MNEIA_MAX_CONNECTIONS``: with 2 connections
    open, a third one's request is answered 503 at once."""
    app = create_app(engine, dispose_engine=False)
    async with uvicorn_serving(app, Edge(max_connections=2)) as served:
        held = [await asyncio.open_connection("127.0.0.1", served) for _ in range(2)]
        try:
            answered, _ = await answer_of(
                served, b"GET /healthz HTTP/1.1\r\nHost: mneia\r\nConnection: close\r\n\r\n"
            )
            assert answered.startswith(b"HTTP/1.1 503"), answered[:200]
        finally:
            for _, writer in held:
                writer.close()


def test_the_edge_is_configured_in_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "MNEIA_MAX_CONNECTIONS",
        "MNEIA_HEADER_TIMEOUT",
        "MNEIA_BODY_TIMEOUT",
        "MNEIA_KEEP_ALIVE_TIMEOUT",
    ):
        monkeypatch.delenv(name, raising=False)
    assert Edge.from_env() == Edge()
    monkeypatch.setenv("MNEIA_MAX_CONNECTIONS", "64")
    monkeypatch.setenv("MNEIA_BODY_TIMEOUT", "2.5")
    options = server_options()
    assert options["limit_concurrency"] == 64 and Edge.from_env().body_seconds == 2.5
    monkeypatch.setenv("MNEIA_HEADER_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="MNEIA_HEADER_TIMEOUT"):
        Edge.from_env()


def test_mneia_serve_takes_its_limits_from_the_environment(admin_url: str, tmp_path: Path) -> None:
    """The workers ``mneia serve`` spawns read ``MNEIA_HEADER_TIMEOUT`` themselves: a connection that
    sends nothing is answered 408 after it."""
    env = cli_env(tmp_path, DATABASE_URL=admin_url, MNEIA_HEADER_TIMEOUT="1")
    with serving(["--workers", "2"], env, tmp_path) as (_, base):
        port = httpx.URL(base).port
        assert port is not None
        answered, took = asyncio.run(answer_of(port, b""))
    assert refusal(answered)[0] == 408 and took >= 0.9
