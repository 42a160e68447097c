"""String languages for JSON Schema: JSON string characters, `pattern`, and `format`.

A grammar for a JSON document matches the *encoded* text, where one string character can be
written raw (``é``) or escaped (``\\u00e9``, ``\\u00E9``, ``\\n``, ``\\/``). Schema keywords talk
about the *decoded* string. This module bridges the two: an ECMA-262 pattern is parsed by
grammarc's regex parser (`grammarc.automata.regex`, ECMA mode) into a tree of code point sets,
and each set is rendered as the regex of every encoding of its members (raw where JSON allows
it, every short escape, every ``\\uXXXX`` spelling in either hex case, surrogate pairs for
astral characters). The result is exact: the encoded text matches iff the decoded string does.
Where several constraints meet, their intersection is built with grammarc's DFA algebra over
the decoded text and read back as an automaton over characters (`string_automaton`).

Generated patterns use only classes, groups, alternation and counted repetition, so they mean
the same in Python's `re` and in grammarc's regex syntax.

Lone surrogate escapes (``\\ud800`` not followed by a low surrogate) are never produced: they
decode to no Unicode character, and allowing them would make character counting ambiguous.
Accordingly a lone surrogate in a pattern matches nothing (see `grammarc.automata.regex`).
"""

from __future__ import annotations

from functools import lru_cache

from grammarc import automata
from grammarc.automata import CharDFA
from grammarc.automata import regex as rx
from grammarc.automata.regex import ANY as ALL, Alt, Anchor, Chars, Node, Repeat, Seq, gaps, negate, normalize, parse
from grammarc.errors import RegexError, StateBudgetExceeded

__all__ = [
    "CharDFA", "FORMATS", "Hard", "PatternError", "UNIT", "char_label", "char_regex", "class_regex",
    "format_plain_regex", "format_regex", "format_tree", "lengths", "literal_regex",
    "parse_pattern", "python_class_regex", "render_tree", "restrict_length", "search_regex",
    "search_tree", "string_automaton", "string_dfa", "string_regex", "string_search_regex",
]

MAX_CP = 0x10FFFF
Ranges = tuple[tuple[int, int], ...]

SHORT_ESCAPES = {0x22: '\\\\"', 0x5C: "\\\\\\\\", 0x2F: "\\\\/", 0x08: "\\\\b", 0x0C: "\\\\f", 0x0A: "\\\\n", 0x0D: "\\\\r", 0x09: "\\\\t"}

PatternError = RegexError
"""A pattern uses a construct that cannot be translated exactly (the message names it)."""


# -- code point sets (Unicode scalar values: surrogates never belong to one) ----------------

complement = negate


def intersect(a: Ranges, b: Ranges) -> Ranges:
    """The code points in both (normalized: sorted, merged, no surrogates)."""
    a, b = normalize(a), normalize(b)
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0], 0), min(a[i][1], b[j][1], MAX_CP)
        if lo <= hi:
            if out and lo == out[-1][1] + 1:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


RAW_OK: Ranges = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, MAX_CP))


def _class_char(cp: int) -> str:
    if cp < 0x80:
        ch = chr(cp)
        if ch.isalnum() and ch.isascii():
            return ch
        if 0x20 < cp < 0x7F and ch not in "\\]^-[":
            return ch
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return chr(cp)  # astral: a literal character means the same in both engines


def class_regex(ranges: Ranges) -> str | None:
    """A regex class for the code points (no surrogates expected); None if empty."""
    ranges = normalize(ranges)
    if not ranges:
        return None
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        cp = ranges[0][0]
        ch = chr(cp)
        if ch.isascii() and ch.isalnum():
            return ch
        return "[" + _class_char(cp) + "]"
    body = "".join(_class_char(a) if a == b else f"{_class_char(a)}-{_class_char(b)}" for a, b in ranges)
    return "[" + body + "]"


