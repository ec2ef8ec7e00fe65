"""Ids of what the reader cannot see are not shown (R1, R2).

An item may point at items its reader cannot see: a replacement made wider
than the item it replaced, a contradiction of someone's private note. The id
would say that the hidden item exists, and (ids are UUIDv7) when it was made.
So ``supersedesId`` is null and ``hiddenLinks`` says which link is hidden, and
reasons read ``[hidden]`` where they would name it. Whoever can see the other
item still gets everything.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from mneia.storage.ids import new_id
from mneia.vocabulary import HIDDEN_ID
from tests.graphql import Api, World
from tests.support import SUPERSEDE, as_owner, supersession

READ = """query($i: ID!) { item(id: $i) {
  id status statusReason supersedesId supersessionReason hiddenLinks
  supersedes { id } supersededBy { id } chain { id } disputes { id } } }"""


async def read(api: Api, token: str, item_id: str) -> dict[str, Any]:
    return (await api.run(token, READ, i=item_id))["item"]


async def test_r2_a_replacement_of_a_private_item_does_not_show_it(api: Api, world: World) -> None:
    private = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="v1", scope="PRIVATE"
    )
    variables = supersession(
        world.project_id, private["id"], "v2", f"supersedes {private['id']}", scope="WORKSPACE"
    )
    replaced = (await api.run(world.agent.token, SUPERSEDE, **variables))["supersedeItem"]["replacement"]

    seen_by_human = await read(api, world.human.token, replaced["id"])
    assert seen_by_human["supersedesId"] is None
    assert seen_by_human["supersedes"] is None
    assert seen_by_human["hiddenLinks"] == ["supersedes"]
    assert seen_by_human["supersessionReason"] == f"supersedes {HIDDEN_ID}"
    assert [link["id"] for link in seen_by_human["chain"]] == [replaced["id"]]
    # The asserter sees its own private item, and so the link.
    seen_by_agent = await read(api, world.agent.token, replaced["id"])
    assert seen_by_agent["supersedesId"] == private["id"]
    assert seen_by_agent["hiddenLinks"] == []
    assert seen_by_agent["supersessionReason"] == f"supersedes {private['id']}"


async def test_r2_a_contradiction_of_a_private_item_does_not_name_it(api: Api, world: World) -> None:
    private = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Deploy at night", scope="PRIVATE"
    )
    contradicting = await api.assert_item(
        world.agent.token,
        projectId=world.project_id,
        statement="Deploy by day",
        scope="WORKSPACE",
        contradicts=[private["id"]],
    )
    seen_by_human = await read(api, world.human.token, contradicting["id"])
    assert seen_by_human["status"] == "DISPUTED"
    assert seen_by_human["statusReason"] == f"contradicts {HIDDEN_ID}"
    assert private["id"] not in str(seen_by_human)
    assert seen_by_human["disputes"] == []  # a dispute shows only to who sees both sides
    seen_by_agent = await read(api, world.agent.token, contradicting["id"])
    assert seen_by_agent["statusReason"] == f"contradicts {private['id']}"
    assert len(seen_by_agent["disputes"]) == 1


async def test_r2_a_replacement_the_reader_cannot_see_is_a_hidden_link(api: Api, world: World) -> None:
    """Written by an administrator (the API never narrows a replacement): the reader sees only the status."""
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Use Redis")
    async with as_owner(api.admin_engine, world.agent) as connection:
        await connection.execute(
            text(
                "INSERT INTO items (workspace_id, id, project_id, kind, statement, asserted_by, scope,"
                " supersedes_id, supersession_reason) VALUES (:ws, :id, :project, 'FACT', 'Use Valkey',"
                " :agent, 'PRIVATE', :item, 'licence')"
            ),
            {
                "ws": world.workspace_id,
                "id": new_id(),
                "project": world.project_id,
                "agent": world.agent.id,
                "item": item["id"],
            },
        )
        await connection.execute(
            text("UPDATE items SET status = 'SUPERSEDED', status_reason = 'licence' WHERE id = :item"),
            {"item": item["id"]},
        )
    seen_by_human = await read(api, world.human.token, item["id"])
    assert (seen_by_human["status"], seen_by_human["supersededBy"]) == ("SUPERSEDED", None)
    assert seen_by_human["hiddenLinks"] == ["supersededBy"]
    assert (await read(api, world.agent.token, item["id"]))["hiddenLinks"] == []
