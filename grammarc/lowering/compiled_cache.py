"""Compiled grammars cached on disk, so that a second process starts warm.

Compiling a big grammar (a Kubernetes JSON Schema) takes a large part of a second and its
result depends only on the grammar's IR, the compile options and grammarc's code. The
compiler (grammarc.lowering.compiler) keeps the compiled grammars of the process in an
in-memory LRU cache; behind it, this module keeps them on disk, one file
``SHAPE/KEY.grammar`` per (IR, options) under ``grammars/v3/`` of grammarc's cache directory (`grammarc.diskstore`:
its container format; ``$GRAMMARC_CACHE_DIR``, else ``$XDG_CACHE_HOME/grammarc``,
else ``~/.cache/grammarc``; ``GRAMMARC_CACHE_DIR=off`` turns it off). The files take at most
``$GRAMMARC_GRAMMAR_CACHE_MAX_MB`` (default 256): the least recently used go first, checked
each time a process has written 1/32 of the limit and when it exits. Only grammars that
took ``$GRAMMARC_GRAMMAR_CACHE_MIN_MS`` (default 50) or more to compile are stored.

The file name is a BLAKE2b hash of the format version, the grammarc version, a fingerprint
of grammarc's own code (another build may lower differently), the options and the IR's
canonical bytes (`grammarc.ir._canon`: the start rule and the rules, each node's class and
the fields grammar equality compares, in one pass in C; deterministic across processes and
hash seeds, and source spans are left out of both). Its folder, ``SHAPE``, is a hash of the
options, the start rule and the rules' names alone (`grammar_shape`, ~4 us): a lookup whose
shape has no folder knows the grammar is not stored without making the key (~20-45 us of a
never-seen schema's compile, which most requests to a server are), and only grammars that
took 50 ms to compile are stored. A file holds everything
`CompiledGrammar` has besides the grammar, as flat integer arrays, never pickled:

* each terminal's DFA: dense tables as a table over byte classes (columns with the same
  targets share one) plus the byte -> class map, `CombTable`s as their own three arrays,
  the accepting states; so a loaded DFA has the storage and the arrays the compiled one had;
* terminal names and flags, the BNF (nonterminal names, productions) and the LR tables:
  `LRTables`' seven flat arrays as the builder made them (checked on load as the parser core
  checks them), so neither writing nor loading makes ACTION or GOTO rows.

A file whose header or checksum does not match, or that cannot be read back into a
well-formed grammar, is ignored with a `GrammarWarning`; the grammar is compiled again
and the file rewritten. `stats` counts what happened in this process.
"""

from __future__ import annotations

import os

import atexit
import hashlib
import warnings
from collections import Counter
from dataclasses import dataclass, fields
from functools import cached_property, lru_cache
from itertools import islice
from pathlib import Path
from typing import NamedTuple

import numpy as np

from grammarc import diskstore
from grammarc.automata.comb import CombTable
from grammarc.automata.dfa import DFA, byte_classes
from grammarc.errors import GrammarWarning
from grammarc.ir import _canon
from grammarc.ir.nodes import EXPR_TYPES, Grammar
from grammarc.lowering import _lalr
from grammarc.lowering.lr import Bnf, LRTables, Production

FORMAT_VERSION = 3  # 2: diskstore's container instead of numpy .npz archives; 3: flat LR tables
SUFFIX = ".grammar"  # not one of the scan cache's suffixes, which its own limit counts
LIMIT_VARIABLE = "GRAMMARC_GRAMMAR_CACHE_MAX_MB"
DEFAULT_LIMIT_MB = 256
_DENSE, _COMB = 0, 1
# A grammar that compiled faster than this is recompiled rather than stored: writing its
# file (~10 ms) would cost a first-contact request more than it could save a later process.
MIN_MS_VARIABLE = "GRAMMARC_GRAMMAR_CACHE_MIN_MS"
DEFAULT_MIN_MS = 50.0

# hits: loaded from disk; misses: not on disk (compiled); writes: files written;
# rejected: files ignored (damaged, foreign) and rewritten
stats: Counter = Counter()


class Parts(NamedTuple):
    """What a compiled grammar holds besides its `Grammar`: the compiler assembles it."""

    terminals: tuple[tuple[str, DFA, bool, int | None], ...]  # name, dfa, any_token, token_limit
    bnf: Bnf
    tables: LRTables
    accepts_empty: bool


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of grammarc's own source and extension files: compiled grammars from other code
    are never loaded, even under the same version number (a development checkout)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".so", ".pyd") and p.is_file()):
        digest.update(str(path.relative_to(root)).encode("utf-8", "surrogatepass") + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"?")
    return digest.hexdigest()


