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
import contextlib
import csv
import gc
import json
import math
import os
import pickle
import random
import resource
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

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
    schema: dict | None = None  # JSON Schema workloads: the schema (peers compile it themselves)
    layout: str | None = None  # ... and its layout: "compact", "pretty" (indent 2) or "indent2"


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


def _closed(properties: dict) -> dict:
    """An object schema with every property required and no other property: the same
    language under every engine's reading (xgrammar's strict mode, llguidance's default)."""
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


CLASSES = ["warrior", "mage", "rogue", "cleric", "ranger"]
ITEM_KINDS = ["weapon", "armor", "potion", "scroll", "misc"]
SKILLS = ["stealth", "arcana", "athletics", "persuasion", "perception"]

RPG_SCHEMA = _closed({
    "name": {"type": "string", "maxLength": 32},
    "class": {"enum": CLASSES},
    "alignment": {"enum": ["lawful good", "neutral", "chaotic evil"]},
    "level": {"type": "integer", "minimum": 1, "maximum": 20},
    "hit_points": {"type": "integer", "minimum": 0},
    "inventory": {"type": "array", "items": _closed({
        "item": {"type": "string"}, "kind": {"enum": ITEM_KINDS},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 99},
    })},
    "skills": {"type": "array", "items": _closed({"skill": {"enum": SKILLS},
                                                  "rank": {"type": "integer", "minimum": 0, "maximum": 5}})},
})

GSM8K_SCHEMA = _closed({
    "thoughts": {"type": "array", "items": _closed({
        "step": {"type": "string"}, "calculation": {"type": "string"}, "result": {"type": "string"},
    })},
    "answer": {"type": "string"},
})

# the layouts: grammarc keyword arguments and the matching json.dumps ones
LAYOUTS = {"compact": ({"whitespace": "compact"}, {"separators": (",", ":")}),
           "pretty": ({"indent": 2}, {"indent": 2})}

NAMES = ["Aria", "Borin Ironfoot", "Zoë", "Ł'ukasz", "Kael \"the Quick\"", "影丸", "Mira 🌙", ""]


def rpg_records(n: int) -> list[dict]:
    rng = random.Random(4)
    return [{
        "name": rng.choice(NAMES),
        "class": rng.choice(CLASSES),
        "alignment": rng.choice(["lawful good", "neutral", "chaotic evil"]),
        "level": rng.randint(1, 20),
        "hit_points": rng.randint(0, 500),
        "inventory": [{"item": rng.choice(["longsword", "healing potion", "rope (50 ft)", "épée", "lute"]),
                       "kind": rng.choice(ITEM_KINDS), "quantity": rng.randint(1, 99)}
                      for _ in range(rng.randint(0, 4))],
        "skills": [{"skill": s, "rank": rng.randint(0, 5)} for s in rng.sample(SKILLS, rng.randint(0, 3))],
    } for _ in range(n)]


def gsm8k_records(n: int) -> list[dict]:
    rng = random.Random(5)
    records = []
    for _ in range(n):
        a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 9)
        thoughts = [
            {"step": f"Natalia sold {a} clips in April and {b} in May.", "calculation": f"{a} + {b}",
             "result": str(a + b)},
            {"step": "Each clip costs the same; multiply by the price.", "calculation": f"({a} + {b}) * {c}",
             "result": str((a + b) * c)},
            {"step": "Half of it goes to savings.", "calculation": f"{(a + b) * c} / 2",
             "result": f"{(a + b) * c / 2:g}"},
        ][: rng.randint(1, 3)]
        records.append({"thoughts": thoughts, "answer": thoughts[-1]["result"]})
    return records


def _schema_workload(name: str, schema: dict, records: Callable[[int], list[dict]], layout: str) -> Workload:
    grammar_kw, dumps_kw = LAYOUTS[layout]

    def documents(n: int) -> list[str]:
        return [json.dumps(r, ensure_ascii=i % 2 == 1, **dumps_kw) for i, r in enumerate(records(n))]

    return Workload(f"{name}-{layout}", lambda: Grammar.from_json_schema(schema, **grammar_kw), documents,
                    schema=schema, layout=layout)


C_TYPES = ["int", "char", "float"]


