"""Lowering: IR grammar -> terminal DFAs + ε-free BNF + LALR(1) tables.

The steps (DESIGN.md §5):

1. check the IR (undefined rules, start rule, except! targets, ...);
2. turn every regular part into a terminal: literals, regexes, ``#substrs``, ``except!``,
   and — the main optimisation — whole non-recursive rules and runs of a sequence that are
   made only of regular parts, merged into one minimized DFA while it stays under
   `merge_max_states` (same language, fewer parser steps, more tokens that never leave
   a terminal);
3. desugar the rest of the EBNF operators into BNF (left-recursive lists);
4. normalise the BNF so that GLR over it always terminates: a terminal that matches the
   empty string becomes ``(T⁺ | ε)``, ε-productions are removed (the start rule's
   nullability is remembered as `accepts_empty`), and cycles of unit productions are
   collapsed (the rules on such a cycle derive the same language): grammarc.lowering.bnf;
5. build LALR(1) tables, keeping conflicts.

Everything here is vocabulary-independent; the result is cached per (grammar, options), in
memory and on disk (grammarc.lowering.compiled_cache).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from grammarc.allocation import gc_paused
from grammarc import automata
from grammarc.automata import DFA
from grammarc.errors import GrammarError, RegexError, StateBudgetExceeded
from grammarc.ir.check import Checked, check_depth, check_grammar, warn_unreachable
from grammarc.ir.nodes import (
    AnyToken, Alt, Except, Expr, Grammar, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq, Substrings, children,
)
from grammarc.ir.printer import expr_to_ebnf
from grammarc.lowering import compiled_cache, rule_graph
from grammarc.lowering.bnf import Flat, Sym, derivers, is_nonterminal, normalize
from grammarc.lowering.lr import Bnf, LRTables, build_tables

DEFAULT_MERGE_MAX_STATES = 512
MAX_EXPANSION = 200_000  # symbols a counted repetition may expand to
LITERAL_GROUP = 8  # alternatives: this many literals side by side become one terminal
WORD_BYTES = 3  # a literal this long in a regular run is a word (see _words_apart)
LARGE_PART = 16  # states: a word next to a part this large is not merged with it


@dataclass(frozen=True, eq=False, slots=True)
class Terminal:
    """A terminal of the compiled grammar: a byte language given by a minimized DFA.

    `any_token` marks ``any!`` (exactly one vocabulary token; any non-empty bytes without a
    vocabulary); `token_limit` is the n of ``except!(X, n)``. Neither is merged with others.
    `label` is its name, or the (expression, rule) that `name` describes: only error
    messages, summaries and the disk cache read a name, so the lowering leaves printing it
    (an expression's EBNF, a literal's JSON) to the first that does.
    """

    label: Name
    dfa: DFA
    any_token: bool = False
    token_limit: int | None = None

    @property
    def name(self) -> str:
        """The terminal's name: `label`, printed once (and then kept) where it describes one."""
        label = self.label
        if isinstance(label, str):
            return label
        name = _describe(*label)
        object.__setattr__(self, "label", name)  # where a frozen instance keeps what it computed
        return name


@dataclass(frozen=True, eq=False)
class CompiledGrammar:
    """The vocabulary-independent compiled form of a grammar (immutable, shareable)."""

    grammar: Grammar
    terminals: tuple[Terminal, ...]
    bnf: Bnf
    tables: LRTables
    accepts_empty: bool

    def summary(self) -> dict[str, int]:
        """Sizes worth printing: rules, terminals, DFA states, productions, LR states, conflicts."""
        return {
            "rules": len(self.grammar.rules),
            "terminals": len(self.terminals),
            "dfa_states": sum(t.dfa.n_states for t in self.terminals),
            "nonterminals": len(self.bnf.nonterminals),
            "productions": len(self.bnf.productions),
            "lr_states": self.tables.n_states,
            "conflicts": len(self.tables.conflicts()),
        }


def compile_grammar(
    grammar: Grammar,
    *,
    max_states: int = automata.DEFAULT_MAX_STATES,
    merge_max_states: int = DEFAULT_MERGE_MAX_STATES,
) -> CompiledGrammar:
    """Compile `grammar` (cached: equal grammars with equal options compile once)."""
    check_depth(grammar)  # before the cache hashes the grammar, which recurses on it
    return _compile_cached(grammar, max_states, merge_max_states)


@functools.lru_cache(maxsize=128)
def _compile_cached(grammar: Grammar, max_states: int, merge_max_states: int) -> CompiledGrammar:
    """The in-process cache, in front of the disk cache (grammarc.lowering.compiled_cache)."""
    with gc_paused():
        stored = compiled_cache.entry(grammar, max_states, merge_max_states)
        parts = None if stored is None else stored.load()
        if parts is not None:  # stored after an equal grammar passed check_grammar under this code
            warn_unreachable(grammar)
            return CompiledGrammar(grammar, tuple(Terminal(*t) for t in parts.terminals), parts.bnf, parts.tables,
                                   parts.accepts_empty)
        started = time.perf_counter()
        compiled = _compile_new(grammar, max_states, merge_max_states)
        if stored is not None and compiled_cache.worth_storing(time.perf_counter() - started):
            stored.save(compiled_cache.Parts(
                tuple((t.name, t.dfa, t.any_token, t.token_limit) for t in compiled.terminals), compiled.bnf,
                compiled.tables, compiled.accepts_empty))
        return compiled