def python_class_regex(ranges: Ranges) -> str | None:
    """`class_regex` for Python's `re` (the same code points), negated (``[^\\n\\r...]``)
    where fewer BMP code points lie outside the set than in it.

    Compiling a class, `re` marks its BMP code points one at a time in Python: ECMA's ``.``
    written out as ranges cost ~15 M instructions per pattern the process has not seen, its
    complement (4 characters and the surrogates) a few thousand. The complement is taken
    over every code point a Python string can hold, surrogates included (no set has them)."""
    ranges = normalize(ranges)
    if not ranges:
        return None
    outside = gaps(ranges)
    if _bmp_count(outside) >= _bmp_count(ranges):
        return class_regex(ranges)
    return "[^" + "".join(_class_char(a) if a == b else f"{_class_char(a)}-{_class_char(b)}" for a, b in outside) + "]"


def _bmp_count(ranges: Ranges) -> int:
    return sum(min(hi, 0xFFFF) - lo + 1 for lo, hi in ranges if lo <= 0xFFFF)


# -- hexadecimal \uXXXX spellings ------------------------------------------------------

def _hex_digit_class(lo: int, hi: int) -> str:
    """Case-insensitive class of hex digits lo..hi."""
    if lo == hi and lo < 10:
        return str(lo)
    parts = []
    dlo, dhi = lo, min(hi, 9)
    if dlo <= dhi:
        parts.append(f"{dlo}" if dlo == dhi else f"{dlo}-{dhi}")
    alo, ahi = max(lo, 10), hi
    if alo <= ahi:
        a, b = "abcdef"[alo - 10], "abcdef"[ahi - 10]
        parts.append(a + a.upper() if a == b else f"{a}-{b}{a.upper()}-{b.upper()}")
    if lo == 0 and hi == 15:
        return "[0-9a-fA-F]"
    return "[" + "".join(parts) + "]"


def _hex_range(x: int, y: int, width: int) -> str:
    """Every spelling of the width-digit hex numbers in [x, y]."""
    if width == 0:
        return ""
    base = 16 ** (width - 1)
    x0, xr = divmod(x, base)
    y0, yr = divmod(y, base)
    if x0 == y0:
        return _hex_digit_class(x0, x0) + _hex_range(xr, yr, width - 1)
    parts = []
    lo_full = xr == 0
    hi_full = yr == base - 1
    mid_lo = x0 if lo_full else x0 + 1
    mid_hi = y0 if hi_full else y0 - 1
    if not lo_full:
        parts.append(_hex_digit_class(x0, x0) + _hex_range(xr, base - 1, width - 1))
    if mid_lo <= mid_hi:
        tail = "" if width == 1 else ("[0-9a-fA-F]" + (f"{{{width - 1}}}" if width > 2 else ""))
        parts.append(_hex_digit_class(mid_lo, mid_hi) + tail)
    if not hi_full:
        parts.append(_hex_digit_class(y0, y0) + _hex_range(0, yr, width - 1))
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _escape_regex(ranges: Ranges) -> list[str]:
    """Regexes of the escape sequences (short, \\uXXXX, surrogate pairs) for the code points."""
    out = []
    for cp, esc in SHORT_ESCAPES.items():
        if any(a <= cp <= b for a, b in ranges):
            out.append(esc)
    bmp = intersect(ranges, ((0, 0xD7FF), (0xE000, 0xFFFF)))
    for a, b in bmp:
        out.append("\\\\u" + _hex_range(a, b, 4))
    astral = intersect(ranges, ((0x10000, MAX_CP),))
    for a, b in astral:
        out.extend(_surrogate_pairs(a, b))
    return out


def _surrogate_pairs(a: int, b: int) -> list[str]:
    def split(cp):
        v = cp - 0x10000
        return 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)

    ha, la = split(a)
    hb, lb = split(b)
    out = []
    if ha == hb:
        out.append(f"\\\\u{_hex_range(ha, ha, 4)}\\\\u{_hex_range(la, lb, 4)}")
        return out
    if la != 0xDC00:
        out.append(f"\\\\u{_hex_range(ha, ha, 4)}\\\\u{_hex_range(la, 0xDFFF, 4)}")
        ha += 1
    if lb != 0xDFFF:
        out.append(f"\\\\u{_hex_range(hb, hb, 4)}\\\\u{_hex_range(0xDC00, lb, 4)}")
        hb -= 1
    if ha <= hb:
        out.append(f"\\\\u{_hex_range(ha, hb, 4)}\\\\u{_hex_range(0xDC00, 0xDFFF, 4)}")
    return out