def grammar_key(grammar: Grammar, max_states: int, merge_max_states: int) -> str:
    """The cache key of (grammar, options) under this code: stable across processes."""
    digest = hashlib.blake2b(digest_size=24)
    head = f"{FORMAT_VERSION};{diskstore.package_version()};{code_fingerprint()};{max_states};{merge_max_states};"
    digest.update(head.encode())
    digest.update(_canon.encode((grammar.start, grammar.rules), *_SHAPES))
    return digest.hexdigest()


# The IR's classes and, for each, the fields its equality compares: what `_canon.encode`
# reads of a node (the spans are not compared, so not read).
_SHAPES = (EXPR_TYPES, tuple(tuple(f.name for f in fields(cls) if f.compare) for cls in EXPR_TYPES))


@dataclass(frozen=True, eq=False)
class Entry:
    """Where one (grammar, options) lives on disk: ``folder`` (its shape's) / ``KEY.grammar``.
    The key is made when a file of the shape may be there (`load`), or one is written."""

    grammar: Grammar
    max_states: int
    merge_max_states: int
    folder: Path

    @cached_property
    def key(self) -> str:
        return grammar_key(self.grammar, self.max_states, self.merge_max_states)

    @cached_property
    def path(self) -> Path:
        return self.folder / f"{self.key}{SUFFIX}"

    def header(self) -> dict:
        return {"version": FORMAT_VERSION, "package": diskstore.package_version(), "key": self.key}

    def load(self) -> Parts | None:
        """The stored parts, or None (absent, or unusable: then warned about and counted)."""
        if not os.path.isdir(self.folder) or not self.path.exists():  # no grammar of its shape: no key made
            stats["misses"] += 1
            return None
        try:
            meta, arrays = diskstore.read(self.path, self.header(), _ARRAYS)
            parts = _decode(meta, arrays)
        except Exception as error:  # a cache must never break compilation: rebuild instead
            stats["rejected"] += 1
            warnings.warn(GrammarWarning(f"ignoring unreadable compiled-grammar cache {self.path}: {error}"),
                          stacklevel=3)
            return None
        diskstore.touch(self.path)
        stats["hits"] += 1
        return parts

    def save(self, parts: Parts) -> None:
        """Write the parts (atomically), then keep the cache directory under its limit."""
        try:
            meta, arrays = _encode(parts)
            try:
                diskstore.write(self.path, dict(self.header(), **meta), arrays)
            except FileNotFoundError:  # its folder, empty, removed meanwhile by a process keeping the limit
                diskstore.write(self.path, dict(self.header(), **meta), arrays)
            stats["writes"] += 1
            _wrote(self.path.stat().st_size)
        except Exception as error:  # a full disk, a read-only directory: the grammar is compiled all the same
            warnings.warn(GrammarWarning(f"cannot write compiled-grammar cache {self.path}: {error}"), stacklevel=3)


_written = 0  # bytes this process wrote since it last kept the directory under its limit


def worth_storing(compile_seconds: float) -> bool:
    """Whether a grammar that took this long to compile is stored
    (``$GRAMMARC_GRAMMAR_CACHE_MIN_MS``, default 50: ``0`` stores every grammar)."""
    try:
        least = float(os.environ.get(MIN_MS_VARIABLE, DEFAULT_MIN_MS))
    except ValueError:
        least = DEFAULT_MIN_MS
    return compile_seconds * 1000 >= least


def enforce_limit() -> int:
    """Delete the compiled grammars used least recently until they take at most
    ``$GRAMMARC_GRAMMAR_CACHE_MAX_MB``; returns the number of files deleted."""
    global _written
    _written = 0
    directory = diskstore.cache_dir()
    if directory is None:
        return 0
    deleted = diskstore.enforce_limit(directory / "grammars", suffixes=(SUFFIX,), variable=LIMIT_VARIABLE,
                                      default_mb=DEFAULT_LIMIT_MB)
    if deleted:
        _remove_empty_folders(directory / "grammars")
    return deleted


def _remove_empty_folders(root: Path) -> None:
    """Remove the shape folders that no file is left in (a lookup of their shape would make
    its key again for nothing)."""
    for version in _subfolders(root):
        for shape in _subfolders(version):
            try:
                os.rmdir(shape)  # refused unless empty
            except OSError:
                pass


def _subfolders(path: Path) -> list[Path]:
    try:
        return [entry for entry in path.iterdir() if entry.is_dir()]
    except OSError:
        return []


def _wrote(size: int) -> None:
    """Check the limit once a process has written 1/32 of it (listing a full directory takes
    longer than writing a file), and at exit."""
    global _written
    _written += size
    if _written > diskstore.megabytes(LIMIT_VARIABLE, DEFAULT_LIMIT_MB) // 32:
        enforce_limit()


