"""Announcements on a Citus cluster reach the process, with no event lost (issue 25, R15, F6).

A trigger runs on its shard, so its NOTIFY is heard on the worker that holds the workspace only.
What must stay true, on a real cluster (``scripts/citus.sh``, a coordinator and two workers in a
state directory of this module's own, migrated by the real ``mneia migrate``, brought down after):

- a hub built from the coordinator's URL listens on every node, one connection each, and hears
  a dispute and a proposal written as ``mneia_app`` on either worker, on the workspace's channel;
- each worker numbers in a range of its own, and a workspace's numbers all come from its node:
  the high-water mark read on that node is below whatever the workspace announces next, and
  catch-up by number finds exactly that (storage.notification.high_water);
- a listening connection to one worker killed: every inbox, whichever node its workspace is on,
  gets INTERRUPTED; the hub listens on that worker again (``resumed``) and hears it again;
- nothing is lost (R15): what was written on that worker while the hub heard nothing there is
  caught up by number, and every number written arrives once, live or caught up.

Opt-in (``MNEIA_CITUS=1``), like the other Citus modules (tests/citus.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage import citus, database, notification, proposal, token, workspace
from mneia.storage.database import Tx, create_engine
from mneia.storage.ids import new_id
from mneia.storage.item import NewItem
from mneia.storage.node import Nodes
from mneia.storage.notification import INTERRUPTED, PROPOSAL, Announcement, Floors, Hub, Inbox
from mneia.vocabulary import ItemKind
from tests.citus import ASKED, Cluster, migrated_cluster, scratch_directory
from tests.live import PATIENCE
from tests.test_citus_migrate import HOME, ITEM, MEMBER, PROJECT, Human, authenticated, on_node

pytestmark = [pytest.mark.slow, ASKED]

RANGE = 2**48  # Citus numbers a bigint sequence on the worker of group g from g * RANGE + 1

PROPOSE = (
    "INSERT INTO proposals (workspace_id, id, project_id, kind, target_id, proposed_by, reason, replacement)"
    " VALUES (mneia_workspace(), $1, $2, 'SUPERSESSION', $3, mneia_actor(), 'announced', $4::jsonb)"
    " RETURNING seq"
)
DISPUTE = (
    "INSERT INTO disputes (workspace_id, id, project_id, item_id, contested_id, raised_by, reason)"
    " VALUES (mneia_workspace(), $1, $2, $3, $4, mneia_actor(), 'announced') RETURNING seq"
)
DISPUTED_ITEM = (  # a newcomer that contradicts an item: it is raised DISPUTED, with its dispute
    "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by, status)"
    " VALUES (mneia_workspace(), $1, $2, 'FACT', $3, mneia_actor(), 'DISPUTED') RETURNING id"
)
LISTENING = (  # the backends of a hub (mneia_app's connections that LISTEN) on one node
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND usename = 'mneia_app'"
    " AND query ILIKE 'LISTEN%'"
)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with scratch_directory("mneia-citus-notify-") as directory:
        yield directory


@pytest.fixture(scope="module")
def cluster(scratch: Path) -> Iterator[Cluster]:
    with migrated_cluster(scratch) as migrated:
        yield migrated


def app_url(cluster: Cluster, port: int) -> str:
    return f"postgresql://mneia_app@127.0.0.1:{port}/{cluster.name}"


@dataclass(frozen=True)
class Home:
    """A workspace on one worker, with what its announcements need: a project and an item."""

    human: Human
    project_id: Any
    item_id: Any
    engine: AsyncEngine  # mneia_app on the worker: the subscriber's reads

    @property
    def port(self) -> int:
        return self.human.home


@pytest.fixture(scope="module")
async def homes(cluster: Cluster) -> AsyncIterator[dict[int, Home]]:
    """A workspace on each worker, bootstrapped as ``mneia admin bootstrap`` does, its project
    and items written as ``mneia_app`` on its worker; by the worker's port."""
    admin = create_engine(cluster.url, pool_size=1)
    found: dict[int, Human] = {}
    try:
        async with on_node(cluster, cluster.coordinator) as coordinator:
            for n in range(24):
                boot = await workspace.bootstrap(admin, f"Workspace {n}", f"Human {n}")
                port = await coordinator.fetchval(HOME, boot.workspace_id)
                found.setdefault(port, Human(boot.workspace_id, boot.actor_id, boot.token, port))
                if len(found) == len(cluster.workers):
                    break
    finally:
        await admin.dispose()
    assert set(found) == set(cluster.workers), f"24 workspaces, not one on each worker: {found}"
    made: dict[int, Home] = {}
    try:
        for port, human in found.items():
            made[port] = await furnished(cluster, human)
        yield made
    finally:
        for home in made.values():
            await home.engine.dispose()


