"""grammarc side by side with xgrammar, llguidance and outlines-core.

    python bench/peers.py                         # Llama-3 vocabulary (needs quicktok-v1)
    python bench/peers.py --vocab tiny --docs 2   # smoke run
    python bench/peers.py --workload c --no-timing --diff-limit 20

For each workload of bench/mask_latency.py, every installed peer compiles the *same
language* (JSON Schema workloads: the same schema with the same layout options; stdlib
grammars: the hand translations below) and replays the same canonical tokenizations. Two
things are reported:

* timing: compile time, mask and advance time per token (best of ``--repeat`` replays), and
  the grammarc/peer ratio of the mask figures: grammarc's mask on documents it has not seen
  (memos warm from other documents), and computed with its memo emptied before every mask
  (the peers keep no memo between steps); and the *first pass*, the mean mask of an
  engine's first documents after compiling: grammarc's index built as they go (on a fresh
  disk cache; earlier workloads of the run may have left shared scans in memory), a peer's
  first replay;
* masks, step by step: at every step of every replayed document, the tokens grammarc allows
  and the peer forbids, and the reverse, with their ids and bytes and the text so far. Each
  difference is somebody's bug; bench/README.md records the classes found and whose they are.

A peer that is not installed is skipped with a message; a peer that cannot express a
workload (outlines-core has no context-free grammars) says so in the table.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mask_latency as ml  # noqa: E402  (bench/ is not a package)

from grammarc import Engine, Grammar, Vocabulary  # noqa: E402


class Unsupported(Exception):
    """The peer cannot express this workload's language."""


# ------------------------------------------------------- grammar translations
#
# Each translation keeps the language of the stdlib grammar exactly (checked in the smoke
# test on the benchmark documents). llguidance reads Lark with a lexer: uppercase names and
# quoted strings are lexemes, matched by a context-dependent lexer; xgrammar reads GBNF-style
# EBNF interpreted character by character (no lexer at all).