def _compile_new(grammar: Grammar, max_states: int, merge_max_states: int) -> CompiledGrammar:
    """Check, lower, normalize and build the tables. A function of its own so that the
    lowering's working state (hundreds of thousands of objects) is freed on return, before
    the caller resumes the garbage collector: alive then, the first collection would
    traverse all of it (~50 ms after a Kubernetes schema)."""
    checked = check_grammar(grammar)
    lowering = _Lowering(grammar, checked, max_states, merge_max_states)
    start_symbols = lowering.lower_all()
    bnf, terminals, accepts_empty = _normalize(lowering, start_symbols)
    return CompiledGrammar(grammar, terminals, bnf, build_tables(bnf), accepts_empty)


class _Lowering:
    """Builds terminals and BNF productions (ε allowed) from the IR."""

    def __init__(self, grammar: Grammar, checked: Checked, max_states: int, merge_max_states: int):
        self.grammar = grammar
        self.rules = grammar.rule_map
        self.max_states = max_states
        self.merge_max_states = merge_max_states
        self.checked = checked
        self.regular_order, self.library = rule_graph.rule_kinds(checked, grammar.start)  # callees before callers
        self.regular_rules = set(self.regular_order)
        self.terminals: list[Terminal] = []
        self._terminal_ids: dict[tuple, int] = {}
        self.nonterminals: list[str] = []
        self.productions: list[tuple[int, tuple[Sym, ...]]] = []
        self._rule_nt: dict[str, int] = {}
        self._rule_symbols: dict[str, tuple[Sym, ...]] = {}
        self._nullable_wrappers: dict[int, int] = {}
        self._atomic: dict[Expr, DFA] = {}
        self._merged: dict[Expr, DFA | None] = {}
        self._rule_dfa: dict[str, DFA | None] = {}
        self._regular: dict[Expr, bool] = {}
        self._apart: dict[Expr, bool] = {}  # composite -> `_words_in_runs`
        self._built: dict[Expr, DFA | None] = {}  # composite parts tried for a merge (None: too big)
        self._symbols_of: dict[str, tuple[Sym, ...]] = {}  # DFA key -> its `terminal_symbols`
        self._ref_facts: dict[str, tuple[int, bool]] = {}  # rule -> a reference's (`_merged_size`, `_word`)
        self._pending: list[str] = []  # rules whose nonterminal exists but has no productions yet

    # -- entry point ------------------------------------------------------------------
    def lower_all(self) -> tuple[Sym, ...]:
        """Lower every rule without recursing along chains of rules (any length works).

        The grammar's library (`rule_graph.rule_kinds`: a small recursive rule and the rules it uses,
        JSON's ``value``) is lowered first, on its own, so that what it makes depends on it
        alone and is taken from `rule_graph`'s memo when another grammar had it. Then regular rules
        are merged callees first, so a reference always finds its rule's DFA built; other
        rules get their nonterminal on first reference and their productions from a worklist.
        """
        if self.library:
            self._lower_library()
        self._lower_rules(self.regular_order, self.grammar.names)
        return self.rule_symbols(self.grammar.start)

    def _lower_rules(self, regular_order: Iterable[str], names: Iterable[str]) -> None:
        for name in regular_order:
            if name not in self._rule_dfa:  # not merged with the library
                body = self.rules[name]
                self._rule_dfa[name] = None if self._words_in_runs(body) else self.merged(body)
        for name in names:
            self.rule_symbols(name)
            while self._pending:
                pending = self._pending.pop()
                self.alternatives(self._rule_nt[pending], _alternatives(self.rules[pending]), pending)

    def _lower_library(self) -> None:
        """Lower the library's rules as a grammar of their own would be lowered, or take the
        state that leaves from `rule_graph`'s memo (keyed by the rules and the options; the state is
        a function of those alone, since the library refers to no other rule and is lowered
        before anything else)."""
        names = self.library
        key = (self.max_states, self.merge_max_states, tuple((name, self.rules[name]) for name in names))
        state = rule_graph.lowered_library(key)
        if state is not None:
            self._restore(state)
            return
        refs = {name: self.checked.refs[name] for name in names}
        self._lower_rules(rule_graph.regular_order(refs, self.checked.token_level)[0], names)
        rule_graph.keep_library(key, self._snapshot(), self._states_held())

    def _snapshot(self) -> tuple:
        """Copies of the working state (`_STATE`), which `_restore` copies back."""
        return tuple(getattr(self, name).copy() for name in _STATE)

    def _states_held(self) -> int:
        """The states of the automata the working state holds (terminals and memos), each once."""
        held = {id(t.dfa): t.dfa for t in self.terminals}
        for memo in (self._atomic, self._merged, self._rule_dfa, self._built):
            held.update((id(dfa), dfa) for dfa in memo.values() if dfa is not None)
        return sum(dfa.n_states for dfa in held.values())

    def _restore(self, state: tuple) -> None:
        for name, value in zip(_STATE, state):
            setattr(self, name, value.copy())

    def _words_in_runs(self, expr: Expr) -> bool:
        """Whether some sequence in `expr` (references aside) has a word beside large glue
        (`_word_beside_glue`; memoized). Such a rule or part is not merged whole
        but lowered piece by piece, as a sequence with a part that is not regular is: merged,
        a JSON string map (``"{" ws? string ws? ":" ws? string (ws? "," ...)* ws? "}"``) or an
        array of strings was one terminal of up to ~400 states per schema, each state a
        language no store had (a string's body and the rest of the map), each scanned against
        the whole vocabulary anew; piece by piece, it is the terminals every schema shares."""
        kind = type(expr)
        if kind is not Seq and kind is not Alt and kind is not Repeat:
            return False
        known = self._apart.get(expr)
        if known is None:
            known = False
            if kind is Seq and len(expr.items) > 1:
                known = _word_beside_glue([self._item_facts(item) for item in expr.items])
            for child in children(expr) if not known else ():
                if self._words_in_runs(child):
                    known = True
                    break
            self._apart[expr] = known
        return known

    def rule_symbols(self, name: str) -> tuple[Sym, ...]:
        """The symbols standing for a reference to rule `name`."""
        if name in self._rule_symbols:
            return self._rule_symbols[name]
        dfa = self._rule_dfa.get(name)
        body = self.rules[name]
        if isinstance(body, Ref) and isinstance(self.rules.get(body.name), _TEXT_LEAVES):
            body = self.rules[body.name]
        if dfa is None and isinstance(body, _TEXT_LEAVES):
            dfa = self.atomic(body)  # a rule that is (or names) one terminal, past the merge budget too
        if dfa is not None:
            symbols = self.terminal_symbols(dfa, name)
        else:
            nt = self.new_nonterminal(name)
            self._rule_nt[name] = nt
            self._pending.append(name)
            symbols = (~nt,)
        self._rule_symbols[name] = symbols
        return symbols

    # -- building blocks --------------------------------------------------------------
    def new_nonterminal(self, name: str) -> int:
        self.nonterminals.append(name)
        return len(self.nonterminals) - 1

    def add(self, nt: int, rhs: tuple[Sym, ...]) -> None:
        self.productions.append((nt, rhs))

    def terminal(self, name: Name, dfa: DFA, *, any_token: bool = False, token_limit: int | None = None) -> int:
        key = (dfa.key, any_token, token_limit)
        known = self._terminal_ids.get(key)
        if known is None:
            known = self._terminal_ids[key] = len(self.terminals)
            self.terminals.append(Terminal(name, dfa, any_token, token_limit))
        return known

    def terminal_symbols(self, dfa: DFA, name: Name) -> tuple[Sym, ...]:
        """Symbols for a regular language: ``T``, or ``(T⁺ | ε)`` when it contains ε.
        Remembered by language: most calls ask again for a terminal the lowering has (a
        JSON object's separators and values, once per property), and only a new
        terminal's name depends on `name`."""
        known = self._symbols_of.get(dfa.key)
        if known is None:
            known = self._symbols_of[dfa.key] = self._new_terminal_symbols(dfa, name)
        return known

    def _new_terminal_symbols(self, dfa: DFA, name: Name) -> tuple[Sym, ...]:
        if not dfa.accepts_empty:
            return (self.terminal(name, dfa),)
        plus = automata.without_empty(dfa)
        if plus.is_empty:
            return ()
        t = self.terminal(name, plus)
        if t not in self._nullable_wrappers:
            nt = self.new_nonterminal(f"{_named(name)}?")
            self.add(nt, (t,))
            self.add(nt, ())
            self._nullable_wrappers[t] = nt
        return (~self._nullable_wrappers[t],)

    def group(self, symbols: tuple[Sym, ...], name: str) -> Sym | None:
        """One symbol deriving exactly `symbols` (None for the empty sequence)."""
        if not symbols:
            return None
        if len(symbols) == 1:
            return symbols[0]
        nt = self.new_nonterminal(name)
        self.add(nt, symbols)
        return ~nt

    # -- expressions ------------------------------------------------------------------
    def symbols(self, expr: Expr, rule: str) -> tuple[Sym, ...]:
        """A sequence of symbols deriving exactly the language of `expr`. Dispatched on the
        exact class, commonest first (a chain of `isinstance` checks cost more than the rest
        of a call); a subclass of an IR class is lowered as its class."""
        kind = type(expr)
        if kind not in _IR_CLASSES:
            kind = _ir_class(expr)
        if kind in _PLAIN_LEAVES:
            return self.terminal_symbols(self.atomic(expr), (expr, rule))
        if kind is Ref:
            if expr.name in self.regular_rules and (dfa := self.merged(expr)) is not None:
                return self.terminal_symbols(dfa, (expr, rule))
            return self.rule_symbols(expr.name)
        if kind is Except:
            if expr.limit is None:
                return self.terminal_symbols(self.atomic(expr), (expr, rule))
            return (self.terminal((expr, rule), self.atomic(expr), token_limit=expr.limit),)
        if kind is AnyToken:
            return (self.terminal("any!", automata.any_bytes(), any_token=True),)
        if self.is_regular(expr) and not self._words_in_runs(expr) and (dfa := self.merged(expr)) is not None:
            return self.terminal_symbols(dfa, (expr, rule))
        if kind is Seq:
            return self.sequence(expr.items, rule)
        if kind is Alt:
            nt = self.new_nonterminal(f"{rule}#alt")
            self.alternatives(nt, expr.items, rule)
            return (~nt,)
        return self.repeat(expr, rule)

    def alternatives(self, nt: int, items: tuple[Expr, ...], rule: str) -> None:
        """Productions of `nt` for each alternative; many literals among them become one
        terminal (a trie, linear in their length) instead of one terminal each."""
        group, items = _literal_group(items)
        if group is not None:
            self.add(nt, (self.terminal(f"{rule}#literals", self._literal_alternation(group)),))
        by_rest: dict[tuple[Sym, ...], list[int]] = {}  # A -> T1 R | T2 R  ==  A -> (T1|T2) R
        terminals = self.terminals
        for item in items:
            rhs = self.symbols(item, rule)
            first = rhs[0] if rhs else -1  # is_nonterminal and _plain inline: a call each per item cost more
            if first >= 0 and not terminals[first].any_token and terminals[first].token_limit is None:
                by_rest.setdefault(rhs[1:], []).append(first)
            else:
                self.productions.append((nt, rhs))
        for rest, firsts in by_rest.items():
            firsts = list(dict.fromkeys(firsts))
            if len(firsts) >= LITERAL_GROUP:
                firsts = self._unite(firsts, f"{rule}#alts")
            for t in firsts:
                self.add(nt, (t,) + rest)

    def _unite(self, ts: list[int], name: str) -> list[int]:
        """Terminals for the union of terminals `ts`: pairs merged level by level while a
        union stays within the merge budget, so that one rule of thousands of alternatives
        opens a few terminals at a point, not thousands (each scanned by the token index)."""
        pending = [self.terminals[t].dfa for t in ts]
        done: list[DFA] = []
        budget = self.merge_max_states
        while len(pending) > 1:
            merged: list[DFA] = []
            for a, b in zip(pending[::2], pending[1::2]):
                if a.n_states + b.n_states <= budget:
                    try:
                        merged.append(automata.union([a, b], max_states=budget))
                        continue
                    except StateBudgetExceeded:
                        pass
                done.extend((a, b))
            if len(pending) % 2:
                merged.append(pending[-1])
            pending = merged
        return [self.terminal(name, dfa) for dfa in done + pending]

    def _literal_alternation(self, expr: Alt) -> DFA:
        dfa = self._built.get(expr)
        if dfa is None:
            dfa = self._built[expr] = automata.literals([item.text.encode("utf-8") for item in expr.items])
        return dfa

    def sequence(self, items: tuple[Expr, ...], rule: str) -> tuple[Sym, ...]:
        """Concatenate, merging each maximal run of regular items into one terminal (or,
        past the merge budget, into the chunks `_chunks` cuts it into)."""
        out: list[Sym] = []
        run: list[Expr] = []

        def flush() -> None:
            if not run:
                return
            for chunk in self._chunks(tuple(run)):
                if len(chunk) > 1 and (dfa := self.merged(seq := Seq(chunk))) is not None:
                    out.extend(self.terminal_symbols(dfa, (seq, rule)))
                else:
                    for item in chunk:
                        out.extend(self.symbols(item, rule))
            run.clear()

        for item in items:
            if self.is_regular(item) and not self._words_in_runs(item):
                run.append(item)
            else:
                flush()
                out.extend(self.symbols(item, rule))
        flush()
        return tuple(out)

    def _chunks(self, run: tuple[Expr, ...]) -> list[tuple[Expr, ...]]:
        """The terminals a regular run becomes: its words set apart (`_words_apart`), and
        each stretch between them whole or cut to the merge budget (`_cut`). A lone item is
        its own chunk (the atomic parts its size would build, `symbols` builds next)."""
        if len(run) < 2:
            return [run]
        sizes: list[int] = []
        words: list[bool] = []
        for item in run:
            size, word = self._item_facts(item)
            sizes.append(size)
            words.append(word)
        chunks: list[tuple[Expr, ...]] = []
        for start, end in _words_apart(words, sizes):
            chunks.extend(self._cut(run[start:end], sizes[start:end]))
        return chunks

    def _item_facts(self, item: Expr) -> tuple[int, bool]:
        """(`_merged_size`, `_word`) of an item of a run, the commonest kinds without those
        calls: a literal from its bytes alone, a reference (and JSON's ``ws?``, a bounded
        repetition of one) from what its rule's first reference found."""
        kind = type(item)
        if kind is Literal:
            size = len(item.text.encode("utf-8"))
            return size + 1, size >= WORD_BYTES
        if kind is Ref:
            return self._ref_facts.get(item.name) or self._new_ref_facts(item)
        if kind is Repeat and type(item.item) is Ref and item.max is not None:
            size = (self._ref_facts.get(item.item.name) or self._new_ref_facts(item.item))[0]
            return size * max(1, item.min), False  # as `_merged_size`; a repetition is no word
        return self._merged_size(item), self._word(item)

    def _new_ref_facts(self, ref: Ref) -> tuple[int, bool]:
        """(`_merged_size`, `_word`) of a reference, remembered for its rule once they are
        final: a regular rule's size once its DFA is tried (the lowering merges every regular
        rule before it lowers any sequence), any other rule's at once (it never has a DFA)."""
        facts = (self._merged_size(ref), self._word(ref))
        if ref.name in self._rule_dfa or ref.name not in self.regular_rules:
            self._ref_facts[ref.name] = facts
        return facts

    def _word(self, expr: Expr) -> bool:
        """Whether `expr` is a word of its run (see `_words_apart`): a literal of `WORD_BYTES`
        or more, a set of keys (``json_string_except!``), or a value: a regex, or a reference
        to a regular rule (a JSON property's ``integer``, ``string``, ``number_min256``, an
        enum; an object's ``..._other_key``). A reference to a rule that is one leaf is a
        word as the leaf would be, so naming a terminal (the JSON Schema front end's
        sharing pass) does not change the terminals."""
        while isinstance(expr, Ref) and expr.name in self.regular_rules:
            body = self.rules[expr.name]
            if not isinstance(body, _REF_OR_TEXT):
                return True  # a composite value
            expr = body
        if isinstance(expr, Literal):  # a character is at least a byte: most need no encoding
            return len(expr.text) >= WORD_BYTES or len(expr.text.encode("utf-8")) >= WORD_BYTES
        return isinstance(expr, (Regex, JsonStringExcept))

    def _cut(self, run: tuple[Expr, ...], sizes: list[int]) -> list[tuple[Expr, ...]]:
        """`run` whole when its parts' automata fit the merge budget together, else cut
        before and after each reference to a rule (a value: its terminal is shared by every
        use, as in the sequences of a rule that is not regular) or ``json_string_except!``
        (the keys of an object, as the JSON Schema front end's rule for them would be) and, where the glue between
        two references is still too large, wherever the next part would overflow the budget.

        The size of a concatenation is estimated as the sum of its parts' sizes: rarely far
        off for the separators, keys and values of a JSON object, and it spares building a
        whole object's automaton (often thousands of states) only to find it too large."""
        if len(run) < 2 or _fits(sizes, self.merge_max_states):
            return [run]
        chunks: list[tuple[Expr, ...]] = []
        current: list[Expr] = []
        total = 0
        for item, size in zip(run, sizes):
            alone = isinstance(item, (Ref, JsonStringExcept))
            cut = alone or (current and not _fits([total, size], self.merge_max_states))
            if cut and current:
                chunks.append(tuple(current))
                current, total = [], 0
            if alone:
                chunks.append((item,))
                continue
            current.append(item)
            total += size
        if current:
            chunks.append(tuple(current))
        return chunks

    def _merged_size(self, expr: Expr) -> int:
        """The states of `expr`'s own automaton where known without building one (a rule's,
        a terminal's, a literal's; past the merge budget when it has none), else 1."""
        if isinstance(expr, Literal):  # the commonest items first
            return len(expr.text.encode("utf-8")) + 1
        if isinstance(expr, Ref):
            known = self._rule_dfa.get(expr.name, _UNTRIED)
        elif isinstance(expr, Repeat) and expr.max is not None:
            return self._merged_size(expr.item) * max(1, expr.min)
        elif isinstance(expr, (Regex, Substrings, JsonStringExcept, Except)):
            return self.atomic(expr).n_states
        else:
            known = self._merged.get(expr, _UNTRIED)
        if known is _UNTRIED:
            return 1
        return self.merge_max_states + 1 if known is None else known.n_states

    def repeat(self, expr: Repeat, rule: str) -> tuple[Sym, ...]:
        body = self.group(self.symbols(expr.item, rule), f"{rule}#item")
        if body is None:
            return ()
        lo, hi = expr.min, expr.max
        if max(lo, hi or 0) > MAX_EXPANSION:
            raise GrammarError(
                f"counted repetition {_bounds(lo, hi)} in rule '{rule}' is too large: its bounds may be "
                f"at most {MAX_EXPANSION}",
                expr.span,
            )
        if hi is None:
            if lo == 0:
                star = self.new_nonterminal(f"{rule}#star")
                self.add(star, ())
                self.add(star, (~star, body))
                return (~star,)
            plus = self.new_nonterminal(f"{rule}#plus")
            self.add(plus, (body,))
            self.add(plus, (~plus, body))
            return (body,) * (lo - 1) + (~plus,)
        tail: tuple[Sym, ...] = ()
        for _ in range(hi - lo):  # O_k -> ε | body O_{k-1}
            nt = self.new_nonterminal(f"{rule}#opt")
            self.add(nt, ())
            self.add(nt, (body,) + tail)
            tail = (~nt,)
        return (body,) * lo + tail

    # -- regular parts ----------------------------------------------------------------
    def is_regular(self, expr: Expr) -> bool:
        """Whether `expr` denotes a regular byte language we may build a DFA for (memoized:
        a sequence asks of each item, then of the runs and groups they are part of). Leaves
        and references are answered by their class, without hashing them for the memo."""
        kind = type(expr)
        if kind in _PLAIN_LEAVES:
            return True
        if kind is Ref:
            return expr.name in self.regular_rules
        known = self._regular.get(expr)
        if known is None:  # from the children's answers: linear in the tree, not in its depth times size
            known = self._regular_node(expr)
            for child in children(expr) if known else ():  # a loop, not all() over a generator
                if not self.is_regular(child):
                    known = False
                    break
            self._regular[expr] = known
        return known

    def _regular_node(self, node: Expr) -> bool:
        if isinstance(node, AnyToken) or (isinstance(node, Except) and node.limit is not None):
            return False
        return not isinstance(node, Ref) or node.name in self.regular_rules

    def atomic(self, expr: Expr) -> DFA:
        """The DFA of a terminal node; errors carry the node's position."""
        known = self._atomic.get(expr)  # one lookup: each hashes the node
        if known is not None:
            return known
        try:
            if isinstance(expr, Literal):
                dfa = automata.literal(expr.text.encode("utf-8"))
            elif isinstance(expr, Regex):
                dfa = automata.from_regex(expr.pattern, max_states=self.max_states)
                if expr.mode == "early":
                    dfa = automata.early_end(dfa)
                elif expr.mode == "complement":
                    dfa = automata.complement_containing(dfa, max_states=self.max_states)
            elif isinstance(expr, Substrings):
                dfa = automata.substrings(expr.text)
            elif isinstance(expr, JsonStringExcept):
                dfa = automata.json_string_except(expr.words)
            elif isinstance(expr, Except):
                dfa = automata.except_strings(self.except_literals(expr), max_states=self.max_states)
            else:
                raise TypeError(expr)
        except RegexError as error:
            if error.span is not None:
                raise
            raise type(error)(error.message, expr.span, hint=error.hint) from None
        self._atomic[expr] = dfa
        return dfa

    def except_literals(self, expr: Except) -> list[str]:
        """The strings an ``except!`` excludes (check.py has verified the shape)."""
        out: list[str] = []
        pending: list[Expr] = [expr.item]
        seen: set[str] = set()
        while pending:
            node = pending.pop()
            if isinstance(node, Literal):
                out.append(node.text)
            elif isinstance(node, Alt):
                pending.extend(reversed(node.items))
            elif isinstance(node, Ref) and node.name not in seen:
                seen.add(node.name)
                pending.append(self.rules[node.name])
        return out

    def merged(self, expr: Expr) -> DFA | None:
        """One DFA for a regular expression tree, or None when it exceeds the merge budget."""
        known = self._merged.get(expr, _UNTRIED)
        if known is not _UNTRIED:
            return known
        try:
            dfa = self._build(expr)
        except StateBudgetExceeded as error:
            if error.span is not None:  # an atomic part is itself too large: a real error
                raise
            dfa = None
        self._merged[expr] = dfa
        return dfa

    def _build(self, expr: Expr) -> DFA:
        """The DFA of `expr`; composites asked for here are memoized, failures too, since
        the same part is tried again as an item of the rule, of its alternatives, of its
        runs (their inner parts are folded into one construction, see `_tree`)."""
        if isinstance(expr, (Seq, Alt, Repeat)):
            dfa = self._built.get(expr, _UNTRIED)
            if dfa is None:
                raise StateBudgetExceeded("exceeds the merge budget (tried before)")
            if dfa is not _UNTRIED:
                return dfa
            try:
                dfa = self._build_new(expr)
            except StateBudgetExceeded as error:
                if error.span is None:
                    self._built[expr] = None
                raise
            self._built[expr] = dfa
            return dfa
        return self._build_new(expr)

    def _build_new(self, expr: Expr) -> DFA:
        budget = self.merge_max_states
        if isinstance(expr, _ATOMIC):
            dfa = self.atomic(expr)
            if dfa.n_states > budget:
                raise StateBudgetExceeded(f"{dfa.n_states} states")
            return dfa
        if isinstance(expr, Ref):  # built before (callees first), or by the memo
            dfa = self._rule_dfa[expr.name] if expr.name in self._rule_dfa else self.merged(self.rules[expr.name])
            if dfa is None:
                raise StateBudgetExceeded(f"rule '{expr.name}' exceeds the merge budget")
            return dfa
        tree = self._composite(expr)
        return tree if isinstance(tree, DFA) else automata.combine(tree, max_states=budget)

    def _tree(self, expr: Expr):
        """`expr` as a tree of operations over DFAs (automata.combine), built in one subset
        construction: its composite parts are not determinized one by one, except those
        already built (memoized) for another use."""
        if not isinstance(expr, (Seq, Alt, Repeat)) or expr in self._built:
            return self._build(expr)
        return self._composite(expr)

    def _composite(self, expr: Seq | Alt | Repeat):
        """The tree of one composite node (a DFA where it is only a group of literals)."""
        if isinstance(expr, Seq):
            parts = [self._tree(item) for item in expr.items]
            if not _fits([_least_states(p) for p in parts], self.merge_max_states):
                # a concatenation is rarely much smaller than its parts: skip the hopeless try
                raise StateBudgetExceeded("the parts of the sequence are too large to merge")
            return ("seq", parts)
        if isinstance(expr, Alt):
            group, rest = _literal_group(expr.items)
            if group is not None and not rest:
                return self._literal_alternation(group)  # linear in size: exempt from the budget
            parts = [self._literal_alternation(group)] if group is not None else []
            return ("alt", parts + [self._tree(item) for item in rest])
        return ("repeat", self._tree(expr.item), expr.min, expr.max)


