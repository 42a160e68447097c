"""Python ``re`` patterns (Lark terminals) -> grammarc regex syntax, exactly or not at all.

Lark terminals are Python regexes. We let Python's own parser (``re._parser``) read them, so
flags, escapes, verbose mode and classes mean exactly what they mean to Lark, build the AST of
`grammarc.automata.regex` (code point sets, sequences, alternations, repetitions) and print it
back in grammarc's regex dialect using only ``\\u{...}`` code points, classes, groups and
counted repetition. Character categories (``\\d \\w \\s``) get Python's Unicode meaning unless
the ASCII flag is set; ``i`` gives each character set the members Python's own matcher accepts.
That is Python's IGNORECASE, not grammarc's ``(?i)`` (`regex.case_fold`): Python also pairs
``İ`` with ``i``, U+0390 with U+1FD3, U+FB05 with U+FB06, and with the ASCII flag folds ASCII
letters only (but a class range past U+FFFF still takes the uppercase into account).

The language of a terminal is the set of strings the pattern matches *in full*. Lookarounds
that test a single character inside the terminal are compiled away exactly (the neighbouring
part of the pattern is filtered by its first or last character); a lookaround that can see
past either edge of the terminal, anchors, word boundaries and backreferences depend on text
outside the token and are refused with a `LarkRegexError` naming the construct.
"""

from __future__ import annotations

import _sre
import re
import sys
from dataclasses import dataclass
from functools import lru_cache

from grammarc.automata.regex import (
    ANY, CASED_BLOCKS, DIGIT, DOT, EMPTY, WORD, Alt, Chars, Ranges, Repeat, Seq, intersection,
    negate, normalize,
)
from grammarc.automata.utf8 import MAX_CODE_POINT

if sys.version_info >= (3, 11):
    import re._constants as _c
    import re._parser as _sre_parse
else:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _sre_parse


class LarkRegexError(ValueError):
    """A pattern uses a construct grammarc cannot compile exactly (message names it)."""


# ------------------------------------------------------------------------------- AST


@dataclass(frozen=True)
class LazyRepeat(Repeat):
    """A lazy quantifier (``*?`` ...): the strings of a `Repeat`; Lark's lexing differs (`_modes`)."""


@dataclass(frozen=True)
class Look:
    """A one-character lookaround: ``ahead`` or behind, ``negated`` or not, over `chars`."""

    ahead: bool
    negated: bool
    chars: Ranges


Node = Chars | Seq | Alt | Repeat | Look
NOTHING = Chars(())


# ---------------------------------------------------------------------- code point sets


def _ranges_of(predicate) -> Ranges:
    out: list[tuple[int, int]] = []
    start = None
    for cp in range(MAX_CODE_POINT + 2):
        inside = cp <= MAX_CODE_POINT and predicate(chr(cp))
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            out.append((start, cp - 1))
            start = None
    return normalize(out)


_ASCII_CATEGORIES = {"digit": DIGIT, "word": WORD, "space": ((0x09, 0x0D), (0x20, 0x20))}


@lru_cache(maxsize=None)
def _category(name: str, ascii_only: bool) -> Ranges:
    """Python's ``\\d``, ``\\s``, ``\\w`` (str patterns): Unicode unless the ASCII flag is set."""
    if ascii_only:
        return _ASCII_CATEGORIES[name]
    if name == "digit":
        return _ranges_of(str.isdecimal)
    if name == "space":
        return _ranges_of(str.isspace)
    return _ranges_of(lambda ch: ch.isalnum() or ch == "_")


@lru_cache(maxsize=1)
def _case_relevant() -> Ranges:
    """Code points that IGNORECASE may match differently from the exact pattern.

    Python's matcher lowers the text character (simple mapping) and looks it up in the
    lowered pattern set plus extra pairs between cased letters (``re._casefix``); a class range
    past U+FFFF also accepts a character whose uppercase is in it (even with the ASCII flag).
    A character with no case mapping that is no other one's lowercase is matched exactly.
    """
    found: set[int] = set()
    for cp in (cp for lo, hi in CASED_BLOCKS for cp in range(lo, hi + 1)):
        ch = chr(cp)
        images = {ch.lower(), ch.upper(), ch.title(), ch.casefold(), chr(_sre.unicode_tolower(cp))}
        if images != {ch}:
            found.add(cp)
            found.update(ord(x) for x in images if len(x) == 1)
    return normalize((cp, cp) for cp in found)


