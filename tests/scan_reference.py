"""The token index's walk written with NumPy alone: the oracle of the compiled walk
(`grammarc.tokens._scan`), which must give the same arrays in the same order."""

from __future__ import annotations

import numpy as np


def scan(trans, accept, matrix, lengths, rows, pos, q):
    """(end_rows, end_states, split_rows, split_pos): see `TokenIndex._scan`."""
    rows = np.asarray(rows, dtype=np.int32)
    pos = np.asarray(pos, dtype=np.int32)
    state = np.full(len(rows), q, dtype=np.int32)
    end_rows, end_states, split_rows, split_pos = [], [], [], []
    first = True
    while len(rows):
        done = pos >= lengths[rows]
        if done.any():
            end_rows.append(rows[done])
            end_states.append(state[done])
            rows, pos, state = rows[~done], pos[~done], state[~done]
        if not first:
            can_end = accept[state]
            split_rows.append(rows[can_end])
            split_pos.append(pos[can_end])
        first = False
        state = np.asarray(trans[state, matrix[rows, pos]], dtype=np.int32)
        alive = state >= 0
        rows, pos, state = rows[alive], pos[alive] + 1, state[alive]

    def cat(parts):
        return np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, dtype=np.int32)

    return cat(end_rows), cat(end_states), cat(split_rows), cat(split_pos)
