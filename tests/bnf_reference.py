"""The pure-Python BNF normalisation that grammarc.lowering._lalr (``_bnf.c``) replaces: the
test oracle. `normalize`, `derivers` and `sccs` are the old `grammarc.lowering.bnf`'s, over
productions as the lowering lists them (``(lhs, rhs)`` pairs, a nonterminal j written ~j),
kept so that tests/test_bnf.py can check that the C versions give the same grammars.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Sequence, TypeVar

from grammarc.lowering.lr import Bnf, Production

Sym = int
T = TypeVar("T")


def normalize(productions: list[tuple[int, tuple[Sym, ...]]], names: list[str], terminals: Sequence[T],
              start: int, productive: set[int]) -> tuple[Bnf, tuple[T, ...], bool]:
    """(the BNF, its terminals in BNF order, whether the start rule derives the empty string)
    from `productions` over nonterminals `names` (`start` among them) and `terminals`,
    keeping only productions whose nonterminals are all `productive` (`derivers`). `names`
    grows by the helper nonterminals ε removal makes."""
    productions = [(lhs, rhs) for lhs, rhs in productions if all(s >= 0 or ~s in productive for s in rhs)]
    nullable = _nullable(productions)
    accepts_empty = start in nullable
    productions = _remove_epsilon(productions, nullable, names)
    productions = _collapse_unit_cycles(productions, len(names))
    return _renumber(productions, names, terminals, start, accepts_empty)


def _nullable(productions) -> set[int]:
    """Nonterminals that derive the empty string."""
    return derivers(productions, lambda t: False)


def derivers(productions, usable: Callable[[int], bool]) -> set[int]:
    """The nonterminals with a production whose terminals are all `usable` and whose
    nonterminals are all found (the least fixed point). A worklist: each production counts
    the nonterminal occurrences still unknown, so the work is linear in the grammar's size
    however long its chains of rules are."""
    found: set[int] = set()
    waiting: dict[int, list[int]] = {}  # nonterminal -> the productions using it, once per use
    unknown: list[int] = []  # per production: occurrences not found yet (-1: a terminal is not usable)
    queue: list[int] = []
    for i, (lhs, rhs) in enumerate(productions):
        count = 0
        for s in rhs:
            if s < 0:  # a nonterminal (is_nonterminal, inline: every symbol of the grammar)
                count += 1
                waiting.setdefault(~s, []).append(i)
            elif not usable(s):
                count = -1
                break
        unknown.append(count)
        if count == 0:
            queue.append(lhs)
    while queue:
        nt = queue.pop()
        if nt in found:
            continue
        found.add(nt)
        for i in waiting.get(nt, ()):
            if unknown[i] > 0:
                unknown[i] -= 1
                if unknown[i] == 0:
                    queue.append(productions[i][0])
    return found


def _remove_epsilon(productions, nullable: set[int], names: list[str]):
    """Every production without ε: each nullable occurrence becomes optional.

    A production with more than two nullable symbols is first split into a right-nested
    chain of binary productions, so the number of variants stays linear, not exponential.
    """
    pending = deque(productions)
    out: set[tuple[int, tuple[Sym, ...]]] = set()
    ordered: list[tuple[int, tuple[Sym, ...]]] = []
    while pending:
        production = pending.popleft()
        lhs, rhs = production
        optional = [i for i, s in enumerate(rhs) if s < 0 and ~s in nullable]
        if len(optional) > 2 and len(rhs) > 2:
            rest = rhs[1:]
            nt = len(names)
            names.append(f"{names[lhs]}#rest")
            if all(s < 0 and ~s in nullable for s in rest):
                nullable.add(nt)
            pending.append((lhs, (rhs[0], ~nt)))
            pending.append((nt, rest))
            continue
        if not optional:  # most productions: the one variant is the production itself (none if empty)
            if rhs and production not in out:
                out.add(production)
                ordered.append(production)
            continue
        for mask in range(1 << len(optional)):
            dropped = {optional[i] for i in range(len(optional)) if mask >> i & 1}
            variant = tuple(s for i, s in enumerate(rhs) if i not in dropped)
            if variant and (lhs, variant) not in out:
                out.add((lhs, variant))
                ordered.append((lhs, variant))
    return ordered


def _collapse_unit_cycles(productions, n_names: int):
    """Merge nonterminals on a cycle of unit productions (they derive the same language)."""
    units: dict[int, set[int]] = {}
    for lhs, rhs in productions:
        if len(rhs) == 1 and rhs[0] < 0:
            units.setdefault(lhs, set()).add(~rhs[0])
    representative = list(range(n_names))
    merged = False
    for component in sccs(list(units), lambda n: units.get(n, ())):
        if len(component) > 1:
            merged = True
            head = min(component)
            for member in component:
                representative[member] = head
    if not merged:  # nothing renamed: the productions stay (ε removal left no duplicates or s -> s)
        return [(lhs, rhs) for lhs, rhs in productions if rhs != (~lhs,)]

    seen: set = set()
    out = []
    for lhs, rhs in productions:
        new = (representative[lhs], tuple(~representative[~s] if s < 0 else s for s in rhs))
        if new[1] == (~new[0],) or new in seen:
            continue
        seen.add(new)
        out.append(new)
    return out


def _renumber(productions, names, terminals, start: int, accepts_empty: bool):
    """Keep what the start reaches; number terminals first, then nonterminals (start first)."""
    by_lhs: dict[int, list[tuple[Sym, ...]]] = {}
    for lhs, rhs in productions:
        by_lhs.setdefault(lhs, []).append(rhs)
    nt_order = [start]
    nt_index = {start: 0}
    used_terminals: list[int] = []
    t_index: dict[int, int] = {}
    for nt in nt_order:  # grows while iterating
        for rhs in by_lhs.get(nt, ()):
            for s in rhs:
                if s < 0:
                    if ~s not in nt_index:
                        nt_index[~s] = len(nt_order)
                        nt_order.append(~s)
                elif s not in t_index:
                    t_index[s] = len(used_terminals)
                    used_terminals.append(s)
    n_t = len(used_terminals)
    nonterminals = ("<start>",) + tuple(names[nt] for nt in nt_order)
    prods = [Production(0, (n_t + 1,))]  # S' -> S ; S is nonterminal 1
    renamed = {~nt: n_t + 1 + i for i, nt in enumerate(nt_order)}  # old symbol -> new, one lookup each
    renamed.update(t_index)
    rename = renamed.__getitem__
    for nt in nt_order:
        lhs = nt_index[nt] + 1
        for rhs in by_lhs.get(nt, ()):
            prods.append(Production(lhs, tuple(map(rename, rhs))))
    bnf = Bnf(n_t, nonterminals, tuple(prods))
    return bnf, tuple(terminals[t] for t in used_terminals), accepts_empty


def sccs(nodes, successors) -> list[list]:
    """Tarjan's strongly connected components, iteratively; sinks come first."""
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    result: list[list] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(successors(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for succ in it:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(successors(succ))))
                    advanced = True
                    break
                if succ in on_stack and index[succ] < low[node]:  # min(), without the call
                    low[node] = index[succ]
            if advanced:
                continue
            work.pop()
            if work and low[node] < low[work[-1][0]]:
                low[work[-1][0]] = low[node]
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(component)
    return result
