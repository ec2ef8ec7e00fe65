"""The executor: graphql-core's, refusing text PostgreSQL cannot store before any resolver runs (F9),
executing a subscription event once for every subscriber of one token who runs the same operation,
and completing plain fields in one loop (resolvers.request.completion).

graphql-core reserves the String and ID scalars, so their parsing cannot be
replaced. Instead every string a request carries into an argument — in its
variables or as a literal in the document — must pass
``inputs.text_problem`` before the executor is built: a NUL, a lone
surrogate or an overlong string is refused as BAD_USER_INPUT naming the
argument path (``input.statement``), whatever its type and whichever
resolver would have received it, so none can forget the check.
Introspection's arguments (``__type(name:)``) reach no database and are
left to GraphQL.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Hashable, Iterator
from copy import copy
from dataclasses import dataclass
from typing import Any

from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from graphql import (
    SKIP,
    ArgumentNode,
    DocumentNode,
    ExecutionResult,
    FieldNode,
    GraphQLError,
    Node,
    ObjectFieldNode,
    OperationType,
    StringValueNode,
    VariableDefinitionNode,
    VariableNode,
    Visitor,
    visit,
)
from mneia.errors import BadInput
from mneia.resolvers.inputs import text_problem
from mneia.resolvers.request.completion import Completion


class _Strings(Visitor):
    """Walks a document: its string literals with their paths, and the argument each variable fills.

    A literal in a variable's default value is named by the variable (``$note``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []
        self.literals: list[tuple[StringValueNode, str]] = []
        self.usages: dict[str, str] = {}

    def enter(self, node: Node, *_: object) -> Any:
        if isinstance(node, FieldNode) and node.name.value.startswith("__"):
            return SKIP
        if isinstance(node, (ArgumentNode, ObjectFieldNode)):
            self.names.append(node.name.value)
        elif isinstance(node, VariableDefinitionNode):
            self.names.append(f"${node.variable.name.value}")
        elif isinstance(node, StringValueNode):
            self.literals.append((node, ".".join(self.names)))
        elif isinstance(node, VariableNode) and self.names and not self.names[0].startswith("$"):
            self.usages.setdefault(node.name.value, ".".join(self.names))
        return None

    def leave(self, node: Node, *_: object) -> None:
        if isinstance(node, (ArgumentNode, ObjectFieldNode, VariableDefinitionNode)):
            self.names.pop()


@dataclass(frozen=True, slots=True)
class _Reading:
    """What a document alone says: its first refused literal, and the argument each variable fills."""

    refused: GraphQLError | None
    usages: dict[str, str]


def _read(document: DocumentNode) -> _Reading:
    found = _Strings()
    visit(document, found)
    for node, where in found.literals:
        problem = text_problem(node.value)
        if problem:
            error = GraphQLError(problem, nodes=[node], original_error=BadInput(where or "string", problem))
            return _Reading(error, found.usages)
    return _Reading(None, found.usages)


# Clients send the same documents again and again, and the document cache (resolvers.request.document)
# hands back the same DocumentNode for the same text: read each once. Entries live exactly as long
# as their document (a weak reference removes its entry), so this keeps no document alive.
_READINGS: dict[int, tuple[weakref.ref[DocumentNode], _Reading]] = {}


def _reading(document: DocumentNode) -> _Reading:
    key = id(document)
    cached = _READINGS.get(key)
    if cached is not None and cached[0]() is document:
        return cached[1]
    reading = _read(document)
    _READINGS[key] = (weakref.ref(document, lambda _: _READINGS.pop(key, None)), reading)
    return reading


def _strings(value: object, name: str) -> Iterator[tuple[str, tuple[object, ...]]]:
    """Every string inside a variable's JSON value, with its path; iterative, so any depth is safe."""
    pending: list[tuple[object, tuple[object, ...]]] = [(value, ())]
    while pending:
        current, path = pending.pop()
        if isinstance(current, str):
            yield current, path
        elif isinstance(current, dict):
            pending.extend((inner, (*path, key)) for key, inner in current.items())
        elif isinstance(current, list):
            pending.extend((inner, (*path, index)) for index, inner in enumerate(current))


