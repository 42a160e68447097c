"""Allocation-heavy phases: the cyclic garbage collector paused while they run.

Parsing a large grammar and lowering it allocate millions of small acyclic objects (nodes,
items, tuples, sets). The collector's full passes over a heap that keeps growing would make
those phases quadratic; reference counting still frees everything, so the collector is
paused for the phase and resumes (if it ran before) when the phase ends.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector paused (re-entrant)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