async def furnished(cluster: Cluster, human: Human) -> Home:
    """The workspace's project, its human a member, and an item, written as ``mneia_app`` on its
    worker; with a pool of mneia_app's there (to dispose)."""
    project_id, item_id = new_id(), new_id()
    async with on_node(cluster, human.home, "mneia_app") as app, app.transaction():
        assert await authenticated(app, human) is not None
        await app.execute(PROJECT, project_id)
        await app.execute(MEMBER, project_id)
        await app.fetchval(ITEM, item_id, project_id, "Invoices are immutable")
    return Home(human, project_id, item_id, create_engine(app_url(cluster, human.home), pool_size=1))


def moved_to(cluster: Cluster, home: Home, port: int) -> Home:
    """The same workspace, its shard group moved to the worker at ``port``: reads go there now."""
    human = dataclasses.replace(home.human, home=port)
    return dataclasses.replace(home, human=human, engine=create_engine(app_url(cluster, port), pool_size=1))


@asynccontextmanager
async def bound(home: Home) -> AsyncIterator[Tx]:
    """A transaction on the workspace's worker, authenticated with its human's token (as a
    subscriber's reads are, once the server routes them there)."""
    async with database.transaction(home.engine) as tx:
        assert await token.authenticate(tx, home.human.secret) is not None
        yield tx


async def written(cluster: Cluster, home: Home, statement: str, *args: Any) -> int:
    """``statement`` run and committed as ``mneia_app`` on the workspace's worker: its number."""
    async with on_node(cluster, home.port, "mneia_app") as app, app.transaction():
        assert await authenticated(app, home.human) is not None
        seq: int = await app.fetchval(statement, new_id(), *args)
        return seq


async def disputed(cluster: Cluster, home: Home) -> int:
    """A newcomer contradicting the workspace's item, and its dispute (one transaction: a DISPUTED
    item has an open dispute when it commits): the dispute's number."""
    async with on_node(cluster, home.port, "mneia_app") as app, app.transaction():
        assert await authenticated(app, home.human) is not None
        newcomer = await app.fetchval(DISPUTED_ITEM, new_id(), home.project_id, "Invoices may be corrected")
        seq: int = await app.fetchval(DISPUTE, new_id(), home.project_id, newcomer, home.item_id)
        return seq


async def proposed(cluster: Cluster, home: Home) -> int:
    replacement = proposal.encode_replacement(
        NewItem(home.project_id, ItemKind.FACT, "Invoices may be corrected")
    )
    return await written(cluster, home, PROPOSE, home.project_id, home.item_id, json.dumps(replacement))


async def listeners(cluster: Cluster, port: int) -> set[int]:
    async with on_node(cluster, port) as node:
        return {row["pid"] for row in await node.fetch(LISTENING)}


async def the_listener(cluster: Cluster, port: int) -> int:
    """The one hub backend on the node: waited for, since an earlier test's hub's backends end a
    moment after it closed them."""
    async with asyncio.timeout(PATIENCE):
        while len(found := await listeners(cluster, port)) != 1:  # noqa: ASYNC110 - a poll of another server
            await asyncio.sleep(0.05)
    (pid,) = found
    return pid


async def next_of(inbox: Inbox) -> Announcement:
    async with asyncio.timeout(PATIENCE):
        return await inbox.get()


@asynccontextmanager
async def subscribed(hub: Hub, homes: dict[int, Home]) -> AsyncIterator[dict[int, Inbox]]:
    """An inbox on each workspace's channel (learnt on its worker), by the worker's port."""
    async with contextlib.AsyncExitStack() as stack:
        inboxes = {}
        for port, home in homes.items():
            async with bound(home) as tx:
                channel = await notification.channel(tx)
            assert channel is not None
            inboxes[port] = await stack.enter_async_context(hub.subscription(channel))
        yield inboxes


@pytest.fixture
async def hub(cluster: Cluster) -> AsyncIterator[Hub]:
    """A hub as ``mneia serve`` builds it: from mneia_app's URL on the coordinator."""
    hub = Hub(app_url(cluster, cluster.coordinator))
    try:
        yield hub
    finally:
        await hub.close()


