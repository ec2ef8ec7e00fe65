"""Plain fields completed without graphql-core's per-field machinery answer as graphql-core does.

``resolvers.request.completion`` reads a plain field's attribute (or calls its
``self``-only method) and coerces it in one loop. These tests run the same
operations through the server's executor and through graphql-core's own
(the same schema with ``Completion`` taken out) and compare the whole answer:
data, errors, their messages and paths. First on pages read from a real
database, then on a small schema built to reach every way out of the plain
case (nulls where the type forbids them, values the coercion refuses, awaitables,
errors raised, lists with holes).
"""

from __future__ import annotations

import asyncio
import enum
from typing import Any

import pytest
import strawberry
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.resolvers.request.completion import Completion, kind_of
from mneia.resolvers.request.context import Context
from mneia.resolvers.request.execution import Execution
from mneia.resolvers.root import MneiaSchema, build_schema
from tests.graphql import Api, World


class GraphQLCoreOnly(Execution):
    """The server's executor with every field completed by graphql-core."""

    def execute_fields(self, *args: Any) -> Any:
        return super(Completion, self).execute_fields(*args)


def answer(result: Any) -> dict[str, Any]:
    errors = [
        {"message": error.message, "path": error.path, "code": (error.extensions or {}).get("code")}
        for error in result.errors or []
    ]
    return {"data": result.data, "errors": sorted(errors, key=lambda error: str(error["path"]))}


