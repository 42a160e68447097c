"""Terminals as automata: regex syntax, UTF-8 byte ranges and minimized byte-level DFAs.

`regex` parses regex text (grammarc's dialect, or ECMA-262 for JSON Schema) into a small AST
over code points; `utf8` splits code point ranges into byte-range sequences; `dfa` is the
DFA artifact and its canonical minimized form; `nfa` builds DFAs from ASTs (Thompson NFA,
subset construction); `operations` is the regular algebra (literal, union, concatenation,
repetition, intersection, length windows); `codepoints` reads a DFA over UTF-8 as one over
code points; `dialect` the grammar dialect's special terminals; `json_strings` every JSON
spelling of a language of decoded texts; `prebuilt` the JSON Schema string formats' DFAs,
stored ready-made (a cache `from_regex` reads; tests check it against a build). The lowering
turns every terminal of a grammar into one of these DFAs. This package depends only on
`grammarc.errors` (and `prebuilt` on `grammarc.diskstore`'s container format).
"""

from grammarc.automata.codepoints import CharDFA, code_point_dfa
from grammarc.automata.dfa import DEFAULT_MAX_STATES, DFA, from_table
from grammarc.automata.dialect import complement_containing, early_end, except_strings, substrings
from grammarc.automata.json_strings import json_string, json_string_except
from grammarc.automata.nfa import from_ast, from_regex
from grammarc.automata.operations import (
    any_bytes,
    combine,
    complement,
    concat,
    intersect,
    length_window,
    literal,
    literals,
    optional,
    plus,
    repeat,
    star,
    union,
    utf8_text,
    without_empty,
)

__all__ = [
    "DEFAULT_MAX_STATES", "DFA", "CharDFA", "any_bytes", "code_point_dfa", "combine", "complement", "complement_containing",
    "concat", "early_end", "except_strings", "from_ast", "from_regex", "from_table", "intersect",
    "json_string", "json_string_except", "length_window", "literal", "literals", "optional",
    "plus", "repeat", "star", "substrings", "union", "utf8_text", "without_empty",
]
