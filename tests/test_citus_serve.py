"""The API served on a Citus cluster: each request on the node that holds its workspace (issue 25).

What must stay true, on a real cluster (``scripts/citus.sh``, a coordinator and two workers in a
state directory of this module's own, migrated by the real ``mneia migrate``), through the real
ASGI application built as ``mneia serve`` builds it on Citus (``create_app`` with ``Nodes``):

- people of workspaces held by either worker each create a project, assert, confirm and read
  items, rehydrate and write a handoff, as on one server;
- R1: a workspace's token sees nothing of another's, on the same worker or the other, and
  writes nothing there; R3: an agent cannot confirm (human-only authority);
- the readiness probe reads the revision on the coordinator; a token naming no workspace
  (minted before migration 0024) is refused, saying it cannot be routed;
- a workspace whose shard group moves to the other worker is found there after the map, which
  still names the old worker, is read again once; an unknown token reads it once, not again;
- ``storage.citus.other_nodes`` (where the notifications' hub also listens) lists every worker
  from the coordinator, as the server's role;
- the real ``mneia serve`` finds the citus extension and routes the same way.

Opt-in (``MNEIA_CITUS=1``), as every Citus module (tests/citus.py).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.config import app_url
from mneia.storage import citus, node
from mneia.storage.database import create_engine
from tests.citus import ASKED, Cluster, migrated_cluster, mneia_migrate, output, scratch_directory
from tests.forwarder import forwarding
from tests.graphql import Api, World
from tests.live import CLI, PATIENCE, cli_env, free_port, serving
from tests.support import CONFIRM_ITEM, assert_code, assert_human_required, rehydrate

pytestmark = [pytest.mark.slow, ASKED]

HOME = (  # the worker holding a workspace's shard group, from the coordinator's metadata
    "SELECT nodeport FROM citus_shards"
    " WHERE shardid = get_shard_id_for_distribution_column('workspaces', $1::uuid)"
)
ITEM = "query($i: ID!) { item(id: $i) { id statement status authority } }"
START = 'mutation($p: ID!) { startSession(input: {projectId: $p, task: "Refunds"}) { id } }'
CHECKPOINT = """mutation($i: CheckpointInput!) { checkpoint(input: $i) {
  id summary itemsAsserted { id } project { id } } }"""
LATEST = "query($p: ID!) { latestHandoff(projectId: $p) { id summary } }"


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with scratch_directory("mneia-citus-serve-") as directory:
        yield directory


@pytest.fixture(scope="module")
def cluster(scratch: Path) -> Iterator[Cluster]:
    with migrated_cluster(scratch) as migrated:
        yield migrated


@dataclass
class Served:
    """The routed application over httpx, as ``mneia serve`` builds it on a Citus coordinator."""

    cluster: Cluster
    api: Api
    nodes: node.Nodes
    coordinator: AsyncEngine  # the server's (mneia_app) engine on the coordinator

    async def home(self, workspace_id: str | uuid.UUID) -> int:
        connection = await self.cluster.connect(self.cluster.coordinator)
        try:
            port: int = await connection.fetchval(HOME, str(workspace_id))
        finally:
            await connection.close()
        return port


@pytest.fixture(scope="module")
async def served(cluster: Cluster) -> AsyncIterator[Served]:
    admin = create_engine(cluster.url, pool_size=1)
    coordinator = create_engine(app_url(cluster.url), pool_size=2)
    assert await citus.detected(cluster.url), "the cluster's database has no citus extension"
    nodes = node.Nodes(coordinator, pool_size=2)
    app = create_app(coordinator, dispose_engine=False, nodes=nodes)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://mneia.test"
        ) as http:
            yield Served(cluster, Api(http, admin), nodes, coordinator)
    finally:
        await nodes.dispose()
        await coordinator.dispose()
        await admin.dispose()


@dataclass(frozen=True)
class Worlds:
    """Two workspaces (a human, an agent, a project each) whose shards are on different workers."""

    one: World
    other: World


@pytest.fixture(scope="module")
async def worlds(served: Served) -> Worlds:
    """Workspaces bootstrapped as ``mneia admin bootstrap`` does, until both workers hold one; the
    actors and projects created through the routed app."""
    made: list[tuple[World, int]] = []
    for _ in range(24):
        world = await served.api.world()
        made.append((world, await served.home(world.workspace_id)))
        first = made[0]
        elsewhere = [w for w, home in made if home != first[1]]
        if elsewhere:
            return Worlds(first[0], elsewhere[0])
    raise AssertionError(f"24 workspaces, all on one worker: {[home for _, home in made]}")


async def work(api: Api, world: World, statement: str) -> dict[str, Any]:
    """A human's day through the API: an agent's item confirmed, read back, a slice, a handoff."""
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement=statement)
    await api.run(world.human.token, CONFIRM_ITEM, i=item["id"])
    read = (await api.run(world.human.token, ITEM, i=item["id"]))["item"]
    slice_ = await rehydrate(api, world.agent.token, world.project_id, "Refunds", 2000)
    session = (await api.run(world.agent.token, START, p=world.project_id))["startSession"]["id"]
    handoff = (
        await api.run(
            world.agent.token, CHECKPOINT, i={"sessionId": session, "summary": f"Stopped: {statement}"}
        )
    )["checkpoint"]
    latest = (await api.run(world.human.token, LATEST, p=world.project_id))["latestHandoff"]
    return {"item": item, "read": read, "slice": slice_, "handoff": handoff, "latest": latest}


async def test_r1_each_workspace_is_served_on_its_own_worker(served: Served, worlds: Worlds) -> None:
    homes = {await served.home(w.workspace_id) for w in (worlds.one, worlds.other)}
    assert homes == set(served.cluster.workers), homes
    for world in (worlds.one, worlds.other):
        statement = f"Refunds settle within {5 + (world is worlds.other)} days"
        done = await work(served.api, world, statement)
        assert done["read"] == {**done["read"], "statement": statement, "authority": "HUMAN_CONFIRMED"}
        assert done["item"]["id"] in {e["item"]["id"] for e in done["slice"]["entries"]}
        assert done["handoff"]["project"]["id"] == world.project_id
        assert done["latest"] == {"id": done["handoff"]["id"], "summary": f"Stopped: {statement}"}
    # Each request ran on its workspace's worker: the pools the map built are the workers'.
    assert sorted(engine.url.port for engine in served.nodes.pools()) == sorted(homes)


async def test_r1_a_workspaces_token_sees_nothing_of_another_and_writes_nothing_there(
    served: Served, worlds: Worlds
) -> None:
    one, other = worlds.one, worlds.other
    theirs = await served.api.assert_item(other.human.token, projectId=other.project_id, statement="Theirs")
    assert (await served.api.run(one.human.token, ITEM, i=theirs["id"]))["item"] is None
    count = "query($p: ID!) { items(projectId: $p) { totalCount } }"
    error = await served.api.fail(one.human.token, count, p=other.project_id)
    assert_code(error, "NOT_FOUND")
    error = await served.api.fail(
        one.human.token,
        "mutation($i: AssertItemInput!) { assertItem(input: $i) { id } }",
        i={"projectId": other.project_id, "kind": "FACT", "statement": "Planted"},
    )
    assert_code(error, "NOT_FOUND")
    error = await served.api.fail(one.human.token, CONFIRM_ITEM, i=theirs["id"])
    assert_code(error, "NOT_FOUND")
    mine = (await served.api.run(other.human.token, count, p=other.project_id))["items"]["totalCount"]
    statements = "query($p: ID!) { items(projectId: $p) { nodes { statement } } }"
    listed = (await served.api.run(other.human.token, statements, p=other.project_id))["items"]["nodes"]
    assert "Planted" not in {n["statement"] for n in listed} and mine == len(listed)


async def test_r3_an_agent_cannot_confirm_on_citus(served: Served, worlds: Worlds) -> None:
    world = worlds.other
    item = await served.api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Unconfirmed"
    )
    error = await served.api.fail(world.agent.token, CONFIRM_ITEM, i=item["id"])
    assert_human_required(error)
    read = (await served.api.run(world.human.token, ITEM, i=item["id"]))["item"]
    assert read["authority"] != "HUMAN_CONFIRMED", read


async def test_readiness_reads_the_revision_on_the_coordinator(served: Served) -> None:
    response = await served.api.http.get("/readyz")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "ready"


async def test_a_token_naming_no_workspace_is_refused_as_unroutable(served: Served) -> None:
    before_0024 = "mneia_" + "A" * 43  # the shape of a token minted before migration 0024
    error = await served.api.fail(before_0024, "{ __typename }")
    assert_code(error, "UNAUTHENTICATED")
    assert "names no workspace" in error["message"] and "Citus" in error["message"], error
    error = await served.api.fail("not-a-token", "{ me { id } }")
    assert error["message"] == "unknown or revoked bearer token", error


async def test_other_nodes_lists_every_worker_from_the_coordinator(served: Served) -> None:
    url = served.coordinator.url.render_as_string(hide_password=False).replace("+asyncpg", "")
    connection = await asyncpg.connect(url)
    try:
        listed = await citus.other_nodes(connection, url)
    finally:
        await connection.close()
    ports = [int(re.search(r":(\d+)/", url).group(1)) for url in listed]  # type: ignore[union-attr]
    assert sorted(ports) == sorted(served.cluster.workers), listed
    assert all(url.startswith("postgresql://mneia_app") for url in listed), listed


async def test_a_moved_workspace_is_found_on_its_new_worker_after_the_map_is_read_again(
    served: Served, worlds: Worlds
) -> None:
    world = worlds.one
    before = await work(served.api, world, "Written before the move")  # the map names the old worker
    old = await served.home(world.workspace_id)
    new = next(port for port in served.cluster.workers if port != old)
    left = await citus.move(served.cluster.url, uuid.UUID(world.workspace_id), "127.0.0.1", new)
    assert left[1] == old
    assert await served.home(world.workspace_id) == new
    cached = served.nodes._where[uuid.UUID(world.workspace_id)]
    assert cached[1] == old, "the map was read again before any request asked"
    read = (await served.api.run(world.human.token, ITEM, i=before["item"]["id"]))["item"]
    assert read["statement"] == "Written before the move"
    assert served.nodes._where[uuid.UUID(world.workspace_id)][1] == new
    after = await work(served.api, world, "Written after the move")
    assert after["read"]["authority"] == "HUMAN_CONFIRMED"
    # R1 still holds after the move: the other workspace sees none of it.
    assert (await served.api.run(worlds.other.human.token, ITEM, i=after["item"]["id"]))["item"] is None


async def test_an_unknown_token_reads_the_map_once_and_is_refused(served: Served, worlds: Worlds) -> None:
    world = worlds.other
    forged = world.human.token[:10] + ("B" if world.human.token[10] != "B" else "C") + world.human.token[11:]
    reads: list[uuid.UUID] = []
    node_of = served.nodes._node_of

    async def counted(workspace_id: uuid.UUID) -> tuple[str, int]:
        reads.append(workspace_id)
        return await node_of(workspace_id)

    served.nodes._node_of = counted  # type: ignore[method-assign]
    try:
        error = await served.api.fail(forged, "{ me { id } }")
    finally:
        del served.nodes._node_of
    assert_code(error, "UNAUTHENTICATED")
    assert reads == [uuid.UUID(world.workspace_id)], reads  # once after the refusal, not in a loop


def test_mneia_serve_finds_citus_and_routes_each_request_to_its_workspaces_node(
    served: Served, worlds: Worlds, scratch: Path
) -> None:
    logs = scratch / "serve"
    logs.mkdir(exist_ok=True)
    asked = {"query": "{ me { id } }"}
    oidc = {
        "MNEIA_OIDC_ISSUER": "https://idp.example",
        "MNEIA_OIDC_CLIENT_ID": "mneia",
        "MNEIA_OIDC_CLIENT_SECRET": "s3cret",
        "MNEIA_PUBLIC_URL": "https://mneia.example",
    }
    with serving([], cli_env(scratch, DATABASE_URL=served.cluster.url, **oidc), logs) as (_, base):
        answers = [
            httpx.post(
                f"{base}/graphql",
                json=asked,
                headers={"Authorization": f"Bearer {w.human.token}"},
                timeout=60,
            ).json()
            for w in (worlds.one, worlds.other)
        ]
        ready = httpx.get(f"{base}/readyz", timeout=60)
        # OpenID sign-in is served on Citus too (tests/test_oidc.py signs in on a cluster): the
        # button is there, and a provider that cannot be reached is said so, not an error.
        login = httpx.get(f"{base}/auth/login", timeout=60)
        page = httpx.get(f"{base}/inbox", timeout=60, follow_redirects=True)
    assert login.status_code == 503 and "could not be reached" in login.text, login.text
    assert page.status_code == 200 and "/auth/login" in page.text, page.text
    assert "sign-in is off" not in (logs / "serve.err").read_text()
    # Through the coordinator alone these tokens would bind nobody (tests/test_citus_migrate.py).
    assert [a.get("data") for a in answers] == [
        {"me": {"id": w.human.id}} for w in (worlds.one, worlds.other)
    ]
    assert ready.status_code == 200, ready.text
    assert "a Citus coordinator: each request runs on the node" in (logs / "serve.out").read_text()


def test_mneia_serve_with_regions_routes_a_citus_regions_requests_to_their_workspaces_nodes(
    served: Served, worlds: Worlds, scratch: Path
) -> None:
    """Issue 25: ``mneia serve`` with MNEIA_REGIONS, one region a Citus cluster (as each region may
    be) beside one whose database does not answer: the cluster's region is found to be Citus when
    the server starts, and each of its requests runs on its workspace's node, as with
    DATABASE_URL alone (through the coordinator its tokens would bind nobody); the other region
    is said unreachable and served anyway."""
    logs = scratch / "serve-regions"
    logs.mkdir(exist_ok=True)
    absent = f"postgresql://mneia_app@127.0.0.1:{free_port()}/absent"
    env = cli_env(scratch, MNEIA_REGIONS=f"local={app_url(served.cluster.url)},eu={absent}")
    with serving([], env, logs) as (_, base):
        answers = [
            httpx.post(
                f"{base}/graphql",
                json={"query": "{ me { id } }"},
                headers={"Authorization": f"Bearer {w.human.token}"},
                timeout=60,
            ).json()
            for w in (worlds.one, worlds.other)
        ]
    assert [a.get("data") for a in answers] == [
        {"me": {"id": w.human.id}} for w in (worlds.one, worlds.other)
    ]
    said = (logs / "serve.out").read_text() + (logs / "serve.err").read_text()
    assert "region local: a Citus coordinator" in said, said
    assert "region eu" in said and "cannot reach" in said, said


def test_a_citus_region_that_answers_only_after_the_start_runs_its_requests_on_their_nodes(
    served: Served, worlds: Worlds, scratch: Path
) -> None:
    """A region whose database does not answer when ``mneia serve`` starts is served anyway, and
    asked again until it answers; a Citus coordinator's is then routed as if it had answered at
    the start: each request on its workspace's node, without a restart. (Before, it was served as
    one server until restarted, and its tokens bound nobody through the coordinator.) Here the
    region names a port where nothing listens, until the test passes it through to the
    coordinator."""
    logs = scratch / "serve-late"
    logs.mkdir(exist_ok=True)
    coordinator = make_url(served.cluster.url)
    port = free_port()
    late = make_url(app_url(served.cluster.url)).set(port=port).render_as_string(hide_password=False)
    asked = {"query": "{ me { id } }"}

    def me(base: str, world: World) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {world.human.token}"}
        answer: dict[str, Any] = httpx.post(f"{base}/graphql", json=asked, headers=headers, timeout=60).json()
        return answer

    env = cli_env(scratch, MNEIA_REGIONS=f"local={late}")
    with serving([], env, logs, healthy=False) as (_, base):
        before = me(base, worlds.one)
        with forwarding(port, (str(coordinator.host), int(coordinator.port or 5432))):
            deadline = time.monotonic() + PATIENCE
            answers = [me(base, w) for w in (worlds.one, worlds.other)]
            while any(a.get("data") is None for a in answers) and time.monotonic() < deadline:
                time.sleep(0.5)
                answers = [me(base, w) for w in (worlds.one, worlds.other)]
    assert before.get("data") is None and before.get("errors"), before
    assert [a.get("data") for a in answers] == [
        {"me": {"id": w.human.id}} for w in (worlds.one, worlds.other)
    ], answers
    said = (logs / "serve.out").read_text() + (logs / "serve.err").read_text()
    assert "region local" in said and "asked again every second" in said, said
    assert "region local: answers now, a Citus coordinator" in said, said


SHELL_POLICIES = (
    "SELECT p.tablename, p.policyname FROM pg_catalog.pg_policies p"
    " JOIN pg_dist_partition d ON d.logicalrelid = format('public.%I', p.tablename)::regclass"
    " WHERE p.schemaname = 'public'"
)
"""The policies of the shell tables a node holds (a shard is no Citus table of the catalogue's)."""


async def test_mneia_migrate_gives_a_worker_what_it_lacks_of_the_build(
    served: Served, worlds: Worlds, scratch: Path
) -> None:
    """A worker that lost what the build wrote on each node itself (the key table and its key, the
    shell tables' policies), both dropped on a worker of this cluster: its workspace's requests
    fail, the other worker's are served. ``mneia migrate`` again, on the database built already,
    writes them where they are missing; the requests are served again, and the other worker keeps
    what it held."""
    world = worlds.other
    home = await served.home(world.workspace_id)
    other = worlds.one  # a workspace of the other worker (an earlier test may have moved one)
    for _ in range(24):
        if await served.home(other.workspace_id) != home:
            break
        other = await served.api.world()
    assert await served.home(other.workspace_id) != home
    connection = await served.cluster.connect(home)
    try:
        held = {tuple(row) for row in await connection.fetch(SHELL_POLICIES)}
        assert len(held) > 50, held
        async with connection.transaction():
            await connection.execute("SET LOCAL citus.enable_ddl_propagation = off")
            await connection.execute("DROP TABLE public.seal_keys")
            for table, name in held:
                await connection.execute(f"DROP POLICY {name} ON public.{table}")
        assert await connection.fetch(SHELL_POLICIES) == []
        lacking = await served.api.http.post(
            "/graphql",
            json={"query": "{ me { id } }"},
            headers={"Authorization": f"Bearer {world.human.token}"},
        )
        assert lacking.json().get("errors"), lacking.text
        assert (await served.api.run(other.human.token, "{ me { id } }"))["me"]["id"] == other.human.id

        result = mneia_migrate(served.cluster, scratch)
        assert result.returncode == 0, result.stderr
        assert {tuple(row) for row in await connection.fetch(SHELL_POLICIES)} == held
        assert await connection.fetchval("SELECT count(*) FROM public.seal_keys") == 1
    finally:
        await connection.close()
    for each in (world, other):
        assert (await served.api.run(each.human.token, "{ me { id } }"))["me"]["id"] == each.human.id
    done = await work(served.api, world, "Refunds settle within 9 days")
    assert done["read"]["authority"] == "HUMAN_CONFIRMED"


ADDED = re.compile(r"WORKER=127\.0\.0\.1:(\d+)")


async def test_a_worker_really_added_serves_a_workspace_moved_to_it_after_mneia_migrate(
    served: Served, worlds: Worlds, scratch: Path
) -> None:
    """A worker actually added to the running cluster (``scripts/citus.sh add-worker``: a new
    node, ``citus_add_node``) gets from Citus the tables, functions and policies, but not the key
    table, nor the reference tables' rows: moving a workspace there is refused. ``mneia migrate``
    copies the reference tables and writes what lacks; the workspace moved there is then served
    from it (read, written, its human's confirmation), and the other workspaces as before.
    The cluster has three workers after it (the test below rebalances onto the third)."""
    added = ADDED.fullmatch(output("add-worker", state=scratch / "cluster").strip())
    assert added, "add-worker printed no WORKER"
    port = int(added.group(1))
    world, other = worlds.one, worlds.other
    connection = await served.cluster.connect(port)
    try:
        assert await connection.fetchval("SELECT to_regclass('public.items')") is not None  # Citus's part
        assert await connection.fetchval("SELECT to_regclass('public.seal_keys')") is None
        with pytest.raises(citus.CitusError, match="reference tables"):
            await citus.move(served.cluster.url, uuid.UUID(world.workspace_id), "127.0.0.1", port)

        result = mneia_migrate(served.cluster, scratch)
        assert result.returncode == 0, result.stderr
        elsewhere = await served.cluster.connect(served.cluster.workers[0])
        try:
            assert {tuple(r) for r in await connection.fetch(SHELL_POLICIES)} == {
                tuple(r) for r in await elsewhere.fetch(SHELL_POLICIES)
            }
        finally:
            await elsewhere.close()
        assert await connection.fetchval("SELECT count(*) FROM public.seal_keys") == 1
    finally:
        await connection.close()

    await citus.move(served.cluster.url, uuid.UUID(world.workspace_id), "127.0.0.1", port)
    assert await served.home(world.workspace_id) == port
    assert (await served.api.run(world.human.token, "{ me { id } }"))["me"]["id"] == world.human.id
    done = await work(served.api, world, "Invoices are numbered per calendar year")
    assert done["read"]["authority"] == "HUMAN_CONFIRMED"
    assert await served.home(other.workspace_id) != port
    assert (await served.api.run(other.human.token, "{ me { id } }"))["me"]["id"] == other.human.id
    assert (await served.api.run(other.human.token, ITEM, i=done["item"]["id"]))["item"] is None


ROWS = (
    "SELECT (SELECT count(*) FROM items), (SELECT count(*) FROM item_events),"
    " (SELECT count(*) FROM projects), (SELECT count(*) FROM actors),"
    " (SELECT count(*) FROM item_counts), (SELECT count(*) FROM api_tokens)"
)
ITEM_SHARDS_ON = "SELECT count(*) FROM citus_shards WHERE table_name = 'items'::regclass AND nodeport = $1"


async def test_mneia_admin_rebalance_spreads_the_shards_onto_the_added_worker_keeping_every_row(
    served: Served, worlds: Worlds, scratch: Path
) -> None:
    """After the worker added above (and ``mneia migrate``), ``mneia admin rebalance`` runs
    Citus's rebalancer, which alone never finishes on these tables (storage.citus.rebalance): the
    added worker then holds its share of the shard groups, every row of every table is still
    there (counted as the administrator, whom row-level security does not hold back), and the
    workspaces are served wherever they went."""
    admin = await served.cluster.connect(served.cluster.coordinator)
    try:
        added = await admin.fetchval("SELECT nodeport FROM pg_dist_node ORDER BY groupid DESC LIMIT 1")
        before = tuple(await admin.fetchrow(ROWS))
        held = await admin.fetchval(ITEM_SHARDS_ON, added)
        env = cli_env(scratch, DATABASE_URL=served.cluster.url)
        result = await asyncio.to_thread(
            subprocess.run, [*CLI, "admin", "rebalance"], env=env, capture_output=True, text=True, timeout=600
        )
        assert result.returncode == 0, result.stderr
        assert re.fullmatch(
            r"mneia: the rebalancer moved \d+ shards?; every worker holds its share\n", result.stdout
        )
        assert tuple(await admin.fetchrow(ROWS)) == before
        assert await admin.fetchval(ITEM_SHARDS_ON, added) > held
        assert (
            await admin.fetchval("SELECT rolbypassrls FROM pg_roles WHERE rolname = 'mneia_owner'") is False
        )
    finally:
        await admin.close()
    for world in (worlds.one, worlds.other):
        assert (await served.api.run(world.human.token, "{ me { id } }"))["me"]["id"] == world.human.id
    done = await work(served.api, worlds.other, "Refunds go to the original card")
    assert done["read"]["authority"] == "HUMAN_CONFIRMED"
