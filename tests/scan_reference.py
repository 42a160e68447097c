"""The token index's walk written in plain Python: the oracle of the compiled walk
(`grammarc.tokens._scan`), which must give the same arrays in the same order."""

from __future__ import annotations

import numpy as np


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
