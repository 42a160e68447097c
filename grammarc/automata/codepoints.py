"""A byte DFA over UTF-8 text seen as a DFA over code points.

Some consumers think in characters, not bytes: the JSON Schema front-end renders each
transition of an automaton as "every JSON spelling of one of these characters". Every DFA
built from code point sets (regexes, `utf8_text`, and the algebra over them) reads valid
UTF-8 only, so its states split into character boundaries and states part way through a
character; `code_point_dfa` keeps the boundaries and labels each of their transitions with
the code point ranges that lead, byte by byte, to the next boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

from grammarc.automata.dfa import DFA

Ranges = tuple[tuple[int, int], ...]

# Lead bytes: (first lead, last lead, continuation bytes that follow, payload bits of the lead).
_LEADS = ((0x00, 0x7F, 0, 0x7F), (0xC2, 0xDF, 1, 0x1F), (0xE0, 0xEF, 2, 0x0F), (0xF0, 0xF4, 3, 0x07))


@dataclass(frozen=True)
class CharDFA:
    """A DFA over characters: state 0 starts; `edges[q]` = ((code point ranges, target), ...)."""

    edges: tuple[tuple[tuple[Ranges, int], ...], ...]
    accept: tuple[bool, ...]


def code_point_dfa(d: DFA) -> CharDFA:
    """`d` (a DFA over valid UTF-8) as a DFA over code points, boundary states in BFS order.

    Raises ValueError where `d` reads a byte that cannot start a character at a boundary.
    """
    runs = d._runs
    tails_memo: dict[tuple[int, int], list[tuple[int, int, int]]] = {}

    def tails(state: int, k: int) -> list[tuple[int, int, int]]:
        """(lo, hi, target) over the values of the k continuation bytes read from `state`."""
        key = (state, k)
        if key in tails_memo:
            return tails_memo[key]
        if k == 0:
            out = [(0, 0, state)]
        else:
            size = 64 ** (k - 1)
            out = []
            for lo, hi, target in runs[state]:
                lo, hi = max(lo, 0x80), min(hi, 0xBF)
                if lo > hi:
                    continue
                _spread(out, lo - 0x80, hi - 0x80, size, tails(target, k - 1))
            out = _coalesce(out)
        tails_memo[key] = out
        return out

    ids = {0: 0}
    order = [0]
    edges: list[tuple[tuple[Ranges, int], ...]] = []
    for state in order:  # grows while iterating
        found: list[tuple[int, int, int]] = []
        for lo, hi, target in runs[state]:
            covered = 0
            for first, last, k, bits in _LEADS:
                a, b = max(lo, first), min(hi, last)
                if a > b:
                    continue
                covered += b - a + 1
                _spread(found, a & bits, b & bits, 64 ** k, tails(target, k))
            if covered != hi - lo + 1:
                raise ValueError(f"not a DFA over UTF-8 text: state {state} reads bytes {lo:#x}-{hi:#x}")
        by_target: dict[int, list[tuple[int, int]]] = {}
        for lo, hi, target in found:
            if target not in ids:
                ids[target] = len(order)
                order.append(target)
            by_target.setdefault(ids[target], []).append((lo, hi))
        edges.append(tuple((_merge(rs), t) for t, rs in sorted(by_target.items())))
    del tails  # a recursive closure is a reference cycle: unbound, refcounting frees it and its memo
    return CharDFA(tuple(edges), tuple(bool(d.accept[q]) for q in order))


def _spread(out: list, lo: int, hi: int, size: int, sub: list[tuple[int, int, int]]) -> None:
    """Append the ranges of prefix values lo..hi, each followed by the `size` values of `sub`."""
    if len(sub) == 1 and sub[0][0] == 0 and sub[0][1] == size - 1:
        out.append((lo * size, (hi + 1) * size - 1, sub[0][2]))
        return
    for v in range(lo, hi + 1):
        base = v * size
        out.extend((base + a, base + b, t) for a, b, t in sub)


def _coalesce(items: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Join neighbouring (lo, hi, target) entries with the same target (input ascending)."""
    out: list[tuple[int, int, int]] = []
    for lo, hi, t in items:
        if out and out[-1][2] == t and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return out


def _merge(ranges: list[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)