# --- the hub hears every node --------------------------------------------------------------------


@pytest.mark.parametrize("built_on", ["coordinator", "worker"])
async def test_r15_a_hub_listens_on_every_node_once_whichever_node_its_url_names(
    cluster: Cluster, homes: dict[int, Home], built_on: str
) -> None:
    """Every node's metadata lists the others (and the node itself is not listened on twice)."""
    port = cluster.coordinator if built_on == "coordinator" else cluster.workers[0]
    hub = Hub(app_url(cluster, port))
    try:
        async with subscribed(hub, homes):
            assert sorted(hub.nodes) == sorted(f"127.0.0.1:{node}" for node in cluster.nodes)
            for node in cluster.nodes:
                await the_listener(cluster, node)  # one each, the earlier hub's gone
    finally:
        await hub.close()


async def test_r15_each_worker_numbers_in_its_own_range_and_a_workspace_compares_its_own_numbers(
    cluster: Cluster, homes: dict[int, Home]
) -> None:
    """high_water's reason, checked: read on the workspace's node it is below the next number the
    workspace announces, and catch-up above it finds exactly what was announced since."""
    for port, home in homes.items():
        async with on_node(cluster, port) as node:
            group = await node.fetchval("SELECT groupid FROM pg_dist_local_group")
        async with bound(home) as tx:
            floor = await notification.high_water(tx)
        numbers = [await proposed(cluster, home) for _ in range(3)]
        assert numbers[0] < numbers[1] < numbers[2], (port, numbers)
        # Before the node's first number, the mark is its range's start less one.
        assert group * RANGE <= floor < numbers[0], (port, floor)
        assert all(group * RANGE < n <= (group + 1) * RANGE for n in numbers), (port, numbers)
        async with bound(home) as tx:
            assert [record.seq for record in await proposal.since(tx, Floors.of(floor))] == numbers, port


async def test_r15_a_dispute_and_a_proposal_written_on_either_worker_reach_the_hub(
    cluster: Cluster, homes: dict[int, Home], hub: Hub
) -> None:
    async with subscribed(hub, homes) as inboxes:
        for port, home in homes.items():
            raised = await disputed(cluster, home)
            assert await next_of(inboxes[port]) == Announcement(notification.DISPUTE, raised), port
            number = await proposed(cluster, home)
            assert await next_of(inboxes[port]) == Announcement(PROPOSAL, number), port


# --- a listening connection lost ------------------------------------------------------------------


async def test_f6_a_workers_listening_connection_killed_interrupts_every_inbox_then_the_hub_listens_again(
    cluster: Cluster, homes: dict[int, Home], hub: Hub
) -> None:
    victim = cluster.workers[0]
    async with subscribed(hub, homes) as inboxes:
        killed = await the_listener(cluster, victim)
        async with on_node(cluster, victim) as node:
            assert await node.fetchval("SELECT pg_terminate_backend($1::integer, 60000::bigint)", killed)
        # Every inbox: the hub cannot tell which node a channel's workspace is on.
        for port, inbox in inboxes.items():
            assert (await next_of(inbox)).kind == INTERRUPTED, port
        await hub.resumed(PATIENCE)
        assert await the_listener(cluster, victim) != killed
        number = await proposed(cluster, homes[victim])
        assert await next_of(inboxes[victim]) == Announcement(PROPOSAL, number)


def while_unheard(work: Coroutine[Any, Any, list[int]]) -> list[int]:
    """``work`` run to its end in a thread of its own while the caller's event loop waits, on
    purpose: the hub (in that loop) can neither notice a lost connection nor make another, so
    whatever ``work`` commits meanwhile is announced to nobody."""
    done: list[list[int]] = []
    thread = threading.Thread(target=lambda: done.append(asyncio.run(work)))
    thread.start()
    thread.join(PATIENCE)
    assert done, "the unheard work did not finish"
    return done[0]


