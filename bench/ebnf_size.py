"""Readability of schema grammars: `.ebnf` size, rule names and compiled sizes on MaskBench.

    python bench/ebnf_size.py                       # 50 schemas (every 32nd file of the dev sample)
    python bench/ebnf_size.py --every 16 --save out.json
    python bench/ebnf_size.py --compare before.json after.json

For each schema that compiles: the size of ``Grammar.from_json_schema(schema).to_ebnf()`` in
bytes, its number of rules and longest rule name, the translation and compile times (ms, one
cold run each: indicative only), and ``compiled.summary()`` (terminals, DFA states, LR
states...). ``--compare`` prints the totals of two saved runs side by side and lists the
schemas whose compiled summary grew. The data is ``../shared/data/maskbench-dev`` (see its
README); `--data` points elsewhere.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

from grammarc import Grammar
from grammarc.errors import GrammarcError

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "maskbench-dev"
SUMMARY_KEYS = ("terminals", "dfa_states", "nonterminals", "productions", "lr_states")


def measure(path: Path) -> dict | None:
    """One schema's figures, or None where it does not translate or compile."""
    schema = json.loads(path.read_text())["schema"]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            grammar = Grammar.from_json_schema(schema)
            t1 = time.perf_counter()
            compiled = grammar.compile()
            t2 = time.perf_counter()
    except (GrammarcError, ValueError):
        return None
    text = grammar.to_ebnf()
    return {
        "schema": path.name,
        "ebnf_bytes": len(text.encode("utf-8")),
        "rules": len(grammar.rules),
        "longest_name": max(len(name) for name, _ in grammar.rules),
        "translate_ms": round((t1 - t0) * 1000, 2),
        "compile_ms": round((t2 - t1) * 1000, 2),
        **{key: compiled.summary()[key] for key in SUMMARY_KEYS},
    }


def run(data: Path, every: int, start: int) -> list[dict]:
    files = sorted(data.glob("*.json"))[start::every]
    rows = []
    for path in files:
        row = measure(path)
        if row is not None:
            rows.append(row)
            print(f"{row['schema'][:60]:60} {row['ebnf_bytes']:>9} B {row['rules']:>5} rules "
                  f"{row['translate_ms']:>8.1f} + {row['compile_ms']:>8.1f} ms", flush=True)
    return rows


def totals(rows: list[dict]) -> dict:
    return {
        "schemas": len(rows),
        "ebnf_bytes": sum(r["ebnf_bytes"] for r in rows),
        "ebnf_bytes_p50": statistics.median(r["ebnf_bytes"] for r in rows),
        "longest_name": max(r["longest_name"] for r in rows),
        "translate_ms_p50": statistics.median(r["translate_ms"] for r in rows),
        "compile_ms_p50": statistics.median(r["compile_ms"] for r in rows),
        "translate_ms_sum": round(sum(r["translate_ms"] for r in rows)),
        "compile_ms_sum": round(sum(r["compile_ms"] for r in rows)),
        **{key: sum(r[key] for r in rows) for key in SUMMARY_KEYS},
    }


def compare(before: list[dict], after: list[dict]) -> None:
    common = {r["schema"] for r in before} & {r["schema"] for r in after}
    a = [r for r in before if r["schema"] in common]
    b = {r["schema"]: r for r in after if r["schema"] in common}
    ta, tb = totals(a), totals(list(b.values()))
    print(f"{'':22} {'before':>12} {'after':>12}")
    for key in ta:
        print(f"{key:22} {ta[key]:>12} {tb[key]:>12}")
    for row in a:
        new = b[row["schema"]]
        grew = [k for k in SUMMARY_KEYS if new[k] > row[k]]
        if grew:
            print(f"grew: {row['schema']}: " + ", ".join(f"{k} {row[k]} -> {new[k]}" for k in grew))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--every", type=int, default=32, help="take every Nth schema file (default 32: ~50)")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--save", type=Path, help="write the rows as JSON")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        compare(*(json.loads(p.read_text()) for p in args.compare))
        return 0
    if not args.data.is_dir():
        print(f"no data at {args.data}", file=sys.stderr)
        return 1
    rows = run(args.data, args.every, args.start)
    print(json.dumps(totals(rows), indent=1))
    if args.save:
        args.save.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
