"""Answer a nested field synchronously when its DataLoader already holds the value.

graphql-core pays for every awaitable it completes; a page of 50 items with
full provenance has hundreds of nested fields. The list resolvers warm the
loaders in one batch per kind, after which these fields complete without
awaiting. A cold loader still works: the field then returns an awaitable.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

V = TypeVar("V")
R = TypeVar("R")


def now_or_later(pending: Awaitable[V] | V, convert: Callable[[V], R]) -> Any:
    """``convert(value)`` now if ``pending`` is a value or a finished future, else an awaitable."""
    if not inspect.isawaitable(pending):
        return convert(pending)
    done = getattr(pending, "done", None)
    if done is not None and done():
        return convert(pending.result())  # type: ignore[union-attr]

    async def later() -> R:
        converted: Any = convert(await pending)
        # ``convert`` may itself answer later (nested loads): settle it here.
        return await converted if inspect.isawaitable(converted) else converted

    return later()
