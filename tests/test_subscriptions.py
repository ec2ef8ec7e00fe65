"""R8 and R15: ``disputeRaised`` and ``proposalRaised`` over graphql-transport-ws, end to end.

The subscribers talk to a real uvicorn server (its own engine and notification
hub) on a local port, speaking the protocol by hand; the writes go through the
``api`` fixture, a different application with its own engine, so every event
really crosses PostgreSQL's NOTIFY. One test subscribes to a separate
``mneia serve`` process instead.

What must stay true: an event reaches every subscriber who can see it, once,
within a second of the commit; it never reaches a subscriber of another
workspace, of another project (when filtered), or one who cannot see both
sides of a dispute; a revoked token stops the data; a rolled-back write
announces nothing. Every "nothing arrives" check sits beside a positive
control in the same test, so a broken delivery fails the test instead of
passing it silently.

Waits are bounded (``asyncio.wait_for``); the one-second bound is R15's own
promise, not a speed target.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import shutil
import signal
import tempfile
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.routing import WebSocketRoute
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from mneia.app import MneiaGraphQL, create_app
from mneia.config import app_url
from mneia.storage import migration, notification, workspace
from mneia.storage.database import create_engine
from mneia.storage.embedded import EmbeddedServer
from mneia.storage.node import Nodes
from mneia.storage.notification import Hub
from tests import support
from tests.graphql import Api, World
from tests.live import CLI, PATIENCE, cli_env, free_port, uvicorn_serving
from tests.support import SUPERSEDE, counted, rows, supersession

DELIVERY = 1.0  # R15: "within a second"
SILENCE = 1.5  # how long a subscriber who must get nothing is watched
SETTLE = 0.5  # after the expected events: no duplicate, no stray event
READY = PATIENCE  # bound on setup steps (server start, subscription registration), never waited out
PROTOCOL = Subprotocol("graphql-transport-ws")

DISPUTE_RAISED = """subscription($p: ID) { disputeRaised(projectId: $p) {
  id status reason raisedAt raisedBy { id }
  item { id statement status authority } contested { id statement status authority } } }"""
PROPOSAL_RAISED = """subscription($p: ID) { proposalRaised(projectId: $p) {
  id kind status reason replacementStatement proposedBy { id }
  target { id statement authority } } }"""

DISPUTE_ITEM = """mutation($i: ID!, $c: ID!, $r: String!) {
  disputeItem(id: $i, contestedId: $c, reason: $r) { id } }"""
SUGGEST = """mutation($i: ID!, $r: String) { suggestLoadBearing(id: $i, reason: $r) { id kind } }"""
DISPUTES_OF = "query($i: ID!) { item(id: $i) { disputes { id } } }"


# --- a graphql-transport-ws client ---------------------------------------------------------------


class Socket:
    """One graphql-transport-ws connection; a reader task files each message under its operation id."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.inbox: defaultdict[str, asyncio.Queue[dict[str, Any]]] = defaultdict(asyncio.Queue)
        self._ids = itertools.count(1)
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                message = json.loads(raw)
                self.inbox[str(message.get("id", ""))].put_nowait(message)
        except ConnectionClosed:
            pass

    async def subscribe(self, query: str, **variables: Any) -> str:
        op = str(next(self._ids))
        payload = {"query": query, "variables": variables}
        await self.ws.send(json.dumps({"id": op, "type": "subscribe", "payload": payload}))
        return op

    async def message(self, op: str, within: float = DELIVERY) -> dict[str, Any]:
        return await asyncio.wait_for(self.inbox[op].get(), within)

    async def data(self, op: str, within: float = DELIVERY) -> dict[str, Any]:
        """The next event of ``op``: a ``next`` message without errors."""
        message = await self.message(op, within)
        assert message["type"] == "next", message
        assert not message["payload"].get("errors"), message
        return message["payload"]["data"]

    def pending(self) -> dict[str, list[dict[str, Any]]]:
        """Every message received and not yet taken, by operation id."""
        found: dict[str, list[dict[str, Any]]] = {}
        for op, queue in self.inbox.items():
            while not queue.empty():
                found.setdefault(op, []).append(queue.get_nowait())
        return found

    async def close(self) -> None:
        await self.ws.close()
        await asyncio.wait_for(self._reader, READY)


@contextlib.asynccontextmanager
async def opened(url: str, token: str | None, *, in_header: bool = False) -> AsyncIterator[Socket]:
    """An acknowledged connection; the token in ``connection_init`` (or the handshake header)."""
    headers = {"Authorization": f"Bearer {token}"} if token and in_header else {}
    payload = {"Authorization": f"Bearer {token}"} if token and not in_header else {}
    ws = await connect(url, subprotocols=[PROTOCOL], additional_headers=headers, open_timeout=READY)
    try:
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        ack = json.loads(await asyncio.wait_for(ws.recv(), READY))
        assert ack["type"] == "connection_ack", ack
        sock = Socket(ws)
        yield sock
        await sock.close()
    finally:
        await ws.close()


async def refused_with(url: str, payload: dict[str, Any], headers: dict[str, str]) -> int:
    """Send ``connection_init`` and return the close code the server answers with."""
    async with connect(url, subprotocols=[PROTOCOL], additional_headers=headers, open_timeout=READY) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        with pytest.raises(ConnectionClosed) as closed:
            message = await asyncio.wait_for(ws.recv(), READY)
            pytest.fail(f"expected the connection to be closed, got {message!r}")
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code