def _words_apart(words: list[bool], sizes: list[int]) -> list[tuple[int, int]]:
    """A run (its items' `words` flags and `sizes`) as stretches ``(start, end)``, each word
    next to a large part alone in its own.

    A word is a piece one schema brings and another does not share: a literal of
    `WORD_BYTES` or more (a keyword, a JSON property name), the set of an object's other
    keys (``json_string_except!``) or a value (a regex, or a reference to a regular rule: its
    type and bounds vary from one property to the next); a large part has `LARGE_PART` states or more
    (JSON's bounded whitespace has 69). Merged, a word and its neighbours make a terminal of
    their own, copying the neighbours' states once per word: a JSON object's
    ``ws? "," ws? "\"name\"" ws? ":" ws?`` is ~280 states for every property, and
    ``ws? ":" ws? integer ws? "," ws?`` as many for every type of value, each determinized,
    minimized and scanned against the vocabulary anew (the whitespace around a value makes
    its states wide: every space-led token walks them, and their languages are new to the
    store). Set apart, the word is a terminal of its own (a key's scans are narrow, a
    value's are those of its type, shared by every schema) and the separators around it are
    the same terminals in every object of every schema, built and scanned once. It costs LR
    states (two more per property) and tree walks across the extra terminal boundaries; on
    30 MaskBench schemas the whole cold response still fell 4.5% in instructions and its p50
    13% (compile p50 -28%). Punctuation (shorter than a word) stays merged, so
    ``ws? "," ws?`` remains one terminal."""
    stretches: list[tuple[int, int]] = []
    start = 0
    for i in _words_beside(words, [size >= LARGE_PART for size in sizes]):
        if start < i:
            stretches.append((start, i))
        stretches.append((i, i + 1))
        start = i + 1
    if start < len(words):
        stretches.append((start, len(words)))
    return stretches


