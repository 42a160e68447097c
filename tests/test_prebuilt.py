"""The ready-made automata of the JSON Schema string formats (grammarc.automata.prebuilt)
are the ones built from scratch, and every format is there."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from grammarc.automata import DEFAULT_MAX_STATES, from_regex, nfa, prebuilt
from grammarc.frontends.jsonschema import formats
from prebuilt_formats import built, names, patterns


@pytest.mark.parametrize("pattern", patterns(), ids=lambda p: p[:24])
def test_a_stored_automaton_is_the_one_built_from_scratch(pattern):
    stored = prebuilt.find(pattern)
    assert stored is not None, "a format's regex changed: regenerate with python tests/prebuilt_formats.py"
    fresh = built(pattern)
    assert np.array_equal(stored.trans, fresh.trans) and np.array_equal(stored.accept, fresh.accept)
    assert stored.key == fresh.key


@pytest.mark.parametrize("name", names())
def test_a_stored_regex_is_the_one_the_front_end_renders(name):
    stored = prebuilt.named(name)
    assert stored is not None, "a format is missing: regenerate with python tests/prebuilt_formats.py"
    assert stored == formats.rendered_regex(name) == formats.string_regex(name)
    assert prebuilt.find(stored) is not None
    assert prebuilt.named("no format at all") is None


def test_from_regex_takes_the_stored_automaton_only_where_a_build_could_not_fail():
    pattern = patterns()[0]
    nfa._from_regex.cache_clear()
    assert from_regex(pattern) is prebuilt.find(pattern)
    assert from_regex(pattern, max_states=2 * DEFAULT_MAX_STATES) is prebuilt.find(pattern)
    small = from_regex(pattern, max_states=DEFAULT_MAX_STATES - 1)  # a smaller budget: built, as before
    assert small is not prebuilt.find(pattern) and small.key == prebuilt.find(pattern).key
    assert prebuilt.find("no format at all") is None


def test_reading_the_store_leaves_no_cycles():
    # the lowering counts on reference counting alone (tests/test_garbage.py)
    prebuilt._store.cache_clear()
    prebuilt._load.cache_clear()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        assert prebuilt.find(patterns()[0]) is not None
        gc.collect()
        assert gc.garbage == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