async def silent(sockets: list[Socket], seconds: float) -> None:
    """Wait, then assert that none of ``sockets`` received anything."""
    await asyncio.sleep(seconds)
    for sock in sockets:
        assert sock.pending() == {}


# --- a real server in the test's event loop -------------------------------------------------------


@dataclass
class Served:
    url: str
    hub: Hub
    engine: AsyncEngine
    view: MneiaGraphQL

    async def subscribed(self, count: int) -> None:
        """Wait until exactly ``count`` subscriptions listen on this server.

        The protocol has no "subscribed" message, so a write made right after
        ``subscribe`` could race the registration; the hub's queues are the
        only place where it shows (read here to synchronise, never asserted).
        """
        async with asyncio.timeout(READY):
            while self.hub.subscribers != count:  # noqa: ASYNC110 - nothing to wait on but a poll
                await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def serving(admin_url: str, *, routed: bool | None = None) -> AsyncIterator[Served]:
    """uvicorn serving an application (own engine, own hub) of ``admin_url``'s database, on a free port.

    ``routed``: as ``mneia serve`` routes on Citus (storage.node); by default when the suite runs on
    a cluster (conftest's MNEIA_TEST_CITUS). An embedded server of a test's own is never one."""
    engine = create_engine(app_url(admin_url), pool_size=5)
    if routed is None:
        routed = support.ROUTED is not None
    nodes = Nodes(engine, pool_size=5) if routed else None
    app = create_app(engine, dispose_engine=False, nodes=nodes)
    graphql = next(route.endpoint for route in app.routes if isinstance(route, WebSocketRoute))
    assert isinstance(graphql, MneiaGraphQL)
    try:
        async with uvicorn_serving(app) as port:
            yield Served(f"ws://127.0.0.1:{port}/graphql", graphql.hub, engine, graphql)
    finally:
        if nodes is not None:
            await nodes.dispose()
        await engine.dispose()


@pytest.fixture(scope="module")
async def live(admin_url: str) -> AsyncIterator[Served]:
    """The test database's application, served for the whole module."""
    async with serving(admin_url) as served:
        yield served


@pytest.fixture
async def served(live: Served) -> Served:
    """The live server once the previous test's subscriptions have all left."""
    await live.subscribed(0)
    return live


# --- writes through the other application ---------------------------------------------------------


async def only_dispute_of(api: Api, token: str, item_id: str) -> str:
    """The id of the one dispute ``item_id`` is part of."""
    disputes = (await api.run(token, DISPUTES_OF, i=item_id))["item"]["disputes"]
    assert len(disputes) == 1, disputes
    return disputes[0]["id"]


async def dispute_in(api: Api, token: str, project_id: str, scope: str = "PROJECT") -> str:
    """Two items of ``project_id`` (both in ``scope``) and a dispute between them; its id."""
    contested = await api.assert_item(token, projectId=project_id, statement="A", scope=scope)
    newcomer = await api.assert_item(token, projectId=project_id, statement="B", scope=scope)
    made = await api.run(token, DISPUTE_ITEM, i=newcomer["id"], c=contested["id"], r="not A")
    return made["disputeItem"]["id"]


# --- R8 / R15: the events and their fields ------------------------------------------------------


async def test_r8_r15_dispute_and_proposal_raised_reach_a_project_member(
    api: Api, world: World, served: Served
) -> None:
    async with opened(served.url, world.human.token) as sock:
        disputes = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
        proposals = await sock.subscribe(PROPOSAL_RAISED, p=world.project_id)
        await served.subscribed(2)

        contested = await api.assert_item(
            world.human.token, projectId=world.project_id, statement="Port 5432"
        )
        newcomer = await api.assert_item(
            world.agent.token,
            projectId=world.project_id,
            statement="Port 6432",
            basis="the runbook",
            contradicts=[contested["id"]],
        )
        got = (await sock.data(disputes))["disputeRaised"]
        assert got["id"] == await only_dispute_of(api, world.agent.token, newcomer["id"])
        assert (got["status"], got["reason"], got["raisedBy"]) == (
            "OPEN",
            "the runbook",
            {"id": world.agent.id},
        )
        assert got["raisedAt"]
        assert got["item"] == {
            "id": newcomer["id"],
            "statement": "Port 6432",
            "status": "DISPUTED",
            "authority": "DISPUTED",
        }
        assert got["contested"] == {
            "id": contested["id"],
            "statement": "Port 5432",
            "status": "ACTIVE",
            "authority": "HUMAN_CONFIRMED",
        }

        other = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Port 7000")
        made = await api.run(world.agent.token, DISPUTE_ITEM, i=other["id"], c=contested["id"], r="pgbouncer")
        got = (await sock.data(disputes))["disputeRaised"]
        assert got["id"] == made["disputeItem"]["id"]
        assert (got["reason"], got["item"]["id"], got["item"]["status"]) == (
            "pgbouncer",
            other["id"],
            "DISPUTED",
        )
        assert got["contested"]["id"] == contested["id"]

        suggested = await api.assert_item(
            world.agent.token, projectId=world.project_id, statement="PCI scope"
        )
        made = await api.run(world.agent.token, SUGGEST, i=suggested["id"], r="audits")
        got = (await sock.data(proposals))["proposalRaised"]
        assert got == {
            "id": made["suggestLoadBearing"]["id"],
            "kind": "LOAD_BEARING",
            "status": "PENDING",
            "reason": "audits",
            "replacementStatement": None,
            "proposedBy": {"id": world.agent.id},
            "target": {"id": suggested["id"], "statement": "PCI scope", "authority": "AGENT_ASSERTED"},
        }

        ruled = await api.assert_item(
            world.human.token, projectId=world.project_id, statement="Deploy on Tuesdays"
        )
        made = await api.run(
            world.agent.token,
            SUPERSEDE,
            **supersession(world.project_id, ruled["id"], "Deploy on Thursdays", "new freeze"),
        )
        pending = made["supersedeItem"]
        assert pending["__typename"] == "PendingConfirmation", pending
        got = (await sock.data(proposals))["proposalRaised"]
        assert got["id"] == pending["proposal"]["id"]
        assert (got["kind"], got["status"], got["reason"]) == ("SUPERSESSION", "PENDING", "new freeze")
        assert got["replacementStatement"] == "Deploy on Thursdays"
        assert got["proposedBy"] == {"id": world.agent.id}
        assert got["target"] == {
            "id": ruled["id"],
            "statement": "Deploy on Tuesdays",
            "authority": "HUMAN_CONFIRMED",
        }

        # Each event once, and each subscription only its own kind.
        await silent([sock], SETTLE)


