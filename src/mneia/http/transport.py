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
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


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


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over a transport that joins a response's writes."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_Coalescing(transport, self.loop))  # type: ignore[arg-type]


def server_options() -> dict[str, Any]:
    """What every uvicorn serving Mneia is given: ``mneia serve``, the tests' live server, the benchmarks.

    No permessage-deflate: a subscription's messages are a few hundred bytes
    of JSON, compressed anew for each subscriber, and the compression took
    about 5% of the server's CPU in a 200-subscriber fan-out (py-spy) to save
    a few hundred bytes a message.
    """
    return {"http": CoalescingHttpToolsProtocol, "ws_per_message_deflate": False}