LARK = {
    "json": r"""
start: ws value ws
value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" ws [member ("," ws member)*] "}"
member: STRING ws ":" ws value ws
array: "[" ws [element ("," ws element)*] "]"
element: value ws
ws: WS?
STRING: /"([^"\\\x00-\x1F]|\\["\\\/bfnrt]|\\u[0-9A-Fa-f]{4})*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
WS: /[ \t\n\r]+/
""",
    "arithmetic": r"""
start: ws expr ws
expr: expr ws ("+" | "-") ws term | term
term: term ws ("*" | "/") ws factor | factor
factor: "-" ws factor | "(" ws expr ws ")" | NUMBER
NUMBER: /[0-9]+(\.[0-9]+)?/
ws: WS?
WS: /[ \t]+/
""",
    "c": r"""
start: ws (external ws)*
external: function | declaration
typed_name: type (sep | ws stars ws) IDENT
type: "int" | "char" | "float" | "void"
stars: "*" (ws "*")*
function: typed_name ws "(" ws [params ws] ")" ws (block | ";")
params: "void" | typed_name (ws "," ws typed_name)*
declaration: typed_name declarator_rest (ws "," ws [stars ws] IDENT declarator_rest)* ws ";"
declarator_rest: [ws "[" ws INTEGER ws "]"] [ws "=" ws assignment]
statement: block | simple_stmt
simple_stmt: declaration
    | "if" ws "(" ws expr ws ")" ws statement [ws "else" else_body]
    | "while" ws "(" ws expr ws ")" ws statement
    | "for" ws "(" ws (declaration | [expr ws] ";") ws [expr ws] ";" ws [expr ws] ")" ws statement
    | "return" [sep expr] ws ";"
    | expr ws ";"
    | ";"
else_body: ws block | sep simple_stmt
block: "{" ws (statement ws)* "}"
expr: assignment
assignment: unary ws ("=" | "+=" | "-=" | "*=" | "/=") ws assignment | logical_or
logical_or: logical_or ws "||" ws logical_and | logical_and
logical_and: logical_and ws "&&" ws equality | equality
equality: equality ws ("==" | "!=") ws relational | relational
relational: relational ws ("<" | ">" | "<=" | ">=") ws additive | additive
additive: additive ws ("+" | "-") ws multiplicative | multiplicative
multiplicative: multiplicative ws ("*" | "/" | "%") ws unary | unary
unary: ("-" | "!" | "*" | "&") ws unary | postfix
postfix: postfix ws "(" ws [arguments ws] ")" | postfix ws "[" ws expr ws "]" | primary
arguments: assignment (ws "," ws assignment)*
primary: IDENT | INTEGER | FLOAT | CHAR | STRING | "(" ws expr ws ")"
IDENT: /[A-Za-z_][A-Za-z0-9_]*/
INTEGER: /[0-9]+/
FLOAT: /([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fF]?|[0-9]+[eE][+-]?[0-9]+[fF]?/
CHAR: /'([^'\\\n]|\\['"\\?abfnrtv0])'/
STRING: /"([^"\\\n]|\\['"\\?abfnrtv0])*"/
ws: (SPACE | COMMENT)*
sep: (SPACE | COMMENT) ws
SPACE: /[ \t\r\n]/
COMMENT: /\/\*([^*]|\*+[^*\/])*\*+\// | /\/\/[^\n]*\n/
""",
    "xml": r"""
start: [xml_decl] WS0 catalog WS0
xml_decl: "<?xml" SEP "version" eq ("\"1.0\"" | "'1.0'") [SEP "encoding" eq ("\"UTF-8\"" | "'UTF-8'")] WS0 "?>"
catalog: "<catalog" WS0 ">" WS0 (book WS0)* "</catalog" WS0 ">"
book: "<book" SEP "id" eq att_value [SEP "lang" eq att_value] WS0 ">" WS0 title WS0 author WS0 (author WS0)* [year WS0] price WS0 "</book" WS0 ">"
title: "<title" WS0 ">" text "</title" WS0 ">"
author: "<author" WS0 ">" text "</author" WS0 ">"
year: "<year" WS0 ">" YEAR "</year" WS0 ">"
price: "<price" [SEP "currency" eq ("\"" CURRENCY "\"" | "'" CURRENCY "'")] WS0 ">" AMOUNT "</price" WS0 ">"
text: (TEXTCHAR | reference)*
att_value: "\"" (DQCHAR | reference)* "\"" | "'" (SQCHAR | reference)* "'"
reference: "&" ("lt" | "gt" | "amp" | "apos" | "quot") ";" | "&#" DIGITS ";" | "&#x" HEXDIGITS ";"
eq: WS0 "=" WS0
YEAR: /[0-9]{4}/
AMOUNT: /[0-9]+(\.[0-9]{2})?/
CURRENCY: /[A-Z]{3}/
DIGITS: /[0-9]+/
HEXDIGITS: /[0-9A-Fa-f]+/
TEXTCHAR: /[^<&\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/
DQCHAR: /[^<&"\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/
SQCHAR: /[^<&'\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/
SEP: /[ \t\r\n]+/
WS0: /[ \t\r\n]*/
""",
}

