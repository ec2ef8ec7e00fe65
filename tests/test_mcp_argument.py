"""R14 over MCP: a tool's arguments that fail its signature are refused as the API refuses bad input.

BAD_USER_INPUT, each field the caller named and what it allows, in the API's
vocabulary (its enums' values), never pydantic's report, and nothing written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.mcp import argument, budget
from mneia.vocabulary import ItemKind, Scope
from tests.graphql import Api, World
from tests.live import uvicorn_serving
from tests.mcp_client import call, http_client, refused
from tests.support import ASSERT_ITEM, database_state

KINDS = ", ".join(ItemKind)
SCOPES = ", ".join(scope for scope in Scope if scope != Scope.GRANTS)  # no tool takes the grantees


@pytest.fixture(scope="module")
async def base(engine: AsyncEngine) -> AsyncIterator[str]:
    async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
        yield f"http://127.0.0.1:{port}"


async def test_r14_a_tools_bad_arguments_name_the_field_and_what_it_allows_and_write_nothing(
    base: str, api: Api, world: World
) -> None:
    async with http_client(base, world.agent.token) as client:
        await call(client, "search_items")  # the connection's project is settled
        before = await database_state(api.admin_engine)
        said = {
            "assert_item": await refused(client, "assert_item", kind="RUMOUR", statement="x"),
            "scope": await refused(client, "assert_item", kind="FACT", statement="x", scope="GRANTS"),
            "several": await refused(client, "assert_item", kind="FACT", statement="", confidence=3),
            "missing": await refused(client, "assert_item", kind="FACT"),
            "search_items": await refused(client, "search_items", kinds=["FACT", "RUMOUR"], limit=1000),
            "checkpoint": await refused(
                client, "checkpoint", summary="s", items=[{"kind": "X", "statement": "y"}]
            ),
            "item_action": await refused(client, "item_action", id="x", action="delete"),
            "rehydrate": await refused(client, "rehydrate", task="t", token_budget="lots"),
        }
        assert await database_state(api.admin_engine) == before
    assert said == {
        "assert_item": f"BAD_USER_INPUT: kind: expected one of {KINDS}",
        "scope": f"BAD_USER_INPUT: scope: expected one of {SCOPES}",
        "several": "BAD_USER_INPUT: statement: must not be empty; confidence: must be at most 1, got 3",
        "missing": "BAD_USER_INPUT: statement: is required",
        "search_items": (
            f"BAD_USER_INPUT: kinds[1]: expected one of {KINDS}; "
            f"limit: must be at most {budget.MAX_SEARCH_LIMIT}, got 1000"
        ),
        "checkpoint": f"BAD_USER_INPUT: items[0].kind: expected one of {KINDS}",
        "item_action": "BAD_USER_INPUT: action: expected one of verify, retire",
        "rehydrate": "BAD_USER_INPUT: token_budget: expected an integer",
    }


async def test_r14_mcp_and_graphql_refuse_a_bad_kind_with_the_same_code_and_values(
    base: str, api: Api, world: World
) -> None:
    """The API's BAD_USER_INPUT names ``input.kind``; the tool's, its argument ``kind``, with the values the
    API's ItemKind enum allows."""
    error = await api.fail(
        world.agent.token, ASSERT_ITEM, i={"projectId": world.project_id, "kind": "RUMOUR", "statement": "x"}
    )
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and "kind" in error["message"]
    async with http_client(base, world.agent.token) as client:
        said = await refused(client, "assert_item", kind="RUMOUR", statement="x")
    code, _, message = said.partition(": ")
    assert code == error["extensions"]["code"]
    assert message == f"kind: expected one of {KINDS}"


class _Checkpoint(BaseModel):
    kind: Literal["FACT", "TASK"]
    share: Annotated[float, Field(gt=0, lt=0.5)] = 0.1


class _Arguments(BaseModel):
    items: list[_Checkpoint]
    statement: Annotated[str, Field(min_length=2, max_length=3)]


def test_refusal_names_nested_fields_as_the_api_does() -> None:
    with pytest.raises(ValidationError) as raised:
        _Arguments.model_validate(
            {"items": [{"kind": "FACT"}, {"kind": "NOTE", "share": 0.5}, 7], "statement": "long"}
        )
    error = argument.refusal(raised.value)
    assert error.code == "BAD_USER_INPUT"
    assert error.message == (
        "items[1].kind: expected one of FACT, TASK; items[1].share: must be less than 0.5, got 0.5; "
        "items[2]: expected an object; statement: is longer than 3 characters"
    )
    with pytest.raises(ValidationError) as raised:
        _Arguments.model_validate({"items": [{"kind": "TASK", "share": 0}], "statement": "x"})
    assert argument.refusal(raised.value).message == (
        "items[0].share: must be more than 0, got 0; statement: is shorter than 2 characters"
    )
