"""The engine on real model vocabularies with the stdlib JSON grammar (issue 3 acceptance).

Vocabularies: Llama-3 and Qwen3 (quicktok-v1 rank data), Tekken and SentencePiece v3
(mistral-common). Each is checked two ways:

(a) **Canonical tokenizations are accepted.** The reference tokenizer's own encoding (no
    BOS/EOS) of every JSONTestSuite ``y_*`` document whose value is an object or array, and
    of pretty-printed documents (indent 2 and 4, tabs, ``\\r\\n`` line endings, compact
    separators, raw unicode and escapes), is fed token by token: every token must be in the
    mask, and EOS must be allowed exactly when the text so far is complete JSON according
    to Python's json module (so only at the end, or after trailing whitespace).

    SentencePiece's leading space: its encoder prepends a dummy-prefix space (the first
    piece of ``{"a": 1}`` is ``▁{"``, i.e. the bytes ``b' {"'``) and its decoder strips it
    again. The token bytes therefore spell ``b" " + document``, and we test exactly those
    bytes, without hiding the space: the test asserts that the tokens decode to
    ``b" " + document``, and the JSON grammar must accept that text as it stands (RFC 8259
    allows whitespace before a value). The EOS oracle is run on the same bytes.

(b) **Random constrained walks end in valid JSON.** Each walk samples uniformly among the
    allowed tokens (EOS included) and asserts the mask is never empty. After 300 tokens it
    switches to a closing policy that is independent of grammarc: a small JSON prefix
    scanner (`json_completion`) computes a short text that completes the document, and the
    walk takes EOS when allowed, otherwise the longest allowed token that spells a prefix of
    that completion. Every byte of the completion must be allowed (else the mask blocks a
    path to a valid document). The final text must satisfy ``json.loads``.
    ``GRAMMARC_WALKS=n`` overrides the number of walks per vocabulary (default 200, the
    acceptance figure).
"""

from __future__ import annotations

import json
import os
import random
from functools import cache
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import grammarc
import vocabularies as V
from grammarc import Engine, Vocabulary

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SUITE = DATA / "json-test-suite" / "test_parsing"
MISSING = f"JSONTestSuite data not found at {SUITE}"

WALKS = int(os.environ.get("GRAMMARC_WALKS", "200"))
UNIFORM_STEPS = 300
CLOSING_LIMIT = 2000  # tokens the closing policy may take before the walk counts as stuck

JSON = grammarc.stdlib("json")


# ----------------------------------------------------------------- vocabularies


def _quicktok(name: str) -> Callable[[str], list[int]]:
    return lambda text: list(V.quicktok_reference(name).encode(text))


def _mistral(reference: Callable) -> Callable[[str], list[int]]:
    return lambda text: list(reference().encode(text, bos=False, eos=False))


# name -> (vocabulary loader, canonical encoder, bytes the encoder puts before the text)
VOCABS: dict[str, tuple[Callable[[], Vocabulary], Callable[[str], list[int]], bytes]] = {
    "llama3": (V.llama3, _quicktok("llama3"), b""),
    "qwen3": (V.qwen3, _quicktok("qwen3"), b""),
    "tekken": (V.tekken, _mistral(V.tekken_reference), b""),
    "sentencepiece_v3": (V.sentencepiece_v3, _mistral(lambda: V.sentencepiece_reference("v3")), b" "),
}


@cache
def base_engine(name: str) -> Engine:
    """One engine per vocabulary; tests clone it (the index is shared)."""
    return Engine(JSON, VOCABS[name][0]())


# -------------------------------------------------------------------- documents


def suite_documents() -> dict[str, str]:
    """The y_ documents whose value is an object or an array (87 in the pinned copy)."""
    docs = {}
    for path in sorted(SUITE.glob("y_*.json")):
        text = path.read_bytes().decode("utf-8")
        if isinstance(json.loads(text), (dict, list)):
            docs[path.name] = text
    return docs