async def test_r15_project_filter_keeps_other_projects_out(api: Api, world: World, served: Served) -> None:
    other_project = await api.project(world.human.token, "billing")
    async with (
        opened(served.url, world.human.token) as filtered,
        opened(served.url, world.human.token) as everything,
    ):
        only_first = await filtered.subscribe(DISPUTE_RAISED, p=world.project_id)
        unfiltered = await everything.subscribe(DISPUTE_RAISED)
        await served.subscribed(2)

        elsewhere = await dispute_in(api, world.human.token, other_project)
        here = await dispute_in(api, world.human.token, world.project_id)

        assert (await everything.data(unfiltered))["disputeRaised"]["id"] == elsewhere
        assert (await everything.data(unfiltered))["disputeRaised"]["id"] == here
        # Events reach one subscription in commit order: the first it gets is P1's.
        assert (await filtered.data(only_first))["disputeRaised"]["id"] == here
        await silent([filtered, everything], SETTLE)


# --- R15: never another workspace, never out of scope -------------------------------------------


async def test_r15_subscriber_of_another_workspace_never_receives_the_event(
    api: Api, world: World, served: Served
) -> None:
    foreign = await api.world()
    async with (
        opened(served.url, world.human.token) as member,
        opened(served.url, foreign.human.token) as stranger,
    ):
        control = await member.subscribe(DISPUTE_RAISED)
        watched = [
            await stranger.subscribe(DISPUTE_RAISED),
            await stranger.subscribe(PROPOSAL_RAISED),
            # The other workspace's project id, given as a filter, is simply not found.
            await stranger.subscribe(DISPUTE_RAISED, p=world.project_id),
        ]
        refusal = await stranger.message(watched[2], READY)
        assert refusal["type"] == "next", refusal
        assert refusal["payload"]["data"] is None
        assert refusal["payload"]["errors"][0]["extensions"]["code"] == "NOT_FOUND", refusal
        assert (await stranger.message(watched[2], READY))["type"] == "complete"
        await served.subscribed(3)

        dispute_id = await dispute_in(api, world.human.token, world.project_id)
        target = await api.assert_item(world.agent.token, projectId=world.project_id, statement="x")
        await api.run(world.agent.token, SUGGEST, i=target["id"], r="maybe")
        assert (await member.data(control))["disputeRaised"]["id"] == dispute_id
        await silent([stranger], SILENCE)

        # The stranger's own subscription works: silence above was isolation, not a dead pipe.
        own = await dispute_in(api, foreign.human.token, foreign.project_id)
        assert (await stranger.data(watched[0]))["disputeRaised"]["id"] == own
        await silent([member, stranger], SETTLE)