async def both(
    plain: Any, core: Any, query: str, context: Any = None, variables: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    ran = await plain.execute(query, variable_values=variables, context_value=context() if context else None)
    baseline = await core.execute(
        query, variable_values=variables, context_value=context() if context else None
    )
    return answer(ran), answer(baseline)


# -- The server's schema on real pages ----------------------------------------------------------

ITEM = """
  id kind statement details loadBearing loadBearingSuggested confidence status authority scope
  assertedAt validFrom validTo decayAfter lastVerifiedAt statusReason supersessionReason supersedesId
  hiddenLinks stale freshness rendered redacted redactedAt redactionReason legalHold __typename
  project { id name team { id } __typename }
  confirmation { by { id name kind erased } at }
  provenance {
    assertedBy { id name kind } actorKind assertedAt basis partial missing saidAt redacted
    session {
      id externalId deepLink task startedAt endedAt provenancePartial provenanceMissing
      client { tool version placeholderVersion } project { id } actor { id name }
    }
  }
"""
PAGE = f"""
query Page($p: ID!) {{
  items(projectId: $p, first: 50) {{
    totalCount pageInfo {{ hasNextPage endCursor }}
    nodes {{
      {ITEM}
      again: statement
      ...Links
      supersedes {{ id status }}
      supersededBy {{ id chain {{ id status }} }}
      disputes {{ id status reason item {{ id }} contested {{ id authority }} raisedBy {{ name }} }}
      events {{ kind fromStatus toStatus loadBearing confirmed actor {{ name }} reason }}
      proposals {{ id kind status target {{ id }} proposedBy {{ kind }} }}
    }}
  }}
}}
fragment Links on Item {{ chain {{ id supersedesId }} hiddenLinks }}
"""


async def test_plain_completion_answers_a_page_as_graphql_core_does(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    human, agent = world.human.token, world.agent.token
    started = await api.run(
        agent,
        "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }",
        i={
            "projectId": world.project_id,
            "client": {"tool": "claude-code", "version": "1.0.98"},
            "externalId": "s-1",
            "deepLink": "claude --resume s-1",
        },
    )
    session = started["startSession"]["id"]
    ruling = await api.assert_item(
        human, projectId=world.project_id, kind="CONSTRAINT", statement="Money is integer cents"
    )
    await api.assert_item(
        agent,
        projectId=world.project_id,
        statement="Cents everywhere",
        basis="the ledger",
        confidence=0.75,
        sessionId=session,
        decayAfter="P30D",
    )
    await api.assert_item(
        agent, projectId=world.project_id, statement="Floats are fine", contradicts=[ruling["id"]]
    )
    outside = await api.assert_item(
        agent, projectId=world.project_id, statement="Retry twice", suggestLoadBearing=True
    )
    await api.run(
        human,
        "mutation($i: SupersedeInput!) { supersedeItem(input: $i) { __typename } }",
        i={
            "targetId": outside["id"],
            "reason": "three",
            "replacement": {"projectId": world.project_id, "kind": "FACT", "statement": "Retry three times"},
        },
    )

    schema = build_schema()
    core = build_schema()
    core.execution_context_class = GraphQLCoreOnly
    for token in (human, agent):
        ran, baseline = await both(
            schema,
            core,
            PAGE,
            lambda token=token: Context(engine=engine, bearer=token),
            {"p": world.project_id},
        )
        assert ran == baseline
        assert not ran["errors"] and len(ran["data"]["items"]["nodes"]) == 5


async def test_plain_completion_refuses_a_bad_token_as_graphql_core_does(engine: AsyncEngine) -> None:
    schema, core = build_schema(), build_schema()
    core.execution_context_class = GraphQLCoreOnly
    ran, baseline = await both(
        schema, core, "{ me { id name } }", lambda: Context(engine=engine, bearer="mneia_x")
    )
    assert ran == baseline and ran["errors"][0]["code"] == "UNAUTHENTICATED"


def test_plain_completion_takes_only_plain_fields() -> None:
    """Fields with arguments, permission extensions or resolvers that want ``info`` are graphql-core's."""
    schema: MneiaSchema = build_schema()
    types = schema._schema.type_map  # noqa: SLF001
    item, query, mutation, session = (types[name] for name in ("Item", "Query", "Mutation", "Session"))
    assert kind_of(item.fields["statement"]) is not None  # an attribute
    assert kind_of(item.fields["stale"]) is not None  # a method of self alone
    assert kind_of(query.fields["items"]) is None  # arguments
    assert kind_of(mutation.fields["confirmItem"]) is None  # human only: a field extension
    assert kind_of(session.fields["project"]) is None  # wants info


# -- A small schema that leaves the plain case every way it can -----------------------------------


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


async def _later(value: Any) -> Any:
    await asyncio.sleep(0)
    return value


@strawberry.type
class Leaf:
    name: str
    nickname: str | None
    colour: Colour
    shade: Colour | None
    tags: list[str]
    maybe_tags: list[str | None]
    count: int
    ratio: float
    ok: bool

    @strawberry.field
    def doubled(self) -> int:
        return self.count * 2

    @strawberry.field
    def shouted(self) -> str:
        if self.name == "boom":
            raise ValueError("no shouting")
        return self.name.upper()

    @strawberry.field
    async def slow(self) -> str:
        return await _later(self.name)

    @strawberry.field
    def later(self) -> str:
        later: Any = _later(self.name)  # graphql-core awaits what a resolver returns
        return later

    @strawberry.field
    def child(self) -> Leaf | None:
        return None if self.name == "boom" else self

    @strawberry.field
    def required_child(self) -> Leaf:
        broken: Any = None if self.name == "boom" else self
        return broken


@strawberry.type
class Root:
    leaves: list[Leaf]
    first: Leaf
    other: Leaf | None
    holes: list[Leaf | None]
    """A list of objects with a null where one is allowed."""
    gaps: list[Leaf]
    """A list of objects with a null where none is allowed."""

    @strawberry.field
    def listed(self) -> list[Leaf]:
        return self.leaves


def good(name: str) -> Leaf:
    return Leaf(
        name=name,
        nickname=None,
        colour=Colour.RED,
        shade=Colour.GREEN,
        tags=["a", "b"],
        maybe_tags=["a", None],
        count=3,
        ratio=0.5,
        ok=True,
    )


def broken() -> Leaf:
    """Every field wrong in its own way."""
    leaf: Any = good("boom")
    leaf.nickname = 12  # an int where a String goes: graphql-core turns it to "12"
    leaf.colour = None  # null in a non-null enum
    leaf.shade = "violet"  # not a member
    leaf.tags = ["a", None]  # a hole in a non-null list
    leaf.maybe_tags = "ab"  # a string where a list goes
    leaf.count = 2**40  # past Int's 32 bits
    leaf.ratio = float("nan")
    settled = asyncio.get_running_loop().create_future()
    settled.set_result(True)
    leaf.ok = settled  # an awaitable attribute
    return leaf


@strawberry.type
class Query:
    @strawberry.field
    def root(self, which: str) -> Root:
        if which == "good":
            return Root(
                leaves=[good("x"), good("y")], first=good("z"), other=None, holes=[None], gaps=[good("w")]
            )
        missing: Any = object()
        gaps: Any = [good("x"), None]
        return Root(
            leaves=[good("x"), broken()],
            first=broken(),
            other=missing,
            holes=[good("v"), None, broken()],
            gaps=gaps,
        )


FIELDS = """
  name nickname colour shade tags maybeTags count ratio ok doubled shouted slow later __typename
  child { name } requiredChild { name colour }
"""
QUERIES = [
    f'{{ root(which: "good") {{ leaves {{ {FIELDS} }} first {{ {FIELDS} }} other {{ name }} holes {{ name }}'
    f" gaps {{ name }} listed {{ {FIELDS} }} }} }}",
    '{ root(which: "bad") { holes { name colour } gaps { name } } }',
    '{ root(which: "bad") { holes { name shade ok slow } listed { name slow } } }',
    '{ root(which: "bad") { listed { name requiredChild { name } } } }',
    '{ root(which: "bad") { holes { name requiredChild { name } } } }',
    '{ root(which: "bad") { gaps { name slow } } }',
    f'{{ root(which: "bad") {{ leaves {{ {FIELDS} }} }} }}',
    f'{{ root(which: "bad") {{ first {{ {FIELDS} }} }} }}',
    '{ root(which: "bad") { other { name } } }',
]
FIELD_NAMES = list(dict.fromkeys(FIELDS.replace("{", " ").replace("}", " ").split()))


@pytest.mark.parametrize("query", QUERIES)
async def test_plain_completion_leaves_the_plain_case_as_graphql_core_does(query: str) -> None:
    plain = strawberry.Schema(query=Query, execution_context_class=Execution)
    core = strawberry.Schema(query=Query, execution_context_class=GraphQLCoreOnly)
    ran, baseline = await both(plain, core, query)
    assert ran == baseline


@pytest.mark.parametrize("field", [name for name in FIELD_NAMES if not name.startswith("__")])
async def test_plain_completion_of_each_broken_field_errs_as_graphql_core_does(field: str) -> None:
    """One field at a time, so that one error's propagation cannot hide another's."""
    selection = f"{field} {{ name }}" if field in ("child", "requiredChild") else field
    query = f'{{ root(which: "bad") {{ leaves {{ {selection} }} other: first {{ {selection} }} }} }}'
    plain = strawberry.Schema(query=Query, execution_context_class=Execution)
    core = strawberry.Schema(query=Query, execution_context_class=GraphQLCoreOnly)
    ran, baseline = await both(plain, core, query)
    assert ran == baseline
