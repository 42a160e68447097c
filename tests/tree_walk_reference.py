"""The token tree walk in Python, as it was before it moved to the compiled core: the
oracle of grammarc.runtime._tree.c (`Tree`, ``ParserCore.walk``), checked against it by
tests/test_tree_walk.py.

`Tree` is the old pure-Python tree (parts in a dict, candidates a frozenset made on first
read); an index builds these instead of compiled ones while `python_trees()` is on.
`walk_summary` is engine.walk_summary's old recursive walk, returning what ``core.walk``
returns: (token sets in the order visited, frontier).
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Iterator

from grammarc.tokens import index
from grammarc.tokens.token_set import TokenSet
from grammarc.tokens.tree import NO_PART

_serials = itertools.count(1 << 62)  # never a compiled tree's


class Tree:
    """tokens/tree.py's `Tree`, in Python (the API index.py's sources call)."""

    __slots__ = ("_parts", "_candidates", "_source", "serial")

    def __init__(self, source=None, candidates=None):
        self._parts: dict[int, tuple] | None = None
        self._candidates: frozenset[int] | None = (
            frozenset(candidates) if candidates is not None else None if source is not None else frozenset())
        self._source = source
        self.serial = next(_serials)

    @property
    def candidates(self) -> frozenset[int]:
        found = self._candidates
        if found is None:
            source = self._source
            found = self._candidates = self._candidates if source is None else source.candidates()
        return found

    @property
    def keys(self) -> frozenset[int]:
        return self.candidates

    def part(self, u: int) -> tuple:
        parts = self._parts
        found = None if parts is None else parts.get(u)
        if found is None:
            source = self._source
            if source is None:
                return NO_PART if parts is None else parts.get(u, NO_PART)
            if u not in self.candidates:
                return NO_PART
            found = source.part(self, u)
        return found

    def _made(self, u: int):
        parts = self._parts
        return None if parts is None else parts.get(u)

    def _publish(self, u: int, part: tuple) -> None:
        parts = self._parts
        if parts is None:
            parts = self._parts = {}
        parts[u] = part
        if len(parts) == len(self._candidates):
            self._source = None

    def is_empty(self) -> bool:
        return all(self.part(u) is NO_PART for u in sorted(self.candidates))


@contextlib.contextmanager
def python_trees() -> Iterator[None]:
    """While on, indexes make (and their sources' parts make) Python trees: wrap every call
    that may make parts of a reference index (its `mid`, the oracle's walks)."""
    saved = index.Tree
    index.Tree = Tree
    try:
        yield
    finally:
        index.Tree = saved


def walk_summary(core, tree, states: tuple[int, ...]) -> tuple[list[TokenSet], tuple]:
    """engine.walk_summary's walk before it was compiled: (token sets, frontier). `core`:
    what answers ``shiftable`` and ``pure_shift`` (tests/gss_reference.py's oracle core, so
    that the compiled shifts are checked too)."""
    parts: list[TokenSet] = []
    frontier: list[tuple[tuple[int, ...], object]] = []

    def visit(node, current: tuple[int, ...], path: tuple[int, ...]) -> None:
        for u in sorted(node.candidates & core.shiftable(current)):
            tokens, child = node.part(u)
            if tokens is not None:
                parts.append(tokens)
            if child is None:
                continue
            nxt = core.pure_shift(current, u)
            if nxt is None:
                if not child.is_empty():
                    frontier.append((path + (u,), child))
            else:
                visit(child, nxt, path + (u,))

    visit(tree, states, ())
    del visit
    return parts, tuple(frontier)
