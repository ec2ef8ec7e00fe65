"""R9 validity windows and R10 freshness, through the API."""

from __future__ import annotations

import asyncio

from tests.graphql import Api, World

READ = "query($i: ID!) { item(id: $i) { stale decayAfter lastVerifiedAt } }"
VERIFY = "mutation($i: ID!) { verifyItem(id: $i) { stale lastVerifiedAt } }"
VALID_AT = """query($p: ID!, $t: DateTime!) {
  items(projectId: $p, validAt: $t) { totalCount nodes { statement } }
}"""


async def test_r10_an_item_goes_stale_after_decay_and_verification_refreshes_it(
    api: Api, world: World
) -> None:
    made = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="PSP SDK is 4.2", decayAfter="PT1S"
    )
    fresh = (await api.run(world.agent.token, READ, i=made["id"]))["item"]
    assert fresh == {"stale": False, "decayAfter": "PT1S", "lastVerifiedAt": None}

    await asyncio.sleep(1.2)
    assert (await api.run(world.agent.token, READ, i=made["id"]))["item"]["stale"] is True

    verified = (await api.run(world.agent.token, VERIFY, i=made["id"]))["verifyItem"]
    assert verified["stale"] is False and verified["lastVerifiedAt"] is not None


async def test_r10_an_item_without_decay_never_goes_stale(api: Api, world: World) -> None:
    made = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Money in cents")
    assert (await api.run(world.agent.token, READ, i=made["id"]))["item"] == {
        "stale": False,
        "decayAfter": None,
        "lastVerifiedAt": None,
    }


async def test_r9_valid_at_keeps_items_whose_window_holds_that_moment(api: Api, world: World) -> None:
    project_id = await api.project(world.human.token, "validity")
    token = world.human.token
    await api.assert_item(
        token,
        projectId=project_id,
        statement="old fee",
        validFrom="2026-01-01T00:00:00Z",
        validTo="2026-03-01T00:00:00Z",
    )
    await api.assert_item(token, projectId=project_id, statement="new fee", validFrom="2026-03-01T00:00:00Z")
    await api.assert_item(token, projectId=project_id, statement="always")

    def statements(data: dict) -> set[str]:
        return {node["statement"] for node in data["items"]["nodes"]}

    february = await api.run(token, VALID_AT, p=project_id, t="2026-02-10T12:00:00+01:00")
    assert statements(february) == {"old fee", "always"} and february["items"]["totalCount"] == 2
    april = await api.run(token, VALID_AT, p=project_id, t="2026-04-01T00:00:00Z")
    assert statements(april) == {"new fee", "always"}
    # validTo is exclusive: at the switch the new fee holds, the old one no longer does.
    switch = await api.run(token, VALID_AT, p=project_id, t="2026-03-01T00:00:00Z")
    assert statements(switch) == {"new fee", "always"}
