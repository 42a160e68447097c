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
from itertools import accumulate, chain

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


@dataclass(frozen=True)
class Bnf:
    """An ε-free grammar. Symbols ``0 <= s < n_terminals`` are terminals; a nonterminal with
    index ``k`` is the symbol ``n_terminals + k``. Production 0 must be the augmented start
    production ``S' -> S``, nonterminal 0's only production (`build_tables` refuses others)."""

    n_terminals: int
    nonterminals: tuple[str, ...]
    productions: tuple[Production, ...]

    def is_terminal(self, symbol: int) -> bool:
        return symbol < self.n_terminals

    def nonterminal_symbol(self, index: int) -> int:
        return self.n_terminals + index


@dataclass(frozen=True)
class LRTables:
    """ACTION and GOTO for every LR state; state 0 is the initial state.

    ``action[s]`` maps a terminal (or `EOF`) to a tuple of actions: ``a >= 0`` shifts to
    state ``a``; ``a < 0`` reduces production ``~a``; reducing production 0 on EOF accepts.
    ``goto[s]`` maps a nonterminal index to a state.
    """

    action: tuple[dict[int, tuple[int, ...]], ...]
    goto: tuple[dict[int, int], ...]

    @property
    def n_states(self) -> int:
        return len(self.action)

    def conflicts(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """Every (state, lookahead, actions) cell holding more than one action."""
        return [
            (state, lookahead, actions)
            for state, row in enumerate(self.action)
            for lookahead, actions in sorted(row.items())
            if len(actions) > 1
        ]


def build_tables(bnf: Bnf) -> LRTables:
    """LALR(1) tables: the LR(0) automaton, with DeRemer and Pennello's lookaheads, in C
    (`grammarc.lowering._lalr`, whose header says how).

    States are numbered as found: state 0, then each state's successors by ascending
    symbol. A row's keys come in a canonical order, which the disk cache reads rows in:
    shifts by ascending terminal, then the reductions of the state's completed items by
    ascending item (``base[p] + dot``, so by production), each over its lookaheads
    ascending, EOF sorting as terminal ``n_terminals``; a cell is
    ``tuple(sorted(set(actions), reverse=True))``: the shift, then the reductions by
    ascending production. GOTO rows are in ascending nonterminal order.
    """
    flat = bnf.__dict__.get(_FLAT)
    if flat is None:
        productions = bnf.productions
        rhss = [production.rhs for production in productions]
        lhs = np.array([production.lhs for production in productions], np.int32)
        starts = np.array(list(accumulate(map(len, rhss), initial=0)), np.int32)
        rhs = np.array(list(chain.from_iterable(rhss)), np.int32)
        flat = (lhs, starts, rhs)
    action, goto = _lalr.tables(bnf.n_terminals, len(bnf.nonterminals), *flat)
    return LRTables(action, goto)


_FLAT = "_flat"  # where a Bnf keeps its productions flattened, when it was made from them


def keep_flat(bnf: Bnf, flat: tuple[bytes, bytes, bytes]) -> None:
    """Let `bnf` keep `flat`, its productions as the compiled core reads them (int32 lhs,
    rhs starts and rhs, as `grammarc.lowering.bnf.normalize` received them from it): the
    tables are built from those, not from the productions flattened again (a list and an
    array per part, over every production)."""
    object.__setattr__(bnf, _FLAT, flat)  # frozen: outside its fields, as a cached property would be
