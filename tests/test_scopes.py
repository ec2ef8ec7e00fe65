"""R2 scopes: one readable test per scope, through the API and as the server's role.

The cast, in one workspace (plus a stranger in another):
- ``boss``: the human who created team T and project P (so a member of both);
- ``writer``: an agent, direct member of P, asserts every item here;
- ``member``: a human, direct member of P, not in T;
- ``teammate``: a human in T only (P belongs to T);
- ``outsider``: a human of the workspace in neither;
- ``grantee``: an agent of the workspace in neither;
- ``stranger``: a human of another workspace.

For each viewer we check the item by id (``item`` is null when invisible),
the project listing (``items`` nodes and ``totalCount``), raw ``SELECT`` as
``mneia_app`` with the viewer's context (so the policy, not Python, decides),
and that a mutation on an invisible item is NOT_FOUND, never FORBIDDEN.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.graphql import Api, GraphQLFailure, Who
from tests.support import (
    ADD_TEAM_MEMBER,
    ASSERT_ITEM,
    CONFIRM_ITEM,
    COUNT_ITEMS,
    VERIFY_ITEM,
    assert_code,
    refused_as_bad_input,
    visible_item_ids,
)


@dataclass(frozen=True)
class Cast:
    workspace_id: str
    project_id: str
    boss: Who
    writer: Who
    member: Who
    teammate: Who
    outsider: Who
    grantee: Who
    stranger_workspace_id: str
    stranger: Who

    def everyone(self) -> dict[str, Who]:
        return {
            "boss": self.boss,
            "writer": self.writer,
            "member": self.member,
            "teammate": self.teammate,
            "outsider": self.outsider,
            "grantee": self.grantee,
            "stranger": self.stranger,
        }

    def workspace_of(self, name: str) -> str:
        return self.stranger_workspace_id if name == "stranger" else self.workspace_id


@pytest.fixture(scope="module")
async def cast(api: Api) -> Cast:
    workspace_id, boss = await api.bootstrap("boss")
    writer = await api.actor(boss.token, "AGENT", "writer")
    member = await api.actor(boss.token, "HUMAN", "member")
    teammate = await api.actor(boss.token, "HUMAN", "teammate")
    outsider = await api.actor(boss.token, "HUMAN", "outsider")
    grantee = await api.actor(boss.token, "AGENT", "grantee")
    team = await api.run(boss.token, 'mutation { createTeam(name: "T", function: "backend") { id } }')
    team_id = team["createTeam"]["id"]
    await api.run(boss.token, ADD_TEAM_MEMBER, t=team_id, a=teammate.id)
    project_id = await api.project(boss.token, "P", team_id)
    await api.add_member(boss.token, project_id, writer.id)
    await api.add_member(boss.token, project_id, member.id)
    stranger_workspace_id, stranger = await api.bootstrap("stranger")
    return Cast(
        workspace_id,
        project_id,
        boss,
        writer,
        member,
        teammate,
        outsider,
        grantee,
        stranger_workspace_id,
        stranger,
    )


async def _assert(api: Api, cast: Cast, scope: str, grants: list[str] | None = None) -> str:
    fields: dict[str, object] = {"projectId": cast.project_id, "statement": f"a {scope} fact", "scope": scope}
    if grants is not None:
        fields["grantActorIds"] = grants
    made = await api.assert_item(cast.writer.token, **fields)
    assert made["scope"] == scope
    return made["id"]


async def _check(api: Api, engine: AsyncEngine, cast: Cast, item_id: str, seen_by: set[str]) -> None:
    """Exactly the viewers in ``seen_by`` see the item, by id, in the listing and in raw SQL."""
    for name, who in cast.everyone().items():
        expected = name in seen_by
        by_id = await api.run(who.token, "query($i: ID!) { item(id: $i) { id } }", i=item_id)
        assert (by_id["item"] is not None) == expected, (name, by_id)
        raw = await visible_item_ids(engine, who)
        assert (item_id in raw) == expected, name
        if name == "stranger":
            assert_code(await api.fail(who.token, COUNT_ITEMS, p=cast.project_id), "NOT_FOUND")
            continue
        page = await api.run(
            who.token,
            "query($p: ID!) { items(projectId: $p, first: 100) { totalCount nodes { id } } }",
            p=cast.project_id,
        )
        listed = {node["id"] for node in page["items"]["nodes"]}
        assert (item_id in listed) == expected, name
        assert page["items"]["totalCount"] == len(listed), "totalCount counts invisible items"


async def _not_found_for(api: Api, who: Who, item_id: str) -> None:
    """Mutating an invisible item is NOT_FOUND (existence does not leak), never FORBIDDEN."""
    assert_code(await api.fail(who.token, CONFIRM_ITEM, i=item_id), "NOT_FOUND")
    assert_code(await api.fail(who.token, VERIFY_ITEM, i=item_id), "NOT_FOUND")


async def test_r2_private_item_only_its_asserter_sees(api: Api, engine: AsyncEngine, cast: Cast) -> None:
    item_id = await _assert(api, cast, "PRIVATE")
    await _check(api, engine, cast, item_id, {"writer"})
    for who in (cast.boss, cast.member, cast.stranger):  # humans of the project, and beyond
        await _not_found_for(api, who, item_id)


async def test_r2_project_item_only_project_members_see(api: Api, engine: AsyncEngine, cast: Cast) -> None:
    item_id = await _assert(api, cast, "PROJECT")
    await _check(api, engine, cast, item_id, {"writer", "boss", "member"})
    for who in (cast.teammate, cast.outsider, cast.stranger):
        await _not_found_for(api, who, item_id)
    confirmed = await api.run(
        cast.member.token, "mutation($i: ID!) { confirmItem(id: $i) { authority } }", i=item_id
    )
    assert confirmed["confirmItem"]["authority"] == "HUMAN_CONFIRMED"


async def test_r2_team_item_project_and_team_members_see(api: Api, engine: AsyncEngine, cast: Cast) -> None:
    item_id = await _assert(api, cast, "TEAM")
    await _check(api, engine, cast, item_id, {"writer", "boss", "member", "teammate"})
    for who in (cast.outsider, cast.stranger):
        await _not_found_for(api, who, item_id)


async def test_r2_workspace_item_every_actor_of_the_workspace_sees(
    api: Api, engine: AsyncEngine, cast: Cast
) -> None:
    item_id = await _assert(api, cast, "WORKSPACE")
    everyone_here = set(cast.everyone()) - {"stranger"}
    await _check(api, engine, cast, item_id, everyone_here)
    await _not_found_for(api, cast.stranger, item_id)


async def test_r2_grants_item_only_asserter_and_listed_actors_see(
    api: Api, engine: AsyncEngine, cast: Cast
) -> None:
    item_id = await _assert(api, cast, "GRANTS", [cast.grantee.id, cast.outsider.id])
    await _check(api, engine, cast, item_id, {"writer", "grantee", "outsider"})
    # Membership of the project is not enough: the boss and member were not listed.
    for who in (cast.boss, cast.member, cast.teammate, cast.stranger):
        await _not_found_for(api, who, item_id)


async def test_r2_grants_cannot_name_an_actor_of_another_workspace(api: Api, cast: Cast) -> None:
    await refused_as_bad_input(
        api,
        cast.writer.token,
        ASSERT_ITEM,
        "grantActorIds",
        i={
            "kind": "FACT",
            "projectId": cast.project_id,
            "statement": "leak",
            "scope": "GRANTS",
            "grantActorIds": [cast.stranger.id],
        },
    )


async def test_r2_dispute_never_exposes_an_out_of_scope_contested_item(api: Api, cast: Cast) -> None:
    """The writer contradicts its own PRIVATE item with a WORKSPACE one; the outsider sees only the latter.

    Whatever the fix (hide the dispute, or refuse the assertion), the outsider's
    reads must succeed and never carry the private item's id.
    """
    hidden = await _assert(api, cast, "PRIVATE")
    try:
        made = await api.assert_item(
            cast.writer.token,
            projectId=cast.project_id,
            statement="the opposite",
            scope="WORKSPACE",
            contradicts=[hidden],
        )
    except GraphQLFailure as refused:
        # Refusing such an assertion is a fix too, as long as it is a proper answer.
        assert refused.errors[0]["extensions"]["code"] != "INTERNAL_SERVER_ERROR", refused.errors
        return
    reads = [
        ("query($i: ID!) { item(id: $i) { id disputes { id contested { id } } } }", {"i": made["id"]}),
        (
            "query($p: ID!) { items(projectId: $p, first: 100) { nodes { id disputes { id "
            "item { id } contested { id } } } } }",
            {"p": cast.project_id},
        ),
    ]
    for query, variables in reads:
        body = await api.post(cast.outsider.token, query, variables)
        assert not body.get("errors"), body
        assert hidden not in str(body["data"])
