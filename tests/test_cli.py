"""The ``mneia`` command, run as a real subprocess against a real PostgreSQL.

What must stay true: every failure a user can cause (unreachable database,
taken port, bad URL, database not migrated) is one line on stderr with a
non-zero status and no traceback; ``serve`` answers over real HTTP, with
``DATABASE_URL`` or with the embedded server, and leaves no PostgreSQL behind.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil  # type: ignore[import-untyped]
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from mneia.config import APP_ROLE, async_url
from tests.database import fresh_name, with_database
from tests.graphql import Api, World
from tests.live import CLI, PATIENCE, UNREACHABLE, cli_env, free_port, serving
from tests.support import SHARED, rows

REPO = Path(__file__).resolve().parents[1]


def mneia(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mneia: "), lines[0]
    return lines[0]


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data directory outside pytest's temporary root.

    pytest resets its root (``/tmp/pytest-of-USER``) to mode 0700 whenever any
    session starts; as root, the embedded server runs as another system user,
    which would then be locked out of a data directory below it.
    """
    scratch = Path(tempfile.mkdtemp(prefix="mneia-cli-test-"))
    yield scratch / "data"
    shutil.rmtree(scratch, ignore_errors=True)


def graphql(base: str, query: str, token: str | None = None) -> dict[str, object]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.post(f"{base}/graphql", json={"query": query}, headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    assert not body.get("errors"), body
    return body["data"]


def test_schema_prints_the_sdl(tmp_path: Path) -> None:
    result = mneia("schema", env=cli_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "type Item" in result.stdout
    assert "assertItem" in result.stdout


def test_the_printed_schema_meets_the_whole_contract(tmp_path: Path) -> None:
    """R12 completes the contract: ``mneia schema`` lacks nothing of ../shared/contract (no gap),
    as .ci/run checks too, failing on any gap."""
    checker = SHARED / "tools" / "contract_check.py"
    if not checker.exists():
        pytest.skip(f"the contract is not beside this checkout ({checker})")
    printed = mneia("schema", env=cli_env(tmp_path))
    assert printed.returncode == 0, printed.stderr
    checked = subprocess.run(
        [sys.executable, str(checker)], input=printed.stdout, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "contract: met" in checked.stdout
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert "contract_check.py || true" not in ci


async def test_admin_bootstrap_json_gives_a_working_human_token(
    admin_url: str, api: Api, tmp_path: Path
) -> None:
    env = cli_env(tmp_path, DATABASE_URL=admin_url)
    result = await asyncio.to_thread(
        mneia, "admin", "bootstrap", "--workspace", "cli-ws", "--human", "Ada", "--json", env=env
    )
    assert result.returncode == 0, result.stderr
    made = json.loads(result.stdout)
    assert set(made) == {"workspaceId", "actorId", "token", "region"}
    assert made["region"] == "local"  # MNEIA_REGION unset, no --region
    me = await api.run(made["token"], "{ me { id name kind } }")
    assert me["me"] == {"id": made["actorId"], "name": "Ada", "kind": "HUMAN"}


async def test_admin_bootstrap_text_says_the_token_is_shown_once(
    admin_url: str, api: Api, tmp_path: Path
) -> None:
    env = cli_env(tmp_path, DATABASE_URL=admin_url)
    result = await asyncio.to_thread(
        mneia, "admin", "bootstrap", "--workspace", "cli-ws", "--human", "Bo", env=env
    )
    assert result.returncode == 0, result.stderr
    assert "shown once" in result.stdout
    token = result.stdout.strip().splitlines()[-1].rsplit(" ", 1)[-1]
    assert (await api.run(token, "{ me { name } }"))["me"]["name"] == "Bo"


async def test_admin_bootstrap_refuses_an_unmigrated_database(server: str, tmp_path: Path) -> None:
    name = fresh_name()
    maintenance = create_async_engine(async_url(server), isolation_level="AUTOCOMMIT")
    try:
        async with maintenance.connect() as connection:
            await connection.execute(text(f'CREATE DATABASE "{name}"'))
        env = cli_env(tmp_path, DATABASE_URL=with_database(server, name))
        result = await asyncio.to_thread(
            mneia, "admin", "bootstrap", "--workspace", "w", "--human", "h", env=env
        )
        assert "run `mneia migrate`" in one_line_error(result)
        assert result.returncode == 1
    finally:
        async with maintenance.connect() as connection:
            await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await maintenance.dispose()


def test_serve_refuses_a_taken_port_in_one_line(admin_url: str, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = mneia("serve", "--port", str(port), env=cli_env(tmp_path, DATABASE_URL=admin_url))
    line = one_line_error(result)
    assert f"port {port}" in line and "--port" in line


@pytest.mark.parametrize(
    "command",
    [
        ["migrate"],
        ["admin", "bootstrap", "--workspace", "w", "--human", "h"],
        ["serve", "--port", "0"],
    ],
    ids=["migrate", "bootstrap", "serve"],
)
def test_unreachable_database_is_one_line(command: list[str], tmp_path: Path) -> None:
    line = one_line_error(mneia(*command, env=cli_env(tmp_path, DATABASE_URL=UNREACHABLE)))
    assert "cannot reach the database at postgresql://postgres@127.0.0.1:1/nope" in line


def test_unreachable_database_hides_the_password(tmp_path: Path) -> None:
    url = "postgresql://postgres:hunter2@127.0.0.1:1/nope"
    line = one_line_error(mneia("migrate", env=cli_env(tmp_path, DATABASE_URL=url)))
    assert "hunter2" not in line and "cannot reach the database" in line


def test_database_url_with_another_scheme_is_a_usage_error(tmp_path: Path) -> None:
    result = mneia("migrate", env=cli_env(tmp_path, DATABASE_URL="mysql://root@localhost/db"))
    assert "postgresql://" in one_line_error(result)
    assert result.returncode == 2


def test_a_malformed_cors_origin_is_a_usage_error_in_one_line(tmp_path: Path) -> None:
    env = cli_env(tmp_path, DATABASE_URL=UNREACHABLE, MNEIA_CORS_ORIGINS="https://ok.example, not an origin")
    result = mneia("serve", "--port", "0", env=env)
    assert "MNEIA_CORS_ORIGINS" in one_line_error(result)
    assert result.returncode == 2


async def test_migrate_sets_the_app_password_safely(
    admin_url: str, admin_engine: AsyncEngine, tmp_path: Path
) -> None:
    password = 'it\'s %s $1 :x ? "q" \\ end'  # quotes, placeholders and a backslash
    read = text("SELECT rolpassword FROM pg_authid WHERE rolname = :role")
    async with admin_engine.connect() as connection:
        before = await connection.scalar(read, {"role": APP_ROLE})
    try:
        env = cli_env(tmp_path, DATABASE_URL=admin_url, MNEIA_APP_PASSWORD=password)
        result = await asyncio.to_thread(mneia, "migrate", env=env)
        assert result.returncode == 0, result.stderr
        async with admin_engine.connect() as connection:
            verifier = await connection.scalar(read, {"role": APP_ROLE})
        assert scram_matches(verifier, password), verifier
    finally:
        # The role is cluster-wide: put back what it had (a stored verifier is accepted as is).
        async with admin_engine.begin() as connection:
            restore = await connection.scalar(
                text("SELECT format('ALTER ROLE %I PASSWORD %L', CAST(:role AS text), CAST(:old AS text))"),
                {"role": APP_ROLE, "old": before},
            )
            await connection.exec_driver_sql(restore)


def scram_matches(verifier: str, password: str) -> bool:
    """Whether a PostgreSQL SCRAM-SHA-256 verifier was made from ``password`` (RFC 5802)."""
    _, rest = verifier.split("$", 1)
    iterations_salt, keys = rest.split("$")
    iterations, salt = iterations_salt.split(":")
    stored_key = keys.split(":")[0]
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(salt), int(iterations))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    return base64.b64encode(hashlib.sha256(client_key).digest()).decode() == stored_key


def said(log: Path, text: str) -> str:
    """The log once ``text`` is in it: a step said from another thread may come a moment later."""
    deadline = time.monotonic() + PATIENCE
    while text not in (printed := log.read_text()):
        assert time.monotonic() < deadline, f"{text!r} not said within {PATIENCE:.0f} s: {printed}"
        time.sleep(0.05)
    return printed


def test_serve_answers_graphql_over_http(admin_url: str, tmp_path: Path) -> None:
    with serving([], cli_env(tmp_path, DATABASE_URL=admin_url), tmp_path) as (process, base):
        assert graphql(base, "{ __typename }") == {"__typename": "Query"}
        said(tmp_path / "serve.out", f"ready at {base}/graphql")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=PATIENCE) == 0
    assert "Traceback" not in (tmp_path / "serve.err").read_text()


async def test_issue_26_serve_says_each_step_and_ready_only_once_it_answers(
    server: str, tmp_path: Path
) -> None:
    """On a database with no schema yet: the database, each migration as it is applied, the workers,
    then "ready", in that order, on stdout; "ready" once /healthz answers, never before it."""
    name = fresh_name()
    maintenance = create_async_engine(async_url(server), isolation_level="AUTOCOMMIT")
    async with maintenance.connect() as connection:
        await connection.execute(text(f'CREATE DATABASE "{name}"'))
    port = free_port()

    def served() -> str:
        log = tmp_path / "steps.out"
        with log.open("wb") as out, (tmp_path / "steps.err").open("wb") as err:
            env = cli_env(tmp_path, DATABASE_URL=with_database(server, name))
            process = subprocess.Popen([*CLI, "serve", "--port", str(port)], env=env, stdout=out, stderr=err)
            try:
                printed = said(log, "ready at")
                # Said only after /healthz answered: it answers now, at once.
                assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
                return printed
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=PATIENCE)

    try:
        printed = await asyncio.to_thread(served)
    finally:
        async with maintenance.connect() as connection:
            await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await maintenance.dispose()
    lines = printed.splitlines()
    steps = [
        "mneia: using the database at",
        "mneia: migrating",
        "mneia: applied migration 0001_foundation",
        "mneia: applied migration 0029_workspace_region",
        "mneia: starting 1 worker on 127.0.0.1:",
        f"mneia: ready at http://127.0.0.1:{port}/graphql",
    ]
    found = [next(n for n, line in enumerate(lines) if line.startswith(step)) for step in steps]
    assert found == sorted(found), printed
    assert sum(line.startswith("mneia: applied migration") for line in lines) == len(
        list((REPO / "alembic" / "versions").glob("*_*.py"))
    ), printed


def test_issue_26_version_and_every_option_explained() -> None:
    """``mneia --version`` (answered by the console script before the server's imports, and by the
    parser alike); every option and argument of every command has help, and an option's default
    shows in it; ``mneia mcp --help`` lists the environment it reads."""
    from mneia import cli, version

    assert mneia("--version", env=cli_env(Path(tempfile.gettempdir()))).stdout == f"mneia {version()}\n"
    parsed = subprocess.run(
        [sys.executable, "-m", "mneia.cli", "--version"], capture_output=True, text=True, timeout=120
    )
    assert parsed.stdout == f"mneia {version()}\n"
    unexplained = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif not action.help:
                unexplained.append(f"{path} {action.option_strings or action.dest}")

    walk(cli.parser(), "mneia")
    assert unexplained == []
    serve_help = " ".join(mneia("serve", "--help", env=cli_env(Path(tempfile.gettempdir()))).stdout.split())
    assert "(default: 127.0.0.1)" in serve_help and "(default: 8000)" in serve_help
    mcp_help = mneia("mcp", "--help", env=cli_env(Path(tempfile.gettempdir()))).stdout
    for variable in ("MNEIA_URL", "MNEIA_TOKEN", "MNEIA_PROJECT", "CLAUDE_CODE_SESSION_ID"):
        assert variable in mcp_help, mcp_help


def bootstrap_beside(env: dict[str, str], data_dir: Path) -> str:
    """A human's token, made by a second process attached to the running embedded server."""
    command = ["admin", "bootstrap", "--workspace", "w", "--human", "h", "--json"]
    made = mneia(*command, "--data-dir", str(data_dir), env=env)
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["token"])