@lru_cache(maxsize=4096)
def _fold(text: str, exact: Ranges, ascii_only: bool) -> Ranges:
    """What the one-character Python pattern `text` matches with IGNORECASE, `exact` without.

    Outside `_case_relevant` the two agree; inside it we ask Python's matcher itself.
    """
    relevant = _case_relevant()
    matcher = re.compile(text, re.IGNORECASE | (re.ASCII if ascii_only else 0))
    hits = [(cp, cp) for lo, hi in relevant for cp in range(lo, hi + 1)
            if matcher.fullmatch(chr(cp))]
    return normalize(list(intersection(exact, negate(relevant))) + hits)


def _py(cp: int) -> str:
    """A code point as a Python regex escape."""
    return f"\\U{cp:08x}"


# ------------------------------------------------------------- Python's parse -> AST

_CATEGORIES = {  # (name, inverse, Python escape)
    _c.CATEGORY_DIGIT: ("digit", False, "\\d"), _c.CATEGORY_NOT_DIGIT: ("digit", True, "\\D"),
    _c.CATEGORY_SPACE: ("space", False, "\\s"), _c.CATEGORY_NOT_SPACE: ("space", True, "\\S"),
    _c.CATEGORY_WORD: ("word", False, "\\w"), _c.CATEGORY_NOT_WORD: ("word", True, "\\W"),
}
_ANCHORS = {
    _c.AT_BEGINNING: "anchor ^", _c.AT_BEGINNING_STRING: "anchor \\A",
    _c.AT_END: "anchor $", _c.AT_END_STRING: "anchor \\Z",
    _c.AT_BOUNDARY: "word boundary \\b", _c.AT_NON_BOUNDARY: "word boundary \\B",
}


def _flags_of(flags: int) -> tuple[bool, bool, bool]:
    """(ignore_case, dot_all, ascii_only) of a Python flag word."""
    if flags & re.LOCALE:
        raise LarkRegexError("flag L (locale) is not supported")
    return bool(flags & re.IGNORECASE), bool(flags & re.DOTALL), bool(flags & re.ASCII)


class _Converter:
    """Walks ``re._parser`` output; multiline (m), verbose (x) and unicode (u) need nothing:
    m only changes anchors (refused anyway), x is resolved by Python's parser, u is the
    default for str patterns."""

    def node(self, items, flags: int) -> Node:
        parts = [self.item(op, av, flags) for op, av in items]
        return parts[0] if len(parts) == 1 else Seq(tuple(parts))

    def chars(self, text: str, exact: Ranges, flags: int) -> Chars:
        """One character: `exact` is the set of Python pattern `text` when case matters."""
        ignore_case, _dot_all, ascii_only = _flags_of(flags)
        return Chars(_fold(text, exact, ascii_only) if ignore_case else exact)

    def item(self, op, av, flags: int) -> Node:
        if op is _c.LITERAL:
            return self.chars(_py(av), normalize(((av, av),)), flags)
        if op is _c.NOT_LITERAL:
            return self.chars(f"[^{_py(av)}]", negate(normalize(((av, av),))), flags)
        if op is _c.ANY:
            return Chars(ANY if _flags_of(flags)[1] else DOT)
        if op is _c.IN:
            return self.klass(av, flags)
        if op is _c.BRANCH:
            return Alt(tuple(self.node(branch, flags) for branch in av[1]))
        if op is _c.SUBPATTERN:
            _group, add, remove, body = av
            return self.node(body, (flags | add) & ~remove)
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lo, hi, body = av
            maximum = None if hi is _c.MAXREPEAT else hi
            lazy = op is _c.MIN_REPEAT and lo != maximum
            return (LazyRepeat if lazy else Repeat)(self.node(body, flags), lo, maximum)
        if op is getattr(_c, "POSSESSIVE_REPEAT", None):
            raise LarkRegexError("possessive quantifier is not supported")
        if op is getattr(_c, "ATOMIC_GROUP", None):
            raise LarkRegexError("atomic group (?>...) is not supported")
        if op is _c.AT:
            raise LarkRegexError(
                f"{_ANCHORS.get(av, 'anchor')} is not supported: Lark tests it against the "
                "whole input, outside the terminal"
            )
        if op in (_c.GROUPREF, _c.GROUPREF_EXISTS):
            raise LarkRegexError("backreference is not supported (not a regular language)")
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            return self.look(op is _c.ASSERT_NOT, av, flags)
        raise LarkRegexError(f"regex construct {op} is not supported")

    def klass(self, items, flags: int) -> Chars:
        ascii_only = _flags_of(flags)[2]
        negated, members, text = False, [], []
        for op, av in items:
            if op is _c.NEGATE:
                negated = True
                text.append("^")
            elif op is _c.LITERAL:
                members.append((av, av))
                text.append(_py(av))
            elif op is _c.RANGE:
                members.append(av)
                text.append(f"{_py(av[0])}-{_py(av[1])}")
            elif op is _c.CATEGORY:
                name, inverse, escape = _CATEGORIES[av]
                ranges = _category(name, ascii_only)
                members.extend(negate(ranges) if inverse else ranges)
                text.append(escape)
            else:  # pragma: no cover - Python's parser emits nothing else in a class
                raise LarkRegexError(f"class member {op} is not supported")
        exact = negate(normalize(members)) if negated else normalize(members)
        return self.chars("[" + "".join(text) + "]", exact, flags)

    def look(self, negated: bool, av, flags: int) -> Look:
        direction, body = av
        kind = ("lookahead (?!...)" if negated else "lookahead (?=...)") if direction == 1 else (
            "lookbehind (?<!...)" if negated else "lookbehind (?<=...)")
        inner = self.node(body, flags)
        if not isinstance(inner, Chars):
            raise LarkRegexError(f"{kind} is supported only over a single character")
        return Look(direction == 1, negated, inner.ranges)


