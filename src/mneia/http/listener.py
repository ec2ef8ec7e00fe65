"""The listening socket of ``mneia serve``: one per worker process, so the kernel shares the load.

uvicorn's workers all accept on the socket their parent bound. An idle
worker woken by a burst of connections accepts every one it finds pending
(asyncio and libuv both accept until the queue is empty), so a client that
opens its pool at once, as a load generator or a backend's connection pool
does, lands whole on one worker: 15 of wrk's 16 connections went to one of
two workers, which then saturated its core while the other waited.

With ``SO_REUSEPORT`` each worker listens on a socket of its own, bound to
the same address, and the kernel spreads new connections over them by a
hash of their addresses, as nginx's ``reuseport`` and gunicorn's
``--reuse-port`` do. The parent binds first, without listening, so that the
address is taken (and a port 0 chosen) before any database work; each worker
binds again when it unpickles the socket it is handed
(:func:`_listen_again`).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any


def bound(
    family: socket.AddressFamily, kind: socket.SocketKind, proto: int, address: Any, *, shared: bool
) -> socket.socket:
    """A socket bound to ``address``; ``shared`` lets every worker bind it again (``SO_REUSEPORT``)."""
    sock: socket.socket = (
        PerWorkerSocket(family, kind, proto) if shared else socket.socket(family, kind, proto)
    )
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def _listen_again(
    family: socket.AddressFamily, kind: socket.SocketKind, proto: int, address: Any
) -> socket.socket:
    """In a worker process: a socket of its own on the parent's address (uvicorn makes it listen)."""
    return bound(family, kind, proto, address, shared=True)


class PerWorkerSocket(socket.socket):
    """A socket that a worker process receives as a new socket on the same address, not a copy.

    uvicorn hands its workers the parent's sockets by pickling them
    (multiprocessing's spawn); this one pickles as the recipe to bind again.
    """

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _listen_again, (self.family, self.type, self.proto, self.getsockname())


def _unix_of_this_worker(directory: str) -> socket.socket:
    """In a worker process: a Unix socket at ``<directory>/<its pid>.sock`` (uvicorn makes it listen)."""
    from mneia.mcp.affinity import socket_path

    path = socket_path(Path(directory), os.getpid())
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
    except OSError:
        sock.close()
        raise
    return sock


class PerWorkerUnixSocket(socket.socket):
    """A socket each worker process receives as a Unix socket of its own, named by its pid.

    Through it the other workers reach this one: an MCP session lives in the
    worker that opened it (mcp.affinity). ``directory`` is the parent's,
    private to its user (``tempfile.mkdtemp``).
    """

    def __init__(self, directory: Path) -> None:
        super().__init__(socket.AF_UNIX, socket.SOCK_STREAM)
        self.directory = directory

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _unix_of_this_worker, (str(self.directory),)
