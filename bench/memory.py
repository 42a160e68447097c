"""Memory: resident set size and memo bytes while replaying many documents, and what
one-off grammars leave behind.

    python bench/memory.py                         # Llama-3 vocabulary (needs quicktok-v1), 10k JSON documents
    python bench/memory.py --vocab tiny --docs 2000
    python bench/memory.py --workload rpg-compact --one-off 20 --json bench/results/memory.json

Two parts:

* **replay**: the workload's documents, tokenized canonically, replayed token by token
  through one engine (every token must be allowed, EOS at the end). Reported at
  checkpoints: RSS (current, from /proc), the memos' counted bytes
  (`TokenIndex.memo_bytes`: masks, tree walks, walk summaries; each bounded by its
  budget in grammarc.tokens.memo), their entries and evictions.
* **one-off**: distinct JSON schemas (one enum value each), each compiled, given an
  engine, masked along one document and dropped; then the compile cache is cleared.
  Reported: RSS growth, indexes still alive after a collection (weak references), and
  the scan files written to the cache directory.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import weakref
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mask_latency as ml  # noqa: E402  (workloads, vocabularies)

import grammarc  # noqa: E402
from grammarc import Engine, Grammar  # noqa: E402


def rss_mb() -> float:
    """Current resident set size (Linux /proc; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return ml.peak_rss_mb()


def _mb(n: int | None, digits: int) -> float | None:
    return None if n is None else round(n / 2**20, digits)


def _memo_row(engine: Engine, docs: int, tokens: int, seconds: float) -> dict:
    index = engine.index
    memos = {"masks": index.masks, "walks": index.walks, "summaries": index.summaries}
    return {
        "docs": docs,
        "tokens": tokens,
        "rss_mb": round(rss_mb(), 1),
        # None where the memo does not count itself (a plain dict: grammarc before issue 10)
        "memo_mb": {name: _mb(getattr(m, "nbytes", None), 2) for name, m in memos.items()},
        "budget_mb": {name: _mb(getattr(m, "budget", None), 1) for name, m in memos.items()},
        "entries": {name: len(m) for name, m in memos.items()},
        "evictions": {name: getattr(m, "evictions", 0) for name, m in memos.items()},
        "seconds": round(seconds, 1),
    }


def replay(workload: ml.Workload, vocab, encode, n_docs: int) -> list[dict]:
    """RSS and memo figures after 0, 10, 100, ... documents and after `n_docs`."""
    engine = Engine(workload.grammar(), vocab)
    texts = workload.documents(n_docs)
    checkpoints = sorted({n for n in (0, 10, 100, 1000, 10_000, 100_000) if n < n_docs} | {n_docs})
    rows, tokens, start = [], 0, time.perf_counter()
    for i, text in enumerate(texts, 1):
        engine.reset()
        for token in encode(text):
            engine.packed_mask()
            engine.advance(token)
            tokens += 1
        engine.packed_mask()
        if not engine.accepts_eos():
            raise SystemExit(f"document {i} is not complete under the grammar")
        if i in checkpoints:
            rows.append(_memo_row(engine, i, tokens, time.perf_counter() - start))
    return rows


def one_off(vocab, encode, n: int) -> dict:
    """`n` distinct schemas, each used once and dropped."""
    from grammarc.lowering.compiler import _compile_cached
    from grammarc.tokens import scan_cache

    directory = scan_cache.cache_dir()
    before_files = set(directory.rglob(f"*{scan_cache.SUFFIX}")) if directory and directory.exists() else set()
    gc.collect()
    rss0 = rss_mb()
    refs = []
    for i in range(n):
        schema = {"type": "object", "properties": {"kind": {"enum": [f"kind-{i}"]}, "n": {"type": "integer"}},
                  "required": ["kind", "n"], "additionalProperties": False}
        engine = Engine(Grammar.from_json_schema(schema), vocab)
        for token in encode(json.dumps({"kind": f"kind-{i}", "n": 12}, separators=(",", ":"))):
            engine.packed_mask()
            engine.advance(token)
        refs.append(weakref.ref(engine.index))
        del engine
    scan_cache.save_all()
    gc.collect()
    alive_cached = sum(r() is not None for r in refs)
    _compile_cached.cache_clear()
    gc.collect()
    after_files = set(directory.rglob(f"*{scan_cache.SUFFIX}")) if directory and directory.exists() else set()
    return {
        "grammars": n,
        "rss_growth_mb": round(rss_mb() - rss0, 1),
        "indexes_alive_while_compile_cached": alive_cached,
        "indexes_alive_after_clear": sum(r() is not None for r in refs),
        "scan_files_written": len(after_files - before_files),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", choices=sorted(ml.VOCABS), default="llama3")
    parser.add_argument("--workload", choices=sorted(ml.WORKLOADS), default="json")
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--one-off", type=int, default=20, dest="one_off")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    vocab, encode = ml.VOCABS[args.vocab]()
    gc.collect()
    result = {"vocab": args.vocab, "workload": args.workload, "rss_after_vocab_mb": round(rss_mb(), 1),
              "replay": replay(ml.WORKLOADS[args.workload], vocab, encode, args.docs)}
    if args.one_off:
        result["one_off"] = one_off(vocab, encode, args.one_off)
    print(f"{args.vocab} / {args.workload}: RSS after loading the vocabulary {result['rss_after_vocab_mb']} MB")
    headers = ["docs", "tokens", "RSS MB", "masks MB", "walks MB", "summaries MB", "mask entries", "evictions", "s"]
    rows = [[str(r["docs"]), str(r["tokens"]), str(r["rss_mb"]), str(r["memo_mb"]["masks"]), str(r["memo_mb"]["walks"]),
             str(r["memo_mb"]["summaries"]), str(r["entries"]["masks"]), str(sum(r["evictions"].values())),
             str(r["seconds"])] for r in result["replay"]]
    print(ml._table(headers, rows))
    budgets = result["replay"][-1]["budget_mb"]
    print(f"memo budgets per index (MB): {budgets}")
    if args.one_off:
        print(f"one-off schemas: {result['one_off']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
