"""Ids of what the reader cannot see never reach it (R1, R2).

Reasons name items and disputes by id: the server writes "contradicts <id>"
and "kept when dispute <id> was resolved", and people paste ids into their
own reasons. An id is also a creation time (ids are UUIDv7), so before a
reason is shown, each id in it is looked up under the reader's context, and
one that is not an item or a dispute the reader can see becomes ``HIDDEN``.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable
from typing import Any

from mneia.vocabulary import HIDDEN_ID as HIDDEN

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")


def redacted(context: Any, text: str | None) -> str | None | Awaitable[str | None]:
    """``text`` with the ids of items and disputes the reader cannot see replaced by ``HIDDEN``.

    A text that names no id (most do not) is answered at once, without an
    awaitable: a chain of a thousand items has a thousand reasons.
    """
    if not text or not _UUID.search(text):
        return text
    return _redacted(context, text)


async def _redacted(context: Any, text: str) -> str:
    named = list({uuid.UUID(found) for found in _UUID.findall(text)})
    loaders = context.loaders
    items, disputes = await asyncio.gather(loaders.item.load_many(named), loaders.dispute.load_many(named))
    seen = {record.id for record in (*items, *disputes) if record is not None}
    return _UUID.sub(lambda found: found.group(0) if uuid.UUID(found.group(0)) in seen else HIDDEN, text)