def char_regex(ranges: Ranges, *, escapes: bool = True) -> str | None:
    """Every JSON encoding of one character from `ranges` (None if there is none).

    escapes=False keeps only raw characters, plus the escapes that characters JSON cannot
    write raw need (a narrower but still sound language, used for `format`).
    """
    ranges = intersect(normalize(ranges), ALL)
    parts = []
    raw = class_regex(intersect(ranges, RAW_OK))
    if raw:
        parts.append(raw)
    esc_set = ranges if escapes else intersect(ranges, complement(RAW_OK))
    parts.extend(_escape_regex(esc_set))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


@lru_cache(maxsize=4096)
def _char_piece(ranges: Ranges, escapes: bool) -> tuple[str, Items] | None:
    """`char_regex` of a pattern's character class with its parsed items (`_render`),
    cached: \\d, \\w and [a-z] recur."""
    text = char_regex(ranges, escapes=escapes)
    return None if text is None else (text, rx.sequence_items(text))


UNIT = char_regex(ALL)
"""One JSON string character: a raw character, a short escape, \\uXXXX, or a surrogate pair."""


def string_regex(min_len: int = 0, max_len: int | None = None) -> str:
    """A complete JSON string (quotes included) of min_len..max_len characters."""
    if max_len is None:
        rep = "*" if min_len == 0 else ("+" if min_len == 1 else f"{{{min_len},}}")
    elif min_len == max_len:
        rep = f"{{{min_len}}}"
    else:
        rep = f"{{{min_len},{max_len}}}"
    if max_len == 0:
        return '""'
    return f'"(?:{UNIT}){rep}"'




def parse_pattern(text: str) -> Node:
    """Parse an ECMA-262 (u-mode) pattern; raise PatternError for what we cannot translate."""
    return parse(text, ecma=True)


# -- translation ----------------------------------------------------------------------
#
# A rendered regex comes with its AST: grammarc builds the regex's automaton at once, and its
# parser would read back, character by character, a text several times the pattern's length
# (every JSON spelling of every character). The AST is built from the same pieces as the text,
# as the parser composes them (`rx.sequence_items`, `rx.group_node`): each character class's
# regex is parsed once per process (`_char_piece`), and `_quoted` gives the whole to the
# parser (`rx.remember`). Items are a regex's nodes within a concatenation (see
# `rx.sequence_items`); tests/test_json_formats.py checks them against the parser's.

Items = tuple[Node, ...]


def _render(node, escapes: bool, plain: bool) -> tuple[str, Items] | None:
    """Regex for `node` over encoded JSON text and its items (plain=True: over decoded text,
    for Python's re, no items); None where no string matches."""
    if isinstance(node, Chars):
        if plain:
            text = python_class_regex(node.ranges)
            return None if text is None else (text, ())
        return _char_piece(node.ranges, escapes)
    if isinstance(node, Seq):
        texts, items = [], []
        for item in node.items:
            part = _render(item, escapes, plain)
            if part is None:
                return None
            texts.append(part[0])
            items.extend(part[1])
        return "".join(texts), tuple(items)
    if isinstance(node, Alt):
        parts = [p for p in (_render(i, escapes, plain) for i in node.items) if p is not None]
        if not parts:
            return None
        return "(?:" + "|".join(text for text, _ in parts) + ")", _group_items([items for _, items in parts], plain)
    if isinstance(node, Repeat):
        inner = _render(node.item, escapes, plain)
        if inner is None:
            return ("", ()) if node.min == 0 else None
        if node.max is None:
            q = "*" if node.min == 0 else ("+" if node.min == 1 else f"{{{node.min},}}")
        elif node.min == node.max:
            q = f"{{{node.min}}}"
        else:
            q = f"{{{node.min},{node.max}}}"
        items = () if plain else (Repeat(rx.group_node([inner[1]]), node.min, node.max),)
        return f"(?:{inner[0]}){q}", items
    if isinstance(node, Anchor):
        raise PatternError(f"anchor {_ANCHOR[node.kind]!r} inside a pattern (only at its start or end) is not supported")
    raise TypeError(node)


def _group_items(branches: list[Items], plain: bool) -> Items:
    """The items of ``(?:b1|b2|...)``: one node, none for an empty group (as the parser reads it)."""
    if plain:
        return ()
    node = rx.group_node(branches)
    return () if type(node) is Seq and not node.items else (node,)


