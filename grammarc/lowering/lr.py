"""LALR(1) parse tables that keep every conflict.

The input is an ε-free BNF grammar over integer symbols (see `Bnf`). The tables are
built like any LALR(1) generator's, except that a conflict is not an error: an ACTION
cell simply holds several actions, and the runtime (recognizer and engine) follows all of
them, GLR-style. Deterministic grammars produce cells of one action and never fork.

Because the grammar has no ε-productions and no cycles of unit productions (the compiler
guarantees both), every reduction pops at least one stack entry and chains of unit
reductions are finite, so following all actions always terminates.

This module holds the grammar and table types; the construction is C
(`grammarc.lowering._lalr`), which `build_tables` calls with the grammar flattened.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, chain
from collections.abc import Sequence

import numpy as np

from grammarc.allocation import slot_init
from grammarc.lowering import _lalr

EOF = -1  # the end-of-text lookahead


@slot_init
@dataclass(frozen=True, slots=True)  # no per-production dict: compiled grammars keep tens of thousands
class Production:
    """``lhs -> rhs``; `lhs` is a nonterminal index, `rhs` a non-empty tuple of symbols."""

    lhs: int
    rhs: tuple[int, ...]


class FlatProductions(Sequence[Production]):
    """A BNF's productions as the compiled core made them (int32 lhs, rhs starts and rhs, as
    `keep_flat` keeps them), each `Production` made on first read: the parser core and the
    tables read the arrays, so a new schema's compile makes none (~0.4 us each, ~30-40 us for
    a median schema, ~0.2 ms for a large one); equal to, and read as, the tuple it stands for."""

    __slots__ = ("_flat", "_made")

    def __init__(self, flat: tuple[bytes, bytes, bytes]):  # bytes of int32, as `_lalr.normalize` returns them
        self._flat = flat
        self._made: tuple[Production, ...] | None = None

    def _all(self) -> tuple[Production, ...]:
        made = self._made
        if made is None:
            lhs, starts, rhs = (int32s(part) for part in self._flat)
            made = self._made = tuple(Production(lhs[i], tuple(rhs[starts[i]:starts[i + 1]]))
                                      for i in range(len(lhs)))
        return made

    def __len__(self) -> int:
        return len(self._flat[0]) // 4 if self._made is None else len(self._made)

    def __getitem__(self, index):
        return self._all()[index]

    def __iter__(self):
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FlatProductions):
            other = other._all()
        return self._all() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return repr(self._all())

    def __reduce__(self):  # pickled as the tuple it stands for
        return tuple, (self._all(),)


@dataclass(frozen=True)
class Bnf:
    """An ε-free grammar. Symbols ``0 <= s < n_terminals`` are terminals; a nonterminal with
    index ``k`` is the symbol ``n_terminals + k``. Production 0 must be the augmented start
    production ``S' -> S``, nonterminal 0's only production (`build_tables` refuses others)."""

    n_terminals: int
    nonterminals: tuple[str, ...]
    productions: Sequence[Production]  # a tuple, or the compiled core's arrays (`FlatProductions`)

    def is_terminal(self, symbol: int) -> bool:
        return symbol < self.n_terminals

    def nonterminal_symbol(self, index: int) -> int:
        return self.n_terminals + index


_I32 = "i"  # the arrays' item: int32 in native order (memoryview.cast's code)


@dataclass(frozen=True)
class LRTables:
    """ACTION and GOTO for every LR state, as the builder makes them: seven flat int32 arrays
    (bytes, native order; `grammarc.lowering._lrtables.h` states and checks their shape), which
    the parser core and the disk cache read as they are.

    Transitions: state ``s``'s are ``trans_sym[trans_start[s]:trans_start[s + 1]]`` (strictly
    ascending: terminals ``t < n_terminals``, then nonterminal ``k`` as ``n_terminals + k``)
    and, at the same positions, ``trans_to`` (a state). Reductions: state ``s``'s are
    ``red_prod[red_start[s]:red_start[s + 1]]`` (productions, ascending: those of the state's
    completed items); reduction ``r``'s lookaheads are ``la[la_start[r]:la_start[r + 1]]``
    (never empty; terminals ascending, then `EOF` when it is one). State 0 is the initial state.

    `action` and `goto` are the same tables as rows, made from the arrays on first read (the
    runtime never reads them): ``action[s]`` maps a terminal (or `EOF`) to a tuple of actions:
    ``a >= 0`` shifts to state ``a``; ``a < 0`` reduces production ``~a``; reducing
    production 0 on EOF accepts. ``goto[s]`` maps a nonterminal index to a state.
    """

    n_terminals: int
    trans_start: bytes
    trans_sym: bytes
    trans_to: bytes
    red_start: bytes
    red_prod: bytes
    la_start: bytes
    la: bytes

    def arrays(self) -> tuple[bytes, ...]:
        """The seven arrays, in the order of the fields (and of `_lalr.check`'s arguments)."""
        return (self.trans_start, self.trans_sym, self.trans_to, self.red_start, self.red_prod, self.la_start,
                self.la)

    @property
    def n_states(self) -> int:
        return len(self.trans_start) // 4 - 1

    @cached_property
    def action(self) -> tuple[dict[int, tuple[int, ...]], ...]:
        """The ACTION rows, keys in the canonical order `build_tables` states: a state's shifts,
        then its reductions' lookaheads as they first come; a cell holds the shift, then the
        reductions by ascending production."""
        trans_start, sym, to, red_start, prod, la_start, la = (int32s(a) for a in self.arrays())
        t = self.n_terminals
        rows = []
        for s in range(self.n_states):
            row: dict[int, list[int]] = {}
            for j in range(trans_start[s], trans_start[s + 1]):
                if sym[j] < t:
                    row[sym[j]] = [to[j]]
            for r in range(red_start[s], red_start[s + 1]):
                for u in la[la_start[r]:la_start[r + 1]]:
                    row.setdefault(u, []).append(~prod[r])
            rows.append({u: tuple(cell) for u, cell in row.items()})
        return tuple(rows)

    @cached_property
    def goto(self) -> tuple[dict[int, int], ...]:
        """The GOTO rows, by ascending nonterminal."""
        trans_start, sym, to = (int32s(a) for a in self.arrays()[:3])
        t = self.n_terminals
        return tuple({sym[j] - t: to[j] for j in range(trans_start[s], trans_start[s + 1]) if sym[j] >= t}
                     for s in range(self.n_states))

    def conflicts(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """Every (state, lookahead, actions) cell holding more than one action."""
        return [
            (state, lookahead, actions)
            for state, row in enumerate(self.action)
            for lookahead, actions in sorted(row.items())
            if len(actions) > 1
        ]


def int32s(data: bytes) -> list[int]:
    """The int32 items (native order) of `data`, as the compiled core returns its arrays."""
    return memoryview(data).cast(_I32).tolist()


def build_tables(bnf: Bnf) -> LRTables:
    """LALR(1) tables: the LR(0) automaton, with DeRemer and Pennello's lookaheads, in C
    (`grammarc.lowering._lalr`, whose header says how).

    States are numbered as found: state 0, then each state's successors by ascending
    symbol. The ACTION rows' keys (`LRTables.action`) come in a canonical order: shifts by
    ascending terminal, then the reductions of the state's completed items by ascending item
    (``base[p] + dot``, so by production), each over its lookaheads ascending, EOF sorting
    as terminal ``n_terminals``; a cell is ``tuple(sorted(set(actions), reverse=True))``: the
    shift, then the reductions by ascending production. GOTO rows are in ascending
    nonterminal order. The flat arrays hold exactly that order.
    """
    arrays = _lalr.tables(bnf.n_terminals, len(bnf.nonterminals), *flat_productions(bnf))
    return LRTables(bnf.n_terminals, *arrays)


def flat_productions(bnf: Bnf) -> tuple:
    """The productions of `bnf` as int32 arrays (lhs, rhs starts, rhs): the ones the compiled
    core gave (`keep_flat`), else made once and kept."""
    flat = bnf.__dict__.get(_FLAT)
    if flat is None:
        productions = bnf.productions
        rhss = [production.rhs for production in productions]
        lhs = np.array([production.lhs for production in productions], np.int32)
        starts = np.array(list(accumulate(map(len, rhss), initial=0)), np.int32)
        rhs = np.array(list(chain.from_iterable(rhss)), np.int32)
        flat = (lhs, starts, rhs)
        keep_flat(bnf, flat)
    return flat


_FLAT = "_flat"  # where a Bnf keeps its productions flattened, when it was made from them


def keep_flat(bnf: Bnf, flat: tuple[bytes, bytes, bytes]) -> None:
    """Let `bnf` keep `flat`, its productions as the compiled core reads them (int32 lhs,
    rhs starts and rhs, as `grammarc.lowering.bnf.normalize` received them from it): the
    tables are built from those, not from the productions flattened again (a list and an
    array per part, over every production)."""
    object.__setattr__(bnf, _FLAT, flat)  # frozen: outside its fields, as a cached property would be
