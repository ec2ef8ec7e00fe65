"""One transaction per GraphQL operation, opened in one place.

The operation runs inside one transaction bound to the caller's workspace and
actor; it commits only when the operation produced no error, so a failed
mutation leaves nothing behind (R14). Every operation but pure introspection
needs a bearer token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy.exc import DBAPIError
from starlette.requests import Request
from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from graphql import ExecutionResult, GraphQLError, OperationDefinitionNode
from mneia.errors import BadInput, MneiaError, Unauthenticated
from mneia.resolvers.errors import present


def _introspection_only(document: object) -> bool:
    definitions = getattr(document, "definitions", ())
    for definition in definitions:
        if not isinstance(definition, OperationDefinitionNode):
            continue
        for selection in definition.selection_set.selections:
            name = getattr(getattr(selection, "name", None), "value", "")
            if not name.startswith("__"):
                return False
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
        if not context.token() and _introspection_only(execution.graphql_document):
            yield
            return
        started = False
        failure: Exception
        try:
            async with context.authenticated() as tx:
                started = True
                yield
                if execution.result is None or getattr(execution.result, "errors", None):
                    tx.fail()
            return
        except Unauthenticated as error:
            failure = error  # raised before the operation ran
        except (DBAPIError, OSError) as error:
            # The database failed to begin, authenticate or commit: whatever the
            # operation answered did not happen, so its data must not be shown.
            failure = error
        execution.result = ExecutionResult(
            data=None, errors=[GraphQLError(str(failure), original_error=failure)]
        )
        if not started:
            yield