PRETTY_VALUES = {
    "unicode": {
        "name": "Zoë Ångström", "cjk": "日本語のテキスト", "emoji": "grin 😀 rocket 🚀",
        "separators": "line\u2028para\u2029", "mixed": ["é", "ß", "Ω", "€", "𝄞"], "empty": "",
    },
    "escapes": {
        "quote": 'say "hi"', "backslash": "C:\\path\\to", "controls": "a\tb\nc\rd\x01e\x1f",
        "slash": "</script>", "nul": "\x00",
    },
    "numbers": {"ints": [0, -1, 42, 10**20, -(10**18)], "floats": [0.5, -2.25, 1e-07, 6.02e23, 1.5e300]},
    "nested": {"a": [{"b": [[], {}, [[1, [2, [3, {"c": None}]]]]]}], "t": True, "f": False, "n": None},
    "records": [
        {"id": i, "name": f"item {i}", "tags": ["x", "y"][: i % 3], "price": i * 1.25, "ok": i % 2 == 0}
        for i in range(6)
    ],
    "empty_object": {},
    "empty_array": [],
}


def pretty_documents() -> dict[str, str]:
    """Pretty-printed variants of `PRETTY_VALUES` (json.dumps escapes newlines inside
    strings, so replacing '\\n' by '\\r\\n' only touches layout)."""
    docs = {}
    for key, value in PRETTY_VALUES.items():
        for ascii_only in (False, True):
            tag = f"{key}-{'ascii' if ascii_only else 'raw'}"
            two = json.dumps(value, indent=2, ensure_ascii=ascii_only)
            docs[f"{tag}-indent2"] = two
            docs[f"{tag}-indent4"] = json.dumps(value, indent=4, ensure_ascii=ascii_only)
            docs[f"{tag}-crlf"] = two.replace("\n", "\r\n") + "\r\n"
        docs[f"{key}-tabs"] = json.dumps(value, indent="\t", ensure_ascii=False) + "\n"
        docs[f"{key}-compact"] = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return docs


def document_params() -> list:
    pretty = [pytest.param("pretty", name, id=f"pretty/{name}") for name in pretty_documents()]
    if not SUITE.is_dir():
        return pretty + [pytest.param("suite", "<missing>", marks=pytest.mark.skip(reason=MISSING))]
    return pretty + [pytest.param("suite", name, id=f"suite/{name}") for name in suite_documents()]


