"""Wide scans of any grammar, by what their state takes: where a new state's scan may be
read off.

`TokenIndex._scan_near` reads a state's scan off another state's, walking only the rows on
which the two may differ: the tokens longer than the depth to which the two behave alike
(`_scan.agree_depth`), or the tokens that hold a byte on which the two may part
(`_scan.agree_bytes`). Within a terminal, its own last wide scans are the candidates (a
length counter's state agrees with its neighbour's). A state's *kin* are the candidates
from other terminals and grammars: the states of earlier wide scans that take the same bytes
and accept alike (their `profile`). A string value merged with what follows it (``string
ws? "}"``, a language no grammar had) starts its body in a state that walks every token as
any string body does but for the tokens that hold a quote, so its first scan, ~144,000 rows
walked on Llama-3, is a string body's but for ~2% of the rows.

The registry keeps, per vocabulary, the last `KIN_PER_PROFILE` states under each of the last
`KIN_PROFILES` profiles, weakly: a scan stays as long as the shared store or an index keeps
it, a DFA as long as a grammar does. Nothing here decides a mask: a kin is only a candidate,
and the two walks over pairs of states decide which of its rows are read off.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

__all__ = ["KIN_PER_PROFILE", "KIN_PROFILES", "Kin", "profile"]

KIN_PROFILES = 256  # profiles kept per vocabulary, the least recently registered dropped first
KIN_PER_PROFILE = 4  # states kept per profile, the last registered first


def profile(row: np.ndarray, accepts: bool) -> bytes:
    """A state's profile: the bytes its transition row takes (targets >= 0) and whether it
    accepts. States that agree on anything agree on this; equal profiles are where to look."""
    return np.packbits(np.asarray(row) >= 0).tobytes() + (b"\x01" if accepts else b"\x00")


class Kin:
    """(DFA, state, scan) of wide scans, by vocabulary key and profile (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_vocab: dict[str, OrderedDict[bytes, list[tuple[weakref.ref, int, weakref.ref]]]] = {}

    def add(self, vocab_key: str, key: bytes, dfa, q: int, scan) -> None:
        """Register `scan`, the wide scan of `dfa` from state `q`, under profile `key`."""
        with self._lock:
            profiles = self._by_vocab.setdefault(vocab_key, OrderedDict())
            first = (profiles.get(key) or (None,))[0]
            if first is not None and first[1] == q and first[2]() is scan and first[0]() is dfa:
                profiles.move_to_end(key)  # registered last already (a state an index met again): as below
                return
            kept = [entry for entry in profiles.pop(key, []) if entry[2]() is not scan and entry[2]() is not None]
            profiles[key] = [(weakref.ref(dfa), q, weakref.ref(scan))] + kept[:KIN_PER_PROFILE - 1]
            while len(profiles) > KIN_PROFILES:
                profiles.popitem(last=False)

    def candidates(self, vocab_key: str, key: bytes) -> list[tuple[object, int, object]]:
        """The live (DFA, state, scan) registered under `key`, the last registered first."""
        with self._lock:
            entries = self._by_vocab.get(vocab_key, {}).get(key, ())
            alive = [(dfa, q, scan) for dfa_ref, q, scan_ref in entries
                     for dfa, scan in [(dfa_ref(), scan_ref())] if dfa is not None and scan is not None]
        return alive


KIN = Kin()  # the process's registry: every index of a vocabulary reads and feeds it
