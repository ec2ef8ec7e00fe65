"""The coalescing transport (mneia.http.transport): what one turn of the loop writes leaves in one call."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.http.transport import _Coalescing
from tests.live import uvicorn_serving


class Recording(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default


async def test_writes_of_one_turn_leave_together_in_order() -> None:
    real = Recording()
    transport = _Coalescing(real, asyncio.get_running_loop())
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(memoryview(b"body"))
    assert real.writes == [] and transport.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\nbody")
    await asyncio.sleep(0)
    assert real.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    transport.write(b"next")
    await asyncio.sleep(0)
    assert real.writes[1:] == [b"next"]


async def test_close_sends_what_is_pending_first_and_abort_drops_it() -> None:
    real = Recording()
    transport = _Coalescing(real, asyncio.get_running_loop())
    transport.write(b"last words")
    transport.close()
    assert real.writes == [b"last words"] and real.closed
    await asyncio.sleep(0)
    assert real.writes == [b"last words"], "the scheduled flush finds nothing left to send"

    other = Recording()
    aborted = _Coalescing(other, asyncio.get_running_loop())
    aborted.write(b"never")
    other.abort = lambda: setattr(other, "closed", True)  # type: ignore[method-assign]
    aborted.abort()
    await asyncio.sleep(0)
    assert other.writes == [] and other.closed


async def test_everything_else_is_the_real_transports() -> None:
    real = Recording()
    transport = _Coalescing(real, asyncio.get_running_loop())
    assert transport.get_extra_info("peername") == ("127.0.0.1", 1)
    real.closed = True
    assert transport.is_closing()
    transport.write(b"to a closed socket")
    await asyncio.sleep(0)
    assert real.writes == [], "nothing is written to a transport that is closing"


async def test_responses_through_uvicorn_arrive_whole(engine: AsyncEngine) -> None:
    """Keep-alive requests in a row each get their whole answer over the coalescing protocol."""
    app = create_app(engine, dispose_engine=False)
    async with uvicorn_serving(app) as port, httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        for _ in range(20):
            answer = await http.post("/graphql", json={"query": "{ __typename }"})
            assert answer.status_code == 200 and answer.json() == {"data": {"__typename": "Query"}}
        big = await http.get("/graphql", headers={"Accept": "text/html"})
        assert big.status_code == 200 and int(big.headers["content-length"]) == len(big.content)