async def test_r15_only_who_sees_both_sides_of_a_dispute_receives_it(
    api: Api, world: World, served: Served
) -> None:
    """A non-member gets no PROJECT-scoped dispute; a member gets none against a PRIVATE item."""
    outsider = await api.actor(world.human.token, "HUMAN", "outsider")
    async with (
        opened(served.url, world.human.token) as human,
        opened(served.url, world.agent.token) as agent,
        opened(served.url, outsider.token) as stranger,
    ):
        ops = {
            "human": await human.subscribe(DISPUTE_RAISED),
            "agent": await agent.subscribe(DISPUTE_RAISED),
            "outsider": await stranger.subscribe(DISPUTE_RAISED),
            # Projects are listed workspace-wide, so the filter is accepted: its items are not.
            "outsider on the project": await stranger.subscribe(DISPUTE_RAISED, p=world.project_id),
        }
        await served.subscribed(4)

        in_project = await dispute_in(api, world.human.token, world.project_id)
        assert (await human.data(ops["human"]))["disputeRaised"]["id"] == in_project
        assert (await agent.data(ops["agent"]))["disputeRaised"]["id"] == in_project

        # The human contradicts their own PRIVATE item: only they see both sides.
        private = await api.assert_item(
            world.human.token, projectId=world.project_id, statement="secret", scope="PRIVATE"
        )
        against_private = await api.assert_item(
            world.human.token, projectId=world.project_id, statement="open", contradicts=[private["id"]]
        )
        got = (await human.data(ops["human"]))["disputeRaised"]
        assert got["id"] == await only_dispute_of(api, world.human.token, against_private["id"])
        assert got["contested"]["id"] == private["id"]
        await silent([agent, stranger], SILENCE)

        # Positive control for both: a dispute between WORKSPACE items reaches everyone.
        public = await dispute_in(api, world.human.token, world.project_id, scope="WORKSPACE")
        for sock, op in (
            (human, ops["human"]),
            (agent, ops["agent"]),
            (stranger, ops["outsider"]),
            (stranger, ops["outsider on the project"]),
        ):
            assert (await sock.data(op))["disputeRaised"]["id"] == public
        await silent([human, agent, stranger], SETTLE)


# --- many subscribers ---------------------------------------------------------------------------


async def test_r15_every_subscriber_receives_the_event_exactly_once(
    api: Api, world: World, served: Served
) -> None:
    async with (
        opened(served.url, world.human.token) as shared,
        opened(served.url, world.human.token) as first,
        opened(served.url, world.agent.token) as second,
        opened(served.url, world.agent.token, in_header=True) as third,
    ):
        many = [await shared.subscribe(DISPUTE_RAISED, p=world.project_id) for _ in range(3)]
        many += [await shared.subscribe(DISPUTE_RAISED) for _ in range(2)]
        alone = [
            (first, await first.subscribe(DISPUTE_RAISED)),
            (second, await second.subscribe(DISPUTE_RAISED, p=world.project_id)),
            (third, await third.subscribe(DISPUTE_RAISED)),
        ]
        await served.subscribed(8)

        dispute_id = await dispute_in(api, world.human.token, world.project_id)
        received = await asyncio.gather(
            *(shared.data(op) for op in many), *(sock.data(op) for sock, op in alone)
        )
        assert [got["disputeRaised"]["id"] for got in received] == [dispute_id] * 8
        await silent([shared, first, second, third], SETTLE)


# --- authentication ------------------------------------------------------------------------------


async def test_r15_a_connection_without_a_known_token_is_refused(world: World, served: Served) -> None:
    assert await refused_with(served.url, {}, {}) == 4403
    assert await refused_with(served.url, {"Authorization": "Bearer not-a-token"}, {}) == 4403
    assert await refused_with(served.url, {}, {"Authorization": "Bearer not-a-token"}) == 4403
    assert await refused_with(served.url, {"Authorization": world.agent.token + "x"}, {}) == 4403


async def test_issue_21_one_token_holds_at_most_so_many_subscriptions_open(
    api: Api, world: World, served: Served
) -> None:
    """3,000 subscriptions were accepted on one token. Past ``maxSubscriptionsPerToken`` (500 by
    default, 2 here) one more is refused, naming the limit; another token is not counted with it,
    and a subscription that ends frees its place."""
    served.hub.per_holder = 2
    try:
        async with (
            opened(served.url, world.agent.token) as sock,
            opened(served.url, world.human.token) as other,
        ):
            first = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
            await sock.subscribe(PROPOSAL_RAISED, p=world.project_id)
            await served.subscribed(2)
            third = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
            refused = await sock.message(third)
            assert refused["type"] == "next" and refused["payload"]["data"] is None, refused
            (error,) = refused["payload"]["errors"]
            assert error["extensions"] == {
                "code": "BAD_USER_INPUT",
                "limit": "maxSubscriptionsPerToken",
                "value": 3,
                "maximum": 2,
            }, error
            theirs = await other.subscribe(DISPUTE_RAISED, p=world.project_id)
            await served.subscribed(3)
            await sock.ws.send(json.dumps({"id": first, "type": "complete"}))
            await served.subscribed(2)
            again = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
            await served.subscribed(3)
            dispute_id = await dispute_in(api, world.agent.token, world.project_id)
            assert (await sock.data(again))["disputeRaised"]["id"] == dispute_id
            assert (await other.data(theirs))["disputeRaised"]["id"] == dispute_id
    finally:
        served.hub.per_holder = None


async def test_issue_21_one_token_holds_at_most_so_many_websockets_open(world: World, served: Served) -> None:
    """Past ``MNEIA_MAX_WEBSOCKETS_PER_TOKEN`` (100 by default, 2 here) one more connection is refused
    (4403) for that token, not for another; one that closes frees its place."""
    served.view.max_websockets_per_token = 2
    try:
        async with opened(served.url, world.agent.token), opened(served.url, world.agent.token):
            assert world.agent.token
            bearer = {"Authorization": f"Bearer {world.agent.token}"}
            assert await refused_with(served.url, bearer, {}) == 4403
            async with opened(served.url, world.human.token):
                pass
        async with opened(served.url, world.agent.token):  # the two closed: places again
            pass
    finally:
        served.view.max_websockets_per_token = 100


