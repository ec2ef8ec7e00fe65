"""Time-ordered identifiers (UUID version 7): index-friendly and sortable by creation.

Each id is greater than the one before it in this process, and its time is
the clock's: within one millisecond the ids count up from a random start by
random steps (RFC 9562, 6.2, method 2), so a batch of a thousand ids minted
at once keeps their order without running ahead of the clock. (uuid6's
uuid7 adds a millisecond for each id minted within one: a load of a million
items would carry ids some minutes in the future, ordered before everything
asserted meanwhile.) A clock that goes back keeps the last millisecond.
"""

from __future__ import annotations

import os
import time
import uuid

_RANDOM_BITS = 74  # rand_a (12) and rand_b (62)
_START_BITS = _RANDOM_BITS - 1  # a fresh millisecond starts in the lower half: room to count up
_START_BYTES = 10
_STEP_BYTES = 4  # each step adds 1 to 2**32

_last_ms = 0
_last_random = 0


def new_id() -> uuid.UUID:
    return new_ids(1)[0]


def new_ids(count: int) -> list[uuid.UUID]:
    """``count`` ids, each greater than the one before, from one read of the clock and of the
    random source."""
    global _last_ms, _last_random
    ms = max(time.time_ns() // 1_000_000, _last_ms)
    fresh = os.urandom(_START_BYTES + count * _STEP_BYTES)
    start = int.from_bytes(fresh[:_START_BYTES]) >> (_START_BYTES * 8 - _START_BITS)
    random = start if ms > _last_ms else _last_random
    ids = []
    for index in range(count):
        offset = _START_BYTES + index * _STEP_BYTES
        random += 1 + int.from_bytes(fresh[offset : offset + _STEP_BYTES])
        if random >> _RANDOM_BITS:  # counted past what a millisecond holds: the next one
            ms, random = ms + 1, random & ((1 << _START_BITS) - 1)
        ids.append(_compose(ms, random))
    _last_ms, _last_random = ms, random
    return ids


def _compose(ms: int, random: int) -> uuid.UUID:
    rand_a, rand_b = random >> 62, random & ((1 << 62) - 1)
    value = (ms & 0xFFFF_FFFF_FFFF) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return uuid.UUID(int=value)
