"""F9 as a matrix and a property: every argument position × every bad value is a clean refusal.

The positions are read from the schema itself (graphql-core's type map of the
built schema), not listed by hand: every argument of every query and
mutation, and every field of every input object under it, so a field added
later is covered without touching this file. A new scalar type fails
``valid_value`` until it is given a valid and some bad values here.

For each position the request carries type-valid values everywhere else
and one bad value there: text PostgreSQL cannot hold (NUL, lone surrogate,
overlong), DateTimes that overflow in UTC, Durations past 100 years, numbers
past their type (past 32 bits, NaN, ±Infinity), wrong JSON types, nulls
where the type forbids them, and deep nesting. Each must answer HTTP 200
with data null and only BAD_USER_INPUT errors, refused before any resolver
ran (no error has a ``path``), or, for what a JSON body may not carry at all
(NaN, Infinity, nesting past ``mneia.http.body.MAX_DEPTH``, F9's 1,000
levels), a 400 with a JSON error; and the whole database must be the same
afterwards. Subscriptions are left out: over HTTP they are refused before
execution, and over a websocket they run through the same executor
(resolvers.request.execution).

Schemathesis (its GraphQL support, over hypothesis-graphql) adds whole
documents drawn from the schema, valid and invalid, with the same bad
scalars: none may get a 5xx or INTERNAL_SERVER_ERROR.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.generation.modes import GenerationMode
from schemathesis.graphql import nodes
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from starlette.websockets import WebSocketDisconnect

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    get_named_type,
    is_required_argument,
    is_required_input_field,
)
from mneia.app import create_app
from mneia.config import app_url, async_url
from mneia.resolvers.inputs import TEXT_LIMIT
from mneia.resolvers.root import build_schema
from mneia.schema.scalars import MAX_DURATION
from tests.graphql import Api, World
from tests.support import database_state

SCHEMA = build_schema()._schema


@dataclass(frozen=True)
class Position:
    """One place a client can put a value: a root field's argument, or a field inside it."""

    operation: str  # "query" or "mutation"
    field: str
    path: tuple[str, ...]  # the argument, then input fields
    type: GraphQLInputType

    def __str__(self) -> str:
        return f"{self.field}({'.'.join(self.path)})"


def _positions_under(
    operation: str, field: str, path: tuple[str, ...], of: GraphQLInputType
) -> Iterator[Position]:
    yield Position(operation, field, path, of)
    named = get_named_type(of)
    if isinstance(named, GraphQLInputObjectType) and path.count(path[-1]) == 1:
        for name, inner in named.fields.items():
            yield from _positions_under(operation, field, (*path, name), inner.type)


def positions() -> list[Position]:
    found: list[Position] = []
    for operation, root in (("query", SCHEMA.query_type), ("mutation", SCHEMA.mutation_type)):
        assert root is not None
        for field, definition in root.fields.items():
            for argument, spec in definition.args.items():
                found.extend(_positions_under(operation, field, (argument,), spec.type))
    return found


POSITIONS = positions()

# --- values -------------------------------------------------------------------------------------

VALID_SCALARS: dict[str, Any] = {
    "ID": str(uuid.UUID(int=7)),
    "String": "x",
    "Boolean": True,
    "Int": 1,
    "Float": 0.5,
    "DateTime": "2026-01-01T00:00:00+00:00",
    "Duration": "P1D",
}


def valid_value(of: GraphQLInputType) -> Any:
    """A value of the type that coerces cleanly: required input fields only."""
    if isinstance(of, GraphQLNonNull):
        return valid_value(of.of_type)
    if isinstance(of, GraphQLList):
        return [valid_value(of.of_type)]
    if isinstance(of, GraphQLInputObjectType):
        return {name: valid_value(f.type) for name, f in of.fields.items() if is_required_input_field(f)}
    if isinstance(of, GraphQLEnumType):
        return next(iter(of.values))
    assert isinstance(of, GraphQLScalarType)
    assert of.name in VALID_SCALARS, f"new scalar {of.name}: give it valid and bad values in this test"
    return VALID_SCALARS[of.name]


def nested(depth: int, leaf: Any = "x", *, as_object: bool = False) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value} if as_object else [value]
    return value


