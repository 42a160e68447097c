"""Automata of well-known regexes shipped ready-made: the JSON Schema string formats.

A schema's ``"format": "uri"`` (or ``email``, ``iri-reference``, ...) becomes a regex of
thousands of characters whose DFA, built from scratch, costs 5 to 20 ms the first time a
process meets it: parsing, Thompson's construction, the subset construction and
minimization, for an automaton of a few hundred states. Those regexes are the same for
every schema, so their DFAs are stored in ``prebuilt_formats.bin`` next to this module, as
byte runs, and read back on first use (never at import): `find`. The regexes themselves are
stored too, under their formats' names (`named`): rendering one from its ECMA-262 source
(json_formats' parse and render) costs as much as building the automaton did.

The store is a cache, not a second definition: tests/test_prebuilt.py checks that every
stored DFA is the one `nfa.from_regex` builds from scratch, that every stored regex is the
one the JSON Schema front end renders from scratch, and that every format it renders is
stored; after a change to the formats' regexes, regenerate it
with ``python tests/prebuilt_formats.py`` (which calls `save`).
"""

from __future__ import annotations

import os
import zlib
from functools import lru_cache

import numpy as np

from grammarc import diskstore
from grammarc.automata.dfa import DFA, _make_edges

__all__ = ["PATH", "find", "named", "save"]

# zlib of a `grammarc.diskstore` container (the disk caches' format: a JSON header and raw
# arrays): the header lists the patterns and the names of the formats they render (one per
# pattern), automaton i's runs (src, lo, hi, dst: int32 [k, 4])
# and accept flags are the arrays ``runs{i}`` and ``accept{i}``. Not numpy's npz: its header
# parser leaves reference cycles behind (ast.literal_eval's closures), which the lowering
# must not.
PATH = os.path.join(os.path.dirname(__file__), "prebuilt_formats.bin")


def find(pattern: str) -> DFA | None:
    """The stored DFA of `pattern` (``re.fullmatch`` semantics, grammarc's dialect), or None."""
    return _load(pattern) if pattern in _store()[0] else None


def named(name: str) -> str | None:
    """The stored regex of the format called `name`, or None."""
    return _store()[2].get(name)


@lru_cache(maxsize=1)
def _store() -> tuple[dict[str, int], dict[str, np.ndarray], dict[str, str]]:
    """(pattern -> its number, the arrays, format name -> its pattern); empty when there is
    no store."""
    if not os.path.exists(PATH):
        return {}, {}, {}
    with open(PATH, "rb") as file:
        header, arrays = diskstore.unpack(zlib.decompress(file.read()))
    patterns = header["patterns"]
    return {pattern: i for i, pattern in enumerate(patterns)}, arrays, dict(zip(header["names"], patterns))


@lru_cache(maxsize=64)
def _load(pattern: str) -> DFA:
    """The stored DFA of `pattern`, from its runs (src, lo, hi, dst) and accept flags."""
    numbers, arrays, _ = _store()
    i = numbers[pattern]
    runs, accept = arrays[f"runs{i}"].astype(np.int64), arrays[f"accept{i}"]
    src, lo, hi, dst = runs.T
    width = hi - lo + 1
    first = np.repeat(np.cumsum(width) - width, width)  # where each run's bytes start, per byte
    byte = np.repeat(lo, width) + np.arange(int(width.sum())) - first
    return _make_edges(len(accept), np.repeat(src, width), byte, np.repeat(dst, width), accept)


def save(dfas: dict[str, DFA], names: list[str], path: str = PATH) -> None:
    """Store `dfas` (pattern -> its DFA, as `nfa.from_regex` builds it), pattern i as the
    regex of the format called names[i], at `path`."""
    if len(names) != len(dfas) or len(set(names)) != len(names):
        raise ValueError("one distinct format name per pattern")
    arrays = {}
    for i, dfa in enumerate(dfas.values()):
        runs = [(q, lo, hi, t) for q, row in enumerate(dfa._runs) for lo, hi, t in row]
        arrays[f"runs{i}"] = np.array(runs, dtype=np.int32).reshape(-1, 4)
        arrays[f"accept{i}"] = np.asarray(dfa.accept, dtype=bool)
    with open(path, "wb") as file:
        file.write(zlib.compress(diskstore.pack({"patterns": list(dfas), "names": list(names)}, arrays), 9))