# xgrammar's EBNF (GBNF-like): character classes take \xHH, \uHHHH and ranges; strings are
# double-quoted; `*`, `+`, `?`, `{m,n}` and grouping. It has no regex terminals, so each
# regex of the stdlib grammar is written out as classes and repetitions.
XGRAMMAR_EBNF = {
    "json": r"""
root ::= ws value ws
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (member ("," ws member)*)? "}"
member ::= string ws ":" ws value ws
array ::= "[" ws (element ("," ws element)*)? "]"
element ::= value ws
string ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt] | "\\u" [0-9A-Fa-f] [0-9A-Fa-f] [0-9A-Fa-f] [0-9A-Fa-f])* "\""
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
ws ::= [ \t\n\r]*
""",
    "arithmetic": r"""
root ::= ws expr ws
expr ::= expr ws ("+" | "-") ws term | term
term ::= term ws ("*" | "/") ws factor | factor
factor ::= "-" ws factor | "(" ws expr ws ")" | number
number ::= [0-9]+ ("." [0-9]+)?
ws ::= [ \t]*
""",
    "c": r"""
root ::= ws (external ws)*
external ::= function | declaration
typed_name ::= type (sep | ws stars ws) identifier
type ::= "int" | "char" | "float" | "void"
stars ::= "*" (ws "*")*
function ::= typed_name ws "(" ws (params ws)? ")" ws (block | ";")
params ::= "void" | typed_name (ws "," ws typed_name)*
declaration ::= typed_name declarator_rest (ws "," ws (stars ws)? identifier declarator_rest)* ws ";"
declarator_rest ::= (ws "[" ws integer ws "]")? (ws "=" ws assignment)?
statement ::= block | simple_stmt
simple_stmt ::= declaration
    | "if" ws "(" ws expr ws ")" ws statement (ws "else" else_body)?
    | "while" ws "(" ws expr ws ")" ws statement
    | "for" ws "(" ws (declaration | (expr ws)? ";") ws (expr ws)? ";" ws (expr ws)? ")" ws statement
    | "return" (sep expr)? ws ";"
    | expr ws ";"
    | ";"
else_body ::= ws block | sep simple_stmt
block ::= "{" ws (statement ws)* "}"
expr ::= assignment
assignment ::= unary ws ("=" | "+=" | "-=" | "*=" | "/=") ws assignment | logical_or
logical_or ::= logical_or ws "||" ws logical_and | logical_and
logical_and ::= logical_and ws "&&" ws equality | equality
equality ::= equality ws ("==" | "!=") ws relational | relational
relational ::= relational ws ("<" | ">" | "<=" | ">=") ws additive | additive
additive ::= additive ws ("+" | "-") ws multiplicative | multiplicative
multiplicative ::= multiplicative ws ("*" | "/" | "%") ws unary | unary
unary ::= ("-" | "!" | "*" | "&") ws unary | postfix
postfix ::= postfix ws "(" ws (arguments ws)? ")" | postfix ws "[" ws expr ws "]" | primary
arguments ::= assignment (ws "," ws assignment)*
primary ::= identifier | integer | float | char | string | "(" ws expr ws ")"
identifier ::= [A-Za-z_] [A-Za-z0-9_]*
integer ::= [0-9]+
float ::= ([0-9]+ "." [0-9]* | "." [0-9]+) ([eE] [+-]? [0-9]+)? [fF]? | [0-9]+ [eE] [+-]? [0-9]+ [fF]?
char ::= "'" ([^'\\\n] | "\\" ['"\\?abfnrtv0]) "'"
string ::= "\"" ([^"\\\n] | "\\" ['"\\?abfnrtv0])* "\""
ws ::= ([ \t\r\n] | comment)*
sep ::= ([ \t\r\n] | comment) ws
comment ::= "/*" ([^*] | "*"+ [^*/])* "*"+ "/" | "//" [^\n]* "\n"
""",
    "xml": r"""
root ::= xml_decl? ws catalog ws
xml_decl ::= "<?xml" sep "version" eq ("\"1.0\"" | "'1.0'") (sep "encoding" eq ("\"UTF-8\"" | "'UTF-8'"))? ws "?>"
catalog ::= "<catalog" ws ">" ws (book ws)* "</catalog" ws ">"
book ::= "<book" sep "id" eq att_value (sep "lang" eq att_value)? ws ">" ws title ws author ws (author ws)* (year ws)? price ws "</book" ws ">"
title ::= "<title" ws ">" text "</title" ws ">"
author ::= "<author" ws ">" text "</author" ws ">"
year ::= "<year" ws ">" [0-9] [0-9] [0-9] [0-9] "</year" ws ">"
price ::= "<price" (sep "currency" eq ("\"" currency "\"" | "'" currency "'"))? ws ">" [0-9]+ ("." [0-9] [0-9])? "</price" ws ">"
currency ::= [A-Z] [A-Z] [A-Z]
text ::= ([^<&\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff] | reference)*
att_value ::= "\"" ([^<&"\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff] | reference)* "\"" | "'" ([^<&'\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff] | reference)* "'"
reference ::= "&" ("lt" | "gt" | "amp" | "apos" | "quot") ";" | "&#" [0-9]+ ";" | "&#x" [0-9A-Fa-f]+ ";"
eq ::= ws "=" ws
sep ::= [ \t\r\n]+
ws ::= [ \t\r\n]*
""",
}