TEXT_BAD: dict[str, Any] = {
    "nul": "a\x00b",
    "lone-surrogate": "a\ud800b",
    "overlong": "x" * (TEXT_LIMIT + 1),
}
BAD_BY_SCALAR: dict[str, dict[str, Any]] = {
    "String": {**TEXT_BAD, "number": 12345, "boolean": True},
    "ID": {**TEXT_BAD, "boolean": True, "float": 1.5},
    "DateTime": {
        "before-year-1-in-utc": "0001-01-01T00:00:00+01:00",
        "after-year-9999-in-utc": "9999-12-31T23:00:00-05:00",
        "not-a-date": "2026-13-45T00:00:00Z",
        "nul": "2026-01-01T00:00:00Z\x00",
        "number": 20260101,
    },
    "Duration": {
        "beyond-100-years": "P3000000D",
        "beyond-timedelta": "P9999999999D",
        "beyond-100-years-in-hours": f"PT{MAX_DURATION.days * 24 + 1}H",
        "huge-digits": "P" + "9" * 60 + "D",
        "negative": "-P1D",
        "number": 90,
    },
    "Int": {
        "past-32-bits": 2**31,
        "below-32-bits": -(2**31) - 1,
        "huge": 10**30,
        "fraction": 1.5,
        "nan": math.nan,
        "infinity": math.inf,
        "string": "1",
    },
    "Float": {
        "nan": math.nan,
        "infinity": math.inf,
        "minus-infinity": -math.inf,
        "string": "0.5",
        "boolean": True,
    },
    "Boolean": {"string": "true", "number": 1},
}
ENUM_BAD: dict[str, Any] = {"unknown": "NOPE", "nul": "ACTIVE\x00", "number": 1}
OBJECT_BAD: dict[str, Any] = {
    "string": "x",
    "number": 5,
    "deep-object": nested(50, as_object=True),
    "unknown-field": {"noSuchField\x00": 1},
}
# Deep, yet within what a body may nest (mneia.http.body.MAX_DEPTH): GraphQL's coercion refuses them.
ANY_BAD: dict[str, Any] = {"deep-list": nested(50), "deep-object-in-leaf": nested(50, as_object=True)}


def bad_values(position: Position) -> dict[str, Any]:
    named = get_named_type(position.type)
    if isinstance(named, GraphQLInputObjectType):
        bad = dict(OBJECT_BAD)
    elif isinstance(named, GraphQLEnumType):
        bad = dict(ENUM_BAD)
    else:
        bad = dict(BAD_BY_SCALAR[named.name])
    if isinstance(position.type, GraphQLNonNull):
        bad["null"] = None
    bad.update(ANY_BAD)
    if _is_list(position.type):  # the same values inside the list, too
        bad.update({f"[{name}]": [value] for name, value in list(bad.items()) if value is not None})
    return bad


def _is_list(of: GraphQLInputType) -> bool:
    return isinstance(of.of_type if isinstance(of, GraphQLNonNull) else of, GraphQLList)


# --- requests -----------------------------------------------------------------------------------


def arguments_with(position: Position, bad: Any) -> dict[str, Any]:
    """Every required argument of the field valid, and ``bad`` at the position."""
    root = SCHEMA.query_type if position.operation == "query" else SCHEMA.mutation_type
    assert root is not None
    definition = root.fields[position.field]
    values = {
        name: valid_value(arg.type) for name, arg in definition.args.items() if is_required_argument(arg)
    }
    argument = position.path[0]
    if len(position.path) == 1:
        values[argument] = bad
        return values
    holder_type: Any = definition.args[argument].type
    holder = values.setdefault(argument, valid_value(holder_type))
    if isinstance(holder, list):  # a list of input objects (assertItems' input): its one element
        holder = holder[0]
    for name in position.path[1:-1]:
        holder_type = get_named_type(holder_type).fields[name].type
        holder = holder.setdefault(name, valid_value(holder_type))
        if isinstance(holder, list):  # a list of input objects (rehydrate's quotas): its one element
            holder = holder[0]
    holder[position.path[-1]] = bad
    return values


def operation_text(position: Position, arguments: dict[str, Any]) -> str:
    root = SCHEMA.query_type if position.operation == "query" else SCHEMA.mutation_type
    assert root is not None
    args = root.fields[position.field].args
    declared = ", ".join(f"${name}: {args[name].type}" for name in arguments)
    passed = ", ".join(f"{name}: ${name}" for name in arguments)
    return f"{position.operation}({declared}) {{ {position.field}({passed}) {{ __typename }} }}"


def body(query: str, variables: dict[str, Any]) -> bytes:
    """JSON as a client may send it: NaN and Infinity literals, surrogates as \\u escapes."""
    return json.dumps({"query": query, "variables": variables}, allow_nan=True).encode()