_QUOTE = Chars(((0x22, 0x22),))


def _quoted(text: str, items: Items) -> str:
    """The regex of a complete JSON string whose contents are `text` (with `items`), its AST
    given to the parser: the caller builds its automaton next (or the lowering does)."""
    regex = '"' + text + '"'
    rx.remember(regex, Seq((_QUOTE, *items, _QUOTE)))
    return regex


@lru_cache(maxsize=1)
def _unit_star() -> Items:
    """The items of ``(?:UNIT)*``."""
    return (Repeat(rx.group_node([rx.sequence_items(UNIT)]), 0, None),)


_ANCHOR = {"start": "^", "end": "$"}


def _branches(node) -> list:
    return list(node.items) if isinstance(node, Alt) else [node]


def _strip_anchors(branch) -> tuple[bool, object, bool]:
    items = list(branch.items) if isinstance(branch, Seq) else [branch]
    start = end = False
    while items and isinstance(items[0], Anchor) and items[0].kind == "start":
        items.pop(0)
        start = True
    while items and isinstance(items[-1], Anchor) and items[-1].kind == "end":
        items.pop()
        end = True
    # a group that wraps the whole branch may carry the anchors: ^(a|b)$ is common
    return start, Seq(tuple(items)), end


def search_regex(pattern: str, *, escapes: bool = True, plain: bool = False) -> str | None:
    """Regex of string *contents* in which `pattern` finds a match (ECMA search semantics).

    None if no string matches. Raises PatternError for untranslatable constructs. Cached:
    schemas repeat their patterns, and every format is one (a server renders each once).
    """
    return _search_text(pattern, bool(escapes), bool(plain))


@lru_cache(maxsize=1024)
def _search_text(pattern: str, escapes: bool, plain: bool) -> str | None:
    """`search_regex`, cached as text only (its items would be objects for the collector)."""
    found = _search(pattern, escapes, plain)
    return None if found is None else found[0]


def string_search_regex(pattern: str) -> str | None:
    """``'"' + search_regex(pattern) + '"'``: the regex of the complete JSON strings in whose
    contents `pattern` finds a match, its AST given to the parser (`_quoted`)."""
    found = _search(pattern, True, False)
    return None if found is None else _quoted(*found)


def _search(pattern: str, escapes: bool, plain: bool) -> tuple[str, Items] | None:
    """`search_regex` with its items (none where plain)."""
    tree = parse_pattern(pattern)
    unit = "(?:[^\\n]|\\n)" if plain else f"(?:{UNIT})"
    around = () if plain else _unit_star()
    parts = []
    for branch in _branches(tree):
        start, body, end = _strip_anchors(branch)
        rendered = _render(body, escapes, plain)
        if rendered is None:
            continue
        text, items = rendered
        parts.append((("" if start else unit + "*") + text + ("" if end else unit + "*"),
                      (() if start else around) + items + (() if end else around)))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return "(?:" + "|".join(text for text, _ in parts) + ")", _group_items([items for _, items in parts], plain)


# -- formats --------------------------------------------------------------------------

_DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}"
_H16 = "[0-9a-fA-F]{1,4}"


def _ipv6() -> str:
    ls32 = f"(?:{_H16}:{_H16}|{_IPV4})"
    forms = [
        f"(?:{_H16}:){{6}}{ls32}",
        f"::(?:{_H16}:){{5}}{ls32}",
        f"(?:{_H16})?::(?:{_H16}:){{4}}{ls32}",
        f"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{ls32}",
        f"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{ls32}",
        f"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{ls32}",
        f"(?:(?:{_H16}:){{0,4}}{_H16})?::{ls32}",
        f"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
        f"(?:(?:{_H16}:){{0,6}}{_H16})?::",
    ]
    return "(?:" + "|".join(forms) + ")"


_IPV6 = _ipv6()


def _label(max_len: int) -> str:
    """A hostname label of 1..max_len characters without '--' in positions 3-4.

    RFC 5891 reserves such labels for A-labels (``xn--``), whose validity (Punycode, IDNA
    rules) is not regular in any useful sense; they are left out (a narrowing).
    """
    c, h = "[A-Za-z0-9]", "[A-Za-z0-9-]"
    return rf"{c}(?:{c}|{h}{c}|{h}{h}{c}|{h}(?:{c}{h}|-{c}){h}{{0,{max_len - 5}}}{c})?"


