"""The Python oracle of grammarc.tokens.memo's `Memo` (compiled in grammarc/tokens/_memo.c):
the memo as it was written in Python, checked against the compiled one operation by
operation (tests/test_resources.py)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable

from grammarc.tokens.memo import ENTRY_OVERHEAD


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

    def keys(self) -> list:
        with self._lock:
            return list(self._entries)

    def values(self) -> list:
        """The values kept now (a snapshot, least recently used first)."""
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries
