"""The file store under grammarc's on-disk caches: one file per entry, safe to share.

Both disk caches (token-index scans, grammarc.tokens.scan_cache; compiled grammars,
grammarc.lowering.compiled_cache) keep their entries here, so they share one directory and
one switch, and read and write files the same way:

* the directory is ``$GRAMMARC_CACHE_DIR``, else ``$XDG_CACHE_HOME/grammarc``, else
  ``~/.cache/grammarc``; ``GRAMMARC_CACHE_DIR=off`` (or ``0``, ``none``, empty) turns every
  disk cache off;
* a file is a flat container (`pack`): an 8-byte magic, the length of a JSON header, the
  header, then the raw bytes of plain numeric arrays (little-endian, each 8-byte aligned),
  which the header lists by name, dtype and shape. Nothing is pickled (a cache directory may
  be shared, and unpickling runs code) and only bool, integer and float dtypes are read. A
  read is one ``read()`` and a view per array: ~0.1 ms for a Llama-3 scan file, checksum
  included, where a numpy ``.npz`` archive (a zip member and a header parse per array) took
  ~0.6 ms — more, for a small scan, than scanning again;
* the header carries the caller's identifying fields (format version, grammarc version,
  keys) and a BLAKE2b checksum of the other header fields and of every array's name, dtype,
  shape and bytes; `read` refuses a file whose header or checksum does not match
  (`StoreError`), so a flipped bit, a truncated write or another version is never read as
  data;
* `write` writes to a temporary name in the same directory and renames it (``os.replace``):
  a reader, or another process writing the same entry, never sees half a file;
* `enforce_limit` keeps one kind of file (file name suffixes) under a size limit by deleting
  the files least recently used (`touch` marks a file used when it is loaded): each cache
  has its own limit, so that a flood of one kind of entry never evicts the other kind.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np

DEFAULT_CACHE_MAX_MB = 512
# The scan cache's files: ``.scans`` since this container, ``.npz`` (numpy archives) before.
SCAN_SUFFIXES = (".scans", ".npz")
_OFF = ("", "off", "0", "none")

__all__ = ["StoreError", "cache_dir", "megabytes", "package_version", "checksum", "pack", "unpack", "read", "write",
           "touch", "enforce_limit"]

MAGIC = b"grmcst1\n"  # the container's first 8 bytes (format 1)
_ALIGN = 8
_KINDS = "biuf"  # bool, signed and unsigned integers, floats: the only dtypes read back


class StoreError(ValueError):
    """A cache file that must not be used (damaged, foreign, another version)."""


def cache_dir() -> Path | None:
    """The root of grammarc's disk caches, or None when disk caching is off (read from the
    environment at each call: tests and servers change it while running)."""
    environ = os.environ
    return _cache_dir_of(environ.get("GRAMMARC_CACHE_DIR"), environ.get("XDG_CACHE_HOME"), environ.get("HOME"))


@lru_cache(maxsize=16)
def _cache_dir_of(setting: str | None, xdg: str | None, home: str | None) -> Path | None:
    """`cache_dir` for these environment values (kept: a new schema opens a store for each
    wide state, and building the path cost more than the lookup it is for)."""
    if setting is not None:
        return None if setting.strip().lower() in _OFF else Path(setting)
    base = xdg or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "grammarc"


@lru_cache(maxsize=64)
def subdirectory(root: Path, *names: str) -> Path:
    """``root / names[0] / names[1] ...``, kept (the same few directories are joined for
    every file a cache looks up)."""
    return root.joinpath(*names)


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


def checksum(header: Mapping[str, object], arrays: Mapping[str, np.ndarray]) -> str:
    """BLAKE2b over the header (but its ``checksum`` field) and the name, dtype, shape and
    bytes of every array, in order: the arrays as a file stores them (`_stored`)."""
    digest = hashlib.blake2b(digest_size=20)
    fields = {key: value for key, value in header.items() if key != "checksum"}
    digest.update(json.dumps(fields, sort_keys=True).encode("utf-8") + b"\0")
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        digest.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.data)
    return digest.hexdigest()


def pack(meta: Mapping[str, object], arrays: Mapping[str, np.ndarray]) -> bytes:
    """The container bytes of `meta` (a JSON object) and `arrays` (numeric), in that order."""
    arrays = _stored(arrays)
    header = dict(meta, arrays=[[name, a.dtype.str, list(a.shape)] for name, a in arrays.items()])
    text = json.dumps(header).encode("utf-8")
    parts = [MAGIC, len(text).to_bytes(8, "little"), text, bytes(-len(text) % _ALIGN)]
    for array in arrays.values():
        data = np.ascontiguousarray(array).tobytes()
        parts += [data, bytes(-len(data) % _ALIGN)]
    return b"".join(parts)


def unpack(data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays of container `data` (read-only views of it); raises
    `StoreError` on anything malformed, before reading past the end."""
    if data[:8] != MAGIC:
        raise StoreError("not a grammarc cache file (wrong magic)")
    size = int.from_bytes(data[8:16], "little")
    if size > len(data) - 16:
        raise StoreError("truncated header")
    try:
        header = json.loads(data[16:16 + size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise StoreError(f"unreadable header: {error}") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), list):
        raise StoreError("the header is not a JSON object with an array list")
    offset, arrays = 16 + size + (-size % _ALIGN), {}
    for entry in header.pop("arrays"):
        name, dtype, shape = _entry(entry)
        count = math.prod(shape)
        end = offset + count * dtype.itemsize
        if end > len(data) or name in arrays:
            raise StoreError(f"array {name!r} overruns the file or repeats")
        arrays[name] = np.frombuffer(data, dtype=dtype, count=count, offset=offset).reshape(shape)
        offset = end + (-end % _ALIGN)
    if offset != len(data):
        raise StoreError(f"{len(data) - offset} bytes after the last array")
    return header, arrays