_LABEL = _label(63)
_SHORT_LABEL = _label(30)
# total length <= 253 is not expressible together with label lengths in a small regex: narrow to
# one label of up to 63 characters followed by at most six labels of up to 30 (<= 249 in all).
_HOSTNAME = rf"{_LABEL}(?:\.{_SHORT_LABEL}){{0,6}}"

_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_YEAR = "[0-9]{4}"
_DATE = (
    rf"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    rf"|02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)"
)
_OFFSET = "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
# leap seconds only where the UTC time is 23:59:60 with a zero offset (narrowed: the exact set
# couples the offset with the local time)
_TIME = (
    rf"(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?{_OFFSET}"
    rf"|23:59:60(?:\.[0-9]+)?(?:[Zz]|[+-]00:00))"
)
_DURATION = (
    r"P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)"
    r"(?:T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?"
    r"|T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)|[0-9]+W)"
)
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_QUOTED_LOCAL = r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"'
_EMAIL = rf"(?:{_ATEXT}+(?:\.{_ATEXT}+)*|{_QUOTED_LOCAL})@(?:{_HOSTNAME}|\[{_IPV4}\]|\[IPv6:{_IPV6}\])"
_UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = "%[0-9a-fA-F]{2}"
_SCHEME = r"[A-Za-z][A-Za-z0-9+\-.]*"
# RFC 3987: an IRI is a URI whose unreserved characters include `ucschar`, and whose query
# may hold `iprivate` characters too (not its fragment)
_UCSCHAR = ("\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef" + "".join(
    f"{chr(plane << 16)}-{chr((plane << 16) | 0xfffd)}" for plane in range(1, 14)) + "\U000e1000-\U000efffd")
_IPRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"


def _uri_syntax(unreserved: str, private: str) -> tuple[str, str]:
    """(absolute, reference) regexes of RFC 3986 URIs, or of RFC 3987 IRIs given ucschar
    among the unreserved characters and the iprivate ones allowed in queries."""
    pchar = rf"(?:[{unreserved}{_SUB_DELIMS}:@]|{_PCT})"
    userinfo = rf"(?:[{unreserved}{_SUB_DELIMS}:]|{_PCT})*"
    reg_name = rf"(?:[{unreserved}{_SUB_DELIMS}]|{_PCT})*"
    ip_literal = rf"\[(?:{_IPV6}|[vV][0-9a-fA-F]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+)\]"  # ASCII in IRIs too
    authority = rf"(?:{userinfo}@)?(?:{ip_literal}|{_IPV4}|{reg_name})(?::[0-9]*)?"
    segment, segment_nz = rf"{pchar}*", rf"{pchar}+"
    segment_nz_nc = rf"(?:[{unreserved}{_SUB_DELIMS}@]|{_PCT})+"
    path_abempty = rf"(?:/{segment})*"
    path_absolute = rf"/(?:{segment_nz}(?:/{segment})*)?"
    path_rootless = rf"{segment_nz}(?:/{segment})*"
    path_noscheme = rf"{segment_nz_nc}(?:/{segment})*"
    query = rf"(?:{pchar}|[/?{private}])*"
    fragment = rf"(?:{pchar}|[/?])*"
    tail = rf"(?:\?{query})?(?:#{fragment})?"
    hier = rf"(?://{authority}{path_abempty}|{path_absolute}|{path_rootless}|)"
    absolute = rf"{_SCHEME}:{hier}{tail}"
    relative = rf"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme}|){tail}"
    return absolute, rf"(?:{absolute}|{relative})"


_URI, _URI_REFERENCE = _uri_syntax(_UNRESERVED, "")
_IRI, _IRI_REFERENCE = _uri_syntax(_UNRESERVED + _UCSCHAR, _IPRIVATE)
_JSON_POINTER = r"(?:/(?:[^~/]|~[01])*)*"
_RELATIVE_JSON_POINTER = rf"(?:0|[1-9][0-9]*)(?:#|{_JSON_POINTER})"

