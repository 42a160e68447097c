"""The file store under grammarc's on-disk caches: one ``.npz`` file per entry, safe to share.

Both disk caches (token-index scans, grammarc.tokens.scan_cache; compiled grammars,
grammarc.lowering.compiled_cache) keep their entries here, so they share one directory and
one switch, and read and write files the same way:

* the directory is ``$GRAMMARC_CACHE_DIR``, else ``$XDG_CACHE_HOME/grammarc``, else
  ``~/.cache/grammarc``; ``GRAMMARC_CACHE_DIR=off`` (or ``0``, ``none``, empty) turns every
  disk cache off;
* a file holds plain numpy arrays and a JSON header (array ``meta``), loaded with
  ``allow_pickle=False`` — never pickled, since a cache directory may be shared and
  unpickling runs code. The header carries the caller's identifying fields (format version,
  grammarc version, keys) and a BLAKE2b checksum of the other header fields and of every
  array's name, dtype, shape and bytes; `read` refuses a file whose header or checksum does not match (`StoreError`), so a
  flipped bit, a truncated write or another version is never read as data;
* `write` writes to a temporary name in the same directory and renames it (``os.replace``):
  a reader, or another process writing the same entry, never sees half a file;
* `enforce_limit` keeps one kind of file (a file name suffix) under a size limit by deleting
  the files least recently used (`touch` marks a file used when it is loaded): each cache
  has its own limit, so that a flood of one kind of entry never evicts the other kind.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np

DEFAULT_CACHE_MAX_MB = 512
_OFF = ("", "off", "0", "none")

__all__ = ["StoreError", "cache_dir", "megabytes", "package_version", "checksum", "read", "write", "touch",
           "enforce_limit"]


class StoreError(ValueError):
    """A cache file that must not be used (damaged, foreign, another version)."""


def cache_dir() -> Path | None:
    """The root of grammarc's disk caches, or None when disk caching is off."""
    setting = os.environ.get("GRAMMARC_CACHE_DIR")
    if setting is not None:
        return None if setting.strip().lower() in _OFF else Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "grammarc"


def megabytes(variable: str, default: int) -> int:
    """A size limit from the environment, in bytes (the default when unset or not a number)."""
    try:
        return max(0, int(float(os.environ.get(variable, default)) * (1 << 20)))
    except ValueError:
        return default << 20


@lru_cache(maxsize=1)
def package_version() -> str:
    """The installed grammarc version (part of every file's header: another version's
    entries may mean something else)."""
    try:
        from importlib.metadata import version

        return version("grammarc")
    except Exception:  # not installed (a source checkout on sys.path)
        return "unknown"


def checksum(header: Mapping[str, object], arrays: Mapping[str, np.ndarray], names: Iterable[str]) -> str:
    """BLAKE2b over the header (but its ``checksum`` field) and the name, dtype, shape and
    bytes of the arrays `names`, in that order."""
    digest = hashlib.blake2b(digest_size=20)
    fields = {key: value for key, value in header.items() if key != "checksum"}
    digest.update(json.dumps(fields, sort_keys=True).encode("utf-8") + b"\0")
    for name in names:
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.data)
    return digest.hexdigest()


def read(path: Path, expected: Mapping[str, object], names: Iterable[str]) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays `names` of the file at `path`.

    Raises `StoreError` (or OSError, ValueError, KeyError from a damaged zip) unless the
    header's `expected` fields match and the checksum over `names` is right.
    """
    names = tuple(names)
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(bytes(data["meta"]).decode("utf-8"))
        arrays = {name: data[name] for name in names}
    if not isinstance(meta, dict):
        raise StoreError("the header is not a JSON object")
    found = {key: meta.get(key) for key in expected}
    if found != dict(expected):
        raise StoreError(f"header {found} does not match {dict(expected)}")
    if meta.get("checksum") != checksum(meta, arrays, names):
        raise StoreError("checksum mismatch (the file is damaged)")
    return meta, arrays


def write(path: Path, header: Mapping[str, object], arrays: Mapping[str, np.ndarray]) -> None:
    """Write `arrays` and `header` (plus the checksum over every array) to `path`
    atomically; raises OSError when it cannot (nothing is left behind)."""
    meta = dict(header, checksum=checksum(header, arrays, arrays))
    payload = dict(arrays, meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8))
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **payload)
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def touch(path: Path) -> None:
    """Mark a file used now (the directory limit deletes the least recently used first)."""
    try:
        os.utime(path)
    except OSError:
        pass


def enforce_limit(directory: Path | None = None, *, suffix: str = ".npz", variable: str = "GRAMMARC_CACHE_MAX_MB",
                  default_mb: int = DEFAULT_CACHE_MAX_MB) -> int:
    """Delete the least recently used files named ``*{suffix}`` under `directory` (the cache
    directory by default) until they take at most ``${variable}`` megabytes; returns the
    number of files deleted. Every format version counts."""
    directory = cache_dir() if directory is None else directory
    if directory is None or not directory.is_dir():
        return 0
    limit = megabytes(variable, default_mb)
    found = []
    for path in directory.rglob(f"*{suffix}"):
        try:
            stat = path.stat()
        except OSError:
            continue  # deleted meanwhile by another process
        found.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in found)
    deleted = 0
    for _, size, path in sorted(found, key=lambda f: (f[0], str(f[2]))):
        if total <= limit:
            break
        try:
            path.unlink()
            deleted += 1
        except OSError:
            pass
        total -= size
    return deleted
