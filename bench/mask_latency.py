"""Mask latency: compile time, index build time and per-token mask / advance time.

    python bench/mask_latency.py                   # Llama-3 vocabulary (needs quicktok-v1)
    python bench/mask_latency.py --vocab tiny      # 300-token toy vocabulary, seconds
    python bench/mask_latency.py --docs 40 --workload json

Each workload is a grammar plus documents in its language. The documents are tokenized
canonically (Llama-3: quicktok's own encoder; tiny: greedy longest match) and replayed
token by token through an `Engine`; every token must be allowed and EOS must be allowed at
the end, so the benchmark also checks what it times. See bench/README.md for what each
figure means.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

import grammarc
from grammarc import Engine, Grammar, Vocabulary

Encoder = Callable[[str], list[int]]


# ------------------------------------------------------------------ workloads


@dataclass(frozen=True)
class Workload:
    """A grammar (built by `grammar`, so building it can be timed) and its documents."""

    name: str
    grammar: Callable[[], Grammar]
    documents: Callable[[int], list[str]]


WORDS = ["alpha", "beta", "gamma", "delta", "Zoë", "naïve café", "日本語", "emoji 😀", "tab\there",
         'quote "q"', "back\\slash", "line\nbreak", "", "x" * 30]


def _json_value(rng: random.Random, depth: int):
    kind = rng.choice(["obj", "arr", "str", "num", "lit"] if depth < 4 else ["str", "num", "lit"])
    if kind == "obj":
        return {f"{rng.choice(WORDS)[:12]}_{i}": _json_value(rng, depth + 1) for i in range(rng.randint(0, 4))}
    if kind == "arr":
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind == "str":
        return rng.choice(WORDS)
    if kind == "num":
        return rng.choice([rng.randint(-10**6, 10**6), round(rng.uniform(-1e3, 1e3), 4), 1.5e-7, 6.02e23])
    return rng.choice([True, False, None])


def json_documents(n: int) -> list[str]:
    """Pretty-printed nested documents (indent 2 and 4, raw unicode and \\u escapes)."""
    rng = random.Random(1)
    docs = []
    for i in range(n):
        value = {"id": i, "payload": _json_value(rng, 0), "items": [_json_value(rng, 2) for _ in range(3)]}
        docs.append(json.dumps(value, indent=2 if i % 2 else 4, ensure_ascii=i % 3 == 0))
    return docs


def _expression(rng: random.Random, depth: int) -> str:
    if depth > 3 or rng.random() < 0.3:
        return rng.choice([str(rng.randint(0, 999)), f"{rng.randint(0, 99)}.{rng.randint(0, 99)}"])
    if rng.random() < 0.15:
        return "-" + _expression(rng, depth + 1)
    if rng.random() < 0.3:
        return "(" + _expression(rng, depth + 1) + ")"
    op = rng.choice([" + ", " - ", " * ", " / ", "+", "*"])
    return _expression(rng, depth + 1) + op + _expression(rng, depth + 1)


def arithmetic_documents(n: int) -> list[str]:
    rng = random.Random(2)
    return [_expression(rng, 0) for _ in range(n)]


SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0, "maximum": 100000},
        "name": {"type": "string", "maxLength": 40},
        "status": {"enum": ["active", "inactive", "banned"]},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "required": ["city", "zip"],
            "additionalProperties": False,
        },
    },
    "required": ["id", "name", "status", "score", "tags", "address"],
    "additionalProperties": False,
}


def schema_documents(n: int) -> list[str]:
    """Records valid under `SCHEMA`, laid out as ``json.dumps(indent=2)`` (the grammar's layout)."""
    rng = random.Random(3)
    docs = []
    for i in range(n):
        record = {
            "id": rng.randint(0, 100000),
            "name": rng.choice(WORDS)[:40],
            "status": rng.choice(["active", "inactive", "banned"]),
            "score": rng.choice([rng.randint(-50, 50), round(rng.uniform(0, 100), 3)]),
            "tags": [rng.choice(WORDS)[:10] for _ in range(rng.randint(0, 5))],
            "address": {"city": rng.choice(["Paris", "Zürich", "東京", "Lima"]), "zip": f"{rng.randint(0, 99999):05d}"},
        }
        docs.append(json.dumps(record, indent=2, ensure_ascii=i % 2 == 0))
    return docs


def _schema_grammar() -> Grammar:
    return Grammar.from_json_schema(SCHEMA, indent=2)


WORKLOADS = {
    "json": Workload("json", lambda: grammarc.stdlib("json"), json_documents),
    "arithmetic": Workload("arithmetic", lambda: grammarc.stdlib("arithmetic"), arithmetic_documents),
    "json-schema": Workload("json-schema", _schema_grammar, schema_documents),
}


# --------------------------------------------------------------- vocabularies


def llama3_vocab() -> tuple[Vocabulary, Encoder]:
    """Llama-3 from quicktok-v1's shipped rank data; its encoder is the canonical one."""
    try:
        import quicktok
    except ImportError:
        sys.exit("the Llama-3 vocabulary needs quicktok-v1 (pip install quicktok-v1), or use --vocab tiny")
    enc = quicktok.get_encoding("llama3")
    specials = {name: enc.encode_single_token(name) for name in enc.special_tokens_set}
    special_ids = set(specials.values())
    ranks = {enc.decode_single_token_bytes(i): i for i in range(enc.n_vocab) if i not in special_ids}
    vocab = Vocabulary.from_tiktoken(ranks, special_tokens=specials, eos=("<|end_of_text|>", "<|eot_id|>"))
    return vocab, lambda text: list(enc.encode(text))


TINY_PIECES = [
    '{"', '":', '",', '"}', '"]', ": ", ", ", "},", "],", "  ", "    ", "\n  ", "\n    ", "\r\n",
    "true", "false", "null", "id", "name", "00", "12", "0.", " + ", " * ", ")", "((", "\\u", "\\n",
    "é", "日本", "😀", "alpha", "beta", "gamma", "ss", "at", "us", "ta", "in",
]


def tiny_vocab() -> tuple[Vocabulary, Encoder]:
    """Every single byte, a few dozen JSON-ish pieces and EOS: builds in milliseconds."""
    pieces = [bytes([b]) for b in range(256)] + [p.encode() for p in TINY_PIECES]
    vocab = Vocabulary.from_bytes(pieces + [b""], eos_token_ids=[len(pieces)])
    by_bytes = {p: i for i, p in enumerate(pieces)}
    longest = max(len(p) for p in pieces)

    def encode(text: str) -> list[int]:  # greedy longest match
        data, ids, pos = text.encode(), [], 0
        while pos < len(data):
            for size in range(min(longest, len(data) - pos), 0, -1):
                token_id = by_bytes.get(data[pos : pos + size])
                if token_id is not None:
                    ids.append(token_id)
                    pos += size
                    break
        return ids

    return vocab, encode


VOCABS = {"llama3": llama3_vocab, "tiny": tiny_vocab}


# ------------------------------------------------------------------ measuring


@dataclass
class Result:
    workload: str
    documents: int
    tokens: int
    parse_ms: float
    compile_cold_ms: float
    compile_warm_ms: float
    engine_init_ms: float
    index_states: int
    index_build_ms: float
    first_pass_ms: float
    mask_us: list[float]
    memo_mask_us: list[float]
    advance_us: list[float]


def _ms(seconds: float) -> float:
    return seconds * 1e3


def _timed_compile(grammar: Grammar):
    """First compile of `grammar` in this process, then a second one with the compile cache
    cleared (imports, regex caches and the like already warm)."""
    from grammarc import compiler

    start = time.perf_counter()
    compiled = grammar.compile()
    cold = time.perf_counter() - start
    clear = getattr(getattr(compiler, "_compile_cached", None), "cache_clear", None)
    if clear is not None:
        clear()
    start = time.perf_counter()
    grammar.compile()
    warm = time.perf_counter() - start
    if clear is not None:
        clear()
    return compiled, cold, warm


def _count_builds(index) -> list[float]:
    """Wrap the index's lazy per-state build to record how long each state took."""
    spans: list[float] = []
    build = index._build_state

    def timed(t: int, q: int) -> None:
        start = time.perf_counter()
        build(t, q)
        spans.append(time.perf_counter() - start)

    index._build_state = timed
    return spans


def _replay(
    engine: Engine, encoded: list[list[int]], buf: np.ndarray, mask_us: list, advance_us: list | None,
    *, compute: bool = False,
) -> None:
    """Feed every document: time fill_bitmask and advance per token; check as it goes.

    With `compute`, the engine's mask memo is emptied before every mask, so each one is
    computed from the index (OR of inside masks + parser walk of the trees)."""
    eos = min(engine.vocab.eos_token_ids)
    clock = time.perf_counter_ns
    memo = engine._memo
    for number, ids in enumerate(encoded):
        engine.reset()
        for token_id in [*ids, eos]:
            if compute:
                memo.clear()
            start = clock()
            engine.fill_bitmask(buf)
            mask_us.append((clock() - start) / 1e3)
            if not (int(buf[token_id >> 5]) >> (token_id & 31)) & 1:
                raise AssertionError(f"document {number}: token {token_id} is not allowed")
            start = clock()
            engine.advance(token_id)
            if advance_us is not None:
                advance_us.append((clock() - start) / 1e3)
        if not engine.is_finished():
            raise AssertionError(f"document {number}: EOS did not finish the engine")


class Unavailable(Exception):
    """A workload's grammar cannot be built in this checkout (e.g. a missing frontend)."""


def _best_of(repeat: int, run: Callable[[list, list], None]) -> tuple[list[float], list[float]]:
    """Run a timed replay `repeat` times; keep each token's fastest time (the replays visit
    the same tokens in the same order), which filters out scheduler noise on busy machines."""
    masks, advances = [], []
    for _ in range(repeat):
        mask_us: list[float] = []
        advance_us: list[float] = []
        run(mask_us, advance_us)
        masks.append(mask_us)
        advances.append(advance_us)
    return np.min(masks, axis=0).tolist(), np.min(advances, axis=0).tolist()


def run_workload(workload: Workload, vocab: Vocabulary, encode: Encoder, n_docs: int, repeat: int = 3) -> Result:
    start = time.perf_counter()
    try:
        grammar = workload.grammar()
    except (ImportError, NotImplementedError, grammarc.GrammarcError) as exc:
        raise Unavailable(f"{type(exc).__name__}: {exc}") from exc
    parse = time.perf_counter() - start
    compiled, cold, warm = _timed_compile(grammar)
    documents = workload.documents(n_docs)
    for doc in documents:
        if not grammar.accepts(doc):
            raise AssertionError(f"{workload.name}: a benchmark document is not in the language: {doc[:80]!r}")
    encoded = [encode(doc) for doc in documents]

    start = time.perf_counter()
    engine = Engine(compiled, vocab)
    engine_init = time.perf_counter() - start
    builds = _count_builds(engine.index)
    buf = np.zeros(-(-vocab.size // 32), dtype=np.int32)

    # Pass 1: first use -- index parts are built lazily on the states first visited.
    start = time.perf_counter()
    _replay(engine, encoded, buf, [], None)
    first_pass = time.perf_counter() - start
    # Pass 2: index built, mask memo emptied before every token -- every mask is computed.
    mask_us, advance_us = _best_of(repeat, lambda m, a: _replay(engine, encoded, buf, m, a, compute=True))
    # Pass 3: the same states again -- every mask is a memo hit.
    memo_us, _ = _best_of(repeat, lambda m, a: _replay(engine, encoded, buf, m, a))
    return Result(
        workload.name, len(documents), sum(len(ids) + 1 for ids in encoded), _ms(parse), _ms(cold),
        _ms(warm), _ms(engine_init), len(builds), _ms(sum(builds)), _ms(first_pass), mask_us, memo_us,
        advance_us,
    )


# ------------------------------------------------------------------- printing


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def _table(headers: list[str], rows: Iterable[list[str]]) -> str:
    rows = [headers, *rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(headers))]
    lines = ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def report(results: list[Result], vocab_name: str, vocab: Vocabulary, repeat: int) -> str:
    setup = _table(
        ["workload", "docs", "tokens", "parse ms", "compile cold ms", "compile warm ms",
         "engine init ms", "index states", "index build ms", "first pass ms"],
        [[r.workload, str(r.documents), str(r.tokens), f"{r.parse_ms:.1f}", f"{r.compile_cold_ms:.1f}",
          f"{r.compile_warm_ms:.1f}", f"{r.engine_init_ms:.1f}", str(r.index_states),
          f"{r.index_build_ms:.1f}", f"{r.first_pass_ms:.1f}"] for r in results],
    )

    def stats(values: list[float]) -> list[str]:
        return [f"{percentile(values, 50):.1f}", f"{percentile(values, 99):.1f}",
                f"{sum(values) / len(values):.1f}", f"{max(values):.1f}"]

    latency = _table(
        ["workload", "mask p50 us", "p99", "mean", "max", "memo hit p50 us", "p99", "mean", "max",
         "advance p50 us", "p99", "mean", "max"],
        [[r.workload, *stats(r.mask_us), *stats(r.memo_mask_us), *stats(r.advance_us)] for r in results],
    )
    return (
        f"vocabulary: {vocab_name} ({vocab!r}); per-token times are the best of {repeat} replays\n\n"
        f"{setup}\n\n{latency}\n"
    )


def main(argv: list[str] | None = None) -> list[Result]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", choices=sorted(VOCABS), default="llama3")
    parser.add_argument("--docs", type=int, default=20, help="documents per workload (default 20)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed replays per pass; each token keeps its fastest time (default 3)")
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="run only this workload (repeatable; default: all)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    vocab, encode = VOCABS[args.vocab]()
    print(f"vocabulary loaded in {time.perf_counter() - start:.2f} s", flush=True)
    results = []
    for name in args.workload or list(WORKLOADS):
        try:
            results.append(run_workload(WORKLOADS[name], vocab, encode, args.docs, max(1, args.repeat)))
        except Unavailable as exc:
            print(f"skipping {name}: {exc}", flush=True)
            continue
        print(f"{name}: done", flush=True)
    print()
    print(report(results, args.vocab, vocab, max(1, args.repeat)))
    return results


if __name__ == "__main__":
    main()
