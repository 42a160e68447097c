"""Allocation-heavy phases: the cyclic garbage collector paused while they run, and small
records built without the generic attribute setter.

Parsing a large grammar and lowering it allocate millions of small acyclic objects (nodes,
items, tuples, sets). The collector's full passes over a heap that keeps growing would make
those phases quadratic; reference counting still frees everything, so the collector is
paused for the phase and resumes (if it ran before) when the phase ends.

Records (IR nodes, subschemas, productions) are built and hashed in the compiled core
(`_slots`): a Python ``__init__`` or ``__hash__`` costs a frame per call.
"""

from __future__ import annotations

import gc
import inspect
from contextlib import contextmanager
from dataclasses import MISSING, fields
from typing import Callable, Iterator, TypeVar

from grammarc.allocation import _slots

__all__ = ["gc_paused", "remember_hash", "slot_init"]

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
    """Give a frozen, slotted dataclass a compiled ``__init__`` that sets each field straight
    into its slot (apply it above ``@dataclass(frozen=True, slots=True)``).

    The generated frozen ``__init__`` sets each field with ``object.__setattr__``, and even a
    Python ``__init__`` calling each slot's setter cost a frame and a bound call per field: a
    sixth of translating a JSON schema, whose front end builds a node per node of every rule.
    `_slots.slot_init` binds the arguments in C exactly as a Python ``def __init__(self,
    field, ..., field=default)`` would (same errors) and becomes the class's tp_init; the
    dataclass's signature, docstring and annotations stay visible (``inspect.signature``).
    A subclass that is a dataclass of its own keeps its own ``__init__`` (or takes this
    decorator too); one that is not binds through this one. Its oracle is the exec'd Python
    function in tests/test_slots.py."""
    specs = fields(cls)
    for f in specs:
        if f.default is MISSING and f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: slot_init takes no default factory")
        if getattr(f, "kw_only", False):
            raise TypeError(f"{cls.__name__}.{f.name}: slot_init takes no keyword-only field")
    made = cls.__init__  # the dataclass's own: its signature is the one callers see
    init = _slots.slot_init(cls, tuple(f.name for f in specs), tuple(f.default for f in specs if f.default is not MISSING),
                            tuple(getattr(cls, f.name) for f in specs))
    init.__signature__ = inspect.signature(made)
    init.__name__, init.__qualname__, init.__module__ = "__init__", f"{cls.__qualname__}.__init__", cls.__module__
    init.__doc__, init.__annotations__ = made.__doc__, dict(made.__annotations__)
    return cls


def remember_hash(cls: type, slot: object, compute: Callable[..., int], *args: object) -> None:
    """Make ``hash(x)`` of a `cls` instance read the int kept in `slot` (its member
    descriptor), or where none is kept return ``compute(x, *args)`` (which keeps it), in C:
    the IR's composite nodes, whose hash a Python ``__hash__`` returned in a frame per call
    (a sixteenth of compiling a grammar: the lowering's memos are keyed by subtrees).
    Subclasses inherit it; one slot and one computation per process."""
    _slots.remember_hash(cls, slot, compute, *args)