def test_serve_with_the_embedded_server_and_a_bootstrap_beside_it(tmp_path: Path, data_dir: Path) -> None:
    env = cli_env(tmp_path)
    with serving(["--data-dir", str(data_dir)], env, tmp_path) as (process, base):
        token = bootstrap_beside(env, data_dir)
        assert graphql(base, "{ me { kind } }", token) == {"me": {"kind": "HUMAN"}}
        said(tmp_path / "serve.out", f"ready at {base}/graphql (database: embedded PostgreSQL at {data_dir}")
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=PATIENCE) == 0, (tmp_path / "serve.err").read_text()
    assert f"starting the embedded PostgreSQL in {data_dir}" in (tmp_path / "serve.out").read_text()
    pgdata = data_dir / "postgres"
    assert not (pgdata / "postmaster.pid").exists()
    left = [
        process.pid
        for process in psutil.process_iter(["cmdline"])
        if str(pgdata) in " ".join(process.info["cmdline"] or [])
    ]
    assert left == [], f"PostgreSQL still running for {pgdata}: {left}"


def _workers_of(process: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The serving children of ``mneia serve`` (multiprocessing's resource tracker is not one)."""
    children = psutil.Process(process.pid).children(recursive=True)
    return [child for child in children if "spawn_main" in " ".join(child.cmdline())]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_workers_share_the_socket_and_stop_together(
    admin_url: str, tmp_path: Path, stop: signal.Signals
) -> None:
    """--workers 2: two processes answer on one port; one signal to the parent stops them all."""
    env = cli_env(tmp_path, DATABASE_URL=admin_url)
    with serving(["--workers", "2"], env, tmp_path) as (process, base):
        workers = _workers_of(process)
        assert len(workers) == 2, [w.cmdline() for w in workers]
        for _ in range(20):
            assert graphql(base, "{ __typename }") == {"__typename": "Query"}
        process.send_signal(stop)
        assert process.wait(timeout=PATIENCE) == 0, (tmp_path / "serve.err").read_text()
        gone, alive = psutil.wait_procs(workers, timeout=10)
        assert alive == [], f"workers left running: {[w.pid for w in alive]}"
    assert ", 2 workers" in (tmp_path / "serve.out").read_text()
    assert "Traceback" not in (tmp_path / "serve.err").read_text()


def _listening(worker: psutil.Process, port: int) -> bool:
    return any(
        connection.status == psutil.CONN_LISTEN and connection.laddr.port == port
        for connection in worker.net_connections(kind="tcp")
    )


def _established_by(worker: psutil.Process, port: int) -> int:
    return sum(
        1
        for connection in worker.net_connections(kind="tcp")
        if connection.status == psutil.CONN_ESTABLISHED and connection.laddr.port == port
    )


def test_serve_workers_share_a_pool_opened_at_once(admin_url: str, tmp_path: Path) -> None:
    """32 keep-alive connections opened together land on both workers, not all on the first awake.

    With one listening socket an idle worker accepted every pending
    connection in one go (15 of wrk's 16 went to one of two workers); each
    worker now listens on its own SO_REUSEPORT socket (mneia.http.listener).
    Even split by hash, a worker with 3 or fewer of 32 has odds of about 1e-6.
    """
    env = cli_env(tmp_path, DATABASE_URL=admin_url)
    with serving(["--workers", "2"], env, tmp_path) as (process, base):
        port = httpx.URL(base).port
        assert port is not None
        workers = _workers_of(process)
        deadline = time.monotonic() + PATIENCE
        while not all(_listening(worker, port) for worker in workers):  # the first to listen answered
            assert time.monotonic() < deadline, "a worker never listened"
            time.sleep(0.05)
        # The pool opens while one worker is busy (stopped here, as by a long request or a
        # collection): with one shared socket the other accepted all of it.
        workers[1].suspend()
        try:
            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
            time.sleep(0.2)  # what the running worker would take, it has taken
        finally:
            workers[1].resume()
        try:
            for client in clients:  # each one served, so each one accepted
                client.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            for client in clients:
                assert client.recv(64).startswith(b"HTTP/1.1 "), "no answer"
            held = [_established_by(worker, port) for worker in workers]
        finally:
            for client in clients:
                client.close()
    assert sum(held) == 32, held
    assert min(held) >= 4, f"connections per worker: {held}"


def test_serve_workers_with_the_embedded_server_leave_no_postgres(tmp_path: Path, data_dir: Path) -> None:
    """Migrations and the embedded server happen once, in the parent; SIGTERM stops the workers, then it."""
    env = cli_env(tmp_path)
    with serving(["--workers", "2", "--data-dir", str(data_dir)], env, tmp_path) as (process, base):
        token = bootstrap_beside(env, data_dir)
        for _ in range(10):
            assert graphql(base, "{ me { kind } }", token) == {"me": {"kind": "HUMAN"}}
        workers = _workers_of(process)
        assert len(workers) == 2
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=PATIENCE) == 0, (tmp_path / "serve.err").read_text()
        assert psutil.wait_procs(workers, timeout=10)[1] == []
    pgdata = data_dir / "postgres"
    assert not (pgdata / "postmaster.pid").exists()
    left = [
        p.pid for p in psutil.process_iter(["cmdline"]) if str(pgdata) in " ".join(p.info["cmdline"] or [])
    ]
    assert left == [], f"PostgreSQL still running for {pgdata}: {left}"


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_serve_refuses_a_bad_number_of_workers(value: str, tmp_path: Path) -> None:
    result = mneia("serve", "--workers", value, env=cli_env(tmp_path, DATABASE_URL=UNREACHABLE))
    assert result.returncode == 2
    assert "--workers" in result.stderr and "Traceback" not in result.stderr


def test_ci_runs_the_readme_install_and_test_line() -> None:
    script = (REPO / ".ci" / "run").read_text().splitlines()
    marker = next(i for i, line in enumerate(script) if "identical to the README" in line)
    command = script[marker + 1].strip()
    assert command.startswith("python3 -m venv .venv")
    assert command in (REPO / "README.md").read_text()


async def test_admin_rotate_seal_key_keeps_tokens_working(
    admin_url: str, api: Api, admin_engine: AsyncEngine, tmp_path: Path, world: World
) -> None:
    """A new key for the seals: tokens and data are untouched, the key itself changes."""
    key = "SELECT encode(inner_pad, 'hex') AS pad FROM seal_keys"
    (before,) = await rows(admin_engine, key)
    env = cli_env(tmp_path, DATABASE_URL=admin_url)
    result = await asyncio.to_thread(mneia, "admin", "rotate-seal-key", env=env)
    assert result.returncode == 0, result.stderr
    (after,) = await rows(admin_engine, key)
    assert after != before
    assert (await api.run(world.human.token, "{ me { id } }"))["me"]["id"] == world.human.id


def test_a_worker_hides_what_it_built_at_start_from_the_garbage_collector(tmp_path: Path) -> None:
    """``mneia serve``'s worker app freezes the heap it was built with (cli.worker_app): full
    collections then walk only what requests made, instead of stalling every request in flight."""
    probe = (
        "import gc, sys\n"
        "from mneia.cli import worker_app\n"
        "before = gc.get_freeze_count()\n"
        f"worker_app({UNREACHABLE!r})\n"
        "print(before, gc.get_freeze_count())\n"
    )
    done = subprocess.run(
        [CLI[0], "-c", probe], env=cli_env(tmp_path), capture_output=True, text=True, timeout=60, check=True
    )
    before, after = (int(n) for n in done.stdout.split())
    assert before == 0 and after > 10_000, done.stdout


class McpOverFreshConnections:
    """An MCP client over raw HTTP whose every request opens a connection of its own, as a client
    does whose pool closed the last one: each may reach either worker."""

    def __init__(self, base: str, token: str) -> None:
        self.url = f"{base}/mcp"
        self.headers = {
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}",
            "mcp-protocol-version": "2025-06-18",
        }
        self.session: str | None = None

    def session_headers(self, session: str | None = None) -> dict[str, str]:
        chosen = session or self.session
        return {**self.headers, **({"mcp-session-id": chosen} if chosen else {})}

    def post(self, message: dict[str, object], session: str | None = None) -> httpx.Response:
        return httpx.post(self.url, json=message, headers=self.session_headers(session), timeout=30)

    def end(self) -> httpx.Response:
        return httpx.delete(self.url, headers=self.session_headers(), timeout=30)

    def call(self, n: int, method: str, **params: object) -> dict[str, object]:
        answer = self.post({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        assert answer.status_code == 200, (answer.status_code, answer.text)
        data = next(line for line in answer.text.splitlines() if line.startswith("data: "))
        found = json.loads(data.removeprefix("data: "))
        assert "result" in found, found
        if self.session is None:
            self.session = answer.headers["mcp-session-id"]
        return dict(found["result"])


SAID_OVER_FRESH_CONNECTIONS = (
    "SELECT DISTINCT s.id, c.tool, c.version FROM items i"
    " JOIN sessions s ON s.workspace_id = i.workspace_id AND s.id = i.session_id"
    " JOIN clients c ON c.workspace_id = s.workspace_id AND c.id = s.client_id"
    " WHERE i.project_id = CAST(:project AS uuid) AND i.statement LIKE 'Fact % over a new connection'"
)


async def test_serve_workers_keep_an_mcp_session_whatever_connection_its_requests_take(
    admin_url: str, tmp_path: Path, api: Api, world: World
) -> None:
    """An MCP session lives in the worker that opened it; its requests reach that worker whichever
    worker accepted their connection (mcp.affinity), so it stays one session: one client, one
    Mneia session for its writes. Without it, about half the requests below answered 404."""
    env = cli_env(tmp_path, DATABASE_URL=admin_url)
    with serving(["--workers", "2"], env, tmp_path) as (process, base):
        client = McpOverFreshConnections(base, world.agent.token)
        hello = {"name": "claude-code", "version": "2.1.3"}
        client.call(1, "initialize", protocolVersion="2025-06-18", capabilities={}, clientInfo=hello)
        assert client.session is not None
        owner = int(client.session.partition(".")[0])
        assert owner in {worker.pid for worker in _workers_of(process)}, client.session
        client.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for n in range(16):
            fact = {"kind": "FACT", "statement": f"Fact {n} over a new connection"}
            answer = client.call(2 + n, "tools/call", name="assert_item", arguments=fact)
            assert not answer.get("isError"), answer
        # The stream a client opens (GET) and the session's end (DELETE) reach the owner too.
        with httpx.stream("GET", client.url, headers=client.session_headers(), timeout=30) as stream:
            assert stream.status_code == 200, stream.status_code
            assert stream.headers["content-type"].startswith("text/event-stream")
        ended = client.end()
        assert ended.status_code in (200, 204), ended.text
        listing = {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}
        assert [client.post(listing).status_code for _ in range(4)] == [404] * 4
        assert client.post(listing, session="4294967296.of-no-worker").status_code == 404
        assert client.post(listing, session="../../etc.passwd").status_code == 404
    sessions = await rows(api.admin_engine, SAID_OVER_FRESH_CONNECTIONS, project=world.project_id)
    assert [(row["tool"], row["version"]) for row in sessions] == [("claude-code", "2.1.3")], sessions


def test_issue_21_a_test_run_killed_with_sigterm_stops_its_embedded_postgresql(tmp_path: Path) -> None:
    """Killing the run left the tests' embedded PostgreSQL running. The suite now stops on SIGTERM as
    on Ctrl-C: the session's teardown runs and the server stops with it."""
    env = {k: v for k, v in os.environ.items() if k != "MNEIA_TEST_DATABASE_URL"}
    # The signal may land while initdb still writes the run's data directory: what it leaves then
    # stays under this test's own directory, which pytest removes, not in the machine's /tmp.
    env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    module = str(Path(__file__).with_name("test_api_tokens.py"))
    with (tmp_path / "run.out").open("wb") as out:
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", module],
            env=env,
            stdout=out,
            stderr=out,
        )
        parent = psutil.Process(run.pid)
        deadline = time.monotonic() + PATIENCE
        servers: list[psutil.Process] = []
        while not servers:  # wait for the embedded server to run under the test run
            assert run.poll() is None, (tmp_path / "run.out").read_text()
            assert time.monotonic() < deadline, "no embedded PostgreSQL started"
            servers = [p for p in parent.children(recursive=True) if p.name() == "postgres"]
            time.sleep(0.1)
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=PATIENCE)
    gone, alive = psutil.wait_procs(servers, timeout=PATIENCE)
    assert alive == [], (tmp_path / "run.out").read_text()
    assert "KeyboardInterrupt: signal 15" in (tmp_path / "run.out").read_text()