FORMATS: dict[str, str] = {
    "date-time": rf"{_DATE}[Tt]{_TIME}",
    "date": _DATE,
    "time": _TIME,
    "duration": _DURATION,
    "email": _EMAIL,
    "hostname": _HOSTNAME,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "uri": _URI,
    "uri-reference": _URI_REFERENCE,
    "iri": _IRI,
    "iri-reference": _IRI_REFERENCE,
    "uuid": _UUID,
    "json-pointer": _JSON_POINTER,
    "relative-json-pointer": _RELATIVE_JSON_POINTER,
}
"""ECMA-style patterns (implicitly anchored) of the string contents each format allows."""


@lru_cache(maxsize=None)  # one entry per known format
def format_regex(name: str) -> str | None:
    """Regex of the complete JSON string (quotes included) for a format; None if unknown.

    Formats accept raw characters only (escaped spellings such as ``\\u002d`` are left out),
    which keeps their automata small; the language is a subset of the exact one, never more.
    """
    if name not in FORMATS:
        return None
    body = search_regex("^(?:" + FORMATS[name] + ")$", escapes=name in ("json-pointer", "relative-json-pointer"))
    return '"' + body + '"'


def format_plain_regex(name: str) -> str | None:
    """Python regex (for `re.fullmatch`) of the decoded strings a format allows."""
    if name not in FORMATS:
        return None
    return "(?:" + FORMATS[name] + ")"


def literal_regex(text: str) -> str:
    """A regex matching exactly `text` (characters as classes, safe in both engines)."""
    return "".join(class_regex(((ord(c), ord(c)),)) for c in text)


# -- intersections: patterns, a format and a length range ------------------------------------
#
# JSON Schema conjoins `pattern`, `format`, `minLength` and `maxLength` on one string. Each is a
# regular language over *decoded* characters, so their intersection is regular too. Two exact
# constructions, both on the syntax trees above (characters, not bytes, so counting lengths is
# counting tree leaves and the JSON encodings of each character are rendered at the very end):
#
# - `restrict_length` pushes a length range into a tree whose concatenations have at most one
#   part of variable length (``^[a-z0-9_]+$`` with maxLength 64 is ``[a-z0-9_]{1,64}``): a
#   regex no larger than the pattern's own;
# - `string_automaton` intersects the trees' automata (grammarc's byte DFAs over the decoded
#   UTF-8 text) and a length window, then reads the result back as a DFA over characters.

ANY = Chars(ALL)


class Hard(Exception):
    """`restrict_length` cannot push the length range into this tree (use the automaton)."""


@lru_cache(maxsize=1024)
def search_tree(pattern: str):
    """The tree of the strings in which `pattern` finds a match (ECMA search semantics;
    cached, the tree is immutable)."""
    branches = []
    for branch in _branches(parse_pattern(pattern)):
        start, body, end = _strip_anchors(branch)
        items = ([] if start else [Repeat(ANY, 0, None)]) + [body] + ([] if end else [Repeat(ANY, 0, None)])
        branches.append(Seq(tuple(items)))
    return branches[0] if len(branches) == 1 else Alt(tuple(branches))


def format_tree(name: str):
    """The tree of a known format's strings (None if the format is unknown)."""
    return search_tree("^(?:" + FORMATS[name] + ")$") if name in FORMATS else None


def lengths(node) -> tuple[int, int | None]:
    """Shortest and longest length the tree's strings can have (None: unbounded)."""
    if isinstance(node, Chars):
        return 1, 1
    if isinstance(node, Anchor):
        return 0, 0
    if isinstance(node, Seq):
        lo, hi = 0, 0
        for item in node.items:
            a, b = lengths(item)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return lo, hi
    if isinstance(node, Alt):
        pairs = [lengths(i) for i in node.items]
        his = [b for _, b in pairs]
        return min(a for a, _ in pairs), (None if None in his else max(his))
    if isinstance(node, Repeat):
        a, b = lengths(node.item)
        if b == 0:
            return 0, 0
        return node.min * a, (None if node.max is None or b is None else node.max * b)
    raise TypeError(node)


def restrict_length(node, a: int, b: int | None):
    """A tree for the strings of `node` whose length lies in [a, b] (None: there is none).

    Raises `Hard` where a concatenation has two parts of variable length (the split of the
    length between them is not a regex of the same shape), and for anchors inside the
    pattern (a regex over the encoded string cannot say them; the automaton can).
    """
    if _has_anchor(node):
        raise Hard("an anchor inside the pattern")
    return _restrict(node, a, b)