def _c_expr(rng: random.Random, names: list[str], depth: int = 0) -> str:
    if depth > 2 or rng.random() < 0.35:
        return rng.choice([*names, str(rng.randint(0, 999)), "1.5f", ".5", "'a'", "'\\n'", "2e3"])
    pick = rng.random()
    if pick < 0.5:
        op = rng.choice(["+", "-", "*", "/", "%", "<", ">=", "==", "!=", "&&", "||"])
        space = rng.choice([" ", ""])
        return f"{_c_expr(rng, names, depth + 1)}{space}{op}{space}{_c_expr(rng, names, depth + 1)}"
    if pick < 0.65:
        return f"({_c_expr(rng, names, depth + 1)})"
    if pick < 0.8:
        return f"f{rng.randint(0, 3)}({_c_expr(rng, names, depth + 1)}, {_c_expr(rng, names, depth + 1)})"
    return rng.choice(["-", "!"]) + _c_expr(rng, names, depth + 1)


def _c_statements(rng: random.Random, names: list[str], indent: str, depth: int) -> list[str]:
    lines = []
    for _ in range(rng.randint(1, 4)):
        pick = rng.random()
        if pick < 0.3:
            name = f"v{len(names)}"
            lines.append(f"{indent}{rng.choice(C_TYPES)} {name} = {_c_expr(rng, names)};")
            names = [*names, name]
        elif pick < 0.45 and depth < 2:
            lines.append(f"{indent}if ({_c_expr(rng, names)}) {{")
            lines += _c_statements(rng, names, indent + "    ", depth + 1)
            lines.append(f"{indent}}} else {{")
            lines += _c_statements(rng, names, indent + "    ", depth + 1)
            lines.append(f"{indent}}}")
        elif pick < 0.6 and depth < 2:
            lines.append(f"{indent}for (int i = 0; i < {rng.randint(1, 64)}; i += 1) {{")
            lines += _c_statements(rng, [*names, "i"], indent + "    ", depth + 1)
            lines.append(f"{indent}}}")
        elif pick < 0.7 and depth < 2:
            lines.append(f"{indent}while ({_c_expr(rng, names)}) {{  /* loop */")
            lines += _c_statements(rng, names, indent + "    ", depth + 1)
            lines.append(f"{indent}}}")
        elif pick < 0.85 and names:
            lines.append(f"{indent}{rng.choice(names)} = {_c_expr(rng, names)};  // update")
        else:
            lines.append(f'{indent}puts("value: {rng.randint(0, 99)}\\n");')
    return lines


def c_documents(n: int) -> list[str]:
    """Small programs: globals, prototypes, functions with nested control flow and comments."""
    rng = random.Random(6)
    docs = []
    for _ in range(n):
        lines = ["/* generated */", "int puts(char *s);", f"char buf[{rng.randint(1, 64)}];", ""]
        for f in range(rng.randint(1, 3)):
            t = rng.choice(C_TYPES)
            lines.append(f"{t} f{f}({t} a, {t} b) {{")
            lines += _c_statements(rng, ["a", "b"], "    ", 0)
            lines.append("    return a + b;")
            lines.append("}")
            lines.append("")
        docs.append("\n".join(lines))
    return docs


def xml_documents(n: int) -> list[str]:
    """Book catalogs: declaration, attributes in both quotes, references, unicode text."""
    rng = random.Random(7)
    titles = ["Dune", "Les Misérables", "War &amp; Peace", "The &lt;Tag&gt; Book", "三体", "Don Quixote",
              "It&#39;s &#x263A;"]
    authors = ["Frank Herbert", "Victor Hugo", "Лев Толстой", "刘慈欣", "Miguel de Cervantes"]
    docs = []
    for _ in range(n):
        parts = ['<?xml version="1.0" encoding="UTF-8"?>\n' if rng.random() < 0.7 else "", "<catalog>\n"]
        for b in range(rng.randint(1, 4)):
            q = rng.choice(['"', "'"])
            lang = f" lang={q}{rng.choice(['en', 'fr', 'ru'])}{q}" if rng.random() < 0.5 else ""
            parts.append(f"  <book id={q}bk{len(docs)}-{b}{q}{lang}>\n    <title>{rng.choice(titles)}</title>\n")
            for _ in range(rng.randint(1, 3)):
                parts.append(f"    <author>{rng.choice(authors)}</author>\n")
            if rng.random() < 0.6:
                parts.append(f"    <year>{rng.randint(1600, 2024)}</year>\n")
            currency = f' currency="{rng.choice(["EUR", "USD", "JPY"])}"' if rng.random() < 0.5 else ""
            parts.append(f"    <price{currency}>{rng.randint(1, 99)}.{rng.randint(0, 99):02d}</price>\n  </book>\n")
        parts.append("</catalog>\n")
        docs.append("".join(parts))
    return docs