async def send(api: Api, token: str, payload: bytes) -> tuple[int, Any]:
    response = await api.http.post(
        "/graphql",
        content=payload,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text


def refusal_problem(status: int, answer: Any) -> str | None:
    """What is wrong with the answer to a bad input, or None when it is a clean refusal.

    A clean refusal is BAD_USER_INPUT before any resolver ran, or a body refused as a whole
    (NaN, Infinity, nesting past ``mneia.http.body.MAX_DEPTH``) with a 400 and a JSON error.
    """
    if status == 400 and isinstance(answer, dict):
        codes = {error.get("extensions", {}).get("code") for error in answer.get("errors") or [{}]}
        return None if codes <= {"BAD_REQUEST", "BAD_USER_INPUT"} else f"HTTP 400 with codes {codes}"
    if status != 200:
        return f"HTTP {status}"
    errors = answer.get("errors") or []
    if not errors:
        return "accepted"
    if answer.get("data") is not None:
        return f"data {answer['data']}"
    codes = {error.get("extensions", {}).get("code") for error in errors}
    if codes != {"BAD_USER_INPUT"}:
        return f"codes {codes}: {errors[0]['message'][:200]}"
    if any("path" in error for error in errors):
        return f"reached a resolver: {errors[0]['message'][:200]}"
    return None


def test_f9_positions_come_from_the_schema() -> None:
    """The matrix is derived, not listed: it holds nested input fields of every kind of argument."""
    names = {str(position) for position in POSITIONS}
    for expected in (
        "assertItem(input.statement)",
        "assertItem(input.decayAfter)",
        "assertItem(input.grantActorIds)",
        "supersedeItem(input.replacement.validFrom)",
        "startSession(input.client.tool)",
        "items(filter.text)",
        "items(first)",
        "item(asOf)",
        "retireItem(reason)",
    ):
        assert expected in names
    assert len(POSITIONS) >= 80


async def test_f9_every_position_refuses_every_bad_variable(api: Api, world: World) -> None:
    """F9: each position × each bad value, as variables: BAD_USER_INPUT before any resolver, no write."""
    before = await database_state(api.admin_engine)
    failures: list[str] = []
    sent = 0
    for position in POSITIONS:
        for name, bad in bad_values(position).items():
            arguments = arguments_with(position, bad)
            status, answer = await send(
                api, world.human.token, body(operation_text(position, arguments), arguments)
            )
            sent += 1
            problem = refusal_problem(status, answer)
            if problem:
                failures.append(f"{position} × {name}: {problem}")
    assert not failures, "\n".join(failures)
    assert sent >= 5 * len(POSITIONS)
    assert await database_state(api.admin_engine) == before


# --- literals -----------------------------------------------------------------------------------


def literal(value: Any, of: GraphQLInputType) -> str:
    """``value`` written into the document as GraphQL syntax for type ``of``."""
    if value is None:
        return "null"
    if isinstance(of, GraphQLNonNull):
        return literal(value, of.of_type)
    if isinstance(of, GraphQLList):
        items = value if isinstance(value, list) else [value]
        return "[" + ", ".join(literal(item, of.of_type) for item in items) + "]"
    if isinstance(of, GraphQLInputObjectType) and isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {literal(v, of.fields[k].type)}" for k, v in value.items()) + "}"
    if isinstance(of, GraphQLEnumType) and isinstance(value, str) and value in of.values:
        return value
    return json.dumps(value)


# Text the document itself can carry: a lone surrogate is a syntax error in any GraphQL document.
LITERAL_BAD: dict[str, dict[str, str]] = {
    "String": {"nul": "a\x00b", "overlong": "x" * (TEXT_LIMIT + 1)},
    "ID": {"nul": "a\x00b", "overlong": "x" * (TEXT_LIMIT + 1)},
    "DateTime": {k: BAD_BY_SCALAR["DateTime"][k] for k in ("before-year-1-in-utc", "after-year-9999-in-utc")},
    "Duration": {k: BAD_BY_SCALAR["Duration"][k] for k in ("beyond-100-years", "beyond-timedelta")},
}


async def test_f9_every_text_position_refuses_bad_literals(api: Api, world: World) -> None:
    """F9 for values written into the document: the same refusals, naming the argument path."""
    before = await database_state(api.admin_engine)
    failures: list[str] = []
    for position in POSITIONS:
        named = get_named_type(position.type)
        for name, bad in LITERAL_BAD.get(named.name, {}).items():
            root = SCHEMA.query_type if position.operation == "query" else SCHEMA.mutation_type
            assert root is not None
            args = root.fields[position.field].args
            arguments = arguments_with(position, bad)
            passed = ", ".join(f"{arg}: {literal(value, args[arg].type)}" for arg, value in arguments.items())
            query = f"{position.operation} {{ {position.field}({passed}) {{ __typename }} }}"
            status, answer = await send(api, world.human.token, body(query, {}))
            problem = refusal_problem(status, answer)
            if problem is None and position.path[-1] not in answer["errors"][0]["message"]:
                problem = f"does not name {position.path[-1]}: {answer['errors'][0]['message'][:200]}"
            if problem:
                failures.append(f"{position} × {name}: {problem}")
    assert not failures, "\n".join(failures)
    assert await database_state(api.admin_engine) == before