# ---------------------------------------------------------------------- peers


@dataclass
class Peer:
    """One engine behind a small common surface; `tokenizer` is built once per vocabulary."""

    name: str
    module: str
    tokenizer: Any = None
    setup_ms: float = 0.0

    def available(self) -> str | None:
        """None when usable; otherwise why not."""
        try:
            __import__(self.module)
        except ImportError as exc:
            return f"{self.name} is not installed ({exc}); pip install '.[bench]'"
        return None

    def version(self) -> str:
        from importlib.metadata import version

        return version(self.name)

    def prepare(self, vocab: Vocabulary) -> None:
        start = time.perf_counter()
        self.tokenizer = self._tokenizer(vocab)
        self.setup_ms = (time.perf_counter() - start) * 1e3

    # each peer implements these
    def _tokenizer(self, vocab: Vocabulary) -> Any: ...
    def compile(self, workload: ml.Workload) -> Any: ...
    def matcher(self, compiled: Any) -> Any: ...
    def fill(self, matcher: Any, words: np.ndarray) -> None: ...
    def advance(self, matcher: Any, token_id: int) -> bool: ...
    def same_language(self, workload: ml.Workload) -> bool:
        return True


def _special_bytes(vocab: Vocabulary) -> list[bytes]:
    return [b"" if i in vocab.special_ids else vocab.tokens[i] for i in range(vocab.size)]


class _Wrapped:
    """The minimal tokenizer object llguidance's TokenizerWrapper reads."""

    def __init__(self, vocab: Vocabulary, encode: Callable[[str], list[int]]):
        self.eos_token_id = min(vocab.eos_token_ids)
        self.bos_token_id = None
        self.tokens = _special_bytes(vocab)
        self.special_token_ids = sorted(vocab.special_ids)
        self._encode = encode

    def __call__(self, text: bytes | str) -> list[int]:
        return self._encode(text.decode("utf-8", "replace") if isinstance(text, bytes) else text)


class LLGuidance(Peer):
    def __init__(self) -> None:
        super().__init__("llguidance", "llguidance")
        self.encode: Callable[[str], list[int]] | None = None

    def _tokenizer(self, vocab: Vocabulary) -> Any:
        import llguidance

        wrapped = llguidance.TokenizerWrapper(_Wrapped(vocab, self.encode or (lambda s: [])))
        return llguidance.LLTokenizer(wrapped, n_vocab=vocab.size, eos_token=sorted(vocab.eos_token_ids))

    def grammar_text(self, workload: ml.Workload) -> str:
        import llguidance

        if workload.schema is not None:
            if workload.layout == "compact":
                options = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}
            else:  # llguidance has no indent option: any JSON whitespace (not the same language)
                options = {"whitespace_flexible": True}
            return llguidance.LLMatcher.grammar_from_json_schema(workload.schema, overrides=options)
        if workload.name not in LARK:
            raise Unsupported(f"no Lark translation of {workload.name}")
        return llguidance.LLMatcher.grammar_from_lark(LARK[workload.name])

    def same_language(self, workload: ml.Workload) -> bool:
        return workload.schema is None or workload.layout == "compact"

    def compile(self, workload: ml.Workload) -> Any:
        import llguidance

        text = self.grammar_text(workload)
        error = llguidance.LLMatcher.validate_grammar(text, self.tokenizer)
        if error and not error.startswith("WARNING"):
            raise Unsupported(f"llguidance rejects the grammar: {error}")
        # llguidance compiles lazily: its constructor is the compile step
        matcher = llguidance.LLMatcher(self.tokenizer, text, log_level=0)
        if matcher.is_error():
            raise Unsupported(matcher.get_error())
        return text

    def matcher(self, compiled: Any) -> Any:
        import llguidance

        return llguidance.LLMatcher(self.tokenizer, compiled, log_level=0)

    def fill(self, matcher: Any, words: np.ndarray) -> None:
        matcher.unsafe_compute_mask_ptr(words.ctypes.data, words.nbytes)

    def advance(self, matcher: Any, token_id: int) -> bool:
        return matcher.consume_token(token_id) and not matcher.is_error()


