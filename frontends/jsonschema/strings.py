"""Strings: length, `pattern`, `format` and their intersections (via json_formats)."""

from __future__ import annotations

import re
from typing import Callable

from grammarc import automata
from grammarc.automata import regex as rx
from grammarc.errors import StateBudgetExceeded
from grammarc.ir import Alt, Expr, JsonStringExcept, Literal, Ref, Regex, Seq, Repeat
from grammarc.frontends import json_formats as jf

from . import chardfa
from . import formats as fmt
from .long_strings import MAX_LENGTH, LongStrings, plain_fits
from .merge import Merged
from .sharing import identifier
MAX_STRING_STATES = 1500  # character automaton for pattern & format & length
EXCEPT_WORDS_CHARS = 4096  # words of a json_string_except!: ~10 automaton states per character
_SURROGATE = re.compile("[\ud800-\udfff]")


class Strings:
    """Strings: length, pattern, format and their intersections."""

    def _string(self, m: Merged) -> Expr | None:
        if m.max_len is not None and m.min_len > m.max_len:
            return None
        patterns = sorted({p for p, _ in m.patterns or []})
        formats = sorted({f for f, _ in m.formats or []})
        length_limited = m.min_len > 0 or m.max_len is not None
        if m.not_strings and not (patterns or formats or length_limited or m.not_patterns):
            return self._string_except(m.not_strings, None)
        if m.not_strings or m.not_patterns:
            return self._string_complements(m, patterns, formats)
        if formats and not patterns and len(formats) == 1 and not length_limited:
            return Regex(fmt.string_regex(formats[0]))
        if patterns and not formats and len(patterns) == 1 and not length_limited:
            ptr = m.patterns[-1][1]
            try:
                regex = jf.string_search_regex(patterns[0])
            except jf.PatternError as exc:
                self.unsupported("pattern", ptr.rsplit("/", 1)[0], str(exc))
                return self._plain_string(m)
            if regex is None:
                return None
            return self._checked(regex, "pattern", ptr, "the pattern", m, lambda: jf.search_tree(patterns[0]), True)
        if patterns or formats:
            return self._string_intersection(m)
        return self._plain_string(m)

    def _string_except(self, words, hint: str | None) -> Expr:
        """A JSON string, in any spelling, that is none of `words`: ``json_string_except!``,
        whose automaton the lowering builds directly from the words' trie (a word with a lone
        surrogate excludes nothing: no text holds it). Past `EXCEPT_WORDS_CHARS` characters
        of words, the trie's complement as right-linear rules instead (`_char_dfa`), which the
        lowering may cut into several terminals rather than build one large automaton."""
        words = sorted({w for w in words if w.isascii() or not _SURROGATE.search(w)})  # most: ASCII, no search
        if sum(map(len, words)) <= EXCEPT_WORDS_CHARS:
            expr = JsonStringExcept(tuple(words))
            if hint is not None:
                self._name_terminal(expr, identifier(hint))
            return expr
        return self._char_dfa(chardfa.excluding(words), True, hint)

    def _plain_string(self, m: Merged) -> Expr:
        """Any string of m.min_len..m.max_len characters: one terminal while it fits the state
        budget, else counted in blocks by the grammar (long_strings)."""
        lo, hi = m.min_len, m.max_len
        if plain_fits(lo if hi is None else hi):
            return Regex(jf.string_regex(lo, hi))
        if (lo if hi is None else hi) > MAX_LENGTH:
            ptr = m.len_ptrs[0 if hi is None else 1]
            self.unsupported(ptr.rsplit("/", 1)[1], ptr.rsplit("/", 1)[0], "string lengths above 2**64 are not supported")
            lo, hi = (lo if lo <= MAX_LENGTH else 0), None  # lenient: the bound is ignored
            if plain_fits(lo):
                return Regex(jf.string_regex(lo, hi))
        return self._long_string(jf.UNIT, lo, hi)

    def _long_string(self, unit: str, lo: int, hi: int | None) -> Expr:
        """Strings of lo..hi characters, each matching `unit`, counted in blocks (memoized)."""
        key = ("long_string", unit, lo, hi)
        if key not in self.memo:
            maker = self.memo.get(("long_strings", unit))
            if maker is None:
                maker = self.memo[("long_strings", unit)] = LongStrings(self.rules, self.fresh, unit=unit)
            self.memo[key] = maker.string(lo, hi)
        return self.memo[key]

    def _checked(self, regex: str, keyword: str, ptr: str, what: str, m: Merged,
                 tree: Callable[[], object], escapes: bool) -> Expr:
        """`regex` as a terminal when its automaton fits the lowering's (default) state budget;
        else, when `tree()` (the strings' contents) is one character class repeated, those
        strings counted in blocks; else the keyword at `ptr` is refused here, with its pointer
        (not later, as a state-budget error about an internal regex). The automaton is cached,
        so the lowering does not build it again."""
        try:
            automata.from_regex(regex)
        except StateBudgetExceeded:
            run = _class_run(tree())
            if run is not None and (run[1] if run[2] is None else run[2]) <= MAX_LENGTH:
                ranges, lo, hi = run
                return self._long_string(jf.char_regex(ranges, escapes=escapes), lo, hi)
            length = self._length_words(m)
            with_length = f" with {length}" if length else ""
            self.unsupported(keyword, ptr.rsplit("/", 1)[0],
                             f"{what}{with_length} needs more than {automata.DEFAULT_MAX_STATES} automaton states")
            return self._plain_string(m)
        return Regex(regex)

    @staticmethod
    def _length_words(m: Merged) -> str:
        parts = ([f"minLength {m.min_len}"] if m.min_len else []) + ([f"maxLength {m.max_len}"] if m.max_len is not None else [])
        return " and ".join(parts)


    def _string_intersection(self, m: Merged) -> Expr | None:
        """Strings under several of pattern/format/minLength/maxLength: exact (see json_formats)."""
        trees = []
        escapes = True
        for name, ptr in m.formats or []:
            tree = fmt.string_tree(name)
            if tree not in trees:
                trees.append(tree)
            # formats match raw characters only (a narrowing shared with the format alone)
            escapes = escapes and name in ("json-pointer", "relative-json-pointer")
        for pattern, ptr in m.patterns or []:
            try:
                tree = jf.search_tree(pattern)
            except jf.PatternError as exc:
                self.unsupported("pattern", ptr.rsplit("/", 1)[0], str(exc))
                continue
            if tree not in trees:
                trees.append(tree)
        if not trees:
            return self._plain_string(m)
        word, ptr = ("format", m.formats[-1][1]) if m.formats else ("pattern", m.patterns[-1][1])
        try:
            if len(trees) == 1:
                try:
                    tree = jf.restrict_length(trees[0], m.min_len, m.max_len)
                except jf.Hard:
                    pass
                else:
                    rendered = None if tree is None else jf.render_tree(tree, escapes=escapes)
                    if rendered is None:
                        return None
                    return self._checked(rendered, word, ptr, f"the {word}", m, lambda: tree, escapes)
            dfa = jf.string_automaton(trees, m.min_len, m.max_len, max_states=MAX_STRING_STATES)
        except jf.PatternError as exc:
            what = "pattern, format, minLength and maxLength together"
            self.unsupported(word, ptr.rsplit("/", 1)[0], f"{what}: {exc}")
            return self._plain_string(m)
        return None if dfa is None else self._char_dfa(dfa, escapes)


    def _string_complements(self, m: Merged, patterns: list, formats: list) -> Expr | None:
        """Strings under ``not: {pattern}`` or ``not: {enum: [strings]}``, with any patterns and
        lengths: the product of the patterns' automata and the complements (exact)."""
        ptr = (m.not_patterns or [(None, m.not_strings_ptr)])[0][1]
        if formats:
            self.unsupported("not", ptr, "a negated pattern or string together with format")
            return self._plain_string(m)
        try:
            trees = [jf.search_tree(p) for p in patterns] or [jf.search_tree("")]
            dfa = chardfa.strings(trees, m.min_len, m.max_len, MAX_STRING_STATES)
            for pattern, _ in m.not_patterns or []:
                dfa = chardfa.intersection(dfa, chardfa.complement(chardfa.pattern(pattern, MAX_STRING_STATES), MAX_STRING_STATES), MAX_STRING_STATES)
            if m.not_strings:
                dfa = chardfa.intersection(dfa, chardfa.complement(chardfa.literals(m.not_strings), MAX_STRING_STATES), MAX_STRING_STATES)
            chars = None if dfa is None else chardfa.chars(dfa, MAX_STRING_STATES)
        except (jf.PatternError, chardfa.TooLarge) as exc:
            self.unsupported("not", ptr, str(exc))
            return self._plain_string(m)
        return None if chars is None else self._char_dfa(chars, True)

    def _char_dfa(self, dfa, escapes: bool, hint: str | None = None) -> Expr:
        """A JSON string whose decoded contents `dfa` accepts, as right-linear rules: the
        rule of state q is the rest of the string from q, closing quote included.

        A state's loops become a repetition (``q ::= l q | rest`` is ``q ::= l* rest``), and
        a state with nothing but loops (the "left the trie" state of a key other than some
        names) is written where it is used: a DFA whose only cycles are loops, like a trie
        and its tail, gives rules without recursion, which the lowering merges into terminals
        (a key read in one terminal, not one parser step per character). The closing quote
        sits in each rule, not after the first one, so that where a trie is too large to
        merge whole, its parts still end at the quote: a terminal ending anywhere inside a
        key would make every character of every token a place where the next one begins."""
        key = ("chardfa", dfa, escapes)
        if key in self.memo:
            return self.memo[key]
        hint = hint or f"chars_{len(self.memo)}"
        n = len(dfa.accept)
        loops = [[Regex(jf.char_label(ranges, escapes)) for ranges, t in dfa.edges[q] if t == q] for q in range(n)]
        steps = [[(Regex(jf.char_label(ranges, escapes)), t) for ranges, t in dfa.edges[q] if t != q] for q in range(n)]
        repeat = [Repeat(ls[0] if len(ls) == 1 else Alt(tuple(ls))) if ls else None for ls in loops]
        quote = Literal('"')
        inline = {q: Seq((repeat[q], quote)) for q in range(n) if dfa.accept[q] and repeat[q] is not None and not steps[q]}
        names = {q: self.fresh(f"{hint}_q{q}") for q in range(n) if q not in inline}
        target = lambda t: inline[t] if t in inline else Ref(names[t])  # noqa: E731
        for q, name in names.items():
            alts: list[Expr] = [quote] if dfa.accept[q] else []
            alts += [Seq((label, target(t))) for label, t in steps[q]]
            body = alts[0] if len(alts) == 1 else Alt(tuple(alts))
            if repeat[q] is not None:
                body = Seq((repeat[q], body))
            self.rules[name] = body
            self.internal.add(name)
        expr = Seq((quote, target(0)))
        self.memo[key] = expr
        return expr


def _class_run(tree) -> tuple[tuple, int, int | None] | None:
    """(ranges, lo, hi) when `tree` (json_formats' pattern tree) is one non-empty character
    class repeated lo..hi times, else None."""
    while isinstance(tree, rx.Seq) and len(tree.items) == 1:
        tree = tree.items[0]
    if isinstance(tree, rx.Repeat) and isinstance(tree.item, rx.Chars) and tree.item.ranges:
        return tree.item.ranges, tree.min, tree.max
    return None
