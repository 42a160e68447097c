"""Automata of well-known regexes shipped ready-made: the JSON Schema string formats.

A schema's ``"format": "uri"`` (or ``email``, ``iri-reference``, ...) becomes a regex of
thousands of characters whose DFA, built from scratch, costs 5 to 20 ms the first time a
process meets it: parsing, Thompson's construction, the subset construction and
minimization, for an automaton of a few hundred states. Those regexes are the same for
every schema, so their DFAs are stored in ``prebuilt_formats.bin`` next to this module, as
byte runs, and read back on first use (never at import): `find`.

The store is a cache, not a second definition: tests/test_prebuilt.py checks that every
stored DFA is the one `nfa.from_regex` builds from scratch and that every format the JSON
Schema front end renders is stored; after a change to the formats' regexes, regenerate it
with ``python tests/prebuilt_formats.py`` (which calls `save`).
"""

from __future__ import annotations

import json
import os
import zlib
from functools import lru_cache

import numpy as np

from grammarc.automata.dfa import DFA, _make_edges

__all__ = ["PATH", "find", "save"]

# zlib of: the header's length (4 bytes, little-endian), the header (JSON: per automaton its
# pattern, states and runs), then per automaton its runs (src, lo, hi, dst: int32, little-
# endian) and accept flags (a byte each). Not numpy's npz: its header parser leaves
# reference cycles behind (ast.literal_eval's closures), which the lowering must not.
PATH = os.path.join(os.path.dirname(__file__), "prebuilt_formats.bin")


def find(pattern: str) -> DFA | None:
    """The stored DFA of `pattern` (``re.fullmatch`` semantics, grammarc's dialect), or None."""
    return _load(pattern) if pattern in _store()[1] else None


@lru_cache(maxsize=1)
def _store() -> tuple[bytes, dict[str, tuple[int, int, int]]]:
    """(the store's bytes, pattern -> (where its runs start, its states, its runs)); empty
    when there is no store."""
    if not os.path.exists(PATH):
        return b"", {}
    with open(PATH, "rb") as file:
        raw = zlib.decompress(file.read())
    size = int.from_bytes(raw[:4], "little")
    at = 4 + size
    where = {}
    for entry in json.loads(raw[4:at]):
        where[entry["pattern"]] = (at, entry["states"], entry["runs"])
        at += 16 * entry["runs"] + entry["states"]
    return raw, where


@lru_cache(maxsize=64)
def _load(pattern: str) -> DFA:
    """The stored DFA of `pattern`, from its runs (src, lo, hi, dst) and accept flags."""
    raw, where = _store()
    at, states, count = where[pattern]
    runs = np.frombuffer(raw, dtype="<i4", count=4 * count, offset=at).reshape(-1, 4).astype(np.int64)
    accept = np.frombuffer(raw, dtype=np.uint8, count=states, offset=at + 16 * count).astype(bool)
    src, lo, hi, dst = runs.T
    width = hi - lo + 1
    first = np.repeat(np.cumsum(width) - width, width)  # where each run's bytes start, per byte
    byte = np.repeat(lo, width) + np.arange(int(width.sum())) - first
    return _make_edges(states, np.repeat(src, width), byte, np.repeat(dst, width), accept)


def save(dfas: dict[str, DFA], path: str = PATH) -> None:
    """Store `dfas` (pattern -> its DFA, as `nfa.from_regex` builds it) at `path`."""
    header, blobs = [], []
    for pattern, dfa in dfas.items():
        runs = np.array([(q, lo, hi, t) for q, row in enumerate(dfa._runs) for lo, hi, t in row], dtype="<i4")
        header.append({"pattern": pattern, "states": dfa.n_states, "runs": len(runs)})
        blobs += [runs.tobytes(), np.asarray(dfa.accept, dtype=np.uint8).tobytes()]
    head = json.dumps(header).encode()
    with open(path, "wb") as file:
        file.write(zlib.compress(len(head).to_bytes(4, "little") + head + b"".join(blobs), 9))