def _word_beside_glue(facts: list[tuple[int, bool]]) -> bool:
    """Whether a sequence's items (their `_item_facts`: size, word) have a word next to a
    large part that is not a word itself (glue: JSON's bounded whitespace, 69 states). A word
    beside a large word (an XML tag's name beside its text) does not count: merged, they copy
    nothing that other terminals share."""
    words = [word for _, word in facts]
    return next(_words_beside(words, [size >= LARGE_PART and not word for size, word in facts]), None) is not None


def _words_beside(words: list[bool], flags: list[bool]) -> Iterator[int]:
    """The positions of the words that have a flagged item next to them, in order."""
    flagged = flags + [False]  # flagged[-1]: no item before the first
    return (i for i, word in enumerate(words) if word and (flagged[i - 1] or flagged[i + 1]))


def _least_states(tree) -> int:
    """The states a part of a concatenation brings, as far as cheaply known: a DFA's own, a
    repetition's of its required copies (at least one: its optional ones may be skipped),
    else 1."""
    if isinstance(tree, DFA):
        return tree.n_states
    if tree[0] == "repeat" and isinstance(tree[1], DFA):
        return tree[1].n_states * max(1, tree[2])
    return 1


def _fits(sizes: list[int], budget: int) -> bool:
    """Whether automata of these sizes may fit `budget` once concatenated (they share a
    state at each junction)."""
    return sum(sizes) - (len(sizes) - 1) <= budget


