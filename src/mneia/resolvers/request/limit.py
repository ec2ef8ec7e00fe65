"""The limits every GraphQL document must keep, in one place, and the check against them.

A document is refused before any work it would cause: its size before it is
parsed, its tokens while it is parsed, its depth, aliases and estimated cost
once it is known valid and before anything executes. Each refusal is a
``LimitExceeded`` (BAD_USER_INPUT) naming the limit, as the README lists them.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphql import GraphQLError
from mneia.errors import LimitExceeded
from mneia.resolvers.request.cost import Measure


@dataclass(frozen=True)
class Limits:
    max_document_bytes: int = 65_536
    """The query text, in UTF-8 bytes: checked before parsing."""
    max_tokens: int = 2_000
    """Lexical tokens, comments included: the parser stops at the first token over."""
    max_depth: int = 10
    """Nested selection sets below the root field (``{ me { id } }`` is 1); introspection excluded."""
    max_aliases: int = 100
    """Aliased fields, counted as they would execute (each fragment spread counts again)."""
    max_cost: int = 25_000
    """Estimated fields resolved: lists weigh by their page size and nested lists multiply."""
    list_size: int = 10
    """What a list without a ``first`` argument is assumed to hold, in the cost estimate."""
    overlap_budget: int = 20_000
    """graphql-core's work budget for comparing fields that share a response name (its default,
    500 000, let 5 KB of repeated ``me { id }`` hold the event loop for 3 s); realistic queries spend 0."""
    cache_bytes: int = 32 * 1024 * 1024
    """Estimated memory of the parsed documents kept for reuse; only authenticated callers add to it."""


LIMITS = Limits()


def refusals(measure: Measure, limits: Limits = LIMITS) -> list[LimitExceeded]:
    """Every limit ``measure`` exceeds, each as its own error."""
    checks = (
        ("query depth", measure.depth, "maxDepth", limits.max_depth),
        ("aliases", measure.aliases, "maxAliases", limits.max_aliases),
        ("query cost", measure.cost, "maxCost", limits.max_cost),
    )
    return [LimitExceeded(*check) for check in checks if check[1] > check[3]]


def oversized(query: str, limits: Limits = LIMITS) -> LimitExceeded | None:
    """The refusal of a query text too long to parse, or None."""
    if len(query) <= limits.max_document_bytes // 4:
        return None  # at most 4 bytes a character: no need to encode
    size = len(query.encode("utf-8", "surrogatepass"))
    if size <= limits.max_document_bytes:
        return None
    return LimitExceeded("document size", size, "maxDocumentBytes", limits.max_document_bytes)


def too_many_tokens(error: GraphQLError, limits: Limits = LIMITS) -> LimitExceeded | None:
    """The refusal of a document whose parse graphql-core stopped at ``max_tokens``, or None.

    The parser and the lexer (for runs of comments) stop with the same syntax
    error; its wording is the only sign of which limit stopped them.
    """
    if not error.message.endswith(f"more than {limits.max_tokens} tokens. Parsing aborted."):
        return None
    return LimitExceeded("token count", limits.max_tokens + 1, "maxTokens", limits.max_tokens)
