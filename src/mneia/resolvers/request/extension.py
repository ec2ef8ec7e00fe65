"""One transaction per GraphQL operation, opened in one place.

The operation runs inside one transaction bound to the caller's workspace and
actor; it commits only when the operation produced no error, so a failed
mutation leaves nothing behind (R14). Every operation but pure introspection
needs a bearer token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

from starlette.requests import Request
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
)
from mneia.errors import BadInput, MneiaError
from mneia.resolvers.request.errors import present


def _introspection_only(document: DocumentNode | None) -> bool:
    """True when every field the operations select at the top, through any fragment, is ``__``-named (F10)."""
    if document is None:
        return False
    fragments = {
        definition.name.value: definition.selection_set
        for definition in document.definitions
        if isinstance(definition, FragmentDefinitionNode)
    }
    pending = [
        definition.selection_set
        for definition in document.definitions
        if isinstance(definition, OperationDefinitionNode)
    ]
    spread: set[str] = set()
    while pending:
        for selection in pending.pop().selections:
            if isinstance(selection, FieldNode):
                if not selection.name.value.startswith("__"):
                    return False
            elif isinstance(selection, InlineFragmentNode):
                pending.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in spread:
                spread.add(selection.name.value)
                if selection.name.value in fragments:
                    pending.append(fragments[selection.name.value])
    return True


def _failed(error: Exception) -> ExecutionResult:
    """An operation that did not run; ``errors.present`` decides what the client sees of ``error``."""
    message = error.message if isinstance(error, MneiaError) else type(error).__name__
    return ExecutionResult(data=None, errors=[GraphQLError(message, original_error=error)])


class Transaction(SchemaExtension):
    async def on_operation(self) -> AsyncIterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            document = self.execution_context.graphql_document
            result.errors = [present(error, document) for error in result.errors]

    async def on_stream_result(self, result: Any) -> AsyncIterator[None]:
        """Each result a subscription streams gets the same error boundary."""
        if getattr(result, "errors", None):
            document = self.execution_context.graphql_document
            result.errors = [present(error, document) for error in result.errors]
        yield

    async def on_execute(self) -> AsyncIterator[None]:
        execution = self.execution_context
        context = execution.context
        if execution.operation_type is OperationType.SUBSCRIPTION and isinstance(context.request, Request):
            execution.result = _failed(
                BadInput("subscription", "is served over a websocket (graphql-transport-ws)")
            )
            yield
            return
        if _introspection_only(execution.graphql_document):
            # Nothing to read: no transaction; a token, if given, is still checked (F10).
            if context.token():
                try:
                    await context.verified()
                except Exception as error:  # noqa: BLE001 - unauthenticated, or the database is away
                    execution.result = _failed(error)
            yield
            return
        async with AsyncExitStack() as stack:
            try:
                read = execution.operation_type is OperationType.QUERY
                tx = await stack.enter_async_context(context.authenticated(read))
            except Exception as error:  # noqa: BLE001 - unauthenticated, or the database is away
                execution.result = _failed(error)
                yield
                return
            yield
            result = execution.result
            if result is None or result.errors:
                tx.fail()
            try:
                await stack.aclose()  # commits, or rolls back a failed operation
            except Exception as error:  # noqa: BLE001
                # The commit failed: whatever the operation answered did not happen.
                # Strawberry returns this very result object, so change it in place.
                if result is not None:
                    result.data = None
                    result.errors = _failed(error).errors