def _has_anchor(node) -> bool:
    if isinstance(node, Anchor):
        return True
    if isinstance(node, (Seq, Alt)):
        return any(_has_anchor(i) for i in node.items)
    return isinstance(node, Repeat) and _has_anchor(node.item)


def _restrict(node, a: int, b: int | None):
    lo, hi = lengths(node)
    if b is not None and (lo > b or b < 0):
        return None
    if hi is not None and hi < a:
        return None
    if lo >= a and (b is None or (hi is not None and hi <= b)):
        return node
    if isinstance(node, Alt):
        kept = [r for r in (_restrict(i, a, b) for i in node.items) if r is not None]
        return None if not kept else (kept[0] if len(kept) == 1 else Alt(tuple(kept)))
    if isinstance(node, Seq):
        spans = [lengths(i) for i in node.items]
        variable = [j for j, (x, y) in enumerate(spans) if x != y]
        if len(variable) != 1:
            raise Hard("two parts of variable length")
        j = variable[0]
        fixed = sum(x for k, (x, _) in enumerate(spans) if k != j)
        inner = _restrict(node.items[j], max(0, a - fixed), None if b is None else b - fixed)
        if inner is None:
            return None
        return Seq(node.items[:j] + (inner,) + node.items[j + 1:])
    if isinstance(node, Repeat):
        x, y = lengths(node.item)
        if x == y:  # every repetition adds x characters
            if x == 0:
                return node if a <= 0 else None
            n_lo = max(node.min, -(-a // x))
            n_hi = b // x if b is not None else None
            if node.max is not None:
                n_hi = node.max if n_hi is None else min(n_hi, node.max)
            if n_hi is not None and n_lo > n_hi:
                return None
            return Repeat(node.item, n_lo, n_hi)
        if node.max == 1:
            inner = _restrict(node.item, a, b)
            parts = ([Seq(())] if node.min == 0 and a <= 0 else []) + ([inner] if inner is not None else [])
            return None if not parts else (parts[0] if len(parts) == 1 else Alt(tuple(parts)))
        raise Hard("a repetition of a part of variable length")
    raise Hard(type(node).__name__)


def render_tree(node, *, escapes: bool = True) -> str | None:
    """Regex of a complete JSON string (quotes included) whose contents `node` describes."""
    body = _render(node, escapes, False)
    return None if body is None else _quoted(*body)


BYTE_STATES_PER_CHAR = 8  # working budget of the byte automata, per character state allowed


def string_dfa(trees: list, min_len: int, max_len: int | None, *, max_states: int = 2000):
    """The byte DFA (over the decoded UTF-8 text) of the strings every tree matches with a
    length in [min_len, max_len]; anchors anywhere are exact. PatternError past
    ``BYTE_STATES_PER_CHAR * max_states`` states."""
    budget = BYTE_STATES_PER_CHAR * max_states
    try:
        dfa = None
        for tree in trees:
            d = _tree_dfa(tree, budget)
            dfa = d if dfa is None else automata.intersect(dfa, d, max_states=budget)
        return automata.length_window(dfa, min_len, max_len, max_states=budget)
    except StateBudgetExceeded:
        raise PatternError(f"the intersection needs more than {max_states} automaton states") from None


def string_automaton(trees: list, min_len: int, max_len: int | None, *, max_states: int = 2000) -> CharDFA | None:
    """`string_dfa` read as a DFA over characters (None when no string qualifies;
    PatternError past `max_states` character states)."""
    dfa = string_dfa(trees, min_len, max_len, max_states=max_states)
    if dfa.is_empty:
        return None
    chars = automata.code_point_dfa(dfa)
    if len(chars.accept) > max_states:
        raise PatternError(f"the intersection needs more than {max_states} automaton states")
    return chars


@lru_cache(maxsize=256)
def _tree_dfa(tree: Node, budget: int):
    return automata.from_ast(tree, budget, "pattern")


@lru_cache(maxsize=4096)
def char_label(ranges: Ranges, escapes: bool = True) -> str:
    """`char_regex` of non-empty ranges, cached (automaton edges repeat their labels)."""
    out = char_regex(ranges, escapes=escapes)
    if out is None:
        raise ValueError("empty character set")
    return out