def _bounds(lo: int, hi: int | None) -> str:
    return f"{{{lo}}}" if lo == hi else f"{{{lo},{'' if hi is None else hi}}}"


def _literal_group(items: tuple[Expr, ...]) -> tuple[Alt | None, tuple[Expr, ...]]:
    """(the non-empty literals among `items` as one Alt, the other items) when there are at
    least `LITERAL_GROUP` of them, else (None, items). The empty literal stays apart, so the
    group's trie never accepts ε (and needs no ε-free copy)."""
    literals = tuple(item for item in items if isinstance(item, Literal) and item.text)
    if len(literals) < LITERAL_GROUP:
        return None, items
    return Alt(literals), tuple(item for item in items if not (isinstance(item, Literal) and item.text))


def _alternatives(expr: Expr) -> tuple[Expr, ...]:
    return expr.items if isinstance(expr, Alt) else (expr,)


_TEXT_LEAVES = (Literal, Regex, Substrings, JsonStringExcept)  # terminals of text, no vocabulary
_PLAIN_LEAVES = frozenset(_TEXT_LEAVES)
_ATOMIC = (*_TEXT_LEAVES, Except)  # nodes `atomic` builds
_REF_OR_TEXT = (Ref, *_TEXT_LEAVES)
_UNTRIED = object()  # a memo's answer for a part never tried
# The `_Lowering` fields a lowering fills in: what `_snapshot` keeps of a library's.
_STATE = ("terminals", "_terminal_ids", "nonterminals", "productions", "_rule_nt", "_rule_symbols",
          "_nullable_wrappers", "_atomic", "_merged", "_rule_dfa", "_regular", "_apart", "_built",
          "_symbols_of", "_ref_facts")