def is_complete_json(data: bytes) -> bool:
    """Independent of grammarc: strict UTF-8 and Python's json (no NaN/Infinity)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False

    def reject(name: str):
        raise ValueError(f"{name} is not JSON")

    try:
        json.loads(text, parse_constant=reject)
    except (ValueError, RecursionError):
        return False
    return True


# ------------------------------------------------------------------ (a) documents


@pytest.mark.parametrize("vocab_name", list(VOCABS))
@pytest.mark.parametrize("source, doc_name", document_params())
def test_canonical_tokenization_is_accepted(vocab_name, source, doc_name):
    documents = suite_documents() if source == "suite" else pretty_documents()
    document = documents[doc_name]
    _, encode, lead = VOCABS[vocab_name]
    engine = base_engine(vocab_name).clone()
    engine.reset()
    vocab = engine.vocab
    ids = encode(document)
    expected = lead + document.encode("utf-8")
    assert vocab.decode(ids) == expected, "the vocabulary's bytes disagree with the tokenizer"
    eos_ids = sorted(vocab.eos_token_ids)
    text = b""
    for step, token_id in enumerate(ids):
        mask = engine.allowed_mask()
        complete = is_complete_json(text)
        assert engine.accepts_eos() == complete, f"step {step}, text {text[-40:]!r}: EOS wrong"
        assert mask[eos_ids].tolist() == [complete] * len(eos_ids)
        assert mask[token_id], (
            f"step {step}: token {token_id} {vocab.tokens[token_id]!r} blocked after {text[-60:]!r}"
        )
        engine.advance(token_id)
        text += vocab.tokens[token_id]
    assert text == expected
    assert engine.accepts_eos(), "the whole document is complete but EOS is not allowed"
    assert all(engine.allowed_mask()[eos_ids])
    assert engine.advance(eos_ids[0]) is True


# --------------------------------------------------------------------- (b) walks


def json_completion(prefix: bytes) -> bytes:
    """A short text that turns a viable JSON prefix into a complete JSON text.

    A hand-written scanner that knows only JSON (not grammarc): it tracks open containers,
    strings (escapes, \\uXXXX, unfinished UTF-8 sequences), numbers and literals, then
    closes what is open with the shortest fillers ("0", '"":0', "ue"...).
    """
    stack: list[int] = []  # b"{"[0] / b"["[0]
    mode = "value"  # value | value_or_close | key | key_or_close | colon | after | string | number | literal
    is_key = False
    escape = 0  # 0 none, 1 after a backslash, 2..5: after "\u" and escape-2 hex digits
    utf8_left = utf8_lead = utf8_seen = 0
    number = ""  # "-", "0", "int", ".", "frac", "e", "esign", "exp"
    literal = b""
    for byte in prefix:
        c = bytes([byte])
        if mode == "string":
            if utf8_left:
                utf8_left, utf8_seen = utf8_left - 1, utf8_seen + 1
            elif escape == 1:
                escape = 2 if c == b"u" else 0
            elif escape >= 2:
                escape = escape + 1 if escape < 5 else 0
            elif c == b"\\":
                escape = 1
            elif c == b'"':
                mode = "colon" if is_key else "after"
            elif byte >= 0xC0:
                utf8_left = 3 if byte >= 0xF0 else 2 if byte >= 0xE0 else 1
                utf8_lead, utf8_seen = byte, 0
            continue
        if mode == "number":
            digit = c.isdigit()
            if number == "-":
                number = "0" if c == b"0" else "int"
                continue
            if number in ("0", "int") and c == b".":
                number = "."
                continue
            if number in ("0", "int", "frac") and c in b"eE":
                number = "e"
                continue
            if (number == "int" and digit) or (number in (".", "frac") and digit):
                number = "frac" if number in (".", "frac") else "int"
                continue
            if number == "e" and c in b"+-":
                number = "esign"
                continue
            if number in ("e", "esign", "exp") and digit:
                number = "exp"
                continue
            mode = "after"  # the number ended before this byte
        if mode == "literal":
            literal = literal[1:]
            mode = "literal" if literal else "after"
            continue
        if c in b" \t\r\n":
            continue
        if mode in ("value", "value_or_close"):
            if mode == "value_or_close" and c == b"]":
                stack.pop()
                mode = "after"
            elif c in b"{[":
                stack.append(byte)
                mode = "key_or_close" if c == b"{" else "value_or_close"
            elif c == b'"':
                mode, is_key, escape = "string", False, 0
            elif c == b"-" or c.isdigit():
                mode, number = "number", {b"-": "-", b"0": "0"}.get(c, "int")
            else:
                mode, literal = "literal", {b"t": b"rue", b"f": b"alse", b"n": b"ull"}[c]
        elif mode in ("key", "key_or_close"):
            if mode == "key_or_close" and c == b"}":
                stack.pop()
                mode = "after"
            else:
                assert c == b'"', prefix
                mode, is_key, escape = "string", True, 0
        elif mode == "colon":
            assert c == b":", prefix
            mode = "value"
        else:
            assert mode == "after" and stack, prefix
            if c == b",":
                mode = "key" if stack[-1] == ord("{") else "value"
            else:
                assert c == (b"}" if stack[-1] == ord("{") else b"]"), prefix
                stack.pop()
    out = b""
    if mode == "string":
        if utf8_left:  # the smallest valid continuation (E0 needs A0.., F0 needs 90..)
            second = {0xE0: 0xA0, 0xF0: 0x90}.get(utf8_lead, 0x80) if utf8_seen == 0 else 0x80
            out += bytes([second]) + b"\x80" * (utf8_left - 1)
        out += b"n" if escape == 1 else b"0" * (6 - escape) if escape >= 2 else b""
        out += b'"'
        mode = "colon" if is_key else "after"
    elif mode == "number":
        out += b"0" if number in ("-", ".", "e", "esign") else b""
        mode = "after"
    elif mode == "literal":
        out += literal
        mode = "after"
    out += {"colon": b":0", "value": b"0", "key": b'"":0', "key_or_close": b"}", "value_or_close": b"]"}.get(mode, b"")
    if mode in ("key_or_close", "value_or_close"):
        stack.pop()
    return out + bytes(ord("}") if opener == ord("{") else ord("]") for opener in reversed(stack))


@pytest.mark.parametrize(
    "prefix, completion",
    [
        (b"", b"0"), (b"{", b"}"), (b'{"a', b'":0}'), (b'{"a" ', b":0}"), (b"[1,", b"0]"),
        (b"[1.", b"0]"), (b"[-", b"0]"), (b"[1e+", b"0]"), (b'["\\u12', b'00"]'), (b'["\\', b'n"]'),
        (b'{"a":tr', b"ue}"), (b'["\xe0', b'\xa0\x80"]'), (b'["\xf0\x9f', b'\x80\x80"]'),
        (b'{"a":1,', b'"":0}'), (b'[[{"x":[', b"]}]]"), (b"12", b""), (b'"ab', b'"'),
        (b"[1 ", b"]"), (b'{"a" : [] ', b"}"), (b'{"a":"}"', b"}"), (b'[" \\" ', b'"]'),
    ],
)
def test_json_completion(prefix, completion):
    """The closing policy's scanner itself: exact completions, each valid JSON."""
    assert json_completion(prefix) == completion
    assert is_complete_json(prefix + completion)


def constrained_walk(engine: Engine, rng: random.Random) -> tuple[bytes, int]:
    """One walk from the empty text to EOS; returns (text, tokens). Asserts as it goes."""
    engine.reset()
    vocab = engine.vocab
    eos = min(vocab.eos_token_ids)
    text, steps = b"", 0
    while True:
        mask = engine.allowed_mask()
        allowed = np.flatnonzero(mask)
        assert len(allowed), f"empty mask after {steps} tokens: {text[-80:]!r}"
        complete = is_complete_json(text)
        assert engine.accepts_eos() == complete, f"EOS wrong after {text[-80:]!r}"
        if steps < UNIFORM_STEPS:
            token_id = int(allowed[rng.randrange(len(allowed))])
        elif complete:
            token_id = eos
        else:
            token_id = closing_token(engine, mask, text)
            assert steps < UNIFORM_STEPS + CLOSING_LIMIT, f"closing policy stuck: {text[-80:]!r}"
        if token_id in vocab.eos_token_ids:
            assert engine.advance(token_id) is True
            return text, steps
        engine.advance(token_id)
        text += vocab.tokens[token_id]
        steps += 1


def closing_token(engine: Engine, mask: np.ndarray, text: bytes) -> int:
    """The longest allowed token that spells a prefix of the JSON completion of `text`."""
    completion = json_completion(text)
    assert completion, f"the scanner thinks {text[-80:]!r} is complete"
    for length in range(min(len(completion), 32), 0, -1):
        for token_id in engine.vocab.ids_for(completion[:length]):
            if mask[token_id]:
                return token_id
    raise AssertionError(
        f"no allowed token starts the completion {completion[:20]!r} of {text[-80:]!r} "
        f"(single-byte tokens: {engine.vocab.ids_for(completion[:1])})"
    )


@pytest.mark.parametrize("vocab_name", list(VOCABS))
def test_random_constrained_walks_end_in_valid_json(vocab_name):
    engine = base_engine(vocab_name).clone()
    lengths = []
    for walk in range(WALKS):
        rng = random.Random(f"{vocab_name}/{walk}")
        text, steps = constrained_walk(engine, rng)
        assert is_complete_json(text), f"walk {walk}: not JSON: {text[:200]!r}"
        json.loads(text.decode("utf-8"))
        assert engine.is_finished()
        lengths.append(steps)
    # The walks must exercise the closing policy, not only stop early by chance.
    assert WALKS < 20 or sum(n >= UNIFORM_STEPS for n in lengths) >= WALKS // 10, sorted(lengths)
