"""Character automata (json_formats' `CharDFA`) under the Boolean operations schemas need.

`pattern` compiles to a regex directly; these automata are for what a regex cannot say
compactly: the keys that no ``patternProperties`` pattern matches and that name no listed
property (the keys ``additionalProperties`` governs), and the strings a pattern does *not*
match (``not: {pattern: ...}``). Automata run over decoded characters; the builder renders
them with every JSON spelling of each character, so the languages are exact.
"""

from __future__ import annotations

from grammarc.frontends import json_formats as jf

CharDFA = jf.CharDFA


class TooLarge(ValueError):
    """An automaton would need more states than allowed."""


def everything() -> CharDFA:
    """Every string."""
    return CharDFA(((((jf.ALL), 0),),), (True,))


def pattern(text: str, max_states: int) -> CharDFA | None:
    """The strings in which the ECMA pattern `text` finds a match (None: none does)."""
    try:
        return jf.string_automaton([jf.search_tree(text)], 0, None, max_states=max_states)
    except jf.PatternError as exc:
        if "automaton states" in str(exc):
            raise TooLarge(str(exc)) from None
        raise


def literals(words) -> CharDFA | None:
    """Exactly the strings in `words` (a trie)."""
    edges: list[dict[int, int]] = [{}]
    accept = [False]
    for word in words:
        q = 0
        for ch in word:
            cp = ord(ch)
            if cp not in edges[q]:
                edges.append({})
                accept.append(False)
                edges[q][cp] = len(edges) - 1
            q = edges[q][cp]
        accept[q] = True
    if not any(accept):
        return None
    return CharDFA(tuple(tuple((((cp, cp),), t) for cp, t in sorted(out.items())) for out in edges), tuple(accept))


def complement(dfa: CharDFA | None) -> CharDFA | None:
    """The strings `dfa` rejects (over the characters JSON strings can hold)."""
    if dfa is None:
        return everything()
    full = _complete(dfa)
    return _trim(full.edges, tuple(not a for a in full.accept))


def intersection(a: CharDFA | None, b: CharDFA | None, max_states: int) -> CharDFA | None:
    if a is None or b is None:
        return None
    return _product(a, b, lambda x, y: x and y, max_states)


def union(a: CharDFA | None, b: CharDFA | None, max_states: int) -> CharDFA | None:
    if a is None or b is None:
        return b if a is None else a
    return _product(_complete(a), _complete(b), lambda x, y: x or y, max_states)


def _complete(dfa: CharDFA) -> CharDFA:
    """`dfa` with a dead state taking every character no edge reads."""
    sink = len(dfa.accept)
    edges = []
    for out in dfa.edges:
        covered = jf.normalize(r for ranges, _ in out for r in ranges)
        missing = jf.intersect(jf.complement(covered), jf.ALL)
        edges.append(out + (((missing, sink),) if missing else ()))
    edges.append(((jf.ALL, sink),))
    return CharDFA(tuple(edges), dfa.accept + (False,))


def _product(a: CharDFA, b: CharDFA, combine, max_states: int) -> CharDFA | None:
    index = {(0, 0): 0}
    order = [(0, 0)]
    edges: list[tuple] = []
    for p, q in order:
        by_target: dict[int, list] = {}
        for ra, ta in a.edges[p]:
            for rb, tb in b.edges[q]:
                common = jf.intersect(ra, rb)
                if not common:
                    continue
                if (ta, tb) not in index:
                    if len(order) >= max_states:
                        raise TooLarge(f"the automaton needs more than {max_states} states")
                    index[(ta, tb)] = len(order)
                    order.append((ta, tb))
                by_target.setdefault(index[(ta, tb)], []).extend(common)
        edges.append(tuple((jf.normalize(rs), t) for t, rs in sorted(by_target.items())))
    accept = tuple(combine(a.accept[p], b.accept[q]) for p, q in order)
    return _trim(tuple(edges), accept)


def _trim(edges, accept) -> CharDFA | None:
    """Drop the states from which no string is accepted; None when the start is one of them."""
    live = {q for q, ok in enumerate(accept) if ok}
    changed = True
    while changed:
        changed = False
        for q, out in enumerate(edges):
            if q not in live and any(t in live for _, t in out):
                live.add(q)
                changed = True
    if 0 not in live:
        return None
    renumber = {q: k for k, q in enumerate(sorted(live))}
    return CharDFA(tuple(tuple((rs, renumber[t]) for rs, t in edges[q] if t in live) for q in sorted(live)),
                   tuple(accept[q] for q in sorted(live)))


def accepts(dfa: CharDFA | None, text: str) -> bool:
    """Whether `dfa` accepts `text` (for validating concrete keys)."""
    if dfa is None:
        return False
    q = 0
    for ch in text:
        cp = ord(ch)
        for ranges, t in dfa.edges[q]:
            if any(lo <= cp <= hi for lo, hi in ranges):
                q = t
                break
        else:
            return False
    return dfa.accept[q]