async def test_r15_token_in_the_handshake_header_works(api: Api, world: World, served: Served) -> None:
    async with opened(served.url, world.human.token, in_header=True) as sock:
        op = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
        await served.subscribed(1)
        dispute_id = await dispute_in(api, world.agent.token, world.project_id)
        got = (await sock.data(op))["disputeRaised"]
        assert (got["id"], got["raisedBy"]) == (dispute_id, {"id": world.agent.id})


async def test_r15_a_token_revoked_while_subscribed_gets_no_more_data(
    api: Api, world: World, served: Served
) -> None:
    """Each event re-authenticates: a revoked token ends the stream with UNAUTHENTICATED."""
    carol = await api.actor(world.human.token, "HUMAN", "carol")
    await api.add_member(world.human.token, world.project_id, carol.id)
    async with (
        opened(served.url, world.human.token) as control,
        opened(served.url, carol.token) as revoked,
    ):
        watched = await control.subscribe(DISPUTE_RAISED)
        streams = [await revoked.subscribe(DISPUTE_RAISED), await revoked.subscribe(PROPOSAL_RAISED)]
        await served.subscribed(3)
        before = await dispute_in(api, world.human.token, world.project_id)
        assert (await revoked.data(streams[0]))["disputeRaised"]["id"] == before
        assert (await control.data(watched))["disputeRaised"]["id"] == before

        async with api.admin_engine.begin() as connection:
            await connection.execute(
                # By its workspace: on Citus one shard (a write to several, through a trigger that
                # notifies, is a two-phase commit, which NOTIFY forbids).
                text("UPDATE api_tokens SET revoked_at = now() WHERE workspace_id = :w AND actor_id = :a"),
                {"w": world.workspace_id, "a": carol.id},
            )
        after = await dispute_in(api, world.human.token, world.project_id)
        assert (await control.data(watched))["disputeRaised"]["id"] == after

        ended = await revoked.message(streams[0])
        assert ended["type"] == "next", ended
        assert ended["payload"]["data"] is None, ended
        assert ended["payload"]["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", ended
        assert (await revoked.message(streams[0]))["type"] == "complete"

        # A new subscription on the same connection is refused too, and no data ever comes.
        late = await revoked.subscribe(DISPUTE_RAISED)
        refusal = await revoked.message(late, READY)
        assert refusal["payload"]["data"] is None, refusal
        assert refusal["payload"]["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", refusal
        await dispute_in(api, world.human.token, world.project_id)
        await control.data(watched)
        await asyncio.sleep(SETTLE)
        for messages in revoked.pending().values():
            assert all(not (m.get("payload") or {}).get("data") for m in messages), messages


# --- R15: across server processes ---------------------------------------------------------------


@contextlib.asynccontextmanager
async def mneia_serve(admin_url: str, scratch: Path) -> AsyncIterator[str]:
    """``mneia serve`` as a real process; yields its websocket URL once /healthz answers."""
    port = free_port()
    command = [*CLI, "serve", "--port", str(port)]
    with (scratch / "serve.out").open("wb") as out, (scratch / "serve.err").open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            *command, env=cli_env(scratch, DATABASE_URL=admin_url), stdout=out, stderr=err
        )
        try:
            async with httpx.AsyncClient(timeout=1) as client, asyncio.timeout(30):
                while True:
                    assert process.returncode is None, (scratch / "serve.err").read_text()
                    with contextlib.suppress(httpx.TransportError):
                        if (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                            break
                    await asyncio.sleep(0.1)
            yield f"ws://127.0.0.1:{port}/graphql"
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 30) == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert "Traceback" not in (scratch / "serve.err").read_text()


async def listeners_since(admin_engine: AsyncEngine, since: Any) -> int:
    """Connections to this database that started after ``since`` and LISTEN (a hub's)."""
    found = await rows(
        admin_engine,
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database()"
        " AND backend_start > :since AND query ILIKE 'LISTEN%'",
        since=since,
    )
    return int(found[0]["n"])


async def test_r15_event_written_by_another_server_process_arrives(
    api: Api, world: World, admin_url: str, tmp_path: Path
) -> None:
    started = (await rows(api.admin_engine, "SELECT clock_timestamp() AS t"))[0]["t"]
    async with (
        mneia_serve(admin_url, tmp_path) as url,
        opened(url, world.human.token) as sock,
    ):
        disputes = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
        async with asyncio.timeout(READY):
            # The other process's hub listens once its first subscription registered.
            while await listeners_since(api.admin_engine, started) < 1:  # noqa: ASYNC110 - a poll
                await asyncio.sleep(0.02)

        dispute_id = await dispute_in(api, world.agent.token, world.project_id)
        got = (await sock.data(disputes))["disputeRaised"]
        assert (got["id"], got["raisedBy"]) == (dispute_id, {"id": world.agent.id})


# --- NOTIFY is transactional ----------------------------------------------------------------------


async def test_r15_a_rolled_back_write_announces_nothing(api: Api, world: World, served: Served) -> None:
    contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="A")
    newcomer = await api.assert_item(world.agent.token, projectId=world.project_id, statement="B")
    count = "SELECT count(*) AS n FROM disputes WHERE project_id = :p"
    async with opened(served.url, world.human.token) as sock:
        op = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
        await served.subscribed(1)

        # The first field opens a dispute; the second fails; the whole operation rolls back.
        failed = await api.post(
            world.agent.token,
            """mutation($i: ID!, $c: ID!, $p: ID!) {
              opened: disputeItem(id: $i, contestedId: $c, reason: "first part") { id }
              broken: assertItem(input: {projectId: $p, kind: FACT, statement: " "}) { id } }""",
            {"i": newcomer["id"], "c": contested["id"], "p": world.project_id},
        )
        # Mutation fields run in order: the error on the second proves the first ran.
        assert [error["path"] for error in failed["errors"]] == [["broken"]], failed
        assert failed["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", failed
        assert (await rows(api.admin_engine, count, p=world.project_id)) == [{"n": 0}]
        await silent([sock], DELIVERY)

        made = await api.run(
            world.agent.token, DISPUTE_ITEM, i=newcomer["id"], c=contested["id"], r="second try"
        )
        got = (await sock.data(op))["disputeRaised"]
        assert (got["id"], got["reason"]) == (made["disputeItem"]["id"], "second try")
        await silent([sock], SETTLE)


# --- R15: the listening connection is lost --------------------------------------------------------


async def test_r15_delivery_resumes_after_the_listening_connection_is_lost(
    api: Api, world: World, served: Served
) -> None:
    """The hub reconnects when PostgreSQL drops its LISTEN connection; later events still arrive."""
    listening = (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'"
    )
    async with opened(served.url, world.human.token) as sock:
        op = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
        await served.subscribed(1)
        killed = {row["pid"] for row in await rows(api.admin_engine, listening)}
        assert killed, "no connection listens although a subscription is registered"
        for pid in killed:
            await rows(
                api.admin_engine, "SELECT pg_terminate_backend(CAST(:pid AS integer)) AS done", pid=pid
            )
        async with asyncio.timeout(READY):
            while not {row["pid"] for row in await rows(api.admin_engine, listening)} - killed:  # noqa: ASYNC110
                await asyncio.sleep(0.02)

        dispute_id = await dispute_in(api, world.human.token, world.project_id)
        assert (await sock.data(op))["disputeRaised"]["id"] == dispute_id


async def test_r15_on_one_server_the_hub_holds_one_listening_connection(
    api: Api, world: World, served: Served
) -> None:
    """Off Citus there is no other node to hear (issue 25): one connection per process, as before."""
    listening = (
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database()"
        " AND query ILIKE 'LISTEN%'"
    )
    async with opened(served.url, world.human.token) as sock:
        await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
        await sock.subscribe(PROPOSAL_RAISED, p=world.project_id)
        await served.subscribed(2)
        assert len(served.hub.nodes) == 1
        assert await rows(api.admin_engine, listening) == [{"n": 1}]


# --- the transport ------------------------------------------------------------------------------


# Subscriptions are served over graphql-transport-ws only; over plain HTTP the client is told so.
async def test_r14_r15_a_subscription_over_plain_http_is_refused_as_bad_input(api: Api, world: World) -> None:
    error = await api.fail(world.human.token, DISPUTE_RAISED, p=world.project_id)
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert "graphql-transport-ws" in error["message"], error


# --- F15: fan-out, one read per token ------------------------------------------------------------


async def test_f15_r1_an_event_is_read_once_per_token_not_once_per_subscriber(
    api: Api, world: World, served: Served
) -> None:
    """Six subscribers of the human's token and two of the agent's: two authenticated reads, eight deliveries.

    Each read is under the very token its subscribers presented (R1, R2: the
    visibility tests above run through the same path).
    """
    tokens = [world.human.token] * 6 + [world.agent.token] * 2
    async with contextlib.AsyncExitStack() as stack:
        sockets = [await stack.enter_async_context(opened(served.url, token)) for token in tokens]
        ops = [await sock.subscribe(DISPUTE_RAISED, p=world.project_id) for sock in sockets]
        await served.subscribed(len(sockets))
        contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="A")
        newcomer = await api.assert_item(world.human.token, projectId=world.project_id, statement="B")
        with counted(served.engine) as statements:
            made = await api.run(world.human.token, DISPUTE_ITEM, i=newcomer["id"], c=contested["id"], r="no")
            for sock, op in zip(sockets, ops, strict=True):
                got = (await sock.data(op))["disputeRaised"]
                assert got["id"] == made["disputeItem"]["id"] and got["item"]["id"] == newcomer["id"]
        authentications = [s for s in statements if "mneia_authenticate" in s]
        assert len(authentications) == 2, statements
        await silent(sockets, SETTLE)


