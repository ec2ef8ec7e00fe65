"""The JSON text of every GraphQL answer, over HTTP and websockets: orjson, else the standard library.

A page of 50 items with provenance is about 44 kB of JSON. The standard
library's encoder (C-accelerated, escaping every non-ASCII character) took
about 370 µs of the worker's CPU for it, some 5% of the page's; orjson takes
about 30. Both write compact JSON that parses to the same value; orjson
leaves non-ASCII characters as UTF-8 rather than ``\\uXXXX`` escapes, which
the media type (``charset=utf-8``) allows.

orjson refuses what the standard library takes and a GraphQL answer never
holds (integers beyond 64 bits, strings with lone surrogates): those are
written by the standard library, so no answer fails for its encoding.
"""

from __future__ import annotations

import json

import orjson


def encoded(value: object) -> str:
    """``value`` as compact JSON text."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value, separators=(",", ":"))
