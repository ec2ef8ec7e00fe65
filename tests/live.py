"""A real server for the tests that need one: ``mneia serve`` as a subprocess, the
application under uvicorn in the test's own event loop, and the real GraphQL
clients of other ecosystems (Node: graphql-http's audit, Apollo Client,
graphql-ws), installed from tests/clients/package-lock.json.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from mneia.http.transport import Edge, server_options

CLI = [sys.executable, "-c", "from mneia.cli import main; main()"]
CLIENTS = Path(__file__).resolve().parent / "clients"
# The subprocess must see only the database this test chooses.
SCRUBBED = (
    "DATABASE_URL",
    "MNEIA_TEST_DATABASE_URL",
    "MNEIA_APP_DATABASE_URL",
    "MNEIA_APP_PASSWORD",
    "MNEIA_DATA_DIR",
)
UNREACHABLE = "postgresql://postgres@127.0.0.1:1/nope"
PATIENCE = float(os.environ.get("MNEIA_TEST_PATIENCE") or 300)
"""Seconds a test waits for a server to start or stop, or a condition to hold: generous, since on a
busy 2-core machine ``mneia serve`` was seen to need 44 s to answer /healthz (issue 21). A test
waits for the condition, never for the limit."""


def cli_env(scratch: Path, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in SCRUBBED}
    env["MNEIA_DATA_DIR"] = str(scratch / "never-used")  # never the user's own data dir
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(
    args: list[str], env: dict[str, str], logs: Path, *, healthy: bool = True
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``mneia serve`` on a free port, yielded once /healthz answers (within ``PATIENCE``; how long
    it took is printed, for ``pytest -s`` and failure reports); SIGTERMed on leaving.
    ``healthy``: that it answers 200; else any answer will do (its database may be away)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with (logs / "serve.out").open("wb") as out, (logs / "serve.err").open("wb") as err:
        process = subprocess.Popen(
            [*CLI, "serve", "--port", str(port), *args], env=env, stdout=out, stderr=err
        )
        try:
            started = time.monotonic()
            deadline = started + PATIENCE
            while True:
                assert process.poll() is None, (logs / "serve.err").read_text()
                try:
                    if httpx.get(f"{base}/healthz", timeout=1).status_code == 200 or not healthy:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, f"no answer on /healthz within {PATIENCE:.0f} s"
                time.sleep(0.2)
            print(f"mneia serve answered /healthz after {time.monotonic() - started:.1f} s")
            yield process, base
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=PATIENCE)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def interruptible(
    command: list[str], *, cwd: Path | None = None, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` that Ctrl-C (or SIGTERM, tests/conftest.py) stops at once, with everything the
    command started: it runs in a process group of its own, waited for in short steps so that the
    interrupt is raised between them, and the whole group is killed on the way out (issue 21: Ctrl-C
    was ignored three times while ``npm ci`` ran). Its output is kept in files, not pipes, so that
    nothing it left behind can hold the wait."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            command, cwd=cwd, stdout=out, stderr=err, text=True, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        try:
            while process.poll() is None:
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(command, timeout)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=0.2)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # what it started, whether it ended or not
            process.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(command, process.returncode, out.read(), err.read())


def node_clients() -> str:
    """The node executable, with tests/clients installed; skips the test when node or npm is missing."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("the Node clients need node and npm (Debian: apt-get install nodejs npm)")
    if not (CLIENTS / "node_modules" / ".package-lock.json").is_file():
        installed = interruptible([npm, "ci", "--no-audit", "--no-fund"], cwd=CLIENTS, timeout=PATIENCE)
        assert installed.returncode == 0, f"npm ci in {CLIENTS} failed:\n{installed.stderr}"
    return node


READY = PATIENCE  # seconds uvicorn may take to start or stop


@asynccontextmanager
async def uvicorn_serving(app: Starlette, edge: Edge | None = None) -> AsyncIterator[int]:
    """``app`` served by uvicorn in this event loop on a free local port (yielded) until the block ends.

    For what needs real sockets (graphql-transport-ws) but the test's own
    objects too (the app's notification hub, its engine). ``edge``: the
    connection limits, else the environment's.
    """
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    options = server_options(edge)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", log_level="warning", **options))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(READY):
            while not server.started:
                assert not task.done(), "uvicorn stopped while starting"
                await asyncio.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, READY)
        sock.close()
