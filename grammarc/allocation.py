"""Allocation-heavy phases: the cyclic garbage collector paused while they run, and small
records built without the generic attribute setter.

Parsing a large grammar and lowering it allocate millions of small acyclic objects (nodes,
items, tuples, sets). The collector's full passes over a heap that keeps growing would make
those phases quadratic; reference counting still frees everything, so the collector is
paused for the phase and resumes (if it ran before) when the phase ends.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import MISSING, fields
from typing import Iterator, TypeVar

__all__ = ["gc_paused", "slot_init"]

_Class = TypeVar("_Class", bound=type)


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


def slot_init(cls: _Class) -> _Class:
    """Give a frozen, slotted dataclass an ``__init__`` that sets each field through its
    slot's own setter (apply it above ``@dataclass(frozen=True, slots=True)``).

    The generated frozen ``__init__`` sets each field with ``object.__setattr__`` (a global,
    an attribute lookup and a generic setattr per field): about a third of building an IR
    node, and front ends build one per node of every rule. Same signature, defaults and
    fields; written out with `exec` as dataclasses write theirs, so that a call binds its
    arguments as any function does (a subclass that is a dataclass of its own keeps its own)."""
    params, lines, env = [], [], {}
    for f in fields(cls):
        if f.default is MISSING and f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: slot_init takes no default factory")
        env[f"_set_{f.name}"] = getattr(cls, f.name).__set__  # the slot's member descriptor
        params.append(f.name if f.default is MISSING else f"{f.name}={f.default!r}")
        lines.append(f"    _set_{f.name}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(lines or ["    pass"]), env)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__, init.__annotations__ = cls.__init__.__doc__, dict(cls.__init__.__annotations__)
    cls.__init__ = init
    return cls
