"""The one boundary where failures become GraphQL errors with ``extensions.code`` (R14).

Domain errors keep their message and code. A database refusal (a guard, a
policy, a constraint that caught a race) becomes the domain error it means,
named after the field that asked (storage.failures). GraphQL's own input
errors (a variable of the wrong type, a malformed DateTime or Duration, a
missing argument) become BAD_USER_INPUT. Everything else is logged with a
request id and masked: the client sees the id, never the internals (no SQL,
no parameters, no driver text). A database that is away answers
SERVICE_UNAVAILABLE, which a client may retry.
"""

from __future__ import annotations

import logging
import uuid

from sqlalchemy.exc import DBAPIError

from graphql import ArgumentNode, DocumentNode, GraphQLError, Node, ObjectFieldNode, Visitor, visit
from mneia.errors import MneiaError
from mneia.storage import failures

log = logging.getLogger("mneia")

# Variable coercion ("got invalid value", "of required type … was not provided", "of non-null
# type … must not be null"), not validation ("Variable '$x' is never used" is the document's fault).
_INPUT_MARKERS = (
    "' got invalid value",
    "' has invalid value",
    "' of required type",
    "' of non-null type",
    "Expected value of type",
    "Expected a value of",
    "cannot represent",
    "is required, but it was not provided",
    "Expected type",
    "is not defined by type",
    "not to be None",
    "does not exist in '",
)


def _with(error: GraphQLError, message: str, extensions: dict[str, object]) -> GraphQLError:
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions=extensions,
    )


def _argument_path(document: DocumentNode | None, target: Node) -> str | None:
    """The argument and input fields that enclose ``target`` in the document, e.g. ``input.decayAfter``."""
    if document is None:
        return None
    names: list[str] = []
    found: list[str] = []

    class Finder(Visitor):
        def enter(self, node: Node, *_: object) -> None:
            if isinstance(node, (ArgumentNode, ObjectFieldNode)):
                names.append(node.name.value)
            if node is target and names and not found:
                found.extend(names)

        def leave(self, node: Node, *_: object) -> None:
            if isinstance(node, (ArgumentNode, ObjectFieldNode)):
                names.pop()

    visit(document, Finder())
    return ".".join(found) or None


def _field_name(error: GraphQLError) -> str:
    """The schema field whose resolver failed (its name, not an alias): the operation a refusal names."""
    node = error.nodes[0] if error.nodes else None
    name = getattr(getattr(node, "name", None), "value", None)
    return name or "operation"


def present(error: GraphQLError, document: DocumentNode | None = None) -> GraphQLError:
    """The error as the client should see it."""
    original = error.original_error
    if isinstance(original, DBAPIError):
        original = failures.translate(original, _field_name(error)) or original
    if isinstance(original, MneiaError):
        return _with(error, original.message, {"code": original.code, **original.extensions})
    if original is None or isinstance(original, (ValueError, TypeError)) and error.path is None:
        message = error.message
        if message.startswith("Syntax Error"):
            code = "GRAPHQL_PARSE_FAILED"
        elif any(marker in message for marker in _INPUT_MARKERS):
            code = "BAD_USER_INPUT"
            where = _argument_path(document, error.nodes[0]) if error.nodes else None
            if where and not message.startswith(where):
                message = f"{where}: {message}"
        else:
            code = "GRAPHQL_VALIDATION_FAILED"
        return _with(error, message, {"code": code})
    if isinstance(original, GraphQLError):
        # graphql-core wraps a variable's coercion error; its outer message names the field.
        return _with(error, error.message, dict(present(original, document).extensions or {}))
    request_id = uuid.uuid4().hex[:12]
    if failures.unavailable(original):
        log.warning("request %s: the database is unavailable: %s", request_id, original)
        return _with(
            error,
            f"the database is unavailable; retry shortly (request {request_id})",
            {"code": "SERVICE_UNAVAILABLE", "requestId": request_id},
        )
    log.error("request %s failed", request_id, exc_info=original)
    return _with(
        error,
        f"internal error (request {request_id})",
        {"code": "INTERNAL_SERVER_ERROR", "requestId": request_id},
    )
