"""``/mcp`` under ``mneia serve --workers N``: every request reaches the worker that holds its session.

The SDK keeps an MCP session in the memory of the process that answered its
``initialize``, and Mneia keeps the connection's place there too (its
project, its open session, its checkpoints' keys: ``mcp.connection``). With
several workers the kernel spreads a client's TCP connections over them
(``SO_REUSEPORT``), and a client holds more than one: its GET stream and its
POSTs, a pool that opens a new connection when one closes. So a session's
next request could reach a worker that never heard of it (404).

Each worker therefore names the sessions it opens after itself,
``<pid>.<the SDK's id>``, and also listens on a Unix socket of its own,
``<workers dir>/<pid>.sock`` (``http.listener.PerWorkerUnixSocket``). A
request naming another worker's session is passed to that worker whole, its
body streamed there and the answer (JSON, or an event stream that lasts) streamed
back, until either side ends. A session whose worker is gone (stopped,
restarted) answers 404, on which the MCP spec has the client start a new one.
The owner authenticates the request again: passing it on grants nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SESSION = b"mcp-session-id"
HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer", b"upgrade", b"host"}
    | {b"content-length", b"proxy-authorization", b"proxy-connection"}
)
"""Headers that describe one connection, not the request: each hop sets its own."""

SOCKET_SUFFIX = ".sock"


def socket_path(workers_dir: Path, pid: int | str) -> Path:
    return workers_dir / f"{pid}{SOCKET_SUFFIX}"


def _with_header(scope: Scope, name: bytes, value: str) -> Scope:
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != name]
    return {**scope, "headers": [*headers, (name, value.encode("latin-1"))]}


async def _gone(send: Send) -> None:
    """What the SDK answers for a session it does not hold: the client starts a new one."""
    body = {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Session not found"}}
    await send(
        {"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


class Affinity:
    """ASGI middleware around the MCP endpoint of one worker of several."""

    def __init__(self, app: ASGIApp, workers_dir: Path) -> None:
        self.app = app
        self.workers_dir = workers_dir
        self.me = str(os.getpid())
        self._clients: dict[str, httpx.AsyncClient] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = Headers(scope=scope).get(SESSION.decode())
        if given is not None:
            owner, dot, session = given.partition(".")
            if dot and owner.isdecimal() and session:
                if owner != self.me:
                    await self._forward(owner, scope, receive, send)
                    return
                scope = _with_header(scope, SESSION, session)  # the SDK's own id
        await self.app(scope, receive, self._naming(send))

    def _naming(self, send: Send) -> Send:
        """Name a session the SDK opens (or echoes) after this worker."""

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start":
                prefix = f"{self.me}.".encode()
                headers = [
                    (key, prefix + value if key.lower() == SESSION else value)
                    for key, value in message["headers"]
                ]
                message = {**message, "headers": headers}
            await send(message)

        return named

    def _client(self, owner: str) -> httpx.AsyncClient:
        client = self._clients.get(owner)
        if client is None:
            transport = httpx.AsyncHTTPTransport(uds=str(socket_path(self.workers_dir, owner)))
            client = httpx.AsyncClient(transport=transport, base_url="http://worker", timeout=None)
            self._clients[owner] = client
        return client

    async def _forward(self, owner: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request to the worker ``owner`` and stream its answer back."""
        if not socket_path(self.workers_dir, owner).exists():
            await _gone(send)
            return
        read = asyncio.Event()

        async def body() -> AsyncIterator[bytes]:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    break
                yield message.get("body", b"")
                if not message.get("more_body", False):
                    break
            read.set()

        target = scope["raw_path"].decode("latin-1")
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        client = self._client(owner)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        request = client.build_request(scope["method"], target, headers=headers, content=body())
        try:
            response = await client.send(request, stream=True)
        except httpx.TransportError:  # the worker stopped: its sessions went with it
            self._clients.pop(owner, None)
            await client.aclose()
            await _gone(send)
            return
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP],
                }
            )
            relay = asyncio.create_task(self._relay(response, send))
            left = asyncio.create_task(self._left(read, receive))
            done, _ = await asyncio.wait((relay, left), return_when=asyncio.FIRST_COMPLETED)
            for task in (relay, left):
                task.cancel()
            await asyncio.gather(relay, left, return_exceptions=True)
            if relay in done and not relay.cancelled():
                relay.result()
        finally:
            await response.aclose()

    @staticmethod
    async def _relay(response: httpx.Response, send: Send) -> None:
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    async def _left(read: asyncio.Event, receive: Receive) -> None:
        """Returns when the client goes away (after its body was read): the stream is then closed."""
        await read.wait()
        while (await receive())["type"] != "http.disconnect":
            pass

    async def close(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
