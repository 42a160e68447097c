"""Regex syntax -> a small AST over code point sets: one parser, two dialects.

grammarc's dialect (the ``#'...'`` terminals of ``.ebnf`` text, `Grammar.from_regex`) is the
Perl/ECMA subset described in notes/SEMANTICS.md: literals and escapes, ``.``, classes,
``\\d \\w \\s`` (ASCII / ECMA meaning, not Python's Unicode one), groups, alternation,
greedy and lazy quantifiers (same language), ``^``/``$`` (and ``\\A``, ``\\Z``, ``\\z``),
``(?i)``/``(?s)`` at the start and scoped ``(?i:...)``/``(?s:...)``.

``parse(pattern, ecma=True)`` reads ECMA-262 (``u`` mode) syntax, for JSON Schema ``pattern``.
Where the two disagree:

==================  =======================================  ================================
construct           grammarc dialect (Python-like)           ECMA-262
==================  =======================================  ================================
``.``               any character but ``\\n``                 any but ``\\n \\r \\u2028 \\u2029``
``[]`` / ``[^]``    ``]`` first in a class is literal        nothing / any character
``{,n}``            ``{0,n}``                                the literal text ``{,n}``
``(?i)`` ``(?s:)``  inline flags                             refused (not ECMA syntax)
``(?P<n>`` ``(?#``  named group, comment                     refused (not ECMA syntax)
``\\A \\Z \\z \\U``     anchors, 8-digit escape                  refused (bad escape)
``[[:alpha:]]``     Python's meaning (``[[:alph]`` + ``]``)    refused (a POSIX class mistake)
lone surrogates     refused                                  a code point no text contains
==================  =======================================  ================================

Both read ``\\cX`` control escapes (X an ASCII letter), and both read an escaped punctuation
character (``\\-``, ``\\@``) as itself, as ECMA-262's Annex B does (``u`` mode allows it only for
syntax characters; the meaning is never in doubt). Lone surrogates: grammarc's texts are
valid UTF-8, so they never contain a lone surrogate (a JSON string escape ``\\ud800`` that no
low surrogate follows decodes to no Unicode text, and the JSON Schema front-end never
generates one); in ECMA mode a lone surrogate in a pattern (escaped or raw) is therefore a
code point that matches nothing, a class keeps only its other members, and a negated class
such as ``[^\\ud800-\\udfff]`` is every Unicode scalar value. Escape pairs ``\\ud83d\\ude00`` are
one astral character, as in ECMA-262.

Everything that is not regular, or that we do not implement (lookaround, backreferences,
``\\b`` word boundaries, ``\\p{...}``), is rejected with a `RegexError` naming the construct
and its offset, because a silently different language is worse than an error. Errors carry
``span=None``: the caller knows where the pattern sits in the grammar.
"""

from __future__ import annotations

import bisect
import re
import threading
from dataclasses import dataclass
from functools import lru_cache

from grammarc.errors import RegexError, clip
from grammarc.automata.utf8 import MAX_CODE_POINT, SURROGATE_HI, SURROGATE_LO

Ranges = tuple[tuple[int, int], ...]


# --------------------------------------------------------------------------- AST


@dataclass(frozen=True, slots=True)  # no per-node dict: ASTs are cached, and the collector walks them
class Chars:
    """One character from a set of code points (sorted, disjoint, non-adjacent ranges)."""

    ranges: Ranges


@dataclass(frozen=True, slots=True)
class Seq:
    """Concatenation; ``Seq(())`` is the empty string."""

    items: tuple["Node", ...]