async def test_r15_nothing_written_on_a_worker_while_the_hub_heard_nothing_there_is_lost(
    cluster: Cluster, homes: dict[int, Home], hub: Hub
) -> None:
    """Every number written arrives once, live or caught up by number after INTERRUPTED, as a
    subscriber does it (resolvers.subscription): what was written while the hub's connection to
    the worker was gone comes by catch-up."""
    victim = cluster.workers[-1]
    home = homes[victim]
    arrived: dict[int, str] = {}  # number -> how: "live" or "caught up"

    async def take(inbox: Inbox, floor: int, numbers: list[int]) -> None:
        async with asyncio.timeout(PATIENCE):
            while not set(numbers) <= set(arrived):
                note = await inbox.get()
                if note.kind == INTERRUPTED:
                    await hub.resumed(PATIENCE)
                    async with bound(home) as tx:
                        for record in await proposal.since(tx, Floors.of(floor)):
                            arrived.setdefault(record.seq, "caught up")
                elif note.kind == PROPOSAL:
                    arrived.setdefault(note.seq, "live")

    async def unheard() -> list[int]:
        pid = await the_listener(cluster, victim)
        async with on_node(cluster, victim) as node:
            assert await node.fetchval("SELECT pg_terminate_backend($1::integer, 60000::bigint)", pid)
        return [await proposed(cluster, home) for _ in range(3)]

    async with subscribed(hub, homes) as inboxes:
        async with bound(home) as tx:
            floor = await notification.high_water(tx)
        before = [await proposed(cluster, home) for _ in range(3)]
        await take(inboxes[victim], floor, before)
        gap = while_unheard(unheard())
        after = [await proposed(cluster, home) for _ in range(3)]
        await take(inboxes[victim], floor, [*before, *gap, *after])
    assert sorted(arrived) == sorted([*before, *gap, *after])
    assert {arrived[n] for n in before} == {"live"}
    assert {arrived[n] for n in gap} == {"caught up"}


async def test_r15_catch_up_across_moves_finds_what_followed_on_either_node_and_nothing_older(
    cluster: Cluster,
) -> None:
    """A workspace's shard group moved while a subscriber is open: each node numbers in its own
    range, so the floor of the node where the subscription began says nothing of another's numbers.
    A workspace on the lower-numbered worker announces once; moved to the higher one, it is
    subscribed to there (floors: every node's high-water mark, storage.notification.floors); it
    announces there, moves back and announces again. Catch-up on its node finds exactly the two
    announcements that followed the subscription: not the one from before it, which the
    subscriber's own node's floor alone would replay, and not missing the last, which the one
    number of the old comparison (above the higher worker's mark) would skip. Last in this
    module: it moves shard groups."""
    groups = {}
    for port in cluster.workers:
        async with on_node(cluster, port) as node:
            groups[port] = await node.fetchval("SELECT groupid FROM pg_dist_local_group")
    low, high = sorted(cluster.workers, key=groups.__getitem__)
    admin = create_engine(cluster.url, pool_size=1)
    coordinator = create_engine(app_url(cluster, cluster.coordinator), pool_size=1)
    nodes = Nodes(coordinator, pool_size=1)
    homes: list[Home] = []
    try:
        async with on_node(cluster, cluster.coordinator) as lookup:
            for n in range(24):
                boot = await workspace.bootstrap(admin, f"Moving {n}", f"Mover {n}")
                if await lookup.fetchval(HOME, boot.workspace_id) == low:
                    break
            else:
                raise AssertionError("24 workspaces, none on the lower-numbered worker")
        homes.append(await furnished(cluster, Human(boot.workspace_id, boot.actor_id, boot.token, low)))
        before = await proposed(cluster, homes[-1])

        await citus.move(cluster.url, boot.workspace_id, "127.0.0.1", high)
        homes.append(moved_to(cluster, homes[-1], high))
        async with bound(homes[-1]) as tx:
            floors = await notification.floors(tx, nodes)
            own = await notification.high_water(tx)
        assert set(floors.by_group) == {0, groups[low], groups[high]}, floors
        after_move = await proposed(cluster, homes[-1])

        await citus.move(cluster.url, boot.workspace_id, "127.0.0.1", low)
        homes.append(moved_to(cluster, homes[-1], low))
        back_again = await proposed(cluster, homes[-1])
        assert before < back_again < own < after_move  # the lower range, then the higher

        async with bound(homes[-1]) as tx:
            caught = [record.seq for record in await proposal.since(tx, floors)]
            replayed = [record.seq for record in await proposal.since(tx, Floors.of(own))]
        assert sorted(caught) == sorted([after_move, back_again]), caught
        assert before in replayed  # the subscriber's own node's floor alone
        assert not back_again > own  # the one number of the old comparison
    finally:
        for home in homes:
            await home.engine.dispose()
        await nodes.dispose()
        await coordinator.dispose()
        await admin.dispose()
