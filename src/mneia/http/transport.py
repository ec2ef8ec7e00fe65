"""One system call per response: what a turn of the event loop writes leaves together.

uvicorn's httptools protocol writes a response's status line and headers as
soon as the app starts the response, then its body: two ``write()`` calls,
two wake-ups of the client. On the virtual machines Mneia runs on, a socket
write costs hundreds of microseconds of system time (the kernel wakes the
reader at once), about a third of a small request's CPU. The writes made in
one turn of the event loop are joined and sent at the end of that turn.
"""

from __future__ import annotations

import asyncio
import functools
import http
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mneia.http.refusal import Refusal


class _Coalescing:
    """A transport whose writes within one turn of the loop leave in one call."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(data) for data in self._pending)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


@dataclass(frozen=True)
class Edge:
    """What one connection may take of a server process, before the application sees a request.

    Read from the environment (``from_env``); every uvicorn serving Mneia is
    given them through ``server_options``."""

    max_connections: int = 1000
    """``MNEIA_MAX_CONNECTIONS``: connections (and requests in progress) a process serves at once;
    past it, uvicorn answers 503 (its ``limit_concurrency``)."""
    header_seconds: float = 10.0
    """``MNEIA_HEADER_TIMEOUT``: from a connection's first byte (or its opening), the request line
    and headers must arrive within this; else 408 and the connection closes."""
    body_seconds: float = 60.0
    """``MNEIA_BODY_TIMEOUT``: the whole body must arrive within this once the headers have; else
    408 (a 4 MiB body needs about 70 KB/s)."""
    max_header_bytes: int = 64 * 1024
    """The request line and headers together; past it, 431 and the connection closes."""
    keep_alive_seconds: float = 5.0
    """``MNEIA_KEEP_ALIVE_TIMEOUT``: an idle connection between requests is closed after this."""

    @classmethod
    def from_env(cls) -> Edge:
        env = os.environ
        return cls(
            max_connections=_positive(env, "MNEIA_MAX_CONNECTIONS", cls.max_connections, int),
            header_seconds=_positive(env, "MNEIA_HEADER_TIMEOUT", cls.header_seconds, float),
            body_seconds=_positive(env, "MNEIA_BODY_TIMEOUT", cls.body_seconds, float),
            keep_alive_seconds=_positive(env, "MNEIA_KEEP_ALIVE_TIMEOUT", cls.keep_alive_seconds, float),
        )


def _positive(env: Mapping[str, str], name: str, default: Any, kind: Callable[[str], Any]) -> Any:
    given = env.get(name)
    if not given:
        return default
    try:
        value = kind(given)
    except ValueError:
        value = 0
    if not value > 0:
        raise ValueError(f"{name}: expected a positive number, got {given!r}")
    return value


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over a transport that joins a response's writes, and that gives
    a request's head and body a deadline and the head a size (``Edge``): 1,000 sockets sending
    endless headers, or a body at a byte a second, held their connections for as long as they
    liked (issue 21). uvicorn's own settings cover idle keep-alive and the connection count; it
    has no deadline for a request being read, nor a bound on its headers with httptools."""

    limits: Edge | None = None
    """This class's limits; None: the environment's (read once per process, so that the class
    stays importable by name in the workers ``--workers`` spawns)."""

    @property
    def edge(self) -> Edge:
        return self.limits or _environment_edge()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_Coalescing(transport, self.loop))  # type: ignore[arg-type]
        self._head_bytes = 0
        self._deadline: asyncio.TimerHandle | None = None
        self._arm(self.edge.header_seconds)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        self._arm(self.edge.header_seconds)

    def on_url(self, url: bytes) -> None:
        if self._counted(len(url)):
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._counted(len(name) + len(value) + 4):
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._arm(self.edge.body_seconds)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # the websocket protocol has its own pings and limits from here
        super().handle_websocket_upgrade()

    def _counted(self, size: int) -> bool:
        self._head_bytes += size
        if self._head_bytes <= self.edge.max_header_bytes:
            return True
        limit = self.edge.max_header_bytes
        self._refuse(
            Refusal(431, f"the request line and headers exceed {limit} bytes", code="HEADERS_TOO_LARGE")
        )
        return False

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        self._refuse(Refusal(408, "the request did not arrive in time", code="REQUEST_TIMEOUT"))

    def _refuse(self, refusal: Refusal) -> None:
        """Answer the refusal in the JSON every client parses, unless a response has begun, and close."""
        self._disarm()
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            body = refusal.encoded()
            reason = http.HTTPStatus(refusal.status_code).phrase.encode()
            head = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            self.transport.write(
                head % (refusal.status_code, reason, len(body)) + b"connection: close\r\n\r\n" + body
            )
        if self.cycle is not None:
            self.cycle.disconnected = True
        self.transport.close()


@functools.cache
def _environment_edge() -> Edge:
    return Edge.from_env()


def guarded(edge: Edge) -> type[CoalescingHttpToolsProtocol]:
    """The protocol class with ``edge``'s deadlines and sizes, for a server in this process (a
    class made here cannot be sent to a spawned worker)."""
    return type("GuardedHttpToolsProtocol", (CoalescingHttpToolsProtocol,), {"limits": edge})


def server_options(edge: Edge | None = None) -> dict[str, Any]:
    """What every uvicorn serving Mneia is given: ``mneia serve``, the tests' live server, the benchmarks.

    No permessage-deflate: a subscription's messages are a few hundred bytes
    of JSON, compressed anew for each subscriber, and the compression took
    about 5% of the server's CPU in a 200-subscriber fan-out (py-spy) to save
    a few hundred bytes a message. The edge's limits come from the environment
    unless given (``Edge``).
    """
    protocol = guarded(edge) if edge is not None else CoalescingHttpToolsProtocol
    edge = edge or Edge.from_env()
    return {
        "http": protocol,
        "ws_per_message_deflate": False,
        "limit_concurrency": edge.max_connections,
        "timeout_keep_alive": edge.keep_alive_seconds,
    }
