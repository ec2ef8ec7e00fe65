"""What a client sent to /graphql, read into one GraphQL request, or refused with a 400.

A POST carries ``application/json``; a GET carries the same parameters in its
query string, ``variables`` and ``extensions`` as JSON text. Anything else —
no body, bytes that are not UTF-8, text that is not JSON, JSON nested deeper
than ``MAX_DEPTH``, JSON that is not an object (``null``, a string, a number,
an array: there is no batching), a parameter of the wrong type — is refused
here, before GraphQL sees it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cross_web import AsyncHTTPRequestAdapter
from strawberry.http import GraphQLRequestData
from strawberry.http.parse_content_type import parse_content_type

from mneia.http.refusal import Refusal, bad_parameter

JSON_MEDIA_TYPE = "application/json"
# No operation of the schema takes values nested anywhere near this deep; deeper
# JSON only serves to make the server recurse (F9: variables nested 1,000 deep).
MAX_DEPTH = 64


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _deeper_than(value: object, limit: int) -> bool:
    """Walked without recursion, so that depth itself cannot exhaust the stack."""
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        current, depth = pending.pop()
        if isinstance(current, dict):
            children: list[object] = list(current.values())
        elif isinstance(current, list):
            children = current
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def decoded(raw: str | bytes, what: str) -> object:
    """Strict JSON in UTF-8: no other encoding, no NaN or Infinity, at most ``MAX_DEPTH`` deep."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as error:
        raise Refusal(400, f"{what} is not valid UTF-8 (byte {error.start})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise Refusal(400, f"{what} is not valid JSON: {error.msg} at line {error.lineno}") from None
    except ValueError as error:
        raise Refusal(400, f"{what} is not valid JSON: {error}") from None
    except RecursionError:
        pass  # deeper than Python's own parser goes: refused below like any too deep
    else:
        if not _deeper_than(value, MAX_DEPTH):
            return value
    raise Refusal(400, f"{what} is nested more than {MAX_DEPTH} levels deep")


async def _fields(request: AsyncHTTPRequestAdapter) -> Mapping[str, object]:
    if request.method == "GET":
        params = request.query_params
        fields: dict[str, object] = {
            name: params[name] for name in ("query", "operationName") if params.get(name) is not None
        }
        for name in ("variables", "extensions"):
            raw = params.get(name)
            if isinstance(raw, str) and raw:
                fields[name] = decoded(raw, name)
        return fields
    media_type, _ = parse_content_type(request.content_type or "")
    if media_type.lower() != JSON_MEDIA_TYPE:
        raise Refusal(400, f"Content-Type must be {JSON_MEDIA_TYPE}, not {media_type or 'missing'}")
    body = await request.get_body()
    if not body.strip():
        raise Refusal(400, "the body is empty; send a JSON object with a query")
    data = decoded(body, "the body")
    if not isinstance(data, dict):
        raise Refusal(
            400, f"the body must be a JSON object, not {_json_type(data)} (batching is not supported)"
        )
    return data


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _optional(fields: Mapping[str, object], name: str, kind: type, expected: str) -> Any:
    value = fields.get(name)
    if value is not None and not isinstance(value, kind):
        raise bad_parameter(name, f"must be {expected} or null, not {_json_type(value)}")
    return value


async def graphql_request(request: AsyncHTTPRequestAdapter) -> GraphQLRequestData:
    fields = await _fields(request)
    return GraphQLRequestData(
        query=_optional(fields, "query", str, "a string"),
        variables=_optional(fields, "variables", dict, "an object"),
        operation_name=_optional(fields, "operationName", str, "a string"),
        extensions=_optional(fields, "extensions", dict, "an object"),
    )