WORKLOADS = {
    "json": Workload("json", lambda: grammarc.stdlib("json"), json_documents),
    "arithmetic": Workload("arithmetic", lambda: grammarc.stdlib("arithmetic"), arithmetic_documents),
    "json-schema": Workload("json-schema", _schema_grammar, schema_documents, schema=SCHEMA, layout="indent2"),
    "rpg-compact": _schema_workload("rpg", RPG_SCHEMA, rpg_records, "compact"),
    "rpg-pretty": _schema_workload("rpg", RPG_SCHEMA, rpg_records, "pretty"),
    "gsm8k-compact": _schema_workload("gsm8k", GSM8K_SCHEMA, gsm8k_records, "compact"),
    "gsm8k-pretty": _schema_workload("gsm8k", GSM8K_SCHEMA, gsm8k_records, "pretty"),
    "c": Workload("c", lambda: grammarc.stdlib("c"), c_documents),
    "xml": Workload("xml", lambda: grammarc.stdlib("xml"), xml_documents),
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


@contextlib.contextmanager
def disk_cache(directory: Path | None, name: str) -> Iterator[None]:
    """grammarc's disk cache for a benchmark run: `directory`, or a fresh temporary one
    (removed after), so that no earlier run's compiled grammars or scans are found and a
    grammar's first pass is a first contact."""
    cache = Path(tempfile.mkdtemp(prefix=f"{name}-cache-")) if directory is None else directory
    previous = os.environ.get("GRAMMARC_CACHE_DIR")
    os.environ["GRAMMARC_CACHE_DIR"] = str(cache)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("GRAMMARC_CACHE_DIR", None)
        else:
            os.environ["GRAMMARC_CACHE_DIR"] = previous
        if directory is None:
            shutil.rmtree(cache, ignore_errors=True)


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
    mask_us: list[float]  # new documents, memos warm from other documents
    cold_mask_us: list[float]  # memo emptied before every mask: every mask computed
    memo_mask_us: list[float]
    advance_us: list[float]
    index_bytes: int | None = None  # the grammar's own index parts (inside masks + trees)
    memo_bytes: int | None = None  # memoized masks after the replays
    shared_bytes: int | None = None  # per-vocabulary data the index holds (token bytes)
    disk_bytes: int | None = None  # the on-disk scan cache, None: disk caching is off
    peak_rss_mb: float = 0.0  # the process's peak RSS after this workload (cumulative)
    first_mask_us: list[float] = field(default_factory=list)  # pass 1: the grammar's first documents


def _ms(seconds: float) -> float:
    return seconds * 1e3


def _timed_compile(grammar: Grammar):
    """First compile of `grammar` in this process, then a second one with the compile cache
    cleared (imports, regex caches and the like already warm). Each starts after a full
    garbage collection, so that a pause owed to earlier workloads' objects is not counted."""
    from grammarc.lowering import compiler

    gc.collect()
    start = time.perf_counter()
    compiled = grammar.compile()
    cold = time.perf_counter() - start
    clear = getattr(getattr(compiler, "_compile_cached", None), "cache_clear", None)
    if clear is not None:
        clear()
    gc.collect()
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
    *, compute: bool = False, builds: list[float] | None = None,
) -> None:
    """Feed every document: time fill_bitmask and advance per token; check as it goes.

    With `compute`, the engine's mask memo (and the index's memo of tree walks per GSS
    level) is emptied before every mask, so each one is computed from the index: OR of
    inside masks + walk summaries + the parser walk of the frontier. With `builds`
    (the list `_count_builds` fills), time spent building index entries for states seen
    for the first time is left out of the mask time: it is reported as index build time."""
    eos = min(engine.vocab.eos_token_ids)
    clock = time.perf_counter_ns
    memos = [engine._memo, getattr(engine.index, "walks", {})]  # masks, and tree walks per level
    for number, ids in enumerate(encoded):
        engine.reset()
        for token_id in [*ids, eos]:
            if compute:
                for memo in memos:
                    memo.clear()
            built = len(builds) if builds is not None else 0
            start = clock()
            engine.fill_bitmask(buf)
            elapsed = (clock() - start) / 1e3
            if builds is not None and len(builds) > built:
                elapsed -= sum(builds[built:]) * 1e6
            mask_us.append(max(elapsed, 0.0))
            if not (int(buf[token_id >> 5]) >> (token_id & 31)) & 1:
                raise AssertionError(f"document {number}: token {token_id} is not allowed")
            start = clock()
            engine.advance(token_id)
            if advance_us is not None:
                advance_us.append((clock() - start) / 1e3)
        if not engine.is_finished():
            raise AssertionError(f"document {number}: EOS did not finish the engine")