@pytest.mark.parametrize("shape", ["list", "object"])
async def test_f9_variables_nested_1000_deep_are_a_400(api: Api, world: World, shape: str) -> None:
    """F9's variables nested 1,000 deep, past the JSON decoder's recursion limit: a 400, not a 500."""
    # json.dumps would hit the same limit: the nesting is written out by hand.
    opening, closing = ('{"a":', "}") if shape == "object" else ("[", "]")
    text = opening * 1000 + '"x"' + closing * 1000
    query = json.dumps("mutation($i: AssertItemInput!) { assertItem(input: $i) { id } }")
    payload = f'{{"query": {query}, "variables": {{"i": {text}}}}}'.encode()
    before = await database_state(api.admin_engine)
    status, _ = await send(api, world.human.token, payload)
    assert status == 400
    assert await database_state(api.admin_engine) == before


@pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")
def test_f9_a_websocket_message_nested_1000_deep_closes_as_invalid_json(admin_url: str) -> None:
    """Over graphql-transport-ws the same message is refused as malformed JSON (close 4400), under the
    body's rules, instead of crashing the connection's handler."""
    from starlette.testclient import TestClient  # imported here: its import warns about httpx

    engine = create_async_engine(async_url(app_url(admin_url)), poolclass=NullPool)
    with (
        TestClient(create_app(engine, dispose_engine=False)) as client,
        client.websocket_connect("/graphql", subprotocols=["graphql-transport-ws"]) as ws,
    ):
        ws.send_text('{"type": "connection_init", "payload": ' + "[" * 1000 + "]" * 1000 + "}")
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_text()
    assert closed.value.code == 4400


async def test_f9_numbers_past_the_decoders_digit_limit_are_a_400(api: Api, world: World) -> None:
    """A 5,000-digit number cannot become a Python int (its str-to-int limit): malformed JSON, a 400."""
    query = json.dumps(
        f'query($f: Int) {{ items(projectId: "{world.project_id}", first: $f) {{ totalCount }} }}'
    )
    status, _ = await send(
        api, world.human.token, f'{{"query": {query}, "variables": {{"f": {"9" * 5000}}}}}'.encode()
    )
    assert status == 400


# --- the property --------------------------------------------------------------------------------


def _with_bad_char(bad: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda head, char, tail: head + char + tail, st.text(max_size=12), bad, st.text(max_size=12)
    )


BAD_TEXT = st.one_of(
    _with_bad_char(st.just("\x00")),
    _with_bad_char(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)),
    st.integers(TEXT_LIMIT + 1, TEXT_LIMIT + 50).map(lambda size: "y" * size),
)


def _offset(minutes: int) -> timezone:
    return timezone(timedelta(minutes=minutes))


# A moment within a day of an end of Python's range, with an offset that carries it past in UTC.
OVERFLOWING_DATETIME = st.one_of(
    st.integers(0, 23 * 60 + 58).flatmap(
        lambda early: st.integers(early + 1, 23 * 60 + 59).map(
            lambda offset: (datetime(1, 1, 1) + timedelta(minutes=early)).replace(tzinfo=_offset(offset))
        )
    ),
    st.integers(0, 23 * 60 + 58).flatmap(
        lambda late: st.integers(late + 1, 23 * 60 + 59).map(
            lambda offset: (datetime(9999, 12, 31, 23, 59) - timedelta(minutes=late)).replace(
                tzinfo=_offset(-offset)
            )
        )
    ),
).map(lambda moment: moment.isoformat())