_IR_CLASSES = frozenset((*_TEXT_LEAVES, Ref, Except, AnyToken, Seq, Alt, Repeat))


def _ir_class(expr: Expr) -> type:
    """The IR class `expr` is an instance of (it may be a subclass of one)."""
    for cls in _IR_CLASSES:
        if isinstance(expr, cls):
            return cls
    raise TypeError(f"not an IR expression: {expr!r}")


# A terminal's name, or the (expression, rule) it describes: most symbols a lowering asks
# for are terminals it already has (JSON's separators and values, once per use), so
# describing each (printing its expression) is put off until a new terminal needs the name;
# a pair, not a closure, since one is made for every symbol asked for.
Name = str | tuple[Expr, str]


def _named(name: Name) -> str:
    return name if isinstance(name, str) else _describe(*name)


def _describe(expr: Expr, rule: str) -> str:
    """A short human name for a terminal, for error messages and summaries."""
    if isinstance(expr, Literal):
        return _quote(expr.text)
    if isinstance(expr, Regex):
        prefix = {"match": "#", "early": "#e", "complement": "#ex"}[expr.mode]
        return f"{prefix}/{expr.pattern}/"
    if isinstance(expr, Substrings):
        return f"#substrs{_quote(expr.text)}"
    if isinstance(expr, JsonStringExcept):
        words = ", ".join(map(_quote, expr.words[:3])) + (", …" if len(expr.words) > 3 else "")
        return f"json_string_except!({words})"
    if isinstance(expr, Except):
        inner = _describe(expr.item, rule) if isinstance(expr.item, Literal) else expr.item.name
        return f"except!({inner})" if expr.limit is None else f"except!({inner}, {expr.limit})"
    if isinstance(expr, Ref):
        return expr.name
    text = " ".join(expr_to_ebnf(expr).split())
    return text if len(text) <= 40 else f"{text[:39]}…"


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


