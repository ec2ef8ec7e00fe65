"""``mneia gql``, the README walkthrough's command (issue 26): one operation from a shell.

What must stay true: variables are taken as httpie takes them (``name=value`` a string whatever it
looks like, ``name:=json`` any JSON value); ``--get`` prints a string as it is and anything else as
JSON; what cannot be sent (no token, a malformed variable, a path the answer lacks) and what the
server refuses are one line on stderr, the contract's code first for a refusal, with nothing
written. The walkthrough itself runs in tests/test_readme.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia import gql
from mneia.app import create_app
from tests.graphql import Api, World
from tests.live import CLI, cli_env, uvicorn_serving
from tests.test_cli import mneia, one_line_error

NAMES = st.from_regex(r"[_A-Za-z][_0-9A-Za-z]{0,12}", fullmatch=True)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(NAMES, st.text())
def test_a_name_equals_value_variable_is_the_string_as_given(name: str, value: str) -> None:
    """``n=1``, ``n=true``, ``n=a=b``: the string after the first ``=``, never parsed as JSON."""
    assert gql.variables([f"{name}={value}"]) == {name: value}


@given(NAMES, JSON)
def test_a_name_colon_equals_variable_is_its_json(name: str, value: object) -> None:
    assert gql.variables([f"{name}:={json.dumps(value)}"]) == {name: value}


@pytest.mark.parametrize(
    ("given_", "said"),
    [
        (["project"], "'project': a variable is NAME=VALUE (a string) or NAME:=JSON"),
        (["1x=a"], "'1x=a': a variable is NAME=VALUE"),
        (["budget:=four"], "variable budget: 'four' is not JSON"),
    ],
)
def test_a_malformed_variable_is_refused_by_name(given_: list[str], said: str) -> None:
    with pytest.raises(gql.Refused, match=said.replace("(", r"\(").replace(")", r"\)")):
        gql.variables(given_)


def test_get_digs_a_dotted_path_and_names_what_is_missing() -> None:
    data = {"items": {"nodes": [{"rendered": "[human-confirmed] …", "tokens": 7}]}}
    assert gql.dig(data, "items.nodes.0.rendered") == "[human-confirmed] …"
    assert gql.shown(gql.dig(data, "items.nodes.0.tokens")) == "7"
    assert gql.shown(gql.dig(data, "items.nodes")) == '[{"rendered": "[human-confirmed] …", "tokens": 7}]'
    with pytest.raises(gql.Refused, match="--get items.nodes.1: the answer has no '1' there"):
        gql.dig(data, "items.nodes.1")
    with pytest.raises(gql.Refused, match="--get items.edges: the answer has no 'edges' there"):
        gql.dig(data, "items.edges")


def test_without_a_token_it_says_which_variable_to_set(tmp_path: Path) -> None:
    env = cli_env(tmp_path, MNEIA_URL="http://127.0.0.1:1")
    env.pop("MNEIA_TOKEN", None)
    line = one_line_error(mneia("gql", "{ me { id } }", env=env))
    assert line == "mneia: MNEIA_TOKEN is not set: give the token of the actor who sends the operation"


def test_an_unreachable_server_is_one_line(tmp_path: Path) -> None:
    env = cli_env(tmp_path, MNEIA_URL="http://127.0.0.1:1", MNEIA_TOKEN="mneia_x")
    line = one_line_error(mneia("gql", "{ me { id } }", env=env))
    assert line.startswith("mneia: UNREACHABLE: cannot reach http://127.0.0.1:1/graphql"), line


def gql_run(*args: str, env: dict[str, str], stdin: str | None = None) -> tuple[int, str, str]:
    done = subprocess.run(
        [*CLI, "gql", *args], env=env, input=stdin, capture_output=True, text=True, timeout=120
    )
    return done.returncode, done.stdout, done.stderr


async def items_in(api: Api, world: World) -> int:
    query = "query ($p: ID!) { items(projectId: $p) { totalCount } }"
    return int((await api.run(world.human.token, query, p=world.project_id))["items"]["totalCount"])


async def test_it_sends_as_the_token_and_prints_data_a_value_or_the_refusal(
    engine: AsyncEngine, api: Api, world: World, tmp_path: Path
) -> None:
    """Over a real socket: the data as one JSON line, ``--get`` values one per line, a refusal as
    ``CODE: message (REASON)`` with status 1 and nothing written, and the document from stdin."""
    async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
        agent = cli_env(tmp_path, MNEIA_URL=f"http://127.0.0.1:{port}", MNEIA_TOKEN=world.agent.token)
        human = {**agent, "MNEIA_TOKEN": world.human.token}

        said = await asyncio.to_thread(gql_run, "{ me { name kind } }", env=agent)
        assert said == (0, json.dumps({"me": {"name": "claude-code", "kind": "AGENT"}}) + "\n", "")

        assert_item = (
            "mutation ($p: ID!, $c: Float) { assertItem(input: {projectId: $p, kind: FACT,"
            ' statement: "The ledger is append-only", confidence: $c}) { id confidence authority } }'
        )
        get = ("--get", "assertItem.confidence", "--get", "assertItem.authority")
        said = await asyncio.to_thread(
            gql_run, assert_item, f"p={world.project_id}", "c:=0.5", *get, env=agent
        )
        assert (said[0], said[1].splitlines(), said[2]) == (0, ["0.5", "AGENT_ASSERTED"], "")

        before = await items_in(api, world)
        refused = (
            'mutation ($p: ID!) { assertItem(input: {projectId: $p, kind: FACT, statement: ""}) { id } }'
        )
        said = await asyncio.to_thread(gql_run, "-", f"p={world.project_id}", env=agent, stdin=refused)
        assert said[0] == 1 and said[1] == ""
        assert said[2].startswith("mneia: BAD_USER_INPUT: input.statement"), said[2]
        assert await items_in(api, world) == before

        said = await asyncio.to_thread(gql_run, "{ me { id } }", "--get", "me.id", env=human)
        assert said == (0, world.human.id + "\n", "")


async def test_bootstrap_token_prints_the_token_alone(admin_url: str, api: Api, tmp_path: Path) -> None:
    env = cli_env(tmp_path, DATABASE_URL=admin_url)
    made = await asyncio.to_thread(
        mneia, "admin", "bootstrap", "--workspace", "gql-ws", "--human", "Cy", "--token", env=env
    )
    assert made.returncode == 0, made.stderr
    (token,) = made.stdout.splitlines()
    assert (await api.run(token, "{ me { name kind } }"))["me"] == {"name": "Cy", "kind": "HUMAN"}
    both = await asyncio.to_thread(
        mneia, "admin", "bootstrap", "--workspace", "x", "--human", "y", "--token", "--json", env=env
    )
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