LONG_DURATION = st.one_of(
    st.integers(MAX_DURATION.days + 1, 10**12).map(lambda days: f"P{days}D"),
    st.integers(MAX_DURATION.days * 24 + 1, 10**14).map(lambda hours: f"PT{hours}H"),
    st.integers(MAX_DURATION.days // 7 + 1, 10**11).map(lambda weeks: f"P{weeks}W"),
)
NOT_AN_INT = st.one_of(
    st.integers(min_value=2**31),
    st.integers(max_value=-(2**31) - 1),
    st.floats(allow_nan=True, allow_infinity=True).filter(
        lambda x: not x.is_integer() if math.isfinite(x) else True
    ),
)
# Finite floats out of a field's range reach its resolver (test_bad_input covers confidence's check).
NOT_A_FLOAT = st.sampled_from([math.nan, math.inf, -math.inf])
WRONG_SHAPE = st.one_of(
    st.integers(2, 600).map(nested),
    st.integers(2, 600).map(lambda depth: nested(depth, as_object=True)),
    st.dictionaries(st.text(max_size=5), st.integers(), min_size=1, max_size=3),
)


def bad_strategy(position: Position) -> st.SearchStrategy[Any]:
    named = get_named_type(position.type)
    by_name: dict[str, st.SearchStrategy[Any]] = {
        "String": BAD_TEXT,
        "ID": BAD_TEXT,
        "DateTime": st.one_of(OVERFLOWING_DATETIME, BAD_TEXT),
        "Duration": st.one_of(LONG_DURATION, BAD_TEXT),
        "Int": NOT_AN_INT,
        "Float": NOT_A_FLOAT,
        "Boolean": st.one_of(st.text(), st.integers()),
    }
    strategy = by_name.get(named.name, st.one_of(BAD_TEXT, st.integers()))
    if isinstance(named, GraphQLInputObjectType):
        strategy = st.one_of(BAD_TEXT, st.integers(), st.lists(st.integers(), min_size=1))
    return st.one_of(strategy, WRONG_SHAPE)


@st.composite
def bad_requests(draw: st.DrawFn) -> tuple[Position, Any]:
    position = draw(st.sampled_from(POSITIONS))
    return position, draw(bad_strategy(position))


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=bad_requests())
async def test_f9_property_any_bad_value_anywhere_is_bad_user_input(
    api: Api, world: World, request: tuple[Position, Any]
) -> None:
    """Hypothesis draws a position and a bad value for its type: BAD_USER_INPUT before any resolver."""
    position, bad = request
    arguments = arguments_with(position, bad)
    before = await database_state(api.admin_engine)
    status, answer = await send(api, world.human.token, body(operation_text(position, arguments), arguments))
    assert refusal_problem(status, answer) is None, (str(position), bad, answer)
    assert await database_state(api.admin_engine) == before


def test_overflowing_datetimes_really_overflow() -> None:
    """A control for the strategy above: what it draws is outside Python's range in UTC."""

    @given(OVERFLOWING_DATETIME)
    def check(text: str) -> None:
        with pytest.raises(OverflowError):
            datetime.fromisoformat(text).astimezone(UTC)

    check()


# --- schemathesis ---------------------------------------------------------------------------------


def _literal_strings(bad: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Mostly ordinary text, often text the edge refuses; as GraphQL literal nodes."""
    return st.one_of(st.text(max_size=30), bad).map(nodes.String)


def test_f9_schemathesis_documents_never_get_a_server_error(admin_url: str, world: World) -> None:
    """Schemathesis draws whole documents per root field, valid and invalid (its negative mode), with
    the bad scalars above mixed in: every answer is a 2xx or 4xx without INTERNAL_SERVER_ERROR.

    Schemathesis calls the ASGI app through its own event loop, so the app gets its own engine,
    without a pool (no connection outlives the loop that opened it).
    """
    text_in_a_literal = st.one_of(_with_bad_char(st.just("\x00")), st.just("x" * (TEXT_LIMIT + 1)))
    schemathesis.graphql.scalar("String", _literal_strings(text_in_a_literal))
    schemathesis.graphql.scalar("ID", _literal_strings(text_in_a_literal))
    schemathesis.graphql.scalar(
        "DateTime", st.one_of(st.just(VALID_SCALARS["DateTime"]), OVERFLOWING_DATETIME).map(nodes.String)
    )
    schemathesis.graphql.scalar(
        "Duration", st.one_of(st.just(VALID_SCALARS["Duration"]), LONG_DURATION).map(nodes.String)
    )
    engine = create_async_engine(async_url(app_url(admin_url)), poolclass=NullPool)
    schema = schemathesis.graphql.from_asgi("/graphql", create_app(engine, dispose_engine=False))
    headers = {"Authorization": f"Bearer {world.human.token}"}
    answers: list[int] = []

    def check(case: Any) -> None:
        response = case.call(headers=headers)
        answers.append(response.status_code)
        assert response.status_code < 500, (case.body, response.text)
        for error in response.json().get("errors") or []:
            assert error.get("extensions", {}).get("code") != "INTERNAL_SERVER_ERROR", (case.body, error)

    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        for found in schema.get_all_operations():
            strategy = found.ok().as_strategy(generation_mode=mode)
            settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))(
                given(case=strategy)(check)
            )()
    assert len(answers) > 150