# ------------------------------------------------------------- lookaround elimination


def _nullable(node: Node) -> bool:
    if isinstance(node, Chars):
        return False
    if isinstance(node, Seq):
        return all(_nullable(x) for x in node.items)
    if isinstance(node, Alt):
        return any(_nullable(x) for x in node.items)
    if isinstance(node, Repeat):
        return node.min == 0 or _nullable(node.item)
    return True  # Look: zero width


def _has_look(node: Node) -> bool:
    if isinstance(node, Look):
        return True
    if isinstance(node, (Seq, Alt)):
        return any(_has_look(x) for x in node.items)
    return isinstance(node, Repeat) and _has_look(node.item)


def _edge_filter(node: Node, allowed: Ranges, last: bool) -> Node:
    """The non-empty strings of `node` whose last (or first) character is in `allowed`."""
    if isinstance(node, Chars):
        return Chars(intersection(node.ranges, allowed))
    if isinstance(node, Alt):
        return Alt(tuple(_edge_filter(x, allowed, last) for x in node.items))
    if isinstance(node, Repeat):
        if node.max == 0:
            return NOTHING
        lo = 0 if _nullable(node.item) else max(node.min - 1, 0)
        rest = type(node)(node.item, lo, None if node.max is None else node.max - 1)
        edge = _edge_filter(node.item, allowed, last)
        return Seq((rest, edge) if last else (edge, rest))
    assert isinstance(node, Seq)
    items, options = node.items, []
    for j in range(len(items)):
        if last and all(_nullable(x) for x in items[j + 1:]):
            options.append(Seq(items[:j] + (_edge_filter(items[j], allowed, last),)))
        if not last and all(_nullable(x) for x in items[:j]):
            options.append(Seq((_edge_filter(items[j], allowed, last),) + items[j + 1:]))
    return Alt(tuple(options)) if options else NOTHING


def _flatten(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Seq):
        return tuple(y for x in node.items for y in _flatten(x))
    return (node,)


