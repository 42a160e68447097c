"""Time vs. text length for right, left and middle recursion (and one ambiguous grammar).

Recognizing and masking must stay linear in the text for deterministic grammars,
whichever direction they recurse (issue 10). For each grammar and length this prints the
seconds taken by

* ``recognize``: `Recognizer.feed` of the whole text, then `is_complete`;
* ``engine``: an `Engine` over a byte vocabulary (every single byte a token, plus EOS)
  that asks for the mask and advances one byte at a time, as a sampler would;

plus the GSS work of the recognizer (`ParserCore.work`: vertices made and reduction
steps), which does not depend on the machine. No assertions: tests/test_linear_work.py
checks the work counts; this shows the time.

    python bench/recursion.py [--lengths 250,500,1000,2000] [--grammars right,left]
"""

from __future__ import annotations

import argparse
import time

from grammarc import Grammar, Vocabulary
from grammarc.engine import Engine
from grammarc.lowering import compiler
from grammarc.runtime.recognizer import Recognizer

GRAMMARS = {
    # name: (grammar, text of length n)
    "right": ("start ::= 'a' start | 'a' ;", lambda n: "a" * n),
    "left": ("start ::= start 'a' | 'a' ;", lambda n: "a" * n),
    "middle": ("start ::= '(' start ')' | 'x' ;", lambda n: "(" * ((n - 1) // 2) + "x" + ")" * ((n - 1) // 2)),
    "list": ("start ::= '[' items ']' ; items ::= item ',' items | item ; item ::= 'x' ;",
             lambda n: "[" + ",".join("x" * ((n - 1) // 2)) + "]"),
    "ambiguous": ("start ::= start start | 'a' ;", lambda n: "a" * n),
}
DEFAULT_LENGTHS = (250, 500, 1000, 2000)
AMBIGUOUS_SCALE = 8  # Catalan-many parses cost O(n^3) in any GLR: its lengths are divided by this


def fresh(source: str):
    """A compiled grammar with no parser memo carried over from another run."""
    compiler._compile_cached.cache_clear()
    return Grammar.from_ebnf(source).compile()


def _work(core) -> int:
    work = getattr(core, "work", None)
    return -1 if work is None else sum(work.values())


def recognize(compiled, text: str) -> tuple[float, int]:
    recognizer = Recognizer(compiled)
    core = recognizer.core
    before = _work(core)
    start = time.perf_counter()
    ok = recognizer.feed(text) and recognizer.is_complete()
    elapsed = time.perf_counter() - start
    assert ok, "bench text not in the language"
    return elapsed, (_work(core) - before if before >= 0 else -1)


def engine_run(compiled, vocab: Vocabulary, text: str) -> float:
    engine = Engine(compiled, vocab)
    start = time.perf_counter()
    for byte in text.encode():
        mask = engine.allowed_mask()
        assert mask[byte]
        engine.advance(byte)
    assert engine.allowed_mask()[256]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default=",".join(map(str, DEFAULT_LENGTHS)))
    parser.add_argument("--grammars", default=",".join(GRAMMARS))
    parser.add_argument("--no-engine", action="store_true", help="recognizer only")
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    vocab = Vocabulary.from_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
    print(f"{'grammar':<10} {'bytes':>6} {'recognize s':>12} {'work':>9} {'engine s':>10}")
    for name in args.grammars.split(","):
        source, make = GRAMMARS[name]
        for n in lengths:
            text = make(n // AMBIGUOUS_SCALE if name == "ambiguous" else n)
            rec, work = recognize(fresh(source), text)
            eng = float("nan") if args.no_engine else engine_run(fresh(source), vocab, text)
            print(f"{name:<10} {len(text):>6} {rec:>12.3f} {work:>9} {eng:>10.3f}", flush=True)


if __name__ == "__main__":
    main()