async def test_f15_r15_subscribers_of_one_token_share_an_execution_only_when_they_ask_the_same(
    api: Api, world: World, served: Served
) -> None:
    """One token, one event: an operation is executed once for every subscriber running it (the
    same text and variables), and each other operation is executed apart, answering its own shape."""
    brief = "subscription($p: ID) { disputeRaised(projectId: $p) { id reason } }"
    other = "subscription($p: ID) { disputeRaised(projectId: $p) { id contested { statement } } }"
    queries = [brief, brief, other, DISPUTE_RAISED]
    async with contextlib.AsyncExitStack() as stack:
        sockets = [await stack.enter_async_context(opened(served.url, world.human.token)) for _ in queries]
        ops = [
            await sock.subscribe(query, p=world.project_id)
            for sock, query in zip(sockets, queries, strict=True)
        ]
        await served.subscribed(len(sockets))
        contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="A")
        newcomer = await api.assert_item(world.human.token, projectId=world.project_id, statement="B")
        made = await api.run(world.human.token, DISPUTE_ITEM, i=newcomer["id"], c=contested["id"], r="no")
        got = [(await sock.data(op))["disputeRaised"] for sock, op in zip(sockets, ops, strict=True)]
    dispute_id = made["disputeItem"]["id"]
    assert got[0] == got[1] == {"id": dispute_id, "reason": "no"}
    assert got[2] == {"id": dispute_id, "contested": {"statement": "A"}}
    assert got[3]["item"]["statement"] == "B" and got[3]["raisedBy"] == {"id": world.human.id}


