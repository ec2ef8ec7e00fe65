"""The status code and headers of a GraphQL answer, from its errors and the media type.

Following the GraphQL-over-HTTP spec: an error raised before execution began
(a syntax or validation error, a variable that does not coerce, a refusal by
a limit) is a *request error*: it has no ``path`` and no data. Under
``application/graphql-response+json`` a request error answers 400 without a
``data`` entry (5xx when the server failed); under ``application/json`` it
answers 200 with ``data: null``, as legacy clients expect. Either way an
UNAUTHENTICATED request error answers 401 with a ``WWW-Authenticate: Bearer``
challenge (RFC 6750), ``error="invalid_token"`` when a token was presented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mneia.http.media import GRAPHQL_RESPONSE

SERVER_FAILURES = {"INTERNAL_SERVER_ERROR": 500, "SERVICE_UNAVAILABLE": 503}


@dataclass(frozen=True)
class Exchange:
    """What the answer depends on in the request: the media type chosen, whether a token came."""

    media_type: str
    bearer_presented: bool


@dataclass(frozen=True)
class Outcome:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]


def _codes(errors: list[Any]) -> set[str]:
    return {
        str(error.get("extensions", {}).get("code"))
        for error in errors
        if isinstance(error, dict) and isinstance(error.get("extensions"), dict)
    }


def is_request_error(body: dict[str, Any]) -> bool:
    errors = body.get("errors") or []
    return bool(errors) and body.get("data") is None and all("path" not in error for error in errors)


def challenge(bearer_presented: bool) -> str:
    return 'Bearer error="invalid_token"' if bearer_presented else "Bearer"


def outcome(body: dict[str, Any], exchange: Exchange) -> Outcome:
    if not is_request_error(body):
        return Outcome(200, {}, body)
    codes = _codes(body["errors"])
    strict = exchange.media_type == GRAPHQL_RESPONSE
    shown = {key: value for key, value in body.items() if key != "data"} if strict else body
    if "UNAUTHENTICATED" in codes:
        return Outcome(401, {"WWW-Authenticate": challenge(exchange.bearer_presented)}, shown)
    if not strict:
        return Outcome(200, {}, body)
    failures = [SERVER_FAILURES[code] for code in codes if code in SERVER_FAILURES]
    return Outcome(max(failures, default=400), {}, shown)