def eliminate_lookarounds(node: Node) -> Node:
    """Compile one-character lookarounds of the top-level sequence into their neighbours."""
    items = list(_flatten(node))
    while any(isinstance(x, Look) for x in items):
        i = next(k for k, x in enumerate(items) if isinstance(x, Look))
        look = items[i]
        allowed = negate(look.chars) if look.negated else look.chars
        side = Seq(tuple(items[i + 1:])) if look.ahead else Seq(tuple(items[:i]))
        what = "lookahead" if look.ahead else "lookbehind"
        if _nullable(side):
            edge = "end" if look.ahead else "start"
            raise LarkRegexError(
                f"{what} can see past the {edge} of the terminal (grammarc has no lexer "
                "context); only lookarounds that test a character inside the terminal are supported"
            )
        if _has_look(side) and not look.ahead:  # pragma: no cover - earlier ones are gone
            raise LarkRegexError(f"{what} next to another lookaround is not supported")
        filtered = _edge_filter(side, allowed, last=not look.ahead)
        items = items[:i] + [filtered] if look.ahead else [filtered] + items[i + 1:]
    if any(_has_look(x) for x in items):
        raise LarkRegexError("lookaround inside a group, alternation or repetition is not supported")
    return items[0] if len(items) == 1 else Seq(tuple(items))


def simplify(node: Node) -> Node:
    """Drop alternatives that match nothing and unwrap one-item groups."""
    if isinstance(node, Seq):
        items = tuple(y for x in node.items for y in _flatten(simplify(x)))
        if NOTHING in items:
            return NOTHING
        return items[0] if len(items) == 1 else Seq(items)
    if isinstance(node, Alt):
        items = tuple(dict.fromkeys(y for y in map(simplify, node.items) if y != NOTHING))
        return NOTHING if not items else items[0] if len(items) == 1 else Alt(items)
    if isinstance(node, Repeat):
        item = simplify(node.item)
        if item == NOTHING:
            return EMPTY if node.min == 0 else NOTHING
        return type(node)(item, node.min, node.max)
    return node


# ------------------------------------------------------------------------ printing


def _cp(cp: int) -> str:
    return f"\\u{{{cp:X}}}"


def to_text(node: Node) -> str:
    """grammarc regex syntax for `node` (only \\u{...} escapes, classes and (?:...) groups)."""
    if isinstance(node, Chars):
        if not node.ranges:
            return f"[^{_cp(0)}-{_cp(MAX_CODE_POINT)}]"
        if len(node.ranges) == 1 and node.ranges[0][0] == node.ranges[0][1]:
            return _cp(node.ranges[0][0])
        body = "".join(_cp(lo) if lo == hi else f"{_cp(lo)}-{_cp(hi)}" for lo, hi in node.ranges)
        return f"[{body}]"
    if isinstance(node, Seq):
        return "".join(f"(?:{to_text(x)})" if isinstance(x, Alt) else to_text(x) for x in node.items)
    if isinstance(node, Alt):
        return "(?:" + "|".join(to_text(x) for x in node.items) + ")"
    assert isinstance(node, Repeat)
    count = f"{{{node.min},}}" if node.max is None else f"{{{node.min},{node.max}}}"
    return f"(?:{to_text(node.item)}){count}"


def _any_rep(node: Node, lazy: bool) -> bool:
    """Whether `node` holds a variable-count repetition that is lazy (or greedy)."""
    if isinstance(node, Repeat):
        is_lazy = isinstance(node, LazyRepeat)
        return (is_lazy == lazy and node.min != node.max) or _any_rep(node.item, lazy)
    if isinstance(node, (Seq, Alt)):
        return any(_any_rep(x, lazy) for x in node.items)
    return False


def _width(node: Node) -> int | None:
    """The one length of every string of `node`, or None when lengths vary."""
    if isinstance(node, Chars):
        return 1
    if isinstance(node, Seq):
        widths = [_width(x) for x in node.items]
        return None if None in widths else sum(widths)
    if isinstance(node, Alt):
        widths = {_width(x) for x in node.items}
        return widths.pop() if len(widths) == 1 else None
    if isinstance(node, Repeat) and node.min == node.max:
        width = _width(node.item)
        return None if width is None else width * node.min
    return None


def _lazy_reps_fixed(node: Node) -> bool:
    """Whether every lazy repetition repeats a fixed-width body (then first match = shortest)."""
    if isinstance(node, Repeat):
        fixed = not isinstance(node, LazyRepeat) or _width(node.item) is not None
        return fixed and _lazy_reps_fixed(node.item)
    if isinstance(node, (Seq, Alt)):
        return all(_lazy_reps_fixed(x) for x in node.items)
    return True


