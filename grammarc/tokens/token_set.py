"""A set of token ids laid out to be OR-ed into a packed bitmask: what the token index
keeps per lexer item and tree part, and what a mask is OR-ed together from."""

from __future__ import annotations

import numpy as np

from grammarc.tokens import _scan

__all__ = ["TokenSet"]


class TokenSet(_scan.PackedSet):
    """A set of token ids laid out to be OR-ed into a packed bitmask (uint32 words, bit
    i % 32 of word i // 32 = token i, the layout of `Engine.fill_bitmask`).

    Dense sets keep every word (`words` is None); sparse ones keep only their non-zero
    words, so OR-ing a handful of tokens touches a handful of words, not the vocabulary.
    The words are kept as bytes in the compiled core's `PackedSet` (`packed_bits`,
    `packed_words`): immutable, compared by identity, made and OR-ed without NumPy (a new
    schema's walks make thousands of sets; `bits` and `words` are views for tests and
    reports). ``TokenSet(bits, words, count)``: any buffers, copied into bytes unless they
    are bytes.
    """

    __slots__ = ()  # no __dict__: everything is in the PackedSet

    @property
    def bits(self) -> np.ndarray:
        """The uint32 words kept: the whole bitmask, or the non-zero words listed in `words`
        (read-only)."""
        return np.frombuffer(self.packed_bits, np.uint32)

    @property
    def words(self) -> np.ndarray | None:
        """None for a dense set, else the numbers of the words in `bits` (intp, read-only)."""
        words = self.packed_words
        return None if words is None else np.frombuffer(words, np.intp)

    @staticmethod
    def of(ids: np.ndarray, n_words: int) -> "TokenSet":
        """The set of `ids` (any order, repeats allowed; `grammarc.tokens._scan.pack_ids`
        sorts a few and flags many), sparse or dense as its non-zero words decide."""
        return TokenSet._of_packed(_scan.pack_ids(np.ascontiguousarray(ids, dtype=np.int64), n_words)) or TokenSet.empty()

    @staticmethod
    def empty() -> "TokenSet":
        """The set of no tokens (sparse: OR-ing it touches nothing)."""
        return TokenSet(b"", b"", 0)

    @staticmethod
    def union(sets: list["TokenSet"], n_words: int) -> "TokenSet | None":
        """One set holding every token of `sets` (None when there are none): OR-ing it
        costs one operation instead of one per set."""
        if not sets:
            return None
        if len(sets) == 1:
            return sets[0]
        return TokenSet._of_packed(_scan.union_sets(sets, n_words))

    @staticmethod
    def from_words(acc: np.ndarray) -> "TokenSet | None":
        """The set of a packed bitmask (uint32; `grammarc.tokens._scan.pack_words`); None when
        it is empty."""
        return TokenSet._of_packed(_scan.pack_words(acc))

    @staticmethod
    def _of_packed(packed: tuple[bytes, bytes | None, int]) -> "TokenSet | None":
        bits, words, count = packed
        return TokenSet(bits, words, count) if count else None

    @property
    def nbytes(self) -> int:
        """Bytes held (the words and the object, roughly): what a memo counts for a set it made."""
        words = self.packed_words
        return 100 + len(self.packed_bits) + (0 if words is None else len(words))

    def ids(self) -> np.ndarray:
        """The token ids, sorted (for tests and reports)."""
        if self.words is None:
            words, bits = np.arange(len(self.bits)), self.bits
        else:
            words, bits = self.words, self.bits
        out = [w * 32 + b for w, word in zip(words.tolist(), bits.tolist()) for b in range(32) if word >> b & 1]
        return np.array(out, dtype=np.int64)
