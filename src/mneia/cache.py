"""A cache bounded by the memory of what it holds, not by a count of entries (F1).

The least recently used entries leave first to make room; an entry larger
than the whole budget is never kept (and evicts nothing). The document cache
(resolvers/request/document.py) and the persisted queries (http/persisted.py) are
both this, with their own idea of an entry's weight.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ByteBudget(Generic[K, V]):
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.size = 0  # the weights held now, in bytes
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: K, value: V, weight: int) -> None:
        """Keep ``value`` (``weight`` bytes), dropping the least recently used to make room."""
        if weight > self.budget:
            return
        previous = self._entries.pop(key, None)
        if previous is not None:
            self.size -= previous[1]
        while self.size + weight > self.budget:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.size -= dropped
        self._entries[key] = (value, weight)
        self.size += weight
