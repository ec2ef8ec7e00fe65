"""What the Citus test modules share: ``scripts/citus.sh``, its patience, and when they run.

They are opt-in (``MNEIA_CITUS=1``; .ci/run's Citus stage sets it): the first ``up`` builds
Citus from source, under a minute on two idle cores, about ten when busy, cached afterwards
under ``~/.cache/mneia/citus``. Each module runs a cluster of its own, in its own state
directory (``MNEIA_CITUS_DIR``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from tests.live import CLI, cli_env

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "citus.sh"
BUILD_TIMEOUT = 1800  # a cold `up` builds Citus first: under a minute idle, ~10 minutes when busy
TIMEOUT = 300

ASKED = pytest.mark.skipif(
    os.environ.get("MNEIA_CITUS") != "1",
    reason=(
        "set MNEIA_CITUS=1 to run the Citus tests; scripts/citus.sh builds Citus first and needs a"
        " C compiler and the build dependencies: apt-get install -y build-essential liblz4-dev"
        " libzstd-dev (under a minute on 2 idle cores, ~10 minutes when busy)"
    ),
)
"""The mark of every Citus test module: skipped, saying what it needs, unless asked for."""

ON_CLUSTER = os.environ.get("MNEIA_TEST_CITUS") == "1"
"""The suites run on a Citus cluster, through the routed application (conftest)."""


def run(*args: str, state: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """``scripts/citus.sh ARGS`` on the cluster kept in ``state``, whatever its outcome."""
    env = {**os.environ, "MNEIA_CITUS_DIR": str(state)}
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout)


def output(*args: str, state: Path, timeout: float = TIMEOUT) -> str:
    """``scripts/citus.sh ARGS``, which must succeed: its stdout."""
    result = run(*args, state=state, timeout=timeout)
    assert result.returncode == 0, f"citus.sh {' '.join(args)}: {result.stderr}"
    return result.stdout


DATABASE_URL = re.compile(r"DATABASE_URL=(postgresql://postgres@127\.0\.0\.1:(\d+)/(\w+))")
STATUS_LINE = re.compile(r"(coordinator|worker\d+) 127\.0\.0\.1:(\d+) answers")


@dataclass(frozen=True)
class Cluster:
    url: str  # the administrator's, on the coordinator
    name: str
    coordinator: int
    workers: tuple[int, ...]

    @property
    def nodes(self) -> tuple[int, ...]:
        return (self.coordinator, *self.workers)

    async def connect(self, port: int, user: str = "postgres") -> asyncpg.Connection:
        return await asyncpg.connect(host="127.0.0.1", port=port, user=user, database=self.name)


def mneia_migrate(cluster: Cluster, scratch: Path) -> subprocess.CompletedProcess[str]:
    """The real ``mneia migrate`` on the cluster's database, as an operator runs it."""
    env = cli_env(scratch, DATABASE_URL=cluster.url)
    return subprocess.run([*CLI, "migrate"], env=env, capture_output=True, text=True, timeout=TIMEOUT)


@contextmanager
def scratch_directory(prefix: str) -> Iterator[Path]:
    """A directory outside pytest's basetemp (mode 0700): as root the nodes run as another user,
    who must reach their data directories."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def cluster_up(scratch: Path) -> Iterator[Cluster]:
    """A coordinator and two workers (``citus.sh up``) with a database ``mneia`` on each, stopped
    afterwards whatever happens."""
    state = scratch / "cluster"
    try:
        output("up", state=state, timeout=BUILD_TIMEOUT)
        created = DATABASE_URL.fullmatch(output("createdb", "mneia", state=state).strip())
        assert created, "createdb printed no DATABASE_URL"
        ports = {
            line.group(1): int(line.group(2))
            for line in map(STATUS_LINE.fullmatch, output("status", state=state).splitlines())
            if line
        }
        assert ports["coordinator"] == int(created.group(2)), ports
        workers = tuple(port for node, port in sorted(ports.items()) if node != "coordinator")
        assert len(workers) == 2, ports
        yield Cluster(created.group(1), created.group(3), ports["coordinator"], workers)
    finally:
        run("down", state=state)


@contextmanager
def migrated_cluster(scratch: Path) -> Iterator[Cluster]:
    """``cluster_up``, migrated by ``mneia migrate``."""
    with cluster_up(scratch) as cluster:
        result = mneia_migrate(cluster, scratch)
        assert result.returncode == 0, result.stderr
        yield cluster
