"""MaskBench's cold protocol counted in instructions, for before/after figures this machine's
noise does not blur.

On a shared machine the same build's cold-path timings move by 10-25% between runs, more
than most single changes; an instruction count moves by well under 0.1%. Run under
callgrind with instrumentation off at start: the script switches it on for the measured
schemas only (after the warm-up on other schemas, with the collector frozen, as
maskbench.py's ``--no-fork`` does; with ``--per-phase`` or ``--per-schema`` the garbage of
the schemas before is collected, uncounted, before each one, as each fork of maskbench.py
starts without it), so valgrind's total is the measured responses' work:
schema -> grammar -> compiled -> first mask, then advance + mask per token. No compiled
grammar is stored on disk (a wall-time threshold decides that, which valgrind's slowdown
would pass for every grammar).

    PYTHONHASHSEED=0 valgrind --tool=callgrind --cache-sim=no --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out python bench/instructions.py --schemas 30
    callgrind_annotate /tmp/cg.out.1 | head -40          # where they went, by C function

``Collected :`` in valgrind's report is the figure. Instruction counts are not time (a
memory-bound loop costs more per instruction than the interpreter does), so read them with
a timed run beside. Compare revisions as bench/README.md says (each installed on its own),
with ``PYTHONHASHSEED=0`` so that the runs hash alike (the script says so when it is not
set; re-executing itself would leave valgrind behind). Outside
valgrind the switches do nothing and the script just runs the protocol. The switches are
valgrind's client requests, compiled on first use with the machine's C compiler (needs
``valgrind/callgrind.h``; without it, or without a compiler, the whole run is counted and
the script says so).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import maskbench as mb  # noqa: E402  (bench/ is not a package)

SWITCHES = r"""
#include <valgrind/callgrind.h>
void measure_on(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void measure_off(const char *name) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT(name); }
void measure_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
"""


def switches() -> tuple:
    """(on, off, stop): callgrind's client requests (off dumps what on counted, under a name;
    stop drops it), or no-ops where they cannot be built."""
    folder = Path(tempfile.mkdtemp(prefix="grammarc-instructions-"))
    source, library = folder / "switches.c", folder / "switches.so"
    source.write_text(SWITCHES)
    try:
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"instructions: no callgrind switches ({error}); the whole run is counted", file=sys.stderr)
        return (lambda: None), (lambda name: None), (lambda: None)
    lib = ctypes.CDLL(str(library))
    lib.measure_off.argtypes = [ctypes.c_char_p]
    return lib.measure_on, lambda name: lib.measure_off(name.encode()), lib.measure_stop


def report(prefix: str) -> None:
    """Print the counts of a ``--per-schema`` or ``--per-phase`` run (its dumps ``PREFIX.N``,
    each named by its schema, or by schema and phase), per schema, fewest first, and their
    median (per phase too): the median schema is what the response p50 follows, while the
    protocol's total is mostly its largest schemas'."""
    counts: dict[str, dict[str, int]] = {}
    for path in Path(prefix).parent.glob(Path(prefix).name + ".*"):
        text = path.read_text(errors="replace")
        name = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
        total = re.search(r"^totals: (\d+)", text, re.M) or re.search(r"^summary: (\d+)", text, re.M)
        if name and total:
            schema, _, phase = name.group(1).partition(PHASE_MARK)
            counts.setdefault(schema, {})[phase or "all"] = int(total.group(1))
    if not counts:
        sys.exit(f"instructions: no per-schema dumps at {prefix}.*")
    phases = [phase for phase in mb.PHASES if any(phase in parts for parts in counts.values())]
    rows = sorted((sum(parts.values()), schema, parts) for schema, parts in counts.items())
    widths = [max(len(phase), 8) + 2 for phase in phases]
    if phases:  # a --per-phase run: a column per phase, in M instructions
        print("".join(f"{phase:>{w}s}" for phase, w in zip(phases, widths)) + f"{'total':>10s}  (M instructions)")
    for total, schema, parts in rows:
        cells = "".join(f"{parts.get(phase, 0) / 1e6:{w}.2f}" for phase, w in zip(phases, widths))
        print(f"{cells}{total / 1e6:10.2f}  {schema}" if phases else f"{total / 1e6:9.2f} M  {schema}")
    if phases:
        medians = [statistics.median(parts.get(phase, 0) for *_, parts in rows) for phase in phases]
        print("".join(f"{m / 1e6:{w}.2f}" for m, w in zip(medians, widths)) + f"{'':10s}  median of each phase")
    print(f"{statistics.median(total for total, *_ in rows) / 1e6:9.2f} M  median of {len(rows)} schemas; "
          f"{sum(total for total, *_ in rows) / 1e6:.1f} M in all")


PHASE_MARK = " | "  # a --per-phase dump's name: schema, mark, phase


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=mb.DATA)
    parser.add_argument("--schemas", type=int, default=30, help="never-seen schemas measured (default 30)")
    parser.add_argument("--warmup", type=int, default=10, help="other schemas warmed up on first (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab", choices=sorted(mb.ml.VOCABS), default="llama3")
    parser.add_argument("--layout", choices=sorted(mb.GRAMMARC_OPTIONS), default="flexible")
    parser.add_argument("--per-schema", action="store_true",
                        help="one callgrind dump per measured schema, named by it (read them with --report); "
                             "the garbage of the schemas before is collected first, uncounted, as in each fork")
    parser.add_argument("--per-phase", action="store_true",
                        help="one callgrind dump per measured schema and phase (schema, compile, engine + first "
                             "mask, masks), named by both (read them with --report)")
    parser.add_argument("--report", metavar="PREFIX",
                        help="print a --per-schema or --per-phase run's counts from its dumps PREFIX.N "
                             "(no valgrind needed)")
    args = parser.parse_args()
    if args.report:
        return report(args.report)
    if os.environ.get("PYTHONHASHSEED") != "0":  # string hashes steer dict layouts (not re-executed
        # with it set: valgrind would not follow the new process)
        print("instructions: set PYTHONHASHSEED=0, or two runs hash apart", file=sys.stderr)
    os.environ.setdefault("GRAMMARC_CACHE_DIR", tempfile.mkdtemp(prefix="grammarc-instructions-cache-"))
    # The compiled-grammar cache stores a grammar whose compile took 50 ms of wall time; under
    # valgrind's ~50x slowdown every grammar does, and storing them was ~5% of the count.
    os.environ.setdefault("GRAMMARC_GRAMMAR_CACHE_MIN_MS", "1e12")
    cases = mb.load_cases(args.data)
    measured, warm = mb.cold_split(cases, args.schemas, args.warmup, args.seed)
    vocab, encode = mb.ml.VOCABS[args.vocab]()
    text = mb.COLD_TEXT[args.layout]
    ids = {case.name: encode(json.dumps(case.valid_instance(), ensure_ascii=False, **text))
           for case in warm + measured}
    on, off, stop = switches()
    for case in warm:
        mb.respond_grammarc(case, ids[case.name], vocab, args.layout)
    gc.collect()
    gc.freeze()  # the warm state is old, as in a server that has run a while
    statuses = []

    def respond(case: mb.Case, ended=None) -> None:
        statuses.append(mb.respond_grammarc(case, ids[case.name], vocab, args.layout, ended=ended).status)

    if args.per_phase:
        for case in measured:
            gc.collect()  # uncounted: each response meets only its own garbage, as each fork does
            done: list[str] = []

            def ended(phase: str, name: str = case.name) -> None:
                off(f"{name}{PHASE_MARK}{phase}")
                done.append(phase)
                on()
            on()
            respond(case, ended)
            if len(done) < len(mb.PHASES):  # refused: the phase it stopped in
                off(f"{case.name}{PHASE_MARK}{mb.PHASES[len(done)]}")
            else:
                stop()
    elif args.per_schema:
        for case in measured:
            gc.collect()
            on()
            respond(case)
            off(case.name)
    else:
        on()
        for case in measured:
            respond(case)
        off("measured schemas")
    print(f"measured {len(measured)} schemas after {len(warm)} others ({statuses.count('ok')} answered in full)")


if __name__ == "__main__":
    main()
