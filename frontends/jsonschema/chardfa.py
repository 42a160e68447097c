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
from grammarc.automata import DFA, CharDFA, json_strings
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


def excluding(words) -> CharDFA:
    """The strings that are none of `words`, over characters (`automata.json_strings.excluding`):
    rendered with every JSON spelling of each character, "a key other than these names" where
    the names are too many for one ``json_string_except!``."""
    return json_strings.excluding(words)


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
