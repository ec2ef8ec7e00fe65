"""Parsing and validation within the limits, kept for reuse only once the caller has authenticated.

Clients send the same few operations again and again, so a valid document is
kept by its text and later requests skip parsing and validation. Only a
request whose token authenticated adds to that cache (F1): text sent without
a token, or with a bad one, is parsed for that request alone, within the size
and token limits, and dropped with it. The cache is bounded by the memory of
what it holds (the text, and about ``BYTES_PER_TOKEN`` a token for the parsed
document), not by a count of entries.

What must stay true: a text over a limit is refused before it is parsed
further; a document runs only after it passed validation and the limits for
this request's variables (the cost depends on them, so it is checked on every
request, cached or not); a parse or validation failure is an answer that goes
through the error boundary (``extension.Transaction``), never an exception
out of a hook.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from graphql.language.parser import Parser
from graphql.validation.rules import overlapping_fields_can_be_merged
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import validate_document

from graphql import (
    DocumentNode,
    FieldNode,
    GraphQLError,
    NameNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
)
from mneia.cache import ByteBudget
from mneia.errors import LimitExceeded
from mneia.resolvers.request.context import Context
from mneia.resolvers.request.cost import measure
from mneia.resolvers.request.limit import LIMITS, Limits, oversized, refusals, too_many_tokens

# Read by graphql-core when each validation starts: past it, validation is aborted.
overlapping_fields_can_be_merged.MAX_COMPLEXITY_BUDGET = LIMITS.overlap_budget

# Measured with tracemalloc on graphql-core 3.3 documents (locations kept): 340 to 620
# bytes a token, from deeply nested selections to runs of bare `__typename` fields.
BYTES_PER_TOKEN = 640


class DocumentCache(ByteBudget[str, DocumentNode]):
    """Valid documents by their text, weighed by ``weight``."""


def weight(text: str, tokens: int) -> int:
    """The estimated memory of a parsed document and its text."""
    return sys.getsizeof(text) + tokens * BYTES_PER_TOKEN


def _refused(refusal: LimitExceeded) -> GraphQLError:
    return GraphQLError(refusal.message, original_error=refusal)


def _stand_in(operation_name: str | None) -> DocumentNode:
    """A query that never runs, in place of a text that failed to parse.

    Strawberry gives an extension no way to answer the parse step with an
    error, and looks up the operation's type before validation: the stand-in
    carries the requested name for that, and ``on_validate`` reports the failure.
    """
    typename = FieldNode(name=NameNode(value="__typename"), arguments=(), directives=())
    operation = OperationDefinitionNode(
        operation=OperationType.QUERY,
        name=NameNode(value=operation_name) if operation_name else None,
        variable_definitions=(),
        directives=(),
        selection_set=SelectionSetNode(selections=(typename,)),
    )
    return DocumentNode(definitions=(operation,))


class Documents(SchemaExtension):
    """Parse (or reuse), validate and measure each operation's document. One instance per operation."""

    def __init__(self, cache: DocumentCache, limits: Limits = LIMITS) -> None:
        self.cache = cache
        self.limits = limits
        self.failure: GraphQLError | None = None
        self.parsed: tuple[DocumentNode, int] | None = None  # parsed for this request, with its weight

    def on_parse(self) -> Iterator[None]:
        execution = self.execution_context
        query = execution.query or ""
        document = self.cache.get(query)
        if document is None:
            document = self._parse(query)
        execution.graphql_document = document
        yield

    def _parse(self, query: str) -> DocumentNode:
        refusal = oversized(query, self.limits)
        if refusal is not None:
            self.failure = _refused(refusal)
            return _stand_in(self.execution_context.operation_name)
        parser = Parser(query, max_tokens=self.limits.max_tokens)
        try:
            document = parser.parse_document()
        except GraphQLError as error:
            refusal = too_many_tokens(error, self.limits)
            self.failure = _refused(refusal) if refusal else error
            return _stand_in(self.execution_context.operation_name)
        self.parsed = (document, weight(query, parser.token_count))
        return document

    def on_validate(self) -> Iterator[None]:
        execution = self.execution_context
        execution.pre_execution_errors = [self.failure] if self.failure else self._check()
        yield

    def _check(self) -> list[GraphQLError]:
        """Validation (a document from the cache passed it already), then the limits for these variables."""
        execution = self.execution_context
        schema, document = execution.schema._schema, execution.graphql_document
        assert document is not None, "on_parse sets a document"
        if self.parsed is not None:
            errors = validate_document(schema, document, execution.validation_rules)
            if errors:
                return errors
        # Strawberry's ``operation_name`` names the first operation when the client named none.
        unnamed = _unchosen(document, execution._provided_operation_name)  # noqa: SLF001
        if unnamed is not None:
            return [unnamed]
        size = measure(schema, document, execution.operation_name, execution.variables, self.limits.list_size)
        return [_refused(refusal) for refusal in refusals(size, self.limits)]

    def on_execute(self) -> Iterator[None]:
        """Listed after ``Transaction``, so this runs inside its transaction, once it authenticated or not."""
        context: Context = self.execution_context.context
        if self.parsed is not None and context.accepted:
            self.cache.put(self.execution_context.query or "", *self.parsed)
        yield


def _unchosen(document: DocumentNode, operation_name: str | None) -> GraphQLError | None:
    """The error of a document with several operations and no ``operationName`` (GraphQL over HTTP:
    the server must not pick one; before, the first ran)."""
    if operation_name is not None:
        return None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if len(operations) <= 1:
        return None
    return GraphQLError(
        f"the document holds {len(operations)} operations: name the one to run in operationName",
        extensions={"code": "GRAPHQL_VALIDATION_FAILED"},
    )
