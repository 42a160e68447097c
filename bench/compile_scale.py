"""Compile time (and peak memory) against grammar size, for the families that used to blow up.

    python bench/compile_scale.py                      # every family, default sizes
    python bench/compile_scale.py --family enum --sizes 1000,10000,100000
    python bench/compile_scale.py --timeout 120        # per measurement

Families: `enum` (an alternation of N distinct string literals), `schema-enum` (a JSON Schema
``enum`` of N strings), `wide-rule` (one rule of N alternatives that are not all literals, plus
the first two masks on a small vocabulary), `rules-chain` / `rules-wide` (a generated .ebnf
of N rules: chains of references, and rules of a few alternatives each, parse and compile
timed apart), `literal` (one literal of N bytes). Each measurement runs in a fresh child
process, so the figures include nothing cached, and a child that runs past --timeout is
reported as such. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WORDS = """
def word(i):  # distinct, of mixed lengths, sharing prefixes the way real enums do
    return f"item_{i % 97}_{i}_" + "xyz"[: i % 4]
"""

FAMILIES: dict[str, tuple[str, list[int]]] = {
    "enum": (_WORDS + """
import grammarc
text = "start ::= " + " | ".join(repr(word(i)) for i in range(N)) + " ;"
t0 = time.perf_counter(); g = grammarc.Grammar.from_ebnf(text); parse = time.perf_counter() - t0
t0 = time.perf_counter(); c = g.compile(); comp = time.perf_counter() - t0
report(parse=parse, compile=comp, terminals=len(c.terminals), dfa_states=c.summary()["dfa_states"])
""", [1000, 10_000, 100_000]),
    "schema-enum": (_WORDS + """
import grammarc
schema = {"enum": [word(i) for i in range(N)]}
t0 = time.perf_counter(); g = grammarc.Grammar.from_json_schema(schema); parse = time.perf_counter() - t0
t0 = time.perf_counter(); c = g.compile(); comp = time.perf_counter() - t0
report(parse=parse, compile=comp, terminals=len(c.terminals), dfa_states=c.summary()["dfa_states"])
""", [1000, 10_000, 100_000]),
    "wide-rule": ("""
import grammarc
from grammarc import Engine, Vocabulary
alts = " | ".join(f"'k{i}' #'[0-9]+' x" for i in range(N))
text = f"start ::= ( {alts} ) ';' ;\\nx ::= 'x' | '(' start ')' ;"
t0 = time.perf_counter(); g = grammarc.Grammar.from_ebnf(text); parse = time.perf_counter() - t0
t0 = time.perf_counter(); c = g.compile(); comp = time.perf_counter() - t0
vocab = Vocabulary.from_bytes([bytes([b]) for b in range(32, 127)] + [b"k1", b"k12", b"0", b"12", b"x;", b""],
                              eos_token_ids=[100])
t0 = time.perf_counter(); e = Engine(g, vocab); e.allowed_token_ids(); first = time.perf_counter() - t0
t0 = time.perf_counter(); e.advance_bytes(b"k1"); e.allowed_token_ids(); second = time.perf_counter() - t0
report(parse=parse, compile=comp, first_mask=first, second_mask=second, terminals=len(c.terminals))
""", [500, 2000, 5000]),
    "rules-chain": ("""
import grammarc, warnings
warnings.simplefilter("ignore")
text = "".join(f"r{i} ::= 'x{i}' r{i + 1} | 'y' r{i + 1} 'y' | 'z{i}' ;\\n" for i in range(N))
text += f"r{N} ::= 'e' | '(' r0 ')' ;\\n"
t0 = time.perf_counter(); g = grammarc.Grammar.from_ebnf(text, start="r0"); parse = time.perf_counter() - t0
t0 = time.perf_counter(); c = g.compile(); comp = time.perf_counter() - t0
report(parse=parse, compile=comp, lr_states=c.tables.n_states)
""", [10_000, 50_000, 100_000]),
    "rules-wide": ("""
import grammarc, warnings
warnings.simplefilter("ignore")
lines = [f"r{i} ::= r{2 * i + 1} ',' r{2 * i + 2} | '[' r{2 * i + 1} ']' | 'v{i}' ;" for i in range(N // 2)]
lines += [f"r{i} ::= 'w{i}' | '(' r0 ')' ;" for i in range(N // 2, N + 1)]
text = "\\n".join(lines)
t0 = time.perf_counter(); g = grammarc.Grammar.from_ebnf(text, start="r0"); parse = time.perf_counter() - t0
t0 = time.perf_counter(); c = g.compile(); comp = time.perf_counter() - t0
report(parse=parse, compile=comp, lr_states=c.tables.n_states)
""", [10_000, 50_000, 100_000]),
    "literal": ("""
import grammarc
from grammarc.ir import Grammar, Literal
data = "".join(chr(97 + (i * 7) % 26) for i in range(N))
g = grammarc.Grammar(rules=(("start", Literal(data)),))
t0 = time.perf_counter(); c = g.compile(); comp = time.perf_counter() - t0
report(compile=comp, dfa_states=c.summary()["dfa_states"], accepts=g.accepts(data))
""", [10_000, 1_000_000, 10_000_000]),
}

_PRELUDE = """
import json, resource, time
N = {n}
def report(**figures):
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("@@" + json.dumps(figures))
"""


def measure(family: str, n: int, timeout: float) -> dict:
    """Run one family at size `n` in a child; its figures, or why there are none."""
    code = _PRELUDE.format(n=n) + textwrap.dedent(FAMILIES[family][0])
    t0 = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"outcome": f"timeout {timeout:.0f}s"}
    for line in done.stdout.splitlines():
        if line.startswith("@@"):
            return json.loads(line[2:]) | {"wall": time.perf_counter() - t0}
    return {"outcome": (done.stderr.strip().splitlines() or ["no output"])[-1][:100]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES))
    parser.add_argument("--sizes", help="comma-separated sizes (default: per family)")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    for family in args.family or list(FAMILIES):
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else FAMILIES[family][1]
        for n in sizes:
            figures = measure(family, n, args.timeout)
            shown = "  ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items())
            print(f"{family:12} {n:>10}  {shown}", flush=True)


if __name__ == "__main__":
    main()
