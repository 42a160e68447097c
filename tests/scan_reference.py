"""The token index's walk written in plain Python: the oracle of the compiled walk
(`grammarc.tokens._scan`), which must give the same arrays in the same order."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


def scan(trans, accept, data, offsets, lengths, rows, pos, q, split_at_start=False):
    """(end_rows, end_states, split_rows, split_pos): see `TokenIndex._scan`. Rows in input
    order, each walked to its end: its split points by position, then its end. With
    `split_at_start`, a start strictly inside the token is a split point too when `q`
    accepts."""
    end_rows, end_states, split_rows, split_pos = [], [], [], []
    for row, start in zip(np.asarray(rows).tolist(), np.asarray(pos).tolist()):
        state, p, length = q, start, int(lengths[row])
        while p < length and state >= 0:
            if (p > start or split_at_start and p > 0) and accept[state]:
                split_rows.append(row)
                split_pos.append(p)
            state = int(trans[state, data[offsets[row] + p]])
            p += 1
        if state >= 0:
            end_rows.append(row)
            end_states.append(state)
    return tuple(np.array(part, dtype=np.int32) for part in (end_rows, end_states, split_rows, split_pos))


ALPHABET = b"ab\"\\ "  # two letters and a string body's bytes (quote, backslash, space)


@st.composite
def dfa_and_tokens(draw, max_states: int, max_length: int, max_tokens: int):
    """(trans int32 [n, 256] over `ALPHABET`, -1 where there is no edge; accept bool [n];
    tokens: 1 to `max_tokens` non-empty byte strings over `ALPHABET`)."""
    n = draw(st.integers(1, max_states))
    trans = np.full((n, 256), -1, dtype=np.int32)
    for s in range(n):
        for b in ALPHABET:
            trans[s, b] = draw(st.integers(-1, n - 1))
    accept = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    tokens = draw(st.lists(st.binary(min_size=1, max_size=max_length).map(
        lambda t: bytes(ALPHABET[x % len(ALPHABET)] for x in t)), min_size=1, max_size=max_tokens))
    return trans, accept, tokens