# --- F6: nothing is lost silently -----------------------------------------------------------------


async def burst(admin_engine: AsyncEngine, workspace_id: str, count: int) -> None:
    """``count`` announcements of disputes nobody can read, committed at once (as a busy workspace would)."""
    async with admin_engine.begin() as connection:
        await connection.execute(
            text(
                "SELECT pg_notify(mneia_channel_of(:w),"
                " json_build_object('kind', 'dispute', 'seq', -g)::text) FROM generate_series(1, :n) g"
            ),
            {"w": workspace_id, "n": count},
        )


async def test_f6_a_subscriber_that_falls_behind_is_disconnected_with_a_message(
    api: Api, world: World, served: Served
) -> None:
    """A bounded inbox: on overflow it ends with SUBSCRIPTION_INTERRUPTED / FELL_BEHIND, not a silent gap."""
    async with opened(served.url, world.human.token) as slow, opened(served.url, world.human.token) as steady:
        served.hub.queue_size = 5
        try:
            lagging = await slow.subscribe(DISPUTE_RAISED)
            await served.subscribed(1)
        finally:
            served.hub.queue_size = notification.QUEUE_SIZE
        watched = await steady.subscribe(DISPUTE_RAISED)
        await served.subscribed(2)

        await burst(api.admin_engine, world.workspace_id, 50)
        ended = await slow.message(lagging)
        assert ended["type"] == "next" and ended["payload"]["data"] is None, ended
        (error,) = ended["payload"]["errors"]
        assert error["extensions"] == {"code": "SUBSCRIPTION_INTERRUPTED", "reason": "FELL_BEHIND"}, error
        assert "fell behind" in error["message"], error
        assert (await slow.message(lagging))["type"] == "complete"

        # The control, with the usual bound, took the same burst and still delivers.
        dispute_id = await dispute_in(api, world.human.token, world.project_id)
        assert (await steady.data(watched))["disputeRaised"]["id"] == dispute_id


