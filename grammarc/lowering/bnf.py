"""BNF normalisation: the lowering's productions (ε allowed) made ε-free, cycle-free and
trimmed, renumbered into a `Bnf` with an augmented start production.

GLR over the result always terminates: no production is empty (a nullable occurrence is
made optional, the start rule's nullability is returned as `accepts_empty`), no cycle of
unit productions is left (the rules on such a cycle derive the same language and are
merged), and only what the start rule reaches is kept.

Symbols here are the lowering's: a terminal is its index t >= 0, a nonterminal j is ~j (< 0).
The work is done by the compiled core (``grammarc/lowering/_bnf.c``, in the ``_lalr``
module) over the productions flattened (`Flat`); its oracle is tests/bnf_reference.py.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import accumulate, chain
from typing import Callable, Hashable, Iterable, Sequence, TypeVar

from grammarc.lowering import _lalr
from grammarc.lowering.lr import Bnf, FlatProductions, int32s, keep_flat

__all__ = ["Flat", "Sym", "derivers", "is_nonterminal", "normalize", "sccs"]

Sym = int
T = TypeVar("T")
N = TypeVar("N", bound=Hashable)


def is_nonterminal(symbol: Sym) -> bool:
    return symbol < 0


@dataclass(frozen=True)
class Flat:
    """Productions as the compiled core reads them: production i is ``lhs[i] ->
    rhs[starts[i]:starts[i + 1]]`` (int32 arrays)."""

    lhs: array
    starts: array
    rhs: array

    @classmethod
    def of(cls, productions: Sequence[tuple[int, tuple[Sym, ...]]]) -> "Flat":
        rhss = [rhs for _, rhs in productions]
        return cls(array("i", [lhs for lhs, _ in productions]), array("i", accumulate(map(len, rhss), initial=0)),
                   array("i", chain.from_iterable(rhss)))


def derivers(productions: Flat, n_nonterminals: int, usable: bytes) -> bytes:
    """Per nonterminal, 1 when it has a production whose terminals are all `usable` (one
    flag per terminal) and whose nonterminals are all found (the least fixed point, by a
    worklist: linear in the grammar's size however long its chains of rules are)."""
    return _lalr.derivers(productions.lhs, productions.starts, productions.rhs, n_nonterminals, usable)


def normalize(productions: Flat, names: list[str], terminals: Sequence[T], start: int,
              productive: bytes) -> tuple[Bnf, tuple[T, ...], bool]:
    """(the BNF, its terminals in BNF order, whether the start rule derives the empty string)
    from `productions` over nonterminals `names` (`start` among them) and `terminals`,
    keeping only productions whose nonterminals are all `productive` (`derivers`). `names`
    grows by the helper nonterminals ε removal makes: a production with more than two
    nullable symbols is first cut into a right-nested chain through a ``#rest``
    nonterminal, so the number of variants stays linear, not exponential."""
    accepts_empty, rest_of, used, order, lhs, starts, rhs = _lalr.normalize(
        productions.lhs, productions.starts, productions.rhs, len(names), start, productive)
    for owner in int32s(rest_of):
        names.append(f"{names[owner]}#rest")
    flat = (lhs, starts, rhs)
    used = int32s(used)
    bnf = Bnf(len(used), ("<start>",) + tuple(names[nt] for nt in int32s(order)), FlatProductions(flat))
    keep_flat(bnf, flat)
    return bnf, tuple(terminals[t] for t in used), accepts_empty


def sccs(nodes: Iterable[N], successors: Callable[[N], Iterable[N]]) -> list[list[N]]:
    """Tarjan's strongly connected components, sinks first, from the roots `nodes` in order
    (in the compiled core, over the nodes numbered as they are met)."""
    roots = list(nodes)
    ids: dict = {}
    order: list = []
    for node in roots:
        if node not in ids:
            ids[node] = len(order)
            order.append(node)
    first, succ = [0], []
    for node in order:  # grows while iterating: successors met first here
        for target in successors(node):
            at = ids.get(target)
            if at is None:
                at = ids[target] = len(order)
                order.append(target)
            succ.append(at)
        first.append(len(succ))
    members, ends = _lalr.sccs(array("i", first), array("i", succ), array("i", [ids[n] for n in roots]))
    members = [order[m] for m in int32s(members)]
    return [members[a:b] for a, b in zip([0] + int32s(ends), int32s(ends))]
