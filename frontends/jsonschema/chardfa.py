"""Key and string languages as byte DFAs over UTF-8 text, under the Boolean operations
schemas need.

`pattern` compiles to a regex directly; these languages are for what a regex cannot say
compactly: the keys that no ``patternProperties`` pattern matches and that name no listed
property (the keys ``additionalProperties`` governs), and the strings a pattern does *not*
match (``not: {pattern: ...}``). They are grammarc's byte DFAs over the *decoded* text
(`grammarc.automata`: union, intersection, complement within UTF-8 text); `chars` reads one
back as a DFA over code points, which the builder renders with every JSON spelling of each
character, so the languages are exact. An empty language is None throughout.
"""

from __future__ import annotations

from functools import lru_cache

from grammarc import automata
from grammarc.automata import DFA, CharDFA
from grammarc.automata.regex import ANY, negate, normalize
from grammarc.errors import StateBudgetExceeded
from grammarc.frontends import json_formats as jf


class TooLarge(ValueError):
    """An automaton would need more states than allowed."""


def _budget(max_states: int) -> int:
    return jf.BYTE_STATES_PER_CHAR * max_states


def _some(d: DFA) -> DFA | None:
    return None if d.is_empty else d


def everything() -> DFA:
    """Every string."""
    return automata.utf8_text()


def strings(trees: list, min_len: int, max_len: int | None, max_states: int) -> DFA | None:
    """The strings every tree (json_formats' pattern trees) matches, of length in [min_len, max_len]."""
    try:
        return _some(jf.string_dfa(trees, min_len, max_len, max_states=max_states))
    except jf.PatternError as exc:
        raise TooLarge(str(exc)) from None


@lru_cache(maxsize=256)
def pattern(text: str, max_states: int) -> DFA | None:
    """The strings in which the ECMA pattern `text` finds a match (None: none does).

    PatternError where the pattern cannot be translated; TooLarge past the budget.
    """
    return strings([jf.search_tree(text)], 0, None, max_states)


def literals(words) -> DFA | None:
    """Exactly the strings in `words` (a word no text can hold, a lone surrogate, is left out)."""
    data = []
    for word in words:
        try:
            data.append(word.encode("utf-8"))
        except UnicodeEncodeError:
            continue
    if not data:
        return None
    return _guard(lambda b: automata.union([automata.literal(x) for x in data], max_states=b), 1 << 20)


@lru_cache(maxsize=512)
def _excluding(words: tuple[str, ...]) -> CharDFA:
    children: list[dict[int, int]] = [{}]  # the trie over code points
    end = [False]
    for word in words:
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no text holds it
            continue
        q = 0
        for ch in map(ord, word):
            if ch not in children[q]:
                children[q][ch] = len(children)
                children.append({})
                end.append(False)
            q = children[q][ch]
        end[q] = True
    # equal subtrees are one state (a trie is a tree: children are numbered after parents)
    same: list[int] = [0] * len(children)
    register: dict[tuple, int] = {}
    for q in reversed(range(len(children))):
        signature = (end[q], tuple((ch, same[t]) for ch, t in sorted(children[q].items())))
        same[q] = register.setdefault(signature, q)
    if not any(children) and not end[0]:  # no word at all: every string
        return CharDFA((((ANY, 0),),), (True,))
    # breadth first from the root, each target numbered when its smallest character meets it
    # (as `chars` numbers a byte DFA's states); the sink ("left the trie") is keyed "sink"
    sink = "sink"
    ids: dict = {same[0]: 0}
    order: list = [same[0]]
    edges: list[tuple] = []
    for q in order:
        if q == sink:
            edges.append(((ANY, ids[sink]),))
            continue
        chars = sorted(children[q])
        steps = [(ch, ch, same[children[q][ch]]) for ch in chars]
        steps += [(lo, hi, sink) for lo, hi in negate([(ch, ch) for ch in chars])]
        steps.sort()  # by first code point (no two steps start at the same one)
        by_target: dict[int, list[tuple[int, int]]] = {}
        for lo, hi, t in steps:
            if t not in ids:
                ids[t] = len(order)
                order.append(t)
            by_target.setdefault(ids[t], []).append((lo, hi))
        edges.append(tuple((normalize(rs), t) for t, rs in sorted(by_target.items())))
    return CharDFA(tuple(edges), tuple(q == sink or not end[q] for q in order))


def excluding(words) -> CharDFA:
    """The strings that are none of `words`, over characters: their trie (one state per
    distinct suffix tree: equal subtrees are shared) plus a state for "left the trie", where
    every character loops. Built directly, in time linear in the words. Rendered with every
    JSON spelling of each character, this is "a key other than these names" without a regex
    per spelling."""
    return _excluding(tuple(sorted(set(words))))


def complement(d: DFA | None, max_states: int) -> DFA | None:
    """The strings `d` rejects (text: valid UTF-8)."""
    if d is None:
        return everything()
    return _some(_guard(lambda b: automata.complement(d, max_states=b), _budget(max_states)))


def intersection(a: DFA | None, b: DFA | None, max_states: int) -> DFA | None:
    if a is None or b is None:
        return None
    return _some(_guard(lambda n: automata.intersect(a, b, max_states=n), _budget(max_states)))


def union(a: DFA | None, b: DFA | None, max_states: int) -> DFA | None:
    if a is None or b is None:
        return b if a is None else a
    return _guard(lambda n: automata.union([a, b], max_states=n), _budget(max_states))


def _guard(build, budget: int) -> DFA:
    try:
        return build(budget)
    except StateBudgetExceeded:
        raise TooLarge(f"the automaton needs more than {budget} byte-level states") from None


def chars(d: DFA, max_states: int) -> CharDFA:
    """`d` as a DFA over code points (what the builder renders); TooLarge past `max_states`."""
    out = automata.code_point_dfa(d)
    if len(out.accept) > max_states:
        raise TooLarge(f"the automaton needs more than {max_states} character states")
    return out


def accepts(d: DFA | None, text: str) -> bool:
    """Whether `d` accepts `text` (for validating concrete keys)."""
    if d is None:
        return False
    try:
        return d.matches(text.encode("utf-8"))
    except UnicodeEncodeError:
        return False