def _joined(where: str, path: tuple[object, ...]) -> str:
    return where + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def refused_text(document: DocumentNode, variables: dict[str, Any] | None) -> GraphQLError | None:
    """The first string the request must not carry into an argument, as an input error."""
    reading = _reading(document)
    if reading.refused is not None or not variables:
        return reading.refused
    for name, where in reading.usages.items():
        if name not in variables:
            continue
        for text, path in _strings(variables[name], name):
            problem = text_problem(text)
            if problem:
                return GraphQLError(problem, original_error=BadInput(_joined(where, path), problem))
    return None


def _event_key(executor: Any) -> Hashable | None:
    """What makes two subscribers' executions of one shared event the same, or None when none is shared.

    A shared event (``Context.sharing``) is read under one token, so one
    visibility; the same operation text, name and variables then give the
    same answer. The results live on the context that read the event, as long
    as the shared read, which keeps the event's record alive: ``id`` cannot be
    reused meanwhile.
    """
    if getattr(executor.context_value, "shared_by", None) is None:
        return None
    if executor.operation.operation is not OperationType.SUBSCRIPTION:
        return None
    record = getattr(executor.root_value, "record", None)
    location = executor.operation.loc
    if record is None or location is None:
        return None
    coerced = getattr(executor.variable_values, "coerced", None) or {}
    variables = repr(sorted(coerced.items()))
    return (id(record), location.source.body, location.start, variables)


class SharedData(dict[str, Any]):
    """The data of one execution that every subscriber of a class receives, encoded once.

    Its JSON text is made the first time a subscriber's message is encoded
    (http.view) and kept with it, so the other subscribers' messages only
    wrap it with their own operation id: 200 subscribers, one ``json.dumps``
    of the event. Nothing changes the data once executed (each subscriber's
    extensions replace its own errors list, never the data).
    """

    _encoded: str | None = None

    def encoded(self, encode: Callable[[object], str]) -> str:
        if self._encoded is None:
            self._encoded = encode(dict(self))
        return self._encoded


async def _shared(answer: Awaitable[ExecutionResult]) -> ExecutionResult:
    result = await answer
    if isinstance(result.data, dict):
        result.data = SharedData(result.data)
    return result


async def _copy_of(shared: asyncio.Future[ExecutionResult]) -> ExecutionResult:
    result = await asyncio.shield(shared)
    # Each subscriber's extensions replace the errors list: never share the list itself.
    return ExecutionResult(result.data, list(result.errors) if result.errors else None, result.extensions)


class Execution(Completion, StrawberryGraphQLCoreExecutionContext):
    @classmethod
    def build(
        cls,
        schema: Any,
        document: DocumentNode,
        root_value: Any = None,
        context_value: Any = None,
        raw_variable_values: dict[str, Any] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        refused = refused_text(document, raw_variable_values)
        if refused is not None:
            return [refused]
        return super().build(
            schema, document, root_value, context_value, raw_variable_values, *args, **kwargs
        )

    def execute_operation(self, serially: bool | None = None) -> Any:
        key = _event_key(self)
        if key is None:
            return super().execute_operation(serially)
        reader = self.context_value.shared_by
        shared = reader.event_results.get(key)
        if shared is None:
            # Executed under the reading context, which outlives every subscriber's share of
            # it: one that leaves meanwhile (its socket closed) takes nothing from the others.
            executor = copy(self)
            executor.context_value = reader
            answer = StrawberryGraphQLCoreExecutionContext.execute_operation(executor, serially)
            if not self.is_awaitable(answer):
                return answer
            shared = reader.event_results[key] = asyncio.ensure_future(_shared(answer))
        return _copy_of(shared)
