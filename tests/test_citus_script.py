"""``scripts/citus.sh``, the local Citus cluster for tests: a coordinator and two workers.

What must stay true: ``up`` and ``createdb`` each print exactly one line on stdout
(``CITUS_URL=...``, ``DATABASE_URL=...``) naming 127.0.0.1 on a port that is not the machine's
own PostgreSQL; a second ``up`` prints the same URL and starts nothing; a table distributed in a
database from ``createdb`` has shards on both workers (and none on the coordinator), and its rows
land on both; ``createdb`` refuses a name that is not a plain identifier, and any name when no
cluster is up; ``down`` stops every node and removes the state directory, quietly when nothing
is up.

Opt-in (``MNEIA_CITUS=1``): the first run builds Citus from source (under a minute on an idle
2-core machine, up to ~10 minutes on a busy one), cached afterwards under ``~/.cache/mneia/citus``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from tests import walkthrough
from tests.citus import ASKED, BUILD_TIMEOUT, SCRIPT
from tests.citus import run as citus

pytestmark = [pytest.mark.slow, ASKED]

CITUS_URL = re.compile(r"CITUS_URL=postgresql://postgres@127\.0\.0\.1:(\d+)/postgres")
DATABASE_URL = re.compile(r"DATABASE_URL=postgresql://postgres@127\.0\.0\.1:(\d+)/(\w+)")
STATUS_LINE = re.compile(r"(coordinator|worker1|worker2) 127\.0\.0\.1:(\d+) answers")


def one_line(result: subprocess.CompletedProcess[str], pattern: re.Pattern[str]) -> re.Match[str]:
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    match = pattern.fullmatch(lines[0])
    assert match, lines[0]
    return match


@dataclass(frozen=True)
class Cluster:
    state: Path
    url: str
    port: int
    ports: dict[str, int]  # node name -> port, from `status`


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    # Outside pytest's basetemp, which pytest keeps at mode 0700: as root the nodes run as
    # another user, who must reach their data directories.
    scratch = Path(tempfile.mkdtemp(prefix="mneia-citus-test-"))
    yield scratch
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(scratch: Path) -> Iterator[Cluster]:
    state = scratch / "cluster"
    up = citus("up", state=state, timeout=BUILD_TIMEOUT)
    try:
        match = one_line(up, CITUS_URL)
        status = citus("status", state=state)
        assert status.returncode == 0, status.stdout + status.stderr
        ports = {
            line.group(1): int(line.group(2))
            for line in map(STATUS_LINE.fullmatch, status.stdout.splitlines())
            if line
        }
        assert set(ports) == {"coordinator", "worker1", "worker2"}, status.stdout
        url = match.group(0).removeprefix("CITUS_URL=")
        yield Cluster(state, url, int(match.group(1)), ports)
    finally:
        down = citus("down", state=state)
        assert down.returncode == 0, down.stderr
        assert not state.exists()


def test_up_prints_one_url_of_a_coordinator_apart_from_the_machines_postgres(
    cluster: Cluster,
) -> None:
    assert cluster.port == cluster.ports["coordinator"]
    assert len(set(cluster.ports.values())) == 3
    assert 5432 not in cluster.ports.values()


def test_up_again_prints_the_same_url_and_starts_nothing(cluster: Cluster) -> None:
    before = sorted(p.name for p in cluster.state.iterdir())
    again = one_line(citus("up", state=cluster.state), CITUS_URL)
    assert again.group(0) == f"CITUS_URL={cluster.url}"
    assert sorted(p.name for p in cluster.state.iterdir()) == before


async def test_createdb_gives_a_database_whose_distributed_table_spans_both_workers(
    cluster: Cluster,
) -> None:
    name = f"citus_try_{uuid.uuid4().hex[:8]}"
    created = one_line(citus("createdb", name, state=cluster.state), DATABASE_URL)
    assert (int(created.group(1)), created.group(2)) == (cluster.port, name)
    workers = {cluster.ports["worker1"], cluster.ports["worker2"]}

    connection = await asyncpg.connect(created.group(0).removeprefix("DATABASE_URL="))
    try:
        active = await connection.fetch("SELECT * FROM citus_get_active_worker_nodes()")
        assert {(row["node_name"], row["node_port"]) for row in active} == {
            ("127.0.0.1", port) for port in workers
        }
        await connection.execute("CREATE TABLE t (w uuid, id int, PRIMARY KEY (w, id))")
        await connection.execute("SELECT create_distributed_table('t', 'w')")
        keys = [uuid.UUID(int=i) for i in range(1, 21)]  # fixed: the same shards every run
        await connection.executemany("INSERT INTO t VALUES ($1, $2)", [(w, i) for i, w in enumerate(keys)])

        read = await connection.fetch("SELECT w, id FROM t ORDER BY id")
        assert [(row["w"], row["id"]) for row in read] == [(w, i) for i, w in enumerate(keys)]
        placements = await connection.fetch(
            "SELECT DISTINCT nodename, nodeport FROM citus_shards WHERE table_name = 't'::regclass"
        )
        assert {(row["nodename"], row["nodeport"]) for row in placements} == {
            ("127.0.0.1", port) for port in workers
        }
        holding_rows = await connection.fetch(
            "SELECT DISTINCT nodeport FROM citus_shards WHERE table_name = 't'::regclass"
            " AND shardid IN (SELECT get_shard_id_for_distribution_column('t', w)"
            " FROM unnest($1::uuid[]) AS w)",
            keys,
        )
        assert {row["nodeport"] for row in holding_rows} == workers
    finally:
        await connection.close()


def test_createdb_refuses_a_name_that_is_not_a_plain_identifier(cluster: Cluster) -> None:
    for bad in ("Mneia", "a-b", "x;DROP DATABASE postgres", "1st", ""):
        result = citus("createdb", bad, state=cluster.state)
        assert result.returncode != 0, bad
        assert result.stdout == ""
        assert "not a plain identifier" in result.stderr, result.stderr


def test_createdb_refuses_when_no_cluster_is_up(scratch: Path) -> None:
    result = citus("createdb", "mneia_nowhere", state=scratch / "nothing")
    assert result.returncode != 0
    assert result.stdout == ""
    assert "no Citus cluster is up" in result.stderr, result.stderr


def test_add_worker_refuses_when_no_cluster_is_up(scratch: Path) -> None:
    """(Adding a worker to a running cluster: tests/test_citus_serve.py.)"""
    result = citus("add-worker", state=scratch / "nothing")
    assert result.returncode != 0
    assert result.stdout == ""
    assert "no Citus cluster is up" in result.stderr, result.stderr


def test_down_is_quiet_when_nothing_is_up(scratch: Path) -> None:
    result = citus("down", state=scratch / "nothing")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_the_pages_commands_run_as_written(scratch: Path) -> None:
    """docs/scale-out.md's block, pasted into bash: each line it shows is a line it prints."""
    page = SCRIPT.parents[1] / "docs" / "scale-out.md"
    (block,) = walkthrough.blocks(page.read_text(), "## What exists")
    state = scratch / "page"
    env = {**os.environ, "MNEIA_CITUS_DIR": str(state)}
    ran = subprocess.run(
        ["bash", "-e", "-c", block],
        cwd=SCRIPT.parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    try:
        assert ran.returncode == 0, ran.stderr
        shown = walkthrough.expected_output(block)
        assert walkthrough.reads_as(shown, ran.stdout.splitlines()), (shown, ran.stdout)
        assert not state.exists()  # the block's last line took the cluster down
    finally:
        citus("down", state=state)
