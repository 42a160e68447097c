"""A vocabulary's normal tokens as rows sorted by their bytes (`TokenBytes`): what every
terminal scan walks (grammarc.tokens._scan), made once per process and vocabulary and
shared by every grammar's index.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from grammarc.tokens import _scan
from grammarc.tokens.vocabulary import Vocabulary

__all__ = ["TokenBytes", "joined", "ranges", "rows_by_byte", "token_bytes"]


class _Recent:
    """A small thread-safe table that keeps the `limit` entries used last (per-vocabulary
    tables: an index holds its own references, so an evicted entry costs one rebuild)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key, value):
        """Publish `value` unless another thread did first; returns the published one."""
        with self._lock:
            value = self._entries.setdefault(key, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)
            return value

    def __len__(self) -> int:
        return len(self._entries)


VOCABULARIES_KEPT = 8  # vocabularies whose token bytes stay cached
_token_bytes = _Recent(VOCABULARIES_KEPT)


@dataclass(frozen=True, eq=False, slots=True)
class TokenBytes:
    """The normal tokens of a vocabulary as rows, shared by every grammar's index.

    Row r is token ``ids[r]``, whose ``lengths[r]`` bytes are
    ``data[offsets[r] : offsets[r] + lengths[r]]``. Rows are sorted by their bytes and
    packed end to end, so the tokens a scan walks (those starting with the bytes a DFA
    state takes) lie side by side: a walk over most of the vocabulary reads 0.8 MB in order
    (Llama-3) instead of a cache line per row of a zero-padded 16 MB matrix.
    """

    ids: np.ndarray  # int32
    lengths: np.ndarray  # int32
    offsets: np.ndarray  # int64
    data: np.ndarray  # uint8
    sets: np.ndarray  # uint64 [rows, 4]: bit b of a row's words = the token contains byte b (see `_byte_sets`)
    by_length: np.ndarray  # int32: the rows, longest first
    longer: np.ndarray  # int64 [longest + 1]: how many rows are longer than d bytes (by_length[:longer[d]])
    shared: np.ndarray  # uint8: the bytes row r has in common with row r - 1 (at most 255; see `common_prefixes`)
    skip: np.ndarray  # int32: the next row whose `shared` is smaller (`grammarc.tokens._scan.next_smaller`)
    kinds: np.ndarray  # uint16: the groups of bytes each row holds (`grammarc.tokens._scan.row_kinds`)
    # `rows_by_byte`: the rows holding byte b are by_byte[by_byte_starts[b]:by_byte_starts[b + 1]]
    by_byte: np.ndarray = field(repr=False)  # int32
    by_byte_starts: np.ndarray = field(repr=False)  # int64 [257]
    # Where each first byte's rows begin: those starting with byte b are
    # ``first_starts[b]:first_starts[b + 1]``. A scan from a DFA state starts from the rows
    # whose first byte the state can take, not from the whole vocabulary: most take a few.
    first_starts: np.ndarray = field(repr=False)  # int64 [257]
    # Each first byte's rows again, longest first: bucket b's rows longer than d bytes are
    # ``by_first_length[first_starts[b]:first_starts[b] + first_longer[b, d]]``
    # (`longer_than` with `first`).
    by_first_length: np.ndarray = field(repr=False)  # int32
    first_longer: np.ndarray = field(repr=False)  # int32 [256, min(longest, FIRST_LONGER_DEPTHS) + 1]
    # The arrays above as the walks read them (`grammarc.tokens._scan.Tokens`: held and
    # checked once, not per call)
    native: object = field(repr=False)

    @property
    def longest(self) -> int:
        return len(self.longer) - 1

    def longer_than(self, d: int, first: np.ndarray | None = None) -> np.ndarray:
        """The rows of tokens longer than `d` bytes (longest first), or, with `first` (bool
        [256]), of those whose first byte it flags: those rows, or all rows longer than `d`
        where they are not many fewer (a caller walks the rows it gets: more rows cost time,
        never exactness). A state reads a few first bytes (the hex digits of a pattern's
        ``[0-9a-f]{24}``): its rows are a few buckets of the vocabulary, not every long token."""
        d = max(0, min(d, self.longest))
        every = self.by_length[: self.longer[d]]
        if first is None or d >= self.first_longer.shape[1] - 1:  # past the depths counted: every row
            return every
        rows = _scan.bucket_prefixes(self.by_first_length, self.first_starts, self.first_longer, d,
                                     first.view(np.uint8), len(every) // 2)
        return every if rows is None else np.frombuffer(rows, dtype=np.int32)

    def holding(self, byte: int) -> np.ndarray:
        """The rows that hold `byte` (ascending int32)."""
        return self.by_byte[self.by_byte_starts[byte]:self.by_byte_starts[byte + 1]]

    def depth_leaving(self, share: float) -> int:
        """The least d such that at most `share` of the rows are longer than d bytes (past
        the longest token when none is: a negative share)."""
        found = np.flatnonzero(self.longer <= share * len(self.ids))
        return int(found[0]) if len(found) else self.longest + 1


def token_bytes(vocab: Vocabulary) -> TokenBytes:
    """The `TokenBytes` of `vocab` (made once per process and vocabulary)."""
    cached = _token_bytes.get(vocab.key)
    if cached is not None:
        return cached
    ids = np.array(sorted((i for i in vocab.normal_ids() if vocab.tokens[i]), key=vocab.tokens.__getitem__),
                   dtype=np.int32)
    pieces = [vocab.tokens[i] for i in ids.tolist()]
    lengths = np.fromiter(map(len, pieces), dtype=np.int32, count=len(pieces))
    offsets = np.zeros(len(pieces), dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    data = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    sets = _byte_sets(lengths, data)
    by_length = np.argsort(-lengths, kind="stable").astype(np.int32)
    counts = np.bincount(lengths, minlength=1)  # rows per length
    longer = (len(lengths) - np.cumsum(counts)).astype(np.int64)  # rows longer than d, d = 0..longest
    shared = common_prefixes(data, offsets, lengths)
    skip = np.frombuffer(_scan.next_smaller(shared), dtype=np.int32)
    kinds = np.frombuffer(_scan.row_kinds(data, offsets, lengths), dtype=np.uint16)
    # with the vocabulary, not on a scan's first use (a kin scan's, in nearly every new
    # schema): Llama-3 ~6 ms and 2.8 MB, which landed in some request's mask
    by_byte, by_byte_starts = rows_by_byte(data, offsets, lengths)
    first_starts = np.zeros(257, dtype=np.int64)
    np.cumsum(np.bincount(data[offsets], minlength=256), out=first_starts[1:])
    by_first_length, first_longer = _by_first_byte(data[offsets], lengths)
    for array in (ids, lengths, offsets, data, sets, by_length, longer, shared, first_starts, by_first_length,
                  first_longer):
        array.flags.writeable = False
    native = _scan.Tokens(data, offsets, lengths, sets, kinds, shared, skip, ids, first_starts)
    return _token_bytes.put(vocab.key, TokenBytes(ids, lengths, offsets, data, sets, by_length, longer, shared,
                                                  skip, kinds, by_byte, by_byte_starts, first_starts,
                                                  by_first_length, first_longer, native))


FIRST_LONGER_DEPTHS = 256  # depths counted per first byte (deeper: every long token's row is walked)


def _by_first_byte(first: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows by first byte, longest first within each; counts of each first byte's rows
    longer than d bytes, [256, deepest + 1] with d up to the longest token or
    `FIRST_LONGER_DEPTHS`), for rows sorted by their bytes (so by first byte)."""
    order = np.lexsort((-lengths, first)).astype(np.int32)
    deepest = min(int(lengths.max()) if len(lengths) else 0, FIRST_LONGER_DEPTHS)
    counts = np.zeros((256, deepest + 1), dtype=np.int32)
    np.add.at(counts, (first, np.minimum(lengths, deepest)), 1)  # rows of each first byte and length
    longer = counts[:, ::-1].cumsum(axis=1)[:, ::-1] - counts  # longer than d: lengths d + 1 ..
    return order, np.ascontiguousarray(longer, dtype=np.int32)


def rows_by_byte(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, starts): the rows holding byte b, each once and ascending, are
    ``rows[starts[b]:starts[b + 1]]`` (rows int32, starts int64 [257]), for the rows of
    `lengths` bytes at `offsets` in `data` (`grammarc.tokens._scan.rows_by_byte`)."""
    rows, starts = _scan.rows_by_byte(data, np.ascontiguousarray(offsets, dtype=np.int64),
                                      np.ascontiguousarray(lengths, dtype=np.int32))
    return np.frombuffer(rows, dtype=np.int32), np.frombuffer(starts, dtype=np.int64)


def common_prefixes(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """uint8 [rows]: how many leading bytes row r has in common with row r - 1 (0 for the
    first row; 255 stands for 255 or more). A scan walks sorted rows in order and resumes
    each where it parts from the one before (`grammarc.tokens._scan.scan_ranges`): most of a
    row's bytes are its neighbour's, so most steps are saved."""
    out = np.zeros(len(lengths), dtype=np.uint8)
    rows = np.arange(1, len(lengths))
    for depth in range(255):  # the rows still alike up to `depth`, one byte further each time
        rows = rows[(lengths[rows] > depth) & (lengths[rows - 1] > depth)]
        rows = rows[data[offsets[rows] + depth] == data[offsets[rows - 1] + depth]]
        if not len(rows):
            break
        out[rows] += 1
    return out


def _byte_sets(lengths: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Each row's set of bytes as 256 bits (four little-endian 64-bit words). A scan from a
    state that loops on every byte of a token needs no walk (`grammarc.tokens._scan`):
    inside a JSON string that is most of the vocabulary."""
    out = np.zeros((len(lengths), 4), dtype=np.uint64)
    bit = np.left_shift(np.uint64(1), (data & 63).astype(np.uint64))
    np.bitwise_or.at(out, (np.repeat(np.arange(len(lengths)), lengths), data >> 6), bit)
    return out


def ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenated integer ranges ``[starts[i], ends[i])``, ascending and disjoint (int32:
    row numbers)."""
    firsts, lasts = joined(starts, ends)
    if len(firsts) <= 1:
        return np.arange(firsts[0], lasts[0], dtype=np.int32) if len(firsts) else np.zeros(0, dtype=np.int32)
    return np.concatenate([np.arange(a, b, dtype=np.int32) for a, b in zip(firsts.tolist(), lasts.tolist())])


def joined(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranges ``[starts[i], ends[i])`` (ascending, disjoint) with the empty ones dropped
    and the ones that touch joined (int64): the first-byte buckets of a state's live bytes
    are mostly adjacent (a string body takes every byte but a few), so a scan's rows are a
    handful of runs."""
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if len(starts) <= 1:
        return starts.astype(np.int64), ends.astype(np.int64)
    cut = np.flatnonzero(starts[1:] != ends[:-1]) + 1  # where a range does not continue the last
    firsts, lasts = starts[np.concatenate(([0], cut))], ends[np.concatenate((cut - 1, [len(ends) - 1]))]
    return firsts.astype(np.int64), lasts.astype(np.int64)
