"""The compiled-grammar disk cache: what a second process saves.

    python bench/compiled_cache.py                      # a few big MaskBench schemas
    python bench/compiled_cache.py PATH.json ...        # MaskBench files (their "schema") or JSON Schemas

For each schema, three fresh processes time ``compile()`` alone (the schema is translated to
IR first, outside the timing, in every process):

* ``off``: ``GRAMMARC_CACHE_DIR=off`` (what every process paid before the disk cache);
* ``cold``: an empty cache directory: compile, then write the file;
* ``warm``: the same directory again: hash the IR, read the file, rebuild the grammar.

and reports the file's size and the compiled grammar's DFA tables in memory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "maskbench-dev"
DEFAULT = ["Kubernetes---kb_838_Normalized.json", "Github_hard---o83111.json", "Kubernetes---kb_1011_Normalized.json",
           "Github_ultra---o48661.json"]

_CHILD = r"""
import json, sys, time
from grammarc import Grammar
from grammarc.lowering import compiled_cache
data = json.load(open(sys.argv[1]))
schema = data["schema"] if isinstance(data, dict) and "schema" in data and "tests" in data else data
grammar = Grammar.from_json_schema(schema)
start = time.perf_counter()
compiled = grammar.compile()
ms = (time.perf_counter() - start) * 1e3
entry = compiled_cache.entry(grammar, 10_000, 512)
size = entry.path.stat().st_size if entry is not None and entry.path.exists() else 0
tables = sum(t.dfa.trans.nbytes + t.dfa.accept.nbytes for t in compiled.terminals)
print(json.dumps({"ms": ms, "stats": dict(compiled_cache.stats), "file": size, "tables": tables,
                  **compiled.summary()}))
"""


def _run(path: Path, cache: str) -> dict:
    env = dict(os.environ, GRAMMARC_CACHE_DIR=cache)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path)], env=env, capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args()
    paths = args.paths or [DATA / name for name in DEFAULT]
    print(f"{'schema':42} {'terminals':>9} {'dfa states':>10} {'lr states':>9} {'off ms':>7} {'cold ms':>7} "
          f"{'warm ms':>7} {'file KB':>7} {'tables KB':>9}")
    for path in paths:
        with tempfile.TemporaryDirectory(prefix="grammarc-bench-cache-") as cache:
            off, cold, warm = _run(path, "off"), _run(path, cache), _run(path, cache)
        if "error" in off:
            print(f"{path.name[:42]:42} {off['error']}")
            continue
        assert cold["stats"] == {"misses": 1, "writes": 1} and warm["stats"] == {"hits": 1}, (cold, warm)
        print(f"{path.name[:42]:42} {off['terminals']:>9} {off['dfa_states']:>10} {off['lr_states']:>9} "
              f"{off['ms']:>7.0f} {cold['ms']:>7.0f} {warm['ms']:>7.0f} {warm['file'] / 1024:>7.0f} "
              f"{warm['tables'] / 1024:>9.0f}")


if __name__ == "__main__":
    main()