def _array_bytes(value, seen: set[int]) -> int:
    """Bytes of a numpy array or a bytes buffer, or of the arrays inside a token set, each
    counted once."""
    if isinstance(value, (np.ndarray, bytes)) and id(value) not in seen:
        seen.add(id(value))
        return value.nbytes if isinstance(value, np.ndarray) else len(value)
    if hasattr(value, "packed_bits"):  # grammarc.tokens.token_set.TokenSet
        return _array_bytes(value.packed_bits, seen) + _array_bytes(value.packed_words, seen)
    return 0


def _tree_bytes(tree, seen: set[int]) -> int:
    """What a token tree holds as made so far (reading `open` would make the rest): its
    parts, and the level's arrays while some part is still to be made."""
    parts = tree._parts  # {terminal: (tokens, child)} of the parts made
    total = sys.getsizeof(tree)  # the tree with its arrays of candidates and parts
    if tree._source is not None:  # a level's suffixes (a shared set is counted once)
        suffixes = getattr(tree._source, "suffixes", tree._source)  # a big level's, or a small one's own
        total += _array_bytes(suffixes.rows, seen) + _array_bytes(suffixes.pos, seen)
    for tokens, child in parts.values():
        total += _array_bytes(tokens, seen) + (0 if child is None else _tree_bytes(child, seen))
    return total


def index_memory(index, memo: dict | None) -> tuple[int | None, int | None, int | None]:
    """(index bytes, memo bytes, shared per-vocabulary bytes) of a token index, measured on
    its numpy arrays and containers; None where the index does not expose the part."""
    seen: set[int] = set()
    try:
        tokens = index.tokens
        parts = (tokens.ids, tokens.lengths, tokens.offsets, tokens.data, tokens.sets)
        shared = sum(_array_bytes(part, seen) for part in parts)
        shared += _array_bytes(index._all, seen)
        own = sys.getsizeof(index._inside) + sys.getsizeof(index._mid)
        own += sum(_array_bytes(mask, seen) for mask in index._inside.values())
        own += sum(_tree_bytes(tree, seen) for tree in index._mid.values())
        own += sys.getsizeof(index.summaries) + sum(
            _array_bytes(summary.tokens, seen) for summary in index.summaries.values() if summary.tokens is not None
        )
    except AttributeError:
        return None, None, None
    memo_bytes = None if memo is None else sum(_array_bytes(m, seen) for m in memo.values()) + sys.getsizeof(memo)
    return own, memo_bytes, shared


