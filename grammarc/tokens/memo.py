"""Bounded memos shared by the engines of one token index (masks, tree walks, summaries).

Every memo here is exact: a value depends only on its key, so an evicted entry is simply
computed again. Each memo counts what it keeps — the value and, roughly, the key and the
table entry — and evicts the entries used least recently once that passes its budget.

Thread-safe: lookups take no lock (each dictionary operation is atomic under the GIL;
an entry evicted between the lookup and the move to the recent end is just not moved);
insertions publish at most one value per key (`put` returns the value already there, so
racing threads end up sharing one object).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import Any, Hashable

# Default budgets per token index, in bytes (see docs/guarantees.rst).
MASK_BYTES = 64 << 20
WALK_BYTES = 32 << 20
SUMMARY_BYTES = 16 << 20

ENTRY_OVERHEAD = 100  # an OrderedDict entry: hash slot, linked-list node, key tuple


class Memo:
    """A least-recently-used memo bounded by the bytes its entries are counted at.

    Uses are recorded once the memo is past half its budget (before that nothing is
    evicted, and a hit costs one dictionary read): from then on the entries evicted are
    those used least recently, counting only uses since the memo passed half its budget."""

    __slots__ = ("budget", "nbytes", "evictions", "_entries", "_sizes", "_lock")

    def __init__(self, budget: int):
        self.budget = budget
        self.nbytes = 0
        self.evictions = 0
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        value = self._entries.get(key)
        # Recency is recorded only once the memo is past half its budget: below that no
        # entry is near eviction, and a replayed state's lookup stays one dictionary read.
        if value is not None and self.nbytes > self.budget >> 1:
            try:
                self._entries.move_to_end(key)
            except KeyError:  # evicted meanwhile by another thread: the value is still right
                pass
        return value

    def put(self, key: Hashable, value: Any, size: int) -> Any:
        """Keep `value` (counted at `size` bytes plus the entry) unless another thread
        published one first; returns the value kept. The entries used least recently go
        once the memo passes its budget (the new one stays, whatever its size)."""
        size += ENTRY_OVERHEAD
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                return found
            self._entries[key] = value
            self._sizes[key] = size
            self.nbytes += size
            while self.nbytes > self.budget and len(self._entries) > 1:
                old, _ = self._entries.popitem(last=False)
                self.nbytes -= self._sizes.pop(old)
                self.evictions += 1
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._sizes.clear()
            self.nbytes = 0

    def values(self) -> list:
        """The values kept now (a snapshot, least recently used first)."""
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries


_TUPLE_BYTES = sys.getsizeof(())  # a tuple's header; each element adds a pointer
_POINTER_BYTES = sys.getsizeof((None,)) - _TUPLE_BYTES


def set_bytes(items: frozenset | tuple) -> int:
    """Rough bytes of a frozenset or tuple of small tuples (GSS items): the container and
    one 4-tuple per element; the GSS vertices inside are the parser core's, not counted.
    A tuple's size is computed (what ``sys.getsizeof`` says, without its call: a new
    schema's walks count thousands of keys)."""
    if type(items) is tuple:
        return _TUPLE_BYTES + (_POINTER_BYTES + 72) * len(items)
    return sys.getsizeof(items) + 72 * len(items)
