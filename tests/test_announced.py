"""A subscription's shared read (storage.announced): one statement, the same answer as three.

Each subscriber class reads the announced row and the items and actors it
names in one statement. It must answer exactly what the loaders' own
statements answer under the same token (R1, R2, R15): the row only when the
reader sees it, each named item and actor as ``by_ids`` gives it, and None
for a named one the reader cannot see.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.storage import actor, dispute, item, proposal, token
from mneia.storage.database import Tx, transaction
from tests.graphql import Api, World
from tests.support import SUPERSEDE, supersession

pytestmark = pytest.mark.asyncio

DISPUTE_ITEM = 'mutation($i: ID!, $c: ID!) { disputeItem(id: $i, contestedId: $c, reason: "no") { id } }'


async def _separately(tx: Tx, named_items: list[uuid.UUID], named_actors: list[uuid.UUID]) -> tuple[Any, Any]:
    """What the loaders' own statements give for the named ids: the record, or None when unseen."""
    items = await item.by_ids(tx, named_items)
    actors = await actor.by_ids(tx, named_actors)
    return (
        {named: items.get(named) for named in named_items},
        {named: actors.get(named) for named in named_actors},
    )


async def test_r15_a_dispute_and_what_it_names_read_in_one_statement_as_in_three(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    contested = await api.assert_item(world.human.token, projectId=world.project_id, statement="A")
    newcomer = await api.assert_item(world.agent.token, projectId=world.project_id, statement="B")
    made = await api.run(world.agent.token, DISPUTE_ITEM, i=newcomer["id"], c=contested["id"])
    dispute_id = uuid.UUID(made["disputeItem"]["id"])
    outsider = await api.actor(world.human.token, "HUMAN", "outsider")
    elsewhere = await api.world()

    for reader, sees in (
        (world.human.token, True),
        (world.agent.token, True),
        (outsider.token, False),  # not a member of the project
        (elsewhere.human.token, False),  # another workspace
    ):
        async with transaction(engine) as tx:
            await token.authenticate(tx, reader)
            assert (await dispute.ANNOUNCED.read(tx, 0)).record is None  # no row is numbered 0
            rows = await dispute.by_ids(tx, [dispute_id])
            if sees:
                number = rows[dispute_id].seq
                read = await dispute.ANNOUNCED.read(tx, number)
                assert read.record == rows[dispute_id]
                record = rows[dispute_id]
                named_items = [record.item_id, record.contested_id]
                named_actors = [record.raised_by]
                assert (read.items, read.actors) == await _separately(tx, named_items, named_actors)
                assert set(read.items) == {uuid.UUID(newcomer["id"]), uuid.UUID(contested["id"])}
                assert all(found is not None for found in read.items.values())
            else:
                assert rows == {}
            tx.fail()
        if not sees:
            # The row by its number, read as this reader: nothing at all, not even what it names.
            async with transaction(engine) as tx:
                await token.authenticate(tx, world.human.token)
                number = (await dispute.by_ids(tx, [dispute_id]))[dispute_id].seq
                tx.fail()
            async with transaction(engine) as tx:
                await token.authenticate(tx, reader)
                read = await dispute.ANNOUNCED.read(tx, number)
                assert (read.record, read.items, read.actors) == (None, {}, {})
                tx.fail()


async def test_r15_a_proposal_names_none_for_what_is_not_there_yet(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    """A pending proposal names no result and no decider: those stay out; its target and proposer are in."""
    target = await api.assert_item(
        world.human.token, projectId=world.project_id, kind="CONSTRAINT", statement="X"
    )
    asked = await api.run(
        world.agent.token, SUPERSEDE, **supersession(world.project_id, target["id"], "Y", "better")
    )
    proposal_id = uuid.UUID(asked["supersedeItem"]["proposal"]["id"])
    async with transaction(engine) as tx:
        await token.authenticate(tx, world.human.token)
        record = (await proposal.by_ids(tx, [proposal_id]))[proposal_id]
        read = await proposal.ANNOUNCED.read(tx, record.seq)
        assert read.record == record
        assert record.result_id is None and record.decided_by is None
        assert (read.items, read.actors) == await _separately(tx, [record.target_id], [record.proposed_by])
        tx.fail()