async def test_f16_a_revoked_token_ends_its_stream_within_a_second(
    api: Api, world: World, served: Served
) -> None:
    """The revocation is announced: the stream ends with UNAUTHENTICATED without waiting for an event.

    Two tokens of one actor are two classes: revoking one leaves the other's stream alone.
    """
    carol = await api.actor(world.human.token, "HUMAN", "carol")
    await api.add_member(world.human.token, world.project_id, carol.id)
    second = await api.run(
        world.human.token, "mutation($a: ID!) { createToken(actorId: $a) { token } }", a=carol.id
    )
    async with (
        opened(served.url, carol.token) as revoked,
        opened(served.url, second["createToken"]["token"]) as kept,
    ):
        streams = [await revoked.subscribe(DISPUTE_RAISED), await revoked.subscribe(PROPOSAL_RAISED)]
        watched = await kept.subscribe(DISPUTE_RAISED)
        await served.subscribed(3)
        (listed,) = [
            t["id"]
            for t in (await api.run(carol.token, "{ tokens { id hint } }"))["tokens"]
            if carol.token.startswith(t["hint"])
        ]
        await api.run(world.human.token, "mutation($i: ID!) { revokeToken(id: $i) { id } }", i=listed)
        for op in streams:
            ended = await revoked.message(op, DELIVERY)
            assert ended["type"] == "next" and ended["payload"]["data"] is None, ended
            assert ended["payload"]["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", ended
            assert (await revoked.message(op))["type"] == "complete"

        dispute_id = await dispute_in(api, world.human.token, world.project_id)
        assert (await kept.data(watched))["disputeRaised"]["id"] == dispute_id
        await asyncio.sleep(SETTLE)
        assert revoked.pending() == {}


@dataclass
class Restartable:
    """A private embedded PostgreSQL (never the machine's shared one), migrated, with a workspace."""

    server: EmbeddedServer
    admin_url: str
    admin_engine: AsyncEngine


@pytest.fixture
async def restartable() -> AsyncIterator[Restartable]:
    # Not under pytest's basetemp, whose parents the server's system user cannot traverse (conftest).
    scratch = Path(tempfile.mkdtemp(prefix="mneia-pg-restart-"))
    server = await asyncio.to_thread(EmbeddedServer, scratch, cleanup="delete")
    try:
        admin_url = await asyncio.to_thread(server.ensure_database)
        await asyncio.to_thread(migration.upgrade, admin_url)
        admin_engine = create_engine(admin_url, pool_size=2)
        yield Restartable(server, admin_url, admin_engine)
        await admin_engine.dispose()
    finally:
        await asyncio.to_thread(server.stop)
        shutil.rmtree(scratch, ignore_errors=True)


async def test_f6_no_acknowledged_dispute_is_lost_across_a_postgresql_restart(
    restartable: Restartable,
) -> None:
    """F6: disputes raised 10/s, PostgreSQL restarted mid-stream, writers retrying: every
    acknowledged dispute reaches the subscriber, once, in number order."""
    engine = create_engine(app_url(restartable.admin_url), pool_size=5)
    writes = create_app(engine, dispose_engine=False)
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=writes), base_url="http://mneia.test") as http,
        serving(restartable.admin_url, routed=False) as served,
    ):
        api = Api(http, restartable.admin_engine)
        world = await api.world()
        pairs = [
            (
                (await api.assert_item(world.human.token, projectId=world.project_id, statement=f"A{n}"))[
                    "id"
                ],
                (await api.assert_item(world.human.token, projectId=world.project_id, statement=f"B{n}"))[
                    "id"
                ],
            )
            for n in range(40)
        ]
        acknowledged: list[str] = []

        async def raise_disputes() -> None:
            for contested, newcomer in pairs:
                while True:  # a writer retries what failed; only what answered is acknowledged
                    try:
                        body = await api.post(
                            world.human.token, DISPUTE_ITEM, {"i": newcomer, "c": contested, "r": "no"}
                        )
                    except (AssertionError, httpx.HTTPError):
                        body = {}
                    if body.get("data"):
                        acknowledged.append(body["data"]["disputeItem"]["id"])
                        break
                    conflict = any(
                        (e.get("extensions") or {}).get("code") == "CONFLICT" for e in body.get("errors", [])
                    )
                    if conflict:  # committed although its answer was lost: not acknowledged
                        break
                    await asyncio.sleep(0.1)
                await asyncio.sleep(0.1)

        async with opened(served.url, world.human.token) as sock:
            op = await sock.subscribe(DISPUTE_RAISED, p=world.project_id)
            await served.subscribed(1)
            writer = asyncio.create_task(raise_disputes())
            await asyncio.sleep(1.5)
            await asyncio.to_thread(restartable.server.restart)
            await restartable.admin_engine.dispose()  # its pooled connections died with the server
            await asyncio.wait_for(writer, 60)

            delivered: list[str] = []
            with contextlib.suppress(TimeoutError):  # what never comes is counted below
                async with asyncio.timeout(15):
                    while not set(acknowledged) <= set(delivered):
                        delivered.append((await sock.data(op, within=15))["disputeRaised"]["id"])
            await asyncio.sleep(SETTLE)
            for message in sock.pending().get(op, []):
                delivered.append(message["payload"]["data"]["disputeRaised"]["id"])

        numbers = {
            str(row["id"]): row["seq"]
            for row in await rows(restartable.admin_engine, "SELECT id, seq FROM disputes")
        }
        assert len(acknowledged) >= 30, acknowledged  # the stream really ran across the restart
        assert set(acknowledged) <= set(delivered), set(acknowledged) - set(delivered)  # 0 lost
        assert len(delivered) == len(set(delivered)), delivered  # no duplicates
        assert [numbers[d] for d in delivered] == sorted(numbers[d] for d in delivered)  # in number order
    await engine.dispose()


async def test_f6_a_subscriber_is_told_when_what_it_missed_cannot_be_read_again(
    restartable: Restartable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL down for longer than a subscriber waits: the stream ends with MISSED_EVENTS, not silence."""
    monkeypatch.setattr(notification, "RESUME_SECONDS", 1.0)
    async with serving(restartable.admin_url, routed=False) as served:
        made = await workspace.bootstrap(restartable.admin_engine, "down", "alice")
        await restartable.admin_engine.dispose()
        async with opened(served.url, made.token) as sock:
            op = await sock.subscribe(DISPUTE_RAISED)
            await served.subscribed(1)
            stopped = asyncio.create_task(asyncio.to_thread(restartable.server.restart, down_for=4.0))
            ended = await sock.message(op, within=READY)
            assert ended["type"] == "next" and ended["payload"]["data"] is None, ended
            (error,) = ended["payload"]["errors"]
            assert error["extensions"] == {"code": "SUBSCRIPTION_INTERRUPTED", "reason": "MISSED_EVENTS"}
            assert "missed" in error["message"], error
            assert (await sock.message(op))["type"] == "complete"
            await stopped


async def test_f15_subscriptions_are_not_compressed_per_message(served: Served) -> None:
    """The server declines permessage-deflate, which a client offers by default: each small event
    would be compressed anew for every subscriber (mneia.http.transport.server_options)."""
    ws = await connect(served.url, subprotocols=[PROTOCOL], compression="deflate", open_timeout=READY)
    try:
        assert ws.request is not None and ws.response is not None
        assert "permessage-deflate" in (ws.request.headers.get("Sec-WebSocket-Extensions") or "")
        assert ws.response.headers.get("Sec-WebSocket-Extensions") is None
    finally:
        await ws.close()
