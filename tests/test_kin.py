"""The kin registry (grammarc.tokens.kin): which earlier wide scans a new state may read
its scan off. Only candidates: `TokenIndex._scan_near` decides (tests/test_suffix_scans.py)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from grammarc.tokens import kin


class _Thing:
    """Stands for a DFA or a scan: the registry only holds them weakly."""


def test_a_state_profile_is_the_bytes_it_takes_and_whether_it_accepts():
    row = np.full(256, -1, dtype=np.int32)
    row[[0, 9, 255]] = 3
    key = kin.profile(row, True)
    assert len(key) == 33 and key[-1] == 1
    assert np.flatnonzero(np.unpackbits(np.frombuffer(key[:32], dtype=np.uint8))).tolist() == [0, 9, 255]
    assert kin.profile(row, False) != key and kin.profile(row, False)[:32] == key[:32]


def test_candidates_are_the_last_registered_under_a_profile_and_vocabulary(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(kin, "KIN_PER_PROFILE", 2)
    registry = kin.Kin()
    dfas = [_Thing() for _ in range(4)]
    scans = [_Thing() for _ in range(4)]
    for i in range(3):
        registry.add("v", b"p", dfas[i], i, scans[i])
    assert [(d, q, s) for d, q, s in registry.candidates("v", b"p")] == [(dfas[2], 2, scans[2]), (dfas[1], 1, scans[1])]
    registry.add("v", b"p", dfas[1], 1, scans[1])  # again: to the front, once
    assert [q for _, q, _ in registry.candidates("v", b"p")] == [1, 2]
    assert registry.candidates("w", b"p") == [] and registry.candidates("v", b"other") == []
    registry.add("w", b"p", dfas[3], 3, scans[3])
    assert [q for _, q, _ in registry.candidates("w", b"p")] == [3]


def test_the_registry_keeps_neither_scans_nor_dfas_alive():
    registry = kin.Kin()
    dfa, scan, kept_dfa, kept_scan = _Thing(), _Thing(), _Thing(), _Thing()
    registry.add("v", b"p", kept_dfa, 0, kept_scan)
    registry.add("v", b"p", dfa, 1, scan)
    del scan
    gc.collect()
    assert [q for _, q, _ in registry.candidates("v", b"p")] == [0]
    registry.add("v", b"p", dfa, 2, kept_scan)  # a scan is kept once: this entry replaces the first
    assert [(d, q) for d, q, _ in registry.candidates("v", b"p")] == [(dfa, 2)]
    del dfa
    gc.collect()
    assert registry.candidates("v", b"p") == []


def test_profiles_past_the_limit_drop_the_least_recently_registered(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(kin, "KIN_PROFILES", 3)
    registry = kin.Kin()
    things = [(_Thing(), _Thing()) for _ in range(5)]
    for i, (dfa, scan) in enumerate(things[:3]):
        registry.add("v", bytes([i]), dfa, i, scan)
    registry.add("v", bytes([0]), *things[3][:1], 3, things[3][1])  # profile 0 registered again: kept
    registry.add("v", bytes([4]), things[4][0], 4, things[4][1])
    assert [bool(registry.candidates("v", bytes([i]))) for i in range(5)] == [True, False, True, False, True]


def test_registering_the_last_registered_again_keeps_its_profile_recent(monkeypatch: pytest.MonkeyPatch):
    """A state met again (a token index reading a shared automaton's walked state) is already
    its profile's first entry: the entries stay as they are, the profile becomes the most
    recently registered (`add`'s short path), as the full path would leave them."""
    monkeypatch.setattr(kin, "KIN_PROFILES", 2)
    registry = kin.Kin()
    (d0, s0), (d1, s1), (d2, s2), (d3, s3) = [(_Thing(), _Thing()) for _ in range(4)]
    registry.add("v", b"a", d3, 3, s3)
    registry.add("v", b"a", d0, 0, s0)
    registry.add("v", b"b", d1, 1, s1)
    registry.add("v", b"a", d0, 0, s0)  # first already: kept as it is, and now the most recent
    registry.add("v", b"c", d2, 2, s2)  # so b is the one dropped
    assert [q for _, q, _ in registry.candidates("v", b"a")] == [0, 3]
    assert registry.candidates("v", b"b") == [] and [q for _, q, _ in registry.candidates("v", b"c")] == [2]
    registry.add("v", b"a", d3, 0, s0)  # another automaton's state with that scan: the full path replaces it
    assert [(d, q) for d, q, _ in registry.candidates("v", b"a")] == [(d3, 0), (d3, 3)]