def index_disk_bytes(index) -> int | None:
    """Bytes on disk of the terminal scans this process stored for the index's vocabulary
    (grammarc/tokens/scan_cache.py), after writing them; None when nothing is on disk
    (disk caching off, or every scan narrow enough to be redone rather than stored)."""
    from grammarc.tokens import scan_cache

    scan_cache.save_all()
    paths = scan_cache.files(index.vocab.key)
    return sum(p.stat().st_size for p in paths) if paths else None


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux)."""
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


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


def _forked(repeat: int, run: Callable[[], tuple[list[float], list[float]]]) -> tuple[list[float], list[float]]:
    """Run a timed replay `repeat` times, each in a fork of this process, so that every run
    starts from the same memos (a replay fills them; in-process repeats would time memo
    hits); keep each token's fastest time. Without fork, one run in-process. `run` should
    first touch what it will use (copy-on-write page faults would be timed otherwise)."""
    if not hasattr(os, "fork"):
        return run()
    runs = []
    for _ in range(repeat):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: measure, send, leave without atexit hooks
            os.close(read)
            try:
                payload = pickle.dumps(run())
            except BaseException as exc:  # noqa: BLE001 -- re-raised in the parent
                payload = pickle.dumps(exc)
            with os.fdopen(write, "wb") as f:
                f.write(payload)
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            outcome = pickle.loads(f.read())
        os.waitpid(pid, 0)
        if isinstance(outcome, BaseException):
            raise outcome
        runs.append(outcome)
    masks, advances = zip(*runs)
    return np.min(masks, axis=0).tolist(), np.min(advances, axis=0).tolist()


def split_documents(workload: Workload, n: int) -> tuple[list[str], list[str]]:
    """(warm-up documents, measured documents): `n` each, disjoint, from one generator."""
    documents = workload.documents(2 * n)
    return documents[:n], documents[n:]


def run_workload(workload: Workload, vocab: Vocabulary, encode: Encoder, n_docs: int, repeat: int = 3) -> Result:
    start = time.perf_counter()
    try:
        grammar = workload.grammar()
    except (ImportError, NotImplementedError, grammarc.GrammarcError) as exc:
        raise Unavailable(f"{type(exc).__name__}: {exc}") from exc
    parse = time.perf_counter() - start
    compiled, cold, warm = _timed_compile(grammar)
    warmup, measured = split_documents(workload, n_docs)
    for doc in warmup + measured:
        if not grammar.accepts(doc):
            raise AssertionError(f"{workload.name}: a benchmark document is not in the language: {doc[:80]!r}")
    warm_ids = [encode(doc) for doc in warmup]
    encoded = [encode(doc) for doc in measured]

    start = time.perf_counter()
    engine = Engine(compiled, vocab)
    engine_init = time.perf_counter() - start
    builds = _count_builds(engine.index)
    buf = np.zeros(-(-vocab.size // 32), dtype=np.int32)

    # Pass 1: first use -- index parts are built lazily on the states first visited.
    first_mask_us: list[float] = []
    start = time.perf_counter()
    _replay(engine, warm_ids, buf, first_mask_us, None)
    first_pass = time.perf_counter() - start

    # Pass 2: documents never replayed before, memos as the warm-up left them (each timed
    # run is a fork of this point): what a served request costs once the grammar is warm.
    def fresh() -> tuple[list[float], list[float]]:
        mask_us: list[float] = []
        advance_us: list[float] = []
        _replay(engine, warm_ids, buf, [], None)  # memo hits only: takes the fork's copy-on-write faults
        _replay(engine, encoded, buf, mask_us, advance_us, builds=builds)
        return mask_us, advance_us

    mask_us, advance_us = _forked(repeat, fresh)
    _replay(engine, encoded, buf, [], None)  # build the index parts the measured documents need
    # Pass 3: the mask memo emptied before every token -- every mask is computed: the cost
    # of a configuration met for the first time.
    cold_us, _ = _best_of(repeat, lambda m, a: _replay(engine, encoded, buf, m, a, compute=True))
    # Pass 4: the same states again -- every mask is a memo hit.
    memo_us, _ = _best_of(repeat, lambda m, a: _replay(engine, encoded, buf, m, a))
    own, memo, shared = index_memory(engine.index, getattr(engine, "_memo", None))
    return Result(
        workload.name, len(measured), sum(len(ids) + 1 for ids in encoded), _ms(parse), _ms(cold),
        _ms(warm), _ms(engine_init), len(builds), _ms(sum(builds)), _ms(first_pass), mask_us, cold_us,
        memo_us, advance_us, own, memo, shared, index_disk_bytes(engine.index), peak_rss_mb(), first_mask_us,
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


def _mb(n: int | None, missing: str = "n/a") -> str:
    return missing if n is None else f"{n / 2**20:.2f}"


def tables(results: list[Result]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The report's tables as (headers, rows) of strings: printed, and saved as CSV for docs."""
    def stats(values: list[float]) -> list[str]:
        return [f"{percentile(values, 50):.1f}", f"{percentile(values, 99):.1f}",
                f"{sum(values) / len(values):.1f}", f"{max(values):.1f}"]

    return {
        "setup": (
            ["workload", "docs", "tokens", "parse ms", "compile cold ms", "compile warm ms",
             "engine init ms", "index states", "index build ms", "first pass ms"],
            [[r.workload, str(r.documents), str(r.tokens), f"{r.parse_ms:.1f}", f"{r.compile_cold_ms:.1f}",
              f"{r.compile_warm_ms:.1f}", f"{r.engine_init_ms:.1f}", str(r.index_states),
              f"{r.index_build_ms:.1f}", f"{r.first_pass_ms:.1f}"] for r in results],
        ),
        "latency": (
            ["workload", "mask p50 us", "p99", "mean", "max", "computed p50 us", "p99", "mean", "max",
             "memo hit p50 us", "p99", "mean", "max", "advance p50 us", "p99", "mean", "max"],
            [[r.workload, *stats(r.mask_us), *stats(r.cold_mask_us), *stats(r.memo_mask_us), *stats(r.advance_us)]
             for r in results],
        ),
        "memory": (
            ["workload", "index MB", "memo MB", "shared vocab MB", "on disk MB", "peak RSS MB"],
            [[r.workload, _mb(r.index_bytes), _mb(r.memo_bytes), _mb(r.shared_bytes),
              _mb(r.disk_bytes, "disk cache off"), f"{r.peak_rss_mb:.0f}"] for r in results],
        ),
    }