class XGrammar(Peer):
    def __init__(self) -> None:
        super().__init__("xgrammar", "xgrammar")
        self.compiler: Any = None

    def _tokenizer(self, vocab: Vocabulary) -> Any:
        import xgrammar

        info = xgrammar.TokenizerInfo(_special_bytes(vocab), vocab_size=vocab.size,
                                      stop_token_ids=sorted(vocab.eos_token_ids))
        # no compile cache: every compile is timed for real
        self.compiler = xgrammar.GrammarCompiler(info, max_threads=2, cache_enabled=False)
        return info

    def compile(self, workload: ml.Workload) -> Any:
        if workload.schema is not None:
            if workload.layout == "compact":
                return self.compiler.compile_json_schema(workload.schema, any_whitespace=False, separators=(",", ":"))
            return self.compiler.compile_json_schema(workload.schema, any_whitespace=False, indent=2)
        if workload.name not in XGRAMMAR_EBNF:
            raise Unsupported(f"no EBNF translation of {workload.name}")
        return self.compiler.compile_grammar(XGRAMMAR_EBNF[workload.name], root_rule_name="root")

    def matcher(self, compiled: Any) -> Any:
        import xgrammar

        return xgrammar.GrammarMatcher(compiled)

    def fill(self, matcher: Any, words: np.ndarray) -> None:
        matcher.fill_next_token_bitmask(words.reshape(1, -1))

    def advance(self, matcher: Any, token_id: int) -> bool:
        return matcher.accept_token(token_id)


class OutlinesCore(Peer):
    """Regular languages only: the JSON Schema workloads, as outlines-core's schema regex."""

    def __init__(self) -> None:
        super().__init__("outlines-core", "outlines_core")
        self.vocab: Vocabulary | None = None

    def _tokenizer(self, vocab: Vocabulary) -> Any:
        import outlines_core

        by_bytes: dict[bytes, list[int]] = {}
        for i in vocab.normal_ids():
            if vocab.tokens[i]:
                by_bytes.setdefault(vocab.tokens[i], []).append(int(i))
        self.vocab = vocab
        return outlines_core.Vocabulary(min(vocab.eos_token_ids), by_bytes)

    def same_language(self, workload: ml.Workload) -> bool:
        return False  # outlines-core's schema regexes differ in details (numbers, escapes, layout)

    def compile(self, workload: ml.Workload) -> Any:
        import outlines_core
        from outlines_core.json_schema import build_regex_from_schema

        if workload.schema is None:
            raise Unsupported("outlines-core compiles regular expressions only (no context-free grammars)")
        whitespace = "" if workload.layout == "compact" else r"[\n ]*"
        regex = build_regex_from_schema(json.dumps(workload.schema), whitespace)
        return outlines_core.Index(regex, self.tokenizer)

    def matcher(self, compiled: Any) -> Any:
        import outlines_core

        return outlines_core.Guide(compiled)

    def fill(self, matcher: Any, words: np.ndarray) -> None:
        matcher.write_mask_into(words.ctypes.data, words.size, 4)

    def advance(self, matcher: Any, token_id: int) -> bool:
        if token_id in self.vocab.eos_token_ids and matcher.is_finished():
            return True  # its mask allows EOS here, but Guide.advance(EOS) raises (README)
        try:
            matcher.advance(token_id)
        except ValueError:  # outlines-core raises on a token it does not allow
            return False
        return True


PEERS: dict[str, Callable[[], Peer]] = {"xgrammar": XGrammar, "llguidance": LLGuidance, "outlines-core": OutlinesCore}


# -------------------------------------------------------------------- replays


@dataclass
class Difference:
    """One step where grammarc's mask and a peer's differ."""

    document: int
    step: int
    text: bytes  # the text so far
    only_grammarc: list[int]
    only_peer: list[int]