INTERRUPTED = """
import signal, sys
sys.path.insert(0, {root!r})
from tests.live import interruptible
# As in a terminal's foreground: a suite started in the background (nohup, &) hands its children
# SIGINT ignored, and Python then raises no KeyboardInterrupt at all.
signal.signal(signal.SIGINT, signal.default_int_handler)
print("started", flush=True)
interruptible(["sh", "-c", "sleep 300 & echo $! > {pid_file}; wait"], timeout=600)
"""


def test_issue_21_ctrl_c_stops_a_command_the_tests_run_and_what_it_started(tmp_path: Path) -> None:
    """Ctrl-C was ignored three times while a fixture ran ``npm ci``. ``tests.live.interruptible``
    (what runs it now) stops at the first SIGINT, and kills the command's whole process group: here
    a shell and the ``sleep`` it started, standing in for npm and its workers."""
    pid_file = tmp_path / "sleep.pid"
    script = INTERRUPTED.format(root=str(Path(__file__).resolve().parents[1]), pid_file=pid_file)
    run = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None and run.stdout.readline().strip() == "started"
    deadline = time.monotonic() + PATIENCE
    while not pid_file.exists() or not pid_file.read_text().strip():  # the sleep runs
        assert run.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    sleeper = psutil.Process(int(pid_file.read_text()))
    started = time.monotonic()
    run.send_signal(signal.SIGINT)
    assert run.wait(timeout=PATIENCE) != 0
    gone, alive = psutil.wait_procs([sleeper], timeout=PATIENCE)
    assert alive == [] and time.monotonic() - started < PATIENCE