@atexit.register
def _at_exit() -> None:
    if _written:
        enforce_limit()


def entry(grammar: Grammar, max_states: int, merge_max_states: int) -> Entry | None:
    """The disk entry of (grammar, options), or None when disk caching is off."""
    directory = diskstore.cache_dir()
    if directory is None:
        return None
    shape = grammar_shape(grammar, max_states, merge_max_states)  # not kept by `subdirectory`: one per shape
    return Entry(grammar, max_states, merge_max_states,
                 diskstore.subdirectory(directory, "grammars", f"v{FORMAT_VERSION}") / shape)


def grammar_shape(grammar: Grammar, max_states: int, merge_max_states: int) -> str:
    """A hash of the options, the start rule and the rules' names (not their bodies), stable
    across processes: the folder of every grammar of that shape (`Entry`)."""
    names = "\0".join(str(name) for name, _ in grammar.rules)
    text = f"{max_states};{merge_max_states};{grammar.start};{names}"
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


# -- encoding -----------------------------------------------------------------------------

# The LR tables' flat arrays (`LRTables`' fields), stored as they are.
_LR_ARRAYS = ("trans_start", "trans_sym", "trans_to", "red_start", "red_prod", "la_start", "la")

# Small integer arrays travel as one ``ints`` array (a zip member costs as much to write as
# thousands of numbers), cut back by the lengths the header lists under "packed".
_PACKED = (
    "kind", "n_states", "dense_k", "comb_cells",
    "prod_lhs", "prod_len", "prod_rhs",
    "n_lr_states", *_LR_ARRAYS,
)
_ARRAYS = ("ints", "accept", "dense_b2c", "dense_cells", "comb_base", "comb_check", "comb_next")


def _pack(arrays: dict[str, np.ndarray]) -> tuple[list, dict[str, np.ndarray]]:
    """(lengths for the header, the stored arrays): the `_PACKED` ones joined into ``ints``."""
    lengths = [[name, len(arrays[name])] for name in _PACKED]
    stored = {name: arrays[name] for name in _ARRAYS if name != "ints"}
    return lengths, dict(ints=_cat([arrays[name] for name in _PACKED], np.int64), **stored)


