"""Apollo's automatic persisted queries (APQ): a query sent once, then by its SHA-256 alone.

The exchange Apollo Client performs: it first sends only
``extensions.persistedQuery = {version: 1, sha256Hash}``; an unknown hash gets
``PERSISTED_QUERY_NOT_FOUND`` in a 200 answer, and the client sends the hash
again with the query. A query whose SHA-256 is not the hash is refused.

The texts live in one cache, bounded by bytes (least recently used first
out), and only an authenticated request may add to it: a client without a
valid token cannot fill the server's memory with texts (F1).
"""

from __future__ import annotations

import hashlib
import re

from mneia.cache import ByteBudget
from mneia.http.refusal import Refusal, bad_parameter

VERSION = 1
_SHA256 = re.compile(r"[0-9a-f]{64}")


def not_found() -> Refusal:
    """Apollo Client matches the message or the code, and resends with the query."""
    return Refusal(200, "PersistedQueryNotFound", code="PERSISTED_QUERY_NOT_FOUND")


def requested_hash(extensions: dict[str, object] | None) -> str | None:
    """The SHA-256 an APQ request names; None when the request is not one."""
    persisted = (extensions or {}).get("persistedQuery")
    if persisted is None:
        return None
    if not isinstance(persisted, dict):
        raise bad_parameter("extensions.persistedQuery", "must be an object")
    if persisted.get("version") != VERSION:
        raise bad_parameter("extensions.persistedQuery.version", f"only version {VERSION} is supported")
    sha256 = persisted.get("sha256Hash")
    if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256.lower()):
        raise bad_parameter("extensions.persistedQuery.sha256Hash", "must be a SHA-256 in 64 hex digits")
    return sha256.lower()


def verify(sha256: str, query: str) -> None:
    if hashlib.sha256(query.encode("utf-8")).hexdigest() != sha256:
        raise bad_parameter("extensions.persistedQuery.sha256Hash", "is not the SHA-256 of the query")


class PersistedQueries(ByteBudget[str, str]):
    """Query texts by SHA-256, at most ``max_bytes`` of UTF-8 text in all."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(max_bytes)

    def put(self, sha256: str, query: str, weight: int | None = None) -> None:
        """Keep ``query``, weighed by its UTF-8 bytes unless told otherwise."""
        super().put(sha256, query, len(query.encode("utf-8")) if weight is None else weight)
