"""The token tree of a lexer item (`TokenIndex.mid`): tokens that cross terminal boundaries,
keyed by the terminals after the current one.

``part(u)`` = (tokens, child): the token ids whose remaining bytes end inside (or exactly at
the end of) terminal `u`, allowed when the parser can take `u` next (None: none), and the
subtree of tokens that complete `u` and go on (None: none).

Parts are made one terminal at a time, on first read: a level branches on every terminal
that may follow the previous one anywhere in the grammar (after JSON's ``ws? "," ws?``:
every key of every object, every value), and the parser takes a few of them (the keys of
one object): most of a level's scans are never read (a big level is made whole, see
index.py's `_Level`). `candidates` (the terminals whose first byte some suffix of the level
has) is what a part may be made for; read from the source on first use too.

The lookups live in the compiled core (grammarc.runtime._gss `Tree`: candidates as a sorted
array, parts in a parallel one), with the walk that reads them (``ParserCore.walk``,
engine.walk_summary): a new schema's masks walk thousands of tree nodes, and Python ran only
to make a part not made yet (the source's ``part(tree, u)``, under the index's lock, which
publishes it with ``tree._publish(u, part)``; the first published stays, so threads sharing
the index share one object per part). A small level (`_scan.SmallLevel`, index.py) makes
its parts in C, called from the tree's C without Python in between (tokens/_source.h). Once
every candidate's part is made the tree lets its
source go (its arrays). Trees are keyed in memos by `serial`, a number no other tree of the
process has, never by ``id()``, which a freed tree's successor may reuse.
"""

from __future__ import annotations

from grammarc.runtime import _gss
from grammarc.tokens import _scan
from grammarc.tokens.token_set import TokenSet

__all__ = ["NO_PART", "Tree"]

NO_PART: "tuple[TokenSet | None, Tree | None]" = _gss.NO_PART  # (None, None): nothing for a terminal

# A small level's parts (`_scan.SmallLevel`, the common case) are made by one C call from the
# tree's (tokens/_source.h), not by its Python `part`.
_gss._compiled_source(_scan.SOURCE_API)


class Tree(_gss.Tree):
    """A node of a token tree (see the module): ``Tree(source)`` makes its parts from
    `source` (``source.candidates()``, ``source.part(tree, u)``); ``Tree()`` has none.
    ``Tree(source, candidates=frozenset)``: the candidates are known as the tree is made
    (the source is never asked: a call back per tree saved). A frozenset of candidates is
    read and sorted once, however many trees have it (the compiled core keeps up to 4,096).

    Compiled: ``part(u)``, ``is_empty()`` (parts made in turn until one holds something),
    ``candidates`` and ``keys`` (frozensets; `keys`: the terminals a walk may go on with
    after this tree's parent, a superset keeps more vertices, never fewer), ``serial``,
    ``_made(u)``, ``_publish(u, part)``, ``_source``."""

    __slots__ = ()

    @property
    def open(self) -> dict[int, TokenSet]:
        """Every terminal's tokens (makes every part: for tests and reports)."""
        return {u: tokens for u in sorted(self.candidates) for tokens in [self.part(u)[0]] if tokens is not None}

    @property
    def children(self) -> dict[int, "Tree"]:
        """Every terminal's subtree (makes every part: for tests and reports)."""
        return {u: child for u in sorted(self.candidates) for child in [self.part(u)[1]] if child is not None}

    def size(self) -> int:
        """Number of (node, terminal, token) entries, for tests and reports (grows the whole tree)."""
        return sum(s.count for s in self.open.values()) + sum(c.size() for c in self.children.values())