# -- BNF normalisation --------------------------------------------------------------------


def _normalize(lowering: _Lowering, start_symbols: tuple[Sym, ...]) -> tuple[Bnf, tuple[Terminal, ...], bool]:
    """ε-free, cycle-free, trimmed BNF with an augmented start production (`bnf.normalize`),
    after an error for any rule that derives no string."""
    names = list(lowering.nonterminals)
    start = len(names)
    names.append(lowering.grammar.start)
    productions = Flat.of(lowering.productions + [(start, start_symbols)])
    usable = bytes([not t.dfa.is_empty for t in lowering.terminals])  # asked per occurrence: once per terminal here
    productive = derivers(productions, len(names), usable)
    _report_unproductive(lowering, productive, usable, start)
    return normalize(productions, names, lowering.terminals, start, productive)


def _report_unproductive(lowering: _Lowering, productive: bytes, usable: bytes, start: int) -> None:
    """Raise for the first rule that derives no string (`usable`: per terminal, whether it
    matches something; `productive`: per nonterminal, whether it derives some string)."""
    if 0 not in productive and 0 not in usable:  # the usual case: every symbol derives something
        return
    grammar = lowering.grammar
    for name in grammar.names:
        symbols = lowering.rule_symbols(name)
        ok = all(productive[~s] if is_nonterminal(s) else usable[s] for s in symbols)
        if not ok:
            span = grammar.rule_spans.get(name)
            raise GrammarError(
                f"rule '{name}' derives no string: every expansion of it either never ends "
                f"or uses a terminal that matches nothing",
                span,
            )
    if not productive[start]:
        raise GrammarError(f"the grammar derives no string from its start rule '{grammar.start}'")