def _entry(entry: object) -> tuple[str, np.dtype, tuple[int, ...]]:
    """(name, dtype, shape) of one array entry of a header, checked."""
    try:
        name, code, shape = entry
        dtype = np.dtype(code)
        ok = (isinstance(name, str) and isinstance(code, str) and dtype.kind in _KINDS and dtype.byteorder != ">"
              and isinstance(shape, list) and all(type(n) is int and 0 <= n < 1 << 40 for n in shape))
    except Exception:  # numpy parses some dtype strings with ast (SyntaxError); any failure is a bad entry
        ok = False
    if not ok:
        raise StoreError(f"bad array entry {entry!r}")
    return name, dtype, tuple(shape)


def _stored(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`arrays` as a file holds them, and `unpack` gives them back: little-endian."""
    out = {}
    for name, array in arrays.items():
        array = np.asarray(array)
        if array.dtype.kind not in _KINDS:
            raise TypeError(f"cannot store dtype {array.dtype} (only bool, integer and float arrays)")
        out[name] = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return out


def read(path: Path, expected: Mapping[str, object], names: Iterable[str]) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays `names` of the file at `path` (read-only arrays).

    Raises `StoreError` (or OSError) unless the header's `expected` fields match, the
    checksum over the header and every array of the file is right and `names` are there.
    """
    meta, stored = unpack(path.read_bytes())
    found = {key: meta.get(key) for key in expected}
    if found != dict(expected):
        raise StoreError(f"header {found} does not match {dict(expected)}")
    if meta.get("checksum") != checksum(meta, stored):
        raise StoreError("checksum mismatch (the file is damaged)")
    missing = [name for name in names if name not in stored]
    if missing:
        raise StoreError(f"arrays {missing} are missing")
    return meta, {name: stored[name] for name in names}


def write(path: Path, header: Mapping[str, object], arrays: Mapping[str, np.ndarray]) -> None:
    """Write `arrays` and `header` (plus the checksum over every array) to `path`
    atomically; raises OSError when it cannot (nothing is left behind)."""
    arrays = _stored(arrays)  # the checksum is over what `read` will see: a big-endian array too
    data = pack(dict(header, checksum=checksum(header, arrays)), arrays)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
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


def enforce_limit(directory: Path | None = None, *, suffixes: tuple[str, ...] = SCAN_SUFFIXES,
                  variable: str = "GRAMMARC_CACHE_MAX_MB", default_mb: int = DEFAULT_CACHE_MAX_MB) -> int:
    """Delete the least recently used files named ``*{suffix}`` (for each of `suffixes`)
    under `directory` (the cache directory by default) until they take at most
    ``${variable}`` megabytes; returns the number of files deleted. Every format version
    counts, so an older version's files leave first once nothing reads them."""
    directory = cache_dir() if directory is None else directory
    if directory is None or not directory.is_dir():
        return 0
    limit = megabytes(variable, default_mb)
    found = []
    for path in (path for suffix in suffixes for path in directory.rglob(f"*{suffix}")):
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