@dataclass
class PeerResult:
    peer: str
    workload: str
    status: str = "ok"  # or why it did not run
    same_language: bool = True
    compile_ms: float = 0.0
    mask_us: list[float] = field(default_factory=list)
    first_mask_us: list[float] = field(default_factory=list)  # the first replay's masks
    advance_us: list[float] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # replayed tokens the peer refused
    steps: int = 0


def _unpack(words: np.ndarray, size: int) -> np.ndarray:
    return np.unpackbits(words.view(np.uint8), bitorder="little")[:size].astype(bool)


def replay_peer(peer: Peer, compiled: Any, encoded: list[list[int]], vocab: Vocabulary, repeat: int,
                grammarc_masks: list[list[np.ndarray]] | None, result: PeerResult) -> None:
    """Time the peer on every document; on the first replay compare its masks with grammarc's."""
    eos = min(vocab.eos_token_ids)
    words = np.zeros(-(-vocab.size // 32), dtype=np.int32)
    clock = time.perf_counter_ns
    masks: list[list[float]] = []
    advances: list[list[float]] = []
    for attempt in range(repeat):
        mask_us: list[float] = []
        advance_us: list[float] = []
        for number, ids in enumerate(encoded):
            matcher = peer.matcher(compiled)
            text = b""
            for step, token_id in enumerate([*ids, eos]):
                words[:] = 0
                start = clock()
                peer.fill(matcher, words)
                mask_us.append((clock() - start) / 1e3)
                if attempt == 0 and grammarc_masks is not None:
                    ours = grammarc_masks[number][step]
                    theirs = _unpack(words, vocab.size)
                    if not np.array_equal(ours, theirs):
                        result.differences.append(Difference(
                            number, step, text, np.flatnonzero(ours & ~theirs).tolist(),
                            np.flatnonzero(theirs & ~ours).tolist()))
                start = clock()
                ok = peer.advance(matcher, token_id)
                advance_us.append((clock() - start) / 1e3)
                if not ok:
                    if attempt == 0:
                        result.rejected.append(f"document {number} step {step}: token {token_id} "
                                               f"{vocab.tokens[token_id]!r} after {text[-60:]!r}")
                    break
                text += vocab.tokens[token_id]
        masks.append(mask_us)
        advances.append(advance_us)
    n = min(len(m) for m in masks)
    result.first_mask_us = masks[0]
    result.mask_us = np.min([m[:n] for m in masks], axis=0).tolist()
    n = min(len(a) for a in advances)
    result.advance_us = np.min([a[:n] for a in advances], axis=0).tolist()
    result.steps = n


def grammarc_masks(grammar: Grammar, vocab: Vocabulary, encoded: list[list[int]]) -> list[list[np.ndarray]]:
    """grammarc's bool mask before every token of every document (EOS step included)."""
    engine = Engine(grammar.compile(), vocab)
    eos = min(vocab.eos_token_ids)
    out = []
    for ids in encoded:
        engine.reset()
        steps = []
        for token_id in [*ids, eos]:
            steps.append(engine.allowed_mask().copy())
            engine.advance(token_id)
        out.append(steps)
    return out


def run(peer: Peer, workload: ml.Workload, vocab: Vocabulary, encoded: list[list[int]], repeat: int,
        masks: list[list[np.ndarray]] | None) -> PeerResult:
    result = PeerResult(peer.name, workload.name)
    try:
        start = time.perf_counter()
        compiled = peer.compile(workload)
        result.compile_ms = (time.perf_counter() - start) * 1e3
    except Unsupported as exc:
        result.status = f"unsupported: {exc}"
        return result
    except Exception as exc:  # a peer's own error on our workload is a finding, not a crash
        result.status = f"error: {type(exc).__name__}: {str(exc)[:200]}"
        return result
    result.same_language = peer.same_language(workload)
    replay_peer(peer, compiled, encoded, vocab, repeat, masks if result.same_language else None, result)
    return result


# ------------------------------------------------------------------- printing


def _token(vocab: Vocabulary, token_id: int) -> str:
    if token_id in vocab.special_ids:
        return f"{token_id}<special{'/eos' if token_id in vocab.eos_token_ids else ''}>"
    return f"{token_id}{vocab.tokens[token_id]!r}"


def describe(diff: Difference, vocab: Vocabulary, limit: int) -> str:
    def tokens(ids: list[int]) -> str:
        shown = ", ".join(_token(vocab, t) for t in ids[:limit])
        return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")

    lines = [f"  document {diff.document} step {diff.step}, text so far ...{diff.text[-50:]!r}"]
    if diff.only_grammarc:
        lines.append(f"    only grammarc allows: {tokens(diff.only_grammarc)}")
    if diff.only_peer:
        lines.append(f"    only the peer allows: {tokens(diff.only_peer)}")
    return "\n".join(lines)


def timing_rows(ours: dict[str, ml.Result], results: list[PeerResult]) -> tuple[list[str], list[list[str]]]:
    """The side-by-side table as (headers, rows): printed, and saved as CSV for the docs."""
    p = ml.percentile
    rows = []
    for name, r in ours.items():
        ours_first = float(np.mean(r.first_mask_us)) if r.first_mask_us else float("nan")
        rows.append([name, "grammarc", f"{r.compile_cold_ms:.1f}", f"{p(r.mask_us, 50):.1f}", f"{p(r.mask_us, 99):.1f}",
                     f"{p(r.cold_mask_us, 50):.1f}", f"{p(r.cold_mask_us, 99):.1f}", f"{p(r.advance_us, 50):.1f}",
                     f"{ours_first:.1f}", "", "", "", "", ""])
        for x in results:
            if x.workload != name:
                continue
            if x.status != "ok" or not x.mask_us:
                rows.append([name, x.peer, x.status[:60], "", "", "", "", "", "", "", "", "", "", ""])
                continue
            m50, m99 = p(x.mask_us, 50), p(x.mask_us, 99)
            first = float(np.mean(x.first_mask_us))
            rows.append([
                name, x.peer + ("" if x.same_language else " *"), f"{x.compile_ms:.1f}", f"{m50:.1f}", f"{m99:.1f}",
                "", "", f"{p(x.advance_us, 50):.1f}", f"{first:.1f}", f"{p(r.mask_us, 50) / m50:.2f}",
                f"{p(r.mask_us, 99) / m99:.2f}", f"{p(r.cold_mask_us, 50) / m50:.2f}", f"{p(r.cold_mask_us, 99) / m99:.2f}",
                f"{ours_first / first:.2f}",
            ])
    return ["workload", "engine", "compile ms", "mask p50 us", "p99", "computed p50", "p99", "advance p50",
            "first pass mean", "ratio p50", "ratio p99", "ratio computed p50", "ratio computed p99",
            "ratio first pass"], rows


def difference_rows(results: list[PeerResult]) -> tuple[list[str], list[list[str]]]:
    rows = [[r.workload, r.peer, "yes" if r.same_language and r.status == "ok" else "no", str(r.steps),
             str(len(r.differences)), str(len(r.rejected))] for r in results]
    return ["workload", "peer", "masks compared", "steps", "steps that differ", "replayed tokens refused"], rows


def prepare_peers(names: list[str], vocab: Vocabulary, encode, registry: dict | None = None) -> list[Peer]:
    """The installed peers of `names` (classes from `registry`, default `PEERS`), their
    tokenizers built for `vocab`; a missing one is skipped with a message."""
    ready = []
    for name in names:
        peer = (registry or PEERS)[name]()
        why = peer.available()
        if why:
            print(f"skipping {why}", flush=True)
            continue
        if isinstance(peer, LLGuidance):
            peer.encode = encode
        peer.prepare(vocab)
        ready.append(peer)
    return ready


def main(argv: list[str] | None = None) -> list[PeerResult]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", choices=sorted(ml.VOCABS), default="llama3")
    parser.add_argument("--docs", type=int, default=10, help="documents per workload (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="timed replays; each token keeps its fastest")
    parser.add_argument("--workload", action="append", choices=sorted(ml.WORKLOADS))
    parser.add_argument("--peer", action="append", choices=sorted(PEERS))
    parser.add_argument("--diff-limit", type=int, default=8, help="tokens shown per difference (default 8)")
    parser.add_argument("--max-diffs", type=int, default=5, help="differences printed per workload and peer")
    parser.add_argument("--json", type=Path, help="write every difference and figure here")
    parser.add_argument("--save", type=Path, metavar="DIR",
                        help="also write DIR/<vocab>-peers.csv and DIR/<vocab>-peers-differences.csv (for the docs)")
    parser.add_argument("--cache-dir", type=Path,
                        help="grammarc's disk cache for the run (default: a fresh temporary one, so that each "
                             "grammar's first pass is a first contact)")
    args = parser.parse_args(argv)
    with ml.disk_cache(args.cache_dir, "peers"):
        return _run(args)


def _run(args: argparse.Namespace) -> list[PeerResult]:
    repeat = max(1, args.repeat)
    vocab, encode = ml.VOCABS[args.vocab]()
    peers = prepare_peers(args.peer or list(PEERS), vocab, encode)
    for peer in peers:
        print(f"{peer.name} {peer.version()}: tokenizer ready in {peer.setup_ms:.0f} ms", flush=True)

    ours: dict[str, ml.Result] = {}
    results: list[PeerResult] = []
    for name in args.workload or list(ml.WORKLOADS):
        workload = ml.WORKLOADS[name]
        try:
            ours[name] = ml.run_workload(workload, vocab, encode, args.docs, repeat)
        except ml.Unavailable as exc:
            print(f"skipping {name}: {exc}", flush=True)
            continue
        grammar = workload.grammar()
        encoded = [encode(doc) for doc in ml.split_documents(workload, args.docs)[1]]
        masks = grammarc_masks(grammar, vocab, encoded) if peers else None
        for peer in peers:
            result = run(peer, workload, vocab, encoded, repeat, masks)
            results.append(result)
            print(f"{name} / {peer.name}: {result.status}, {len(result.differences)} differing steps"
                  f"{'' if result.same_language else ' (not compared: different language)'}"
                  f"{f', {len(result.rejected)} replay tokens refused' if result.rejected else ''}", flush=True)

    print()
    print(f"vocabulary: {args.vocab} ({vocab!r}); per-token times are the best of {repeat} replays; "
          "ratio = grammarc / peer (below 1: grammarc faster); * = the peer's language differs "
          "(llguidance: flexible whitespace for pretty layouts; outlines-core: its own schema regex), "
          "masks not compared")
    print()
    print(ml._table(*timing_rows(ours, results)))
    print()
    print(ml._table(*difference_rows(results)))
    print()
    for r in results:
        if not r.differences and not r.rejected:
            continue
        print(f"{r.workload} / {r.peer}: {len(r.differences)} of {r.steps} steps differ")
        for line in r.rejected[: args.max_diffs]:
            print(f"  the peer refused the replayed {line}")
        for diff in r.differences[: args.max_diffs]:
            print(describe(diff, vocab, args.diff_limit))
        print()
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
        for suffix, (headers, rows) in (("peers", timing_rows(ours, results)),
                                        ("peers-differences", difference_rows(results))):
            with open(args.save / f"{args.vocab}-{suffix}.csv", "w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerows([headers, *rows])
    if args.json is not None:
        payload = [{
            "peer": r.peer, "workload": r.workload, "status": r.status, "same_language": r.same_language,
            "compile_ms": r.compile_ms, "steps": r.steps, "rejected": r.rejected,
            "mask_us": {"p50": ml.percentile(r.mask_us, 50), "p99": ml.percentile(r.mask_us, 99)} if r.mask_us else None,
            "differences": [{"document": d.document, "step": d.step, "text": d.text.decode("utf-8", "replace"),
                             "only_grammarc": d.only_grammarc, "only_peer": d.only_peer} for d in r.differences],
        } for r in results]
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    return results


if __name__ == "__main__":
    main()