@dataclass(frozen=True, slots=True)
class Alt:
    """Alternation of at least two branches."""

    items: tuple["Node", ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    """``item{min,max}``; ``max=None`` is unbounded."""

    item: "Node"
    min: int
    max: int | None


@dataclass(frozen=True, slots=True)
class Anchor:
    """``^`` (kind "start": only at offset 0 of the text) or ``$`` ("end": only at its end)."""

    kind: str


Node = Chars | Seq | Alt | Repeat | Anchor

EMPTY = Seq(())

# Nesting limit for groups: the parser and the compiler recurse on the AST.
MAX_GROUP_DEPTH = 100


# ------------------------------------------------------------------ code point sets


def normalize(ranges) -> Ranges:
    """Sort and merge ranges; surrogates are removed (they have no UTF-8 encoding)."""
    out: list[tuple[int, int]] = []
    last = -2  # the end of the last range kept
    surrogates = False
    for lo, hi in sorted(ranges):  # one pass: called for every class and label
        if lo > hi:
            continue
        if lo <= last + 1:
            if hi > last:
                out[-1] = (out[-1][0], hi)
                last = hi
        else:
            out.append((lo, hi))
            last = hi
        surrogates = surrogates or (lo <= SURROGATE_HI and hi >= SURROGATE_LO)
    return _cut(out, SURROGATE_LO, SURROGATE_HI) if surrogates else tuple(out)


def _cut(ranges: Ranges, lo: int, hi: int) -> Ranges:
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        if b < lo or a > hi:
            out.append((a, b))
            continue
        if a < lo:
            out.append((a, lo - 1))
        if b > hi:
            out.append((hi + 1, b))
    return tuple(out)


def negate(ranges: Ranges) -> Ranges:
    """Complement within all Unicode scalar values."""
    return normalize(gaps(ranges))


def gaps(ranges: Ranges) -> Ranges:
    """The code points 0..MAX_CODE_POINT outside sorted, disjoint `ranges`, surrogates
    included (`negate` drops them; a Python string may hold them)."""
    out: list[tuple[int, int]] = []
    prev = 0
    for lo, hi in ranges:
        if lo > prev:
            out.append((prev, lo - 1))
        prev = hi + 1
    if prev <= MAX_CODE_POINT:
        out.append((prev, MAX_CODE_POINT))
    return tuple(out)


def intersection(a: Ranges, b: Ranges) -> Ranges:
    """The code points in both sets (inputs in any order; the result normalized)."""
    return negate(normalize(negate(normalize(a)) + negate(normalize(b))))


def contains(ranges: Ranges, cp: int) -> bool:
    i = bisect.bisect_right(ranges, (cp, MAX_CODE_POINT + 1)) - 1
    return i >= 0 and ranges[i][0] <= cp <= ranges[i][1]


DIGIT: Ranges = ((0x30, 0x39),)
WORD: Ranges = normalize([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
# ECMAScript WhiteSpace + LineTerminator.
SPACE: Ranges = normalize(
    [(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
     (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
     (0xFEFF, 0xFEFF)]
)
ANY: Ranges = normalize([(0, MAX_CODE_POINT)])
DOT: Ranges = negate(((0x0A, 0x0A),))
LINE_TERMINATORS: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
ECMA_DOT: Ranges = negate(LINE_TERMINATORS)

_CLASS_ESCAPES = {"d": DIGIT, "D": negate(DIGIT), "w": WORD, "W": negate(WORD),
                  "s": SPACE, "S": negate(SPACE)}
_SIMPLE_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "f": 0x0C, "v": 0x0B}


# Unicode blocks that hold every cased letter (checked against a full scan in the tests).
CASED_BLOCKS: Ranges = (
    (0x0000, 0x2FFF), (0xA000, 0xAFFF), (0xFB00, 0xFFFF), (0x10000, 0x11FFF),
    (0x16000, 0x16FFF), (0x1E000, 0x1EFFF),
)


@lru_cache(maxsize=2)
def _case_table(blocks: Ranges = CASED_BLOCKS) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """Sorted code points that have case variants, and each one's case class.

    Two code points are case-equivalent when their simple (one code point) case mappings
    meet, close to Python's re.IGNORECASE. Computed once, on the first ``(?i)``.
    """
    groups: dict[str, list[int]] = {}
    for cp in (cp for lo, hi in blocks for cp in range(lo, hi + 1)):
        ch = chr(cp)
        if SURROGATE_LO <= cp <= SURROGATE_HI:
            continue
        up = ch.upper()
        key = up.lower() if len(up) == 1 else ch.lower()
        if len(key) != 1:
            key = ch
        groups.setdefault(key, []).append(cp)
    members: dict[int, tuple[int, ...]] = {}
    for key, cps in groups.items():
        allcps = set(cps)
        if len(key) == 1:
            allcps.add(ord(key))
        if len(allcps) > 1:
            group = tuple(sorted(allcps))
            for cp in group:
                members[cp] = group
    keys = tuple(sorted(members))
    return keys, tuple(members[k] for k in keys)


def case_fold(ranges: Ranges) -> Ranges:
    """Close a set under case equivalence (for ``(?i)``)."""
    keys, groups = _case_table()
    extra: list[tuple[int, int]] = []
    for lo, hi in ranges:
        i = bisect.bisect_left(keys, lo)
        j = bisect.bisect_right(keys, hi)
        for k in range(i, j):
            extra.extend((cp, cp) for cp in groups[k])
    return normalize(list(ranges) + extra) if extra else ranges


# ------------------------------------------------------------------------ parser


@dataclass
class _Flags:
    ignore_case: bool = False
    dot_all: bool = False


_QUANTIFIER_STARTS = frozenset("*+?{")  # `quantifier` finds none at any other character
_ATOM_SPECIAL = frozenset("*+?{([.^$\\")  # what atom() reads other than as one raw character
_SHORT_QUANTIFIERS = {"*": (0, None), "+": (1, None), "?": (0, 1)}


class _Parser:
    def __init__(self, pattern: str, ecma: bool):
        self.p = pattern
        self.i = 0
        self.ecma = ecma

    # -- errors and helpers
    def error(self, what: str, at: int | None = None) -> RegexError:
        at = self.i if at is None else at
        return RegexError(f"{what} (at offset {at} in pattern '{clip(self.p, at)}')")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def startswith(self, s: str) -> bool:
        return self.p.startswith(s, self.i)

    def chars(self, ranges: Ranges, flags: _Flags) -> Chars:
        return Chars(case_fold(ranges) if flags.ignore_case else ranges)

    # -- grammar
    def parse(self) -> Node:
        flags = _Flags()
        if not self.ecma:
            self.global_flags(flags)
        node = self.alternation(flags, depth=0)
        if self.i < len(self.p):
            # Only an unbalanced ')' stops the top-level alternation early.
            raise self.error("unbalanced parenthesis ')'")
        return node

    def global_flags(self, flags: _Flags) -> None:
        while self.startswith("(?"):
            j = self.i + 2
            letters = ""
            while j < len(self.p) and self.p[j].isalpha():
                letters += self.p[j]
                j += 1
            if j < len(self.p) and self.p[j] == ")" and letters:
                self.apply_flags(letters, flags, self.i)
                self.i = j + 1
            else:
                return

    def apply_flags(self, letters: str, flags: _Flags, at: int) -> None:
        for ch in letters:
            if ch == "i":
                flags.ignore_case = True
            elif ch == "s":
                flags.dot_all = True
            else:
                raise self.error(
                    f"inline flag (?{ch}) is not supported (only (?i) and (?s) are)", at
                )

    def alternation(self, flags: _Flags, depth: int) -> Node:
        branches = [self.sequence(flags, depth)]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence(flags, depth))
        return branches[0] if len(branches) == 1 else Alt(tuple(branches))

    def sequence(self, flags: _Flags, depth: int) -> Node:
        return sequence_node(self.sequence_items(flags, depth))

    def sequence_items(self, flags: _Flags, depth: int) -> list[Node]:
        """The items of the concatenation at the cursor (up to ``|``, ``)`` or the end)."""
        items: list[Node] = []
        p, n = self.p, len(self.p)
        while self.i < n and p[self.i] not in "|)":
            i = self.i
            c = p[i]
            if c not in _ATOM_SPECIAL and not SURROGATE_LO <= ord(c) <= SURROGATE_HI and (
                    i + 1 == n or p[i + 1] not in _QUANTIFIER_STARTS):
                self.i = i + 1  # a plain character, unquantified: the node quantified() would make
                items.append(self.chars(((ord(c), ord(c)),), flags))
                continue
            item = self.quantified(flags, depth)
            if type(item) is not Seq or item.items:  # item != EMPTY, without two __eq__ calls
                items.append(item)
        return items

    def quantified(self, flags: _Flags, depth: int) -> Node:
        p = self.p  # peek() inline here and below: every atom of every pattern comes this way
        bare = p[self.i] != "("  # sequence() calls it with a character at the cursor
        atom = self.atom(flags, depth)
        if self.i >= len(p) or p[self.i] not in _QUANTIFIER_STARTS:  # most atoms: no quantifier
            return atom
        q = self.quantifier()
        if q is None:
            return atom
        lo, hi, qstart = q
        if bare and isinstance(atom, Anchor):
            raise self.error("nothing to repeat", qstart)
        if self.peek() == "+":
            raise self.error(
                f"possessive quantifier {self.p[qstart:self.i + 1]} is not supported", qstart
            )
        if self.peek() == "?":
            self.i += 1  # lazy: same language
        if self.quantifier(probe=True) is not None:
            raise self.error("multiple repeat", self.i)
        return Repeat(atom, lo, hi)

    def quantifier(self, probe: bool = False) -> tuple[int, int | None, int] | None:
        """Parse ``* + ? {m} {m,} {m,n} {,n}`` at the cursor (or just test, if probe)."""
        at = self.i
        c = self.peek()
        if c in ("*", "+", "?") and c:
            if not probe:
                self.i += 1
            return _SHORT_QUANTIFIERS[c] + (at,)
        if c != "{":
            return None
        j = self.i + 1
        m_txt = ""
        while j < len(self.p) and self.p[j].isdigit() and self.p[j].isascii():
            m_txt += self.p[j]
            j += 1
        n_txt: str | None = None
        comma = j < len(self.p) and self.p[j] == ","
        if comma:
            j += 1
            n_txt = ""
            while j < len(self.p) and self.p[j].isdigit() and self.p[j].isascii():
                n_txt += self.p[j]
                j += 1
        if j >= len(self.p) or self.p[j] != "}" or (not m_txt and (not n_txt or self.ecma)):
            return None  # not a quantifier: '{' is a literal (as in Python and ECMA)
        lo = int(m_txt) if m_txt else 0
        hi: int | None = lo if not comma else (int(n_txt) if n_txt else None)
        if hi is not None and hi < lo:
            raise self.error("min repeat greater than max repeat", at)
        if not probe:
            self.i = j + 1
        return lo, hi, at

    def atom(self, flags: _Flags, depth: int) -> Node:
        c = self.p[self.i]  # quantified() is called with a character at the cursor
        if c in ("*", "+", "?") or (c == "{" and self.quantifier(probe=True) is not None):
            raise self.error("nothing to repeat")
        if c == "(":
            return self.group(flags, depth)
        if c == "[":
            return self.klass(flags)
        if c == ".":
            self.i += 1
            return Chars(ANY if flags.dot_all else ECMA_DOT if self.ecma else DOT)
        if c == "^":
            self.i += 1
            return Anchor("start")
        if c == "$":
            self.i += 1
            return Anchor("end")
        if c == "\\":
            value = self.escape(in_class=False)
            if isinstance(value, Anchor):
                return value
            if isinstance(value, tuple):
                return self.chars(value, flags)
        else:
            value = self.raw_char()
        if SURROGATE_LO <= value <= SURROGATE_HI:
            return Chars(())  # ECMA mode only: no text contains a lone surrogate
        return self.chars(((value, value),), flags)

    def raw_char(self) -> int:
        """The code point at the cursor; a raw surrogate pair is one character in ECMA mode."""
        at = self.i
        cp = ord(self.p[self.i])
        self.i += 1
        if SURROGATE_LO <= cp <= SURROGATE_HI:
            if not self.ecma:
                raise self.error("lone surrogate in pattern", at)
            low = ord(self.peek()) if self.peek() else 0
            if cp <= 0xDBFF and 0xDC00 <= low <= 0xDFFF:
                self.i += 1
                return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
        return cp

    def group(self, flags: _Flags, depth: int) -> Node:
        at = self.i
        if depth >= MAX_GROUP_DEPTH:
            raise self.error(f"too many nested groups (more than {MAX_GROUP_DEPTH})")
        self.i += 1
        inner = flags  # a group's own flags (?i:...) are a copy, made where it has them
        if self.peek() == "?":
            rest = self.p[self.i + 1:self.i + 3]
            if self.ecma:
                self.ecma_group_check(rest, at)
            if rest.startswith(":"):
                self.i += 2
            elif rest.startswith("P<"):
                self.group_name(self.i + 3, at)
            elif rest.startswith("<="):
                raise self.error("lookbehind (?<=...) is not supported", at)
            elif rest.startswith("<!"):
                raise self.error("lookbehind (?<!...) is not supported", at)
            elif rest.startswith("<"):
                self.group_name(self.i + 2, at)
            elif rest.startswith("="):
                raise self.error("lookahead (?=...) is not supported", at)
            elif rest.startswith("!"):
                raise self.error("lookahead (?!...) is not supported", at)
            elif rest.startswith(">"):
                raise self.error("atomic group (?>...) is not supported", at)
            elif rest.startswith("P="):
                raise self.error("backreference (?P=name) is not supported", at)
            elif rest.startswith("#"):
                end = self.p.find(")", self.i)
                if end < 0:
                    raise self.error("missing ), unterminated comment", at)
                self.i = end + 1
                return EMPTY
            elif rest.startswith("("):
                raise self.error("conditional group (?(...)...) is not supported", at)
            else:
                j = self.i + 1
                letters = ""
                while j < len(self.p) and self.p[j].isalpha():
                    letters += self.p[j]
                    j += 1
                nxt = self.p[j] if j < len(self.p) else ""
                if letters and nxt == ":":
                    inner = _Flags(flags.ignore_case, flags.dot_all)
                    self.apply_flags(letters, inner, at)
                    self.i = j + 1
                elif letters and nxt == ")":
                    raise self.error("global flags not at the start of the expression", at)
                elif nxt == "-":
                    raise self.error("inline flag removal (?-...) is not supported", at)
                else:
                    raise self.error(f"unknown extension (?{nxt or rest[:1]}", at)
        node = self.alternation(inner, depth + 1)
        if self.peek() != ")":
            raise self.error("missing ), unterminated subpattern", at)
        self.i += 1
        return node

    def ecma_group_check(self, rest: str, at: int) -> None:
        """Refuse the group syntaxes that Python has and ECMA-262 does not."""
        if rest.startswith("P<"):
            raise self.error("named group (?P<name>...) is Python syntax; ECMA-262 writes (?<name>...)", at)
        if rest.startswith("#"):
            raise self.error("comment group (?#...) is not ECMA-262 syntax", at)
        j = self.i + 1
        while j < len(self.p) and self.p[j].isalpha():
            j += 1
        letters = self.p[self.i + 1:j]
        nxt = self.p[j] if j < len(self.p) else ""
        if (letters and nxt in (":", ")", "-")) or rest.startswith("-"):
            shape = f"(?{letters})" if nxt == ")" else f"(?{letters}{nxt}...)"
            raise self.error(f"inline flags {shape} are not supported in ECMA-262 patterns", at)

    def group_name(self, j: int, at: int) -> None:
        end = self.p.find(">", j)
        name = self.p[j:end] if end >= 0 else ""
        if end < 0 or not name.isidentifier():
            raise self.error("bad group name", at)
        self.i = end + 1

    def escape(self, in_class: bool):
        """Parse an escape at the cursor: a code point, a Ranges tuple, or an Anchor."""
        at = self.i
        self.i += 1
        c = self.peek()
        if not c:
            raise self.error("bad escape (end of pattern)", at)
        self.i += 1
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c]
        if c in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[c]
        if c == "b":
            if in_class:
                return 0x08
            raise self.error("word boundary \\b is not supported", at)
        if c == "B":
            raise self.error("word boundary \\B is not supported", at)
        if c == "0":
            if self.peek().isdigit():
                raise self.error("octal escape \\0" + self.peek() + " is not supported", at)
            return 0
        if c.isdigit() and c.isascii():
            if in_class:
                raise self.error(f"octal escape \\{c} is not supported", at)
            j = self.i
            while j < len(self.p) and self.p[j].isdigit() and self.p[j].isascii():
                j += 1
            raise self.error(f"backreference \\{self.p[at + 1:j]} is not supported", at)
        if c == "k" and self.peek() == "<":
            end = self.p.find(">", self.i)
            ref = self.p[at:end + 1] if end >= 0 else "\\k<name>"
            raise self.error(f"backreference {ref} is not supported", at)
        if c in "pP":
            raise self.error(f"unicode property \\{c}{{...}} is not supported", at)
        if c == "c":
            letter = self.peek()
            if not (letter.isascii() and letter.isalpha()):
                raise self.error("bad escape \\c (a control escape needs a letter A-Z or a-z)", at)
            self.i += 1
            return ord(letter) % 32
        if c == "x":
            return self.hex_digits(2, at, "\\x")
        if c == "u":
            if self.peek() == "{":
                end = self.p.find("}", self.i)
                digits = self.p[self.i + 1:end] if end >= 0 else ""
                if end < 0 or not digits or not _is_hex(digits) or len(digits) > 6:
                    raise self.error("bad escape \\u{...}", at)
                self.i = end + 1
                return self.check_cp(int(digits, 16), at)
            cp = self.hex_digits(4, at, "\\u")
            follow = self.p[self.i + 2:self.i + 6]
            if 0xD800 <= cp <= 0xDBFF and self.startswith("\\u") and len(follow) == 4 and _is_hex(follow):
                low = int(follow, 16)  # a pair only with a four-digit \uXXXX low surrogate
                if 0xDC00 <= low <= 0xDFFF:
                    self.i += 6
                    return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
            return self.check_cp(cp, at)
        if c == "U" and not self.ecma:
            return self.check_cp(self.hex_digits(8, at, "\\U"), at)
        if c in "AzZ" and not in_class and not self.ecma:
            return Anchor("start" if c == "A" else "end")
        if c.isascii() and c.isalnum():
            raise self.error(f"bad escape \\{c}", at)
        return ord(c)  # escaped metacharacter or other punctuation

    def hex_digits(self, n: int, at: int, name: str) -> int:
        digits = self.p[self.i:self.i + n]
        if len(digits) != n or not _is_hex(digits):
            raise self.error(f"bad escape {name}{digits}", at)
        self.i += n
        return int(digits, 16)

    def check_cp(self, cp: int, at: int) -> int:
        if cp > MAX_CODE_POINT:
            raise self.error("code point out of range", at)
        if SURROGATE_LO <= cp <= SURROGATE_HI and not self.ecma:
            raise self.error("lone surrogate escape is not supported", at)
        return cp

    def klass(self, flags: _Flags) -> Node:
        """A character class at the cursor, from `_CLASSES` when its text was read before:
        generated patterns repeat the same classes (a JSON string's ``[0-9a-fA-F]`` a dozen
        times in every key's character label), and a class's meaning depends on its text and
        the two modes alone. A text is remembered only once the parser has read exactly it."""
        found = (_CLASS_TEXT_ECMA if self.ecma else _CLASS_TEXT).match(self.p, self.i)
        key = found and (found.group(), self.ecma, flags.ignore_case)
        if key:
            node = _CLASSES.get(key)
            if node is not None:
                self.i = found.end()
                return node
        node = self.parsed_class(flags)
        if key and self.i == found.end():
            if len(_CLASSES) >= _MAX_CLASSES:
                _CLASSES.clear()
            _CLASSES[key] = node
        return node

    def parsed_class(self, flags: _Flags) -> Node:
        at = self.i
        self.i += 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        items: list[tuple[int, int]] = []
        first = not self.ecma  # ECMA: ']' right away closes the class ([] and [^])
        while True:
            if self.i >= len(self.p):
                raise self.error("unterminated character set", at)
            c = self.peek()
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            item_at = self.i
            lo = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi = self.class_atom()
                if isinstance(lo, tuple) or isinstance(hi, tuple):
                    raise self.error(f"bad character range {self.p[item_at:self.i]}", item_at)
                if hi < lo:
                    raise self.error(f"bad character range {self.p[item_at:self.i]}", item_at)
                items.append((lo, hi))
            elif isinstance(lo, tuple):
                items.extend(lo)
            else:
                items.append((lo, lo))
        ranges = normalize(items)
        if flags.ignore_case:
            ranges = case_fold(ranges)
        return Chars(negate(ranges) if negated else ranges)

    def class_atom(self):
        at = self.i
        c = self.peek()
        if c == "\\":
            value = self.escape(in_class=True)
            if isinstance(value, Anchor):  # pragma: no cover - escape() never returns it here
                raise self.error("anchor in character class", at)
            return value
        if c == "[" and self.ecma and self.peek(1) and self.peek(1) in ":.=":
            raise self.error(f"POSIX class syntax [{self.peek(1)} is not ECMA-262 (escape the '[' if it is meant)", at)
        return self.raw_char()


# A class's text up to the first unescaped ']' that can close it (in grammarc's dialect, as
# in Python, a ']' right after '[' or '[^' is a literal; in ECMA-262 it closes the class).
# Only a candidate: `klass` remembers it when the parser consumed exactly this text.
_CLASS_TEXT = re.compile(r"\[\^?\]?(?:[^\\\]]|\\.)*\]", re.S)
_CLASS_TEXT_ECMA = re.compile(r"\[\^?(?:[^\\\]]|\\.)*\]", re.S)
_CLASSES: dict[tuple[str, bool, bool], Node] = {}  # (text, ecma, ignore case) -> Chars
_MAX_CLASSES = 4096


def _is_hex(s: str) -> bool:
    return all(ch in "0123456789abcdefABCDEF" for ch in s)


def parse(pattern: str, ecma: bool = False) -> Node:
    """Parse a regex into the AST; raises RegexError (span=None) for anything unsupported.

    `ecma` reads ECMA-262 syntax (JSON Schema ``pattern``) instead of grammarc's dialect.
    A text given with its AST (`remember`) is not read (once: the caller keeps the automaton).
    """
    if not isinstance(pattern, str):
        raise RegexError(f"a regex pattern must be text (str), not {type(pattern).__name__}")
    if not ecma and _GIVEN:
        with _GIVEN_LOCK:
            given = _GIVEN.pop(pattern, None)
    else:
        given = None
    return given if given is not None else _parse(pattern, bool(ecma))


# -- ASTs given with their text --------------------------------------------------------------
#
# The JSON Schema front end renders a `pattern` as a regex over JSON text (every spelling of
# every character: several times the pattern's length) and builds its automaton at once
# (`grammarc.automata.from_regex`, which parses the text). The front end knows that text's AST
# already, built from the pieces it rendered it from (`sequence_items`, `sequence_node`,
# `group_node`), and gives it here; reading the text back was a fifth of the front end's work
# on a schema with patterns. A few entries, each taken by the parse that follows (automata are
# cached by their text: an AST kept longer would only be more objects for the collector).

_GIVEN: dict[str, Node] = {}  # a text in grammarc's dialect -> its AST (`parse` of the text)
_GIVEN_LOCK = threading.Lock()  # threads render and parse at once: eviction reads, then deletes
_MAX_GIVEN = 256


def remember(pattern: str, node: Node) -> None:
    """Let `parse(pattern)` (grammarc's dialect) return `node`, which must be the AST that
    parsing `pattern` gives (tests/test_json_formats.py checks the front end's); the oldest
    entry goes past `_MAX_GIVEN`."""
    with _GIVEN_LOCK:
        if len(_GIVEN) >= _MAX_GIVEN and pattern not in _GIVEN:
            del _GIVEN[next(iter(_GIVEN))]
        _GIVEN[pattern] = node


def sequence_items(pattern: str) -> tuple[Node, ...]:
    """The items the parser reads from `pattern` (grammarc's dialect) as part of a
    concatenation: a regex without ``|`` or ``)`` at its top level, written next to others
    (RegexError where it has them, or where the parser refuses it)."""
    parser = _Parser(pattern, False)
    items = parser.sequence_items(_Flags(), 0)
    if parser.i < len(pattern):
        raise parser.error("not one concatenation")
    return tuple(items)


def sequence_node(items) -> Node:
    """The node of a concatenation of the parser's `items` (an empty one: `EMPTY`)."""
    return items[0] if len(items) == 1 else Seq(tuple(items))


def group_node(branches) -> Node:
    """The node of ``(?:b1|b2|...)``, each branch a list of the parser's items: one such node
    is one item of the concatenation around it (an empty group is none, see `sequence_items`)."""
    if len(branches) == 1:
        return sequence_node(branches[0])
    return Alt(tuple(sequence_node(b) for b in branches))


@lru_cache(maxsize=256)  # few patterns are parsed twice: automata are cached by pattern (nfa.from_regex)
def _parse(pattern: str, ecma: bool) -> Node:
    return _Parser(pattern, ecma).parse()
