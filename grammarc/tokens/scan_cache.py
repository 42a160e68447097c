"""Terminal scans over a vocabulary, shared by every grammar and cached on disk.

Scanning the whole vocabulary through one terminal DFA from one of its states is the
expensive part of the token index, and it depends only on the language the terminal
accepts from that state (grammarc.automata.suffix.suffix_key) and the vocabulary — not on
the grammar around the terminal. JSON strings, numbers and whitespace appear in most
grammars, so their scans are computed once per vocabulary and reused: in memory for the
process, and on disk across processes. The token index stores only wide scans here
(grammarc.tokens.index.PERSIST_MIN_ROWS); narrow ones are cheaper to redo.

On disk: one ``.npz`` file per (language key, vocabulary) under the cache directory
(``$GRAMMARC_CACHE_DIR``, else ``$XDG_CACHE_HOME/grammarc``, else ``~/.cache/grammarc``;
``GRAMMARC_CACHE_DIR=off`` disables it), holding plain numpy arrays and a JSON header —
loaded with ``allow_pickle=False``, never pickled. A file that is unreadable, of another
format version or for other keys is ignored with a warning and rewritten.
"""

from __future__ import annotations

import atexit
import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grammarc.errors import GrammarWarning

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Scan:
    """The vocabulary scanned through a terminal from one DFA state.

    `inside`: bool over token rows, the tokens whose bytes all stay inside the terminal.
    (`split_rows`, `split_pos`): where the terminal may end strictly inside a token.
    """

    inside: np.ndarray
    split_rows: np.ndarray
    split_pos: np.ndarray


def cache_dir() -> Path | None:
    """Where scans are stored, or None when disk caching is off."""
    setting = os.environ.get("GRAMMARC_CACHE_DIR")
    if setting is not None:
        return None if setting.strip().lower() in ("", "off", "0", "none") else Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "grammarc"


class TerminalScans:
    """The scans of one terminal DFA over one vocabulary, keyed by DFA state."""

    def __init__(self, dfa_key: str, vocab_key: str, rows: int):
        self.dfa_key, self.vocab_key, self.rows = dfa_key, vocab_key, rows
        self._scans: dict[int, Scan] = {}
        self._dirty = False
        directory = cache_dir()
        self.path = None if directory is None else directory / f"v{FORMAT_VERSION}" / vocab_key[:24] / f"{dfa_key[:40]}.npz"
        if self.path is not None and self.path.exists():
            self._load()

    def get(self, state: int) -> Scan | None:
        return self._scans.get(state)

    def put(self, state: int, scan: Scan) -> None:
        self._scans[state] = scan
        self._dirty = True

    # -- disk -------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            with np.load(self.path, allow_pickle=False) as data:
                meta = json.loads(bytes(data["meta"]).decode("utf-8"))
                expected = {"version": FORMAT_VERSION, "dfa": self.dfa_key, "vocab": self.vocab_key, "rows": self.rows}
                if meta != expected:
                    raise ValueError(f"header {meta} does not match {expected}")
                states, inside = data["states"], data["inside"]
                offsets, rows, pos = data["split_offsets"], data["split_rows"], data["split_pos"]
                if inside.shape != (len(states), -(-self.rows // 8)) or len(offsets) != len(states) + 1:
                    raise ValueError("array shapes do not match the header")
                for i, state in enumerate(states.tolist()):
                    lo, hi = int(offsets[i]), int(offsets[i + 1])
                    mask = np.unpackbits(inside[i], count=self.rows).astype(bool)
                    self._scans[state] = Scan(mask, rows[lo:hi].astype(np.int32), pos[lo:hi].astype(np.int32))
        except Exception as error:  # a cache must never break compilation: rebuild instead
            warnings.warn(GrammarWarning(f"ignoring unreadable index cache {self.path}: {error}"), stacklevel=2)
            self._scans.clear()
            self._dirty = True

    def save(self) -> None:
        """Write the scans if anything changed (atomically: a reader never sees half a file)."""
        if not self._dirty or self.path is None or not self._scans:
            return
        states = sorted(self._scans)
        scans = [self._scans[s] for s in states]
        offsets = np.cumsum([0] + [len(s.split_rows) for s in scans]).astype(np.int64)
        meta = {"version": FORMAT_VERSION, "dfa": self.dfa_key, "vocab": self.vocab_key, "rows": self.rows}
        arrays = {
            "meta": np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
            "states": np.array(states, dtype=np.int32),
            "inside": np.stack([np.packbits(s.inside) for s in scans]),
            "split_offsets": offsets,
            "split_rows": np.concatenate([s.split_rows for s in scans]).astype(np.int32),
            "split_pos": np.concatenate([s.split_pos for s in scans]).astype(np.int32),
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, **arrays)
            os.replace(tmp, self.path)
            self._dirty = False
        except OSError as error:
            warnings.warn(GrammarWarning(f"cannot write index cache {self.path}: {error}"), stacklevel=2)


_registry: dict[tuple[str, str], TerminalScans] = {}


def terminal_scans(dfa_key: str, vocab_key: str, rows: int) -> TerminalScans:
    """The process-wide scans of (DFA, vocabulary), loaded from disk on first use."""
    key = (dfa_key, vocab_key)
    scans = _registry.get(key)
    if scans is None:
        scans = _registry[key] = TerminalScans(dfa_key, vocab_key, rows)
    return scans


def files(vocab_key: str) -> list[Path]:
    """The files on disk of this process's scans over one vocabulary (after save_all)."""
    return sorted({s.path for s in _registry.values()
                   if s.vocab_key == vocab_key and s.path is not None and s.path.exists()})


def save_all() -> None:
    """Write every changed scan to disk (also done at interpreter exit)."""
    for scans in list(_registry.values()):
        scans.save()


atexit.register(save_all)
