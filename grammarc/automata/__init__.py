"""Terminals as automata: regex syntax, UTF-8 byte ranges and minimized byte-level DFAs.

`regex` parses regex text into a small AST over code points; `utf8` splits code point ranges
into byte-range sequences; `dfa` builds canonical minimized DFAs from ASTs, literals and
other DFAs. The lowering turns every terminal of a grammar into one of these DFAs. This
package depends only on `grammarc.errors`.
"""

from grammarc.automata.dfa import (
    DEFAULT_MAX_STATES,
    DFA,
    any_bytes,
    complement_containing,
    concat,
    early_end,
    except_strings,
    from_regex,
    from_table,
    intersect,
    literal,
    optional,
    plus,
    repeat,
    star,
    substrings,
    union,
    utf8_text,
    without_empty,
)

__all__ = [
    "DEFAULT_MAX_STATES", "DFA", "any_bytes", "complement_containing", "concat", "early_end",
    "except_strings", "from_regex", "from_table", "intersect", "literal", "optional", "plus",
    "repeat", "star", "substrings", "union", "utf8_text", "without_empty",
]