def _modes(node: Node) -> list[tuple[Node, str]]:
    """Split a terminal into parts with grammarc regex modes that give Lark's token language.

    Lark's lexers take Python's first match at a position, so a lazy quantifier stops at the
    first way the rest can match: ``"(.*?)"`` never spans a quote. When the lazy repetitions
    repeat fixed-width bodies and no greedy repetition follows them, that first match is the
    shortest full match (mode "early"); a greedy, nullable tail Q after such a part P gives
    early(P) then Q. Any other use of laziness keeps the full-match language (mode "match"),
    a superset of Lark's tokens (docs/importing.rst).
    """
    if not _any_rep(node, lazy=True) or not _lazy_reps_fixed(node):
        return [(node, "match")]
    if not _any_rep(node, lazy=False):
        return [(node, "early")]
    items = _flatten(node)
    k = max(i for i, x in enumerate(items) if _any_rep(x, lazy=True))
    g = next((i for i in range(k + 1, len(items)) if _any_rep(items[i], lazy=False)), len(items))
    head, tail = Seq(items[:g]), Seq(items[g:])
    if not _any_rep(head, lazy=False) and _nullable(tail):
        return [(head, "early"), (tail, "match")]
    return [(node, "match")]


@lru_cache(maxsize=1024)
def translate(pattern: str) -> tuple[tuple[str, str], ...]:
    """``(grammarc regex text, mode)`` parts whose concatenation is the terminal's language."""
    try:
        parsed = _sre_parse.parse(pattern, 0)
    except re.error as error:
        raise LarkRegexError(f"invalid regex: {error}") from None
    flags = parsed.state.flags if hasattr(parsed, "state") else parsed.pattern.flags
    node = simplify(eliminate_lookarounds(_Converter().node(list(parsed), flags)))
    return tuple((to_text(part), mode) for part, mode in _modes(node))


Follow = tuple[Ranges, bool]
"""What a trailing lookahead asks of the text after the token: its first character is in the
ranges, or the text is empty (allowed when the flag is true)."""


def translate_alternatives(
    pattern: str, first: Ranges | None = None
) -> tuple[tuple[tuple[tuple[str, str], ...], Follow | None], ...]:
    """The terminal as a union of ``(parts, follow)``: each top-level alternative's trailing
    one-character lookaheads become `follow` (None: no demand) instead of being refused, so
    the grammar can check them against what comes next. With `first`, only the strings whose
    first character is in `first` are kept (alternatives left empty are dropped)."""
    try:
        parsed = _sre_parse.parse(pattern, 0)
    except re.error as error:
        raise LarkRegexError(f"invalid regex: {error}") from None
    flags = parsed.state.flags if hasattr(parsed, "state") else parsed.pattern.flags
    node = _Converter().node(list(parsed), flags)

    def trailing(n: Node) -> bool:
        return bool(_flatten(n)) and isinstance(_flatten(n)[-1], Look)

    tops = node.items if isinstance(node, Alt) and any(map(trailing, node.items)) else (node,)
    out = []
    for top in tops:
        items, allowed, end_ok, looked = list(_flatten(top)), ANY, True, False
        while items and isinstance(items[-1], Look) and items[-1].ahead:
            look = items.pop()
            allowed = intersection(allowed, negate(look.chars) if look.negated else look.chars)
            end_ok, looked = end_ok and look.negated, True
        body = simplify(eliminate_lookarounds(Seq(tuple(items))))
        parts = _modes(body)
        if looked and _nullable(body):
            raise LarkRegexError("lookahead at the end of a terminal that can be empty is not supported")
        if (looked or len(tops) > 1) and any(mode != "match" for _, mode in parts):
            raise LarkRegexError("lookahead at the end of a terminal with a lazy repetition is not supported")
        options = [parts]
        if first is not None:  # the nonempty strings whose first character is in `first`
            options = []
            for j, (part, mode) in enumerate(parts):
                kept = simplify(_edge_filter(part, first, last=False))
                if kept != NOTHING and not (mode == "early" and _nullable(part)):
                    options.append([(kept, mode)] + parts[j + 1:])
                if not _nullable(part):
                    break
        follow = (allowed, end_ok) if looked else None
        out += [(tuple((to_text(p), m) for p, m in option), follow) for option in options]
    if first is None and all(follow is None for _, follow in out):
        return ((translate(pattern), None),)
    return tuple(out)
