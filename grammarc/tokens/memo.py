"""Bounded memos shared by the engines of one token index (masks, tree walks, summaries).

Every memo here is exact: a value depends only on its key, so an evicted entry is simply
computed again. Each memo counts what it keeps — the value and, roughly, the key and the
table entry — and evicts the entries used least recently once that passes its budget.

Thread-safe: each call of the compiled `Memo` is atomic under the GIL, its keys being
ints, tuples, frozensets and the runtime's compiled objects, which hash and compare without
running Python code; so insertions publish at most one value per key (`put` returns the
value already there, and racing threads end up sharing one object).
"""

from __future__ import annotations

import sys

from grammarc.tokens import _memo

# Default budgets per token index, in bytes (see docs/guarantees.rst).
MASK_BYTES = 64 << 20
WALK_BYTES = 32 << 20
SUMMARY_BYTES = 16 << 20

ENTRY_OVERHEAD = _memo.ENTRY_OVERHEAD  # an entry: hash slots, the ordered list's node, the key tuple

Memo = _memo.Memo
# ``Memo(budget)``: a least-recently-used memo bounded by the bytes its entries are counted at
# (compiled: grammarc/tokens/_memo.c; its Python oracle is tests/memo_reference.py).
#
# ``get(key)``: the value kept, or None. Uses are recorded once the memo is past half its
# budget (before that nothing is evicted, and a hit costs one dictionary read): from then on
# the entries evicted are those used least recently, counting only uses since the memo passed
# half its budget.
# ``put(key, value, size)``: keep `value` (not None), counted at `size` bytes plus
# ENTRY_OVERHEAD, unless a value is kept under `key` already; returns the value kept (the
# first published stays). The entries used least recently go once the memo passes its budget
# (the new one stays, whatever its size).
# ``clear()``; ``values()``, ``keys()`` (lists, least recently used first); ``len``, ``in``;
# ``budget`` (settable), ``nbytes``, ``evictions``.


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
