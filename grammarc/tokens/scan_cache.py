"""Terminal scans over a vocabulary, shared by every grammar and cached on disk.

Scanning the whole vocabulary through one terminal DFA from one of its states is the
expensive part of the token index, and it depends only on the language the terminal
accepts from that state (grammarc.automata.suffix.suffix_key) and the vocabulary — not on
the grammar around the terminal. JSON strings, numbers and whitespace appear in most
grammars, so their scans are computed once per vocabulary and reused: in memory for the
process, and on disk across processes. The token index stores only wide scans here
(grammarc.tokens.index.PERSIST_MIN_ROWS); narrow ones are cheaper to redo. A state whose
language has more than grammarc.tokens.index.KEYED_MAX_STATES states (an object's other keys,
a length counter's state) is new to every grammar: its scans are kept in memory under no
language key (`unkeyed`), never written out. A language's
store holds its scan from its start and, once asked for enough rows of it, its scan after a
first byte, which the scans of states that lead to it are composed from
(grammarc.tokens.index.TokenIndex._scan_composed).

In memory: the scans most recently used, up to ``$GRAMMARC_SCAN_MEMORY_MB`` (default 256)
and `MAX_STORES` languages; the least recently used are written out and dropped (an index
keeps its own masks, so dropping a scan costs only a reload or a rescan).

On disk: one ``.scans`` file per (language key, vocabulary) under ``v5/`` of grammarc's
cache directory, written and checked by `grammarc.diskstore` (``$GRAMMARC_CACHE_DIR``, else
``$XDG_CACHE_HOME/grammarc``, else ``~/.cache/grammarc``; ``GRAMMARC_CACHE_DIR=off``
disables it): plain numeric arrays and a JSON header in one flat container, never
pickled. The header holds the format version, the grammarc version, the keys and a
BLAKE2b checksum of every array: a file whose header or checksum does not match (a
flipped bit, a truncated write, another version) is ignored with a `GrammarWarning`,
recomputed and rewritten — never read as a wrong mask. Writes are atomic, and the
directory is kept under ``$GRAMMARC_CACHE_MAX_MB`` (default 512; files of earlier format
versions count and leave first) by deleting the files least recently used (loading a file
marks it used).
"""

from __future__ import annotations

import atexit
import itertools
import os  # noqa: F401  (tests replace os.replace here to simulate a full disk)
import threading
import warnings
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grammarc import diskstore
from grammarc.diskstore import DEFAULT_CACHE_MAX_MB, cache_dir, enforce_limit as enforce_cache_limit, package_version
from grammarc.errors import GrammarWarning

FORMAT_VERSION = 5  # 3: the checksum covers the header too; 4: token rows sorted by bytes; 5: diskstore's container
SUFFIX = diskstore.SCAN_SUFFIXES[0]
DEFAULT_MEMORY_MB = 256
MAX_STORES = 4096  # languages kept in memory at once, whatever their size
_ARRAYS = ("states", "inside", "split_offsets", "split_rows", "split_pos")
UNKEYED = "unkeyed:"  # how the names of `unkeyed` scans start, and no language key (a hex digest)


@dataclass(frozen=True, eq=False)
class Scan:
    """The vocabulary scanned through a terminal from one DFA state.

    `inside`: bool over token rows, the tokens whose bytes all stay inside the terminal; or
    None for a narrow scan (never stored), whose inside set is made with it
    (`TokenIndex._narrow_walk`: a flag per vocabulary token cost more than the walk).
    (`split_rows`, `split_pos`): where the terminal may end strictly inside a token.
    Compared and hashed by identity (its arrays are not hashable): indexes key what they
    derive from a shared scan on the scan itself.
    """

    inside: np.ndarray | None
    split_rows: np.ndarray
    split_pos: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.inside.nbytes + self.split_rows.nbytes + self.split_pos.nbytes


# What a store keeps of its language, each under its slot number (on disk as "states"):
FROM_START = 0  # every token walked from the language's start
AFTER_FIRST_BYTE = 1  # every token walked from its second byte (see TokenIndex._scan_composed)


class TerminalScans:
    """The scans of one language (a terminal DFA from one state) over one vocabulary, by slot
    (`FROM_START`, `AFTER_FIRST_BYTE`)."""

    def __init__(self, dfa_key: str, vocab_key: str, rows: int, registry: "ScanRegistry | None" = None,
                 persist: bool = True):
        """`persist`: kept on disk (when a cache directory is set); else in memory only."""
        self.dfa_key, self.vocab_key, self.rows = dfa_key, vocab_key, rows
        self._scans: dict[int, Scan] = {}
        self._asked: dict[int, int] = {}  # slot -> rows asked of it so far (`ask`), never written out
        self._nbytes = 0  # running total, reported to the registry as it grows
        self._registry = registry
        self._dirty = False
        self._lock = threading.Lock()
        directory = cache_dir() if persist else None
        self.path = None if directory is None else \
            diskstore.subdirectory(directory, f"v{FORMAT_VERSION}", vocab_key[:24]) / f"{dfa_key[:40]}{SUFFIX}"
        if self.path is not None and self.path.exists():
            self._load()

    def get(self, slot: int) -> Scan | None:
        return self._scans.get(slot)

    def ask(self, slot: int, rows: int) -> int:
        """Count an ask for `slot` that needs `rows` of its scan; returns the rows all asks of
        this process needed so far, this one included (in memory only)."""
        with self._lock:
            total = self._asked[slot] = self._asked.get(slot, 0) + rows
            return total

    def put(self, slot: int, scan: Scan) -> Scan:
        """Keep `scan` unless another thread kept one first; returns the one kept."""
        with self._lock:
            kept = self._scans.setdefault(slot, scan)
            if kept is not scan:
                return kept
            self._dirty = True
            registry = self._registry
            if registry is None:
                self._nbytes += scan.nbytes
                return kept
        registry.grew(self, scan.nbytes)  # outside this store's lock: eviction takes it to save
        return kept

    @property
    def nbytes(self) -> int:
        return self._nbytes

    def _header(self) -> dict:
        return {"version": FORMAT_VERSION, "package": package_version(), "dfa": self.dfa_key,
                "vocab": self.vocab_key, "rows": self.rows}

    # -- disk -------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            _, arrays = diskstore.read(self.path, self._header(), _ARRAYS)
            states, inside = arrays["states"], arrays["inside"]
            offsets, rows, pos = arrays["split_offsets"], arrays["split_rows"], arrays["split_pos"]
            if inside.shape != (len(states), -(-self.rows // 8)) or len(offsets) != len(states) + 1:
                raise ValueError("array shapes do not match the header")
            for i, state in enumerate(states.tolist()):
                lo, hi = int(offsets[i]), int(offsets[i + 1])
                mask = np.unpackbits(inside[i], count=self.rows).view(bool)
                scan = self._scans[state] = Scan(mask, rows[lo:hi].astype(np.int32, copy=False),
                                                 pos[lo:hi].astype(np.int32, copy=False))
                self._nbytes += scan.nbytes
            diskstore.touch(self.path)
            _remember(self)
        except Exception as error:  # a cache must never break compilation: rebuild instead
            warnings.warn(GrammarWarning(f"ignoring unreadable index cache {self.path}: {error}"), stacklevel=2)
            self._scans.clear()
            self._nbytes = 0
            self._dirty = True

    def save(self, *, limit: bool = True) -> None:
        """Write the scans if anything changed (atomically: a reader never sees half a file),
        then keep the directory under its limit (unless `limit` is False)."""
        with self._lock:
            if not self._dirty or self.path is None or not self._scans:
                return
            states = sorted(self._scans)
            scans = [self._scans[s] for s in states]
            self._dirty = False
        offsets = np.cumsum([0] + [len(s.split_rows) for s in scans]).astype(np.int64)
        arrays = {
            "states": np.array(states, dtype=np.int32),
            "inside": np.stack([np.packbits(s.inside) for s in scans]),
            "split_offsets": offsets,
            "split_rows": np.concatenate([s.split_rows for s in scans]).astype(np.int32),
            "split_pos": np.concatenate([s.split_pos for s in scans]).astype(np.int32),
        }
        try:
            diskstore.write(self.path, self._header(), arrays)
            _remember(self)
            if limit:
                enforce_cache_limit(self.path.parent.parent.parent)
        except OSError as error:
            self._dirty = True
            warnings.warn(GrammarWarning(f"cannot write index cache {self.path}: {error}"), stacklevel=2)


class ScanRegistry:
    """The process's scans, least recently used first; bounded by bytes and by count
    (evicted stores are written to disk first). Thread-safe."""

    def __init__(self, max_bytes: int | None = None, max_stores: int = MAX_STORES):
        self.max_bytes = diskstore.megabytes("GRAMMARC_SCAN_MEMORY_MB", DEFAULT_MEMORY_MB) if max_bytes is None else max_bytes
        self.max_stores = max_stores
        self._stores: OrderedDict[tuple[str, str], TerminalScans] = OrderedDict()
        self._total = 0  # bytes of the stores kept, kept as they grow (a sum per new store
        # was O(stores): 4,096 property reads for each new language of a long-lived server)
        self._lock = threading.RLock()
        # automaton -> vocabulary key -> state -> its walk as token indexes took it
        # (`TokenIndex._state_walk`): a narrow walk (inside set, split rows, split positions),
        # or (the wide scan held weakly, so the stores' bounds hold; its kin profile); kept
        # while the automaton lives
        self._walked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def get(self, key: tuple[str, str], rows: int) -> TerminalScans:
        """The store of (language key, vocabulary key), made on first use (in memory only
        for an `unkeyed` name)."""
        with self._lock:
            store = self._stores.get(key)
            if store is not None:
                self._stores.move_to_end(key)
                return store
            store = self._stores[key] = TerminalScans(key[0], key[1], rows, registry=self,
                                                      persist=not key[0].startswith(UNKEYED))
            self._total += store.nbytes  # what it loaded from disk
            self._evict()
            return store

    def walked(self, dfa: object, vocab_key: str) -> dict[int, object]:
        """The states of automaton `dfa` walked over the vocabulary of `vocab_key` so far
        (live: indexes add to it under their build lock; two indexes racing walk a state twice
        and keep either walk, which are equal)."""
        with self._lock:
            by_vocab = self._walked.get(dfa)
            if by_vocab is None:
                by_vocab = self._walked[dfa] = {}
            return by_vocab.setdefault(vocab_key, {})

    def grew(self, store: TerminalScans, nbytes: int) -> None:
        """`store` took `nbytes` more: counted here while the store is this registry's (its
        size changes under this lock, so an eviction meanwhile subtracts what it added)."""
        with self._lock:
            store._nbytes += nbytes
            if store._registry is self:
                self._total += nbytes

    def _evict(self) -> None:
        while len(self._stores) > 1 and (len(self._stores) > self.max_stores or self._total > self.max_bytes):
            _, oldest = self._stores.popitem(last=False)
            oldest._registry = None  # its later growth is no longer this registry's
            self._total -= oldest.nbytes
            oldest.save()

    def values(self) -> list[TerminalScans]:
        with self._lock:
            return list(self._stores.values())

    def nbytes(self) -> int:
        with self._lock:
            return self._total

    def __len__(self) -> int:
        return len(self._stores)

    def clear(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store._registry = None
            self._stores.clear()
            self._total = 0
            self._walked = weakref.WeakKeyDictionary()


_registry = ScanRegistry()
_files: OrderedDict[Path, str] = OrderedDict()  # files this process read or wrote -> vocabulary key
_MAX_FILES = 65536


def _remember(scans: TerminalScans) -> None:
    _files[scans.path] = scans.vocab_key
    _files.move_to_end(scans.path)
    while len(_files) > _MAX_FILES:
        _files.popitem(last=False)


def terminal_scans(dfa_key: str, vocab_key: str, rows: int) -> TerminalScans:
    """The process-wide scans of (DFA, vocabulary), loaded from disk on first use; in memory
    only for an `unkeyed` name."""
    return _registry.get((dfa_key, vocab_key), rows)


def walked_states(dfa: object, vocab_key: str) -> dict[int, object]:
    """The process's walks of `dfa`'s states over the vocabulary of `vocab_key`
    (`ScanRegistry.walked`): the automata that grammars share (JSON's separators, strings,
    numbers; a grammar library's terminals) are the same objects in every grammar that has
    them, and a new grammar's index reads their states' walks instead of walking them again."""
    return _registry.walked(dfa, vocab_key)


_unkeyed = itertools.count()


def unkeyed() -> str:
    """A new name for the scans of one state that no other state finds (its language named
    by nothing: `TokenIndex._store`): kept in memory with the others, never written out, so
    they stay alive as keyed ones do for the kin that read them."""
    return f"{UNKEYED}{next(_unkeyed)}"


def files(vocab_key: str) -> list[Path]:
    """The files on disk of this process's scans over one vocabulary (after save_all)."""
    return sorted(p for p, key in list(_files.items()) if key == vocab_key and p.exists())


def save_all() -> None:
    """Write every changed scan to disk (also done at interpreter exit)."""
    stores = _registry.values()
    for scans in stores:
        scans.save(limit=False)
    directories = {s.path.parent.parent.parent for s in stores if s.path is not None}
    for directory in directories:
        enforce_cache_limit(directory)


atexit.register(save_all)