def report(results: list[Result], vocab_name: str, vocab: Vocabulary, repeat: int) -> str:
    text = "\n\n".join(_table(headers, rows) for headers, rows in tables(results).values())
    return (
        f"vocabulary: {vocab_name} ({vocab!r}); per-token times are the best of {repeat} replays; "
        f"peak RSS is the process's, cumulative over the workloads run before\n\n{text}\n"
    )


def save(results: list[Result], directory: Path, vocab_name: str, repeat: int, command: str) -> None:
    """Write ``<vocab>.json`` (every figure, per-token times summarized) and one CSV per table
    (``<vocab>-<table>.csv``), which docs/performance.rst renders at build time."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, (headers, rows) in tables(results).items():
        with open(directory / f"{vocab_name}-{name}.csv", "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([headers, *rows])
    summary = []
    for r in results:
        entry = {k: v for k, v in asdict(r).items() if not k.endswith("_us")}
        for k in ("mask_us", "cold_mask_us", "memo_mask_us", "advance_us"):
            values = getattr(r, k)
            entry[k] = {"p50": percentile(values, 50), "p99": percentile(values, 99),
                        "mean": sum(values) / len(values), "max": max(values)}
        summary.append(entry)
    meta = {"command": command, "vocabulary": vocab_name, "repeat": repeat, "python": sys.version.split()[0],
            "machine": _machine()}
    (directory / f"{vocab_name}.json").write_text(json.dumps({"meta": meta, "results": summary}, indent=1) + "\n")


def _machine() -> str:
    import platform

    return f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}"


def main(argv: list[str] | None = None) -> list[Result]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", choices=sorted(VOCABS), default="llama3")
    parser.add_argument("--docs", type=int, default=20, help="documents per workload: N to warm up, N other ones measured (default 20)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed replays per pass; each token keeps its fastest time (default 3)")
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="run only this workload (repeatable; default: all)")
    parser.add_argument("--save", type=Path, metavar="DIR",
                        help="also write DIR/<vocab>.json and DIR/<vocab>-<table>.csv (docs use bench/results)")
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
    if args.save is not None:
        command = "python bench/mask_latency.py " + " ".join(argv if argv is not None else sys.argv[1:])
        save(results, args.save, args.vocab, max(1, args.repeat), command.strip())
    return results


if __name__ == "__main__":
    main()