def _unpack(lengths: list, stored: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = [name for name, _ in lengths]
    if names != list(_PACKED):
        raise ValueError("the packed arrays are not the expected ones")
    pieces = _split(stored["ints"], _ints([length for _, length in lengths]))
    return dict(zip(_PACKED, pieces), **{name: stored[name] for name in _ARRAYS if name != "ints"})


def _ints(values, dtype=np.int64) -> np.ndarray:
    return np.asarray(values, dtype=dtype)


def _cat(arrays: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)


def _encode(parts: Parts) -> tuple[dict, dict[str, np.ndarray]]:
    """The header fields and arrays of a compiled grammar."""
    kinds, sizes, accepts = [], [], []
    dense_k, dense_b2c, dense_cells = [], [], []
    comb_cells, comb_base, comb_check, comb_next = [], [], [], []
    for _, dfa, _, _ in parts.terminals:
        sizes.append(dfa.n_states)
        accepts.append(np.asarray(dfa.accept, dtype=bool))
        if isinstance(dfa.trans, CombTable):
            kinds.append(_COMB)
            comb_cells.append(len(dfa.trans.check))
            comb_base.append(np.asarray(dfa.trans.base))
            comb_check.append(np.asarray(dfa.trans.check))
            comb_next.append(np.asarray(dfa.trans.next))
        else:
            kinds.append(_DENSE)
            table, b2c = byte_classes(dfa.trans)
            dense_k.append(table.shape[1])
            dense_b2c.append(b2c)
            dense_cells.append(table.reshape(-1))
    productions = parts.bnf.productions
    tables = parts.tables
    arrays = {
        "kind": _ints(kinds),
        "n_states": _ints(sizes),
        "accept": _cat(accepts, bool),
        "dense_k": _ints(dense_k),
        "dense_b2c": np.stack(dense_b2c) if dense_b2c else np.zeros((0, 256), dtype=np.uint8),
        "dense_cells": _cat(dense_cells, np.int16 if max(sizes, default=0) < 1 << 15 else np.int32),
        "comb_cells": _ints(comb_cells),
        "comb_base": _cat(comb_base, np.int64),
        "comb_check": _cat(comb_check, np.int32),
        "comb_next": _cat(comb_next, np.int32),
        "prod_lhs": _ints([p.lhs for p in productions]),
        "prod_len": _ints([len(p.rhs) for p in productions]),
        "prod_rhs": _ints([s for p in productions for s in p.rhs]),
        "n_lr_states": _ints([tables.n_states]),
        **{name: np.frombuffer(array, np.int32) for name, array in zip(_LR_ARRAYS, tables.arrays(), strict=True)},
    }
    meta = {
        "names": [name for name, _, _, _ in parts.terminals],
        "any_token": [any_token for _, _, any_token, _ in parts.terminals],
        "token_limit": [limit for _, _, _, limit in parts.terminals],
        "n_terminals": parts.bnf.n_terminals,
        "nonterminals": list(parts.bnf.nonterminals),
        "accepts_empty": parts.accepts_empty,
    }
    meta["packed"], stored = _pack(arrays)
    return meta, stored


def _frozen(array: np.ndarray, dtype) -> np.ndarray:
    array = np.ascontiguousarray(array, dtype=dtype)
    array.flags.writeable = False
    return array


def _split(flat: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
    """`flat` cut into consecutive pieces of `counts` elements (all of it, exactly)."""
    if int(counts.sum()) != len(flat) or (counts < 0).any():
        raise ValueError("array lengths do not add up")
    return np.split(flat, np.cumsum(counts)[:-1]) if len(counts) else []


def _groups(flat: list, counts: list[int]) -> list[list]:
    """`flat` cut into consecutive groups of `counts` elements (all of it, exactly)."""
    if sum(counts) != len(flat) or min(counts, default=0) < 0:
        raise ValueError("array lengths do not add up")
    items = iter(flat)
    return [list(islice(items, count)) for count in counts]


def _decode(meta: dict, arrays: dict[str, np.ndarray]) -> Parts:
    """The parts back from `_encode`'s output; raises on anything inconsistent."""
    arrays = _unpack(meta["packed"], arrays)
    kinds, sizes = arrays["kind"].tolist(), arrays["n_states"]
    names, any_token, token_limit = meta["names"], meta["any_token"], meta["token_limit"]
    if not len(kinds) == len(sizes) == len(names) == len(any_token) == len(token_limit) == meta["n_terminals"]:
        raise ValueError("terminal counts do not match")
    accepts = iter(_split(arrays["accept"], sizes))
    dense_sizes = _ints([n for n, kind in zip(sizes.tolist(), kinds) if kind == _DENSE])
    comb_sizes = _ints([n for n, kind in zip(sizes.tolist(), kinds) if kind == _COMB])
    b2cs = iter(arrays["dense_b2c"])
    tables = iter(_split(arrays["dense_cells"], dense_sizes * arrays["dense_k"]))
    bases = iter(_split(arrays["comb_base"], comb_sizes))
    checks = iter(_split(arrays["comb_check"], arrays["comb_cells"]))
    nexts = iter(_split(arrays["comb_next"], arrays["comb_cells"]))
    dense_k = iter(arrays["dense_k"].tolist())
    terminals = []
    for i, (kind, n) in enumerate(zip(kinds, sizes.tolist())):
        if kind == _DENSE:
            table = next(tables).reshape(n, next(dense_k)).astype(np.int32, copy=False)
            trans = _frozen(np.take(table, next(b2cs), axis=1), np.int32)  # C order: no second copy
        elif kind == _COMB:
            trans = CombTable(_frozen(next(bases), np.int64), _frozen(next(checks), np.int32),
                              _frozen(next(nexts), np.int32), n)
        else:
            raise ValueError(f"unknown table kind {kind}")
        limit = token_limit[i]
        terminals.append((str(names[i]), DFA(trans, _frozen(next(accepts), bool)), bool(any_token[i]),
                          None if limit is None else int(limit)))
    rhs = _groups(arrays["prod_rhs"].tolist(), arrays["prod_len"].tolist())
    productions = tuple(Production(lhs, tuple(r)) for lhs, r in zip(arrays["prod_lhs"].tolist(), rhs, strict=True))
    bnf = Bnf(int(meta["n_terminals"]), tuple(str(n) for n in meta["nonterminals"]), productions)
    return Parts(tuple(terminals), bnf, _tables(bnf, arrays), bool(meta["accepts_empty"]))


def _tables(bnf: Bnf, arrays: dict[str, np.ndarray]) -> LRTables:
    """The LR tables of `bnf` back from their arrays, checked as the parser core checks them
    (`_lalr.check`: a ValueError, never a table read out of bounds later)."""
    lr = [np.ascontiguousarray(arrays[name], np.int32).tobytes() for name in _LR_ARRAYS]
    if len(arrays["n_lr_states"]) != 1 or len(lr[0]) != 4 * (int(arrays["n_lr_states"][0]) + 1):
        raise ValueError("the LR tables do not have the stated number of states")
    _lalr.check(bnf.n_terminals, len(bnf.productions), *lr)
    return LRTables(bnf.n_terminals, *lr)
