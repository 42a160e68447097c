"""Token tree walks shift several terminals per token on hypothetical GSS levels
(`ParserCore.shift`); every intermediate level must keep what the next terminal of the
path needs. Regression: ``b' [],'`` inside a JSON array was blocked after the GSS
levels began to drop vertices by lookahead (the `upcoming` of a walk path is that of its
last shift, not of the intermediate ones).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc
from grammarc import Vocabulary
from grammarc.engine import Engine
from grammarc.runtime.recognizer import Recognizer
from grammarc.tokens.rows import ranges as _ranges
from grammarc.tokens.suffixes import ByByte as _ByByte

JSON = grammarc.stdlib("json")
MULTI = [b' [],\n', b' [],', b' []', b'[],', b'],\n', b'{},', b' {}]', b'"a":[', b'1,2]', b'], [', b'}]}', b'null,\n']
TOKENS = [bytes([b]) for b in range(256)] + MULTI + [None]
VOCAB = Vocabulary.from_bytes(TOKENS, eos_token_ids=[len(TOKENS) - 1])


def _brute_force(recognizer: Recognizer, text: bytes) -> np.ndarray:
    allowed = np.zeros(VOCAB.size, dtype=bool)
    for i, token in enumerate(TOKENS[:-1]):
        allowed[i] = recognizer.is_prefix(text + token)
    allowed[-1] = recognizer.accepts(text)
    return allowed


@pytest.mark.parametrize("text", [
    b'{\n  "a": [\n    {\n      "b": [\n       ',
    b'[[[',
    b'[{"a":[1,2],"b":[',
    b'{"a": [null, [], {}',
    b'[1',
])
def test_masks_of_multi_terminal_tokens_equal_brute_force(text):
    recognizer = Recognizer(JSON.compile())
    engine = Engine(JSON, VOCAB)
    engine.advance_bytes(text)
    ours, truth = engine.allowed_mask(), _brute_force(recognizer, text)
    wrong = [TOKENS[i] for i in np.flatnonzero(ours != truth)]
    assert not wrong, wrong


@settings(max_examples=300, deadline=None)
@given(next_byte=st.lists(st.integers(0, 255) | st.sampled_from([32, 34, 44]), max_size=200),
       opens=st.sets(st.integers(0, 255) | st.sampled_from([32, 34, 44]), max_size=40))
def test_picking_a_levels_suffixes_by_next_byte_equals_the_boolean_mask(next_byte, opens):
    """`_ByByte.taking` (a tree level's suffixes grouped by next byte) selects exactly the
    positions, in the same order, that testing each suffix's next byte does."""
    bytes_ = np.array(next_byte, dtype=np.uint8)
    mask = np.zeros(256, dtype=bool)
    mask[list(opens)] = True
    expected = np.flatnonzero(mask[bytes_]).tolist()
    by_byte = _ByByte(bytes_)
    assert by_byte.taking(mask).tolist() == expected
    assert by_byte.gathered(np.flatnonzero(mask)).tolist() == expected  # the bucket path, whatever the share


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), max_size=12))
def test_ranges_concatenate_ascending_disjoint_ranges(steps):
    """`_ranges` (first-byte buckets of a scan, bucket gathers) joins touching ranges before
    it counts them out: the same integers, in order, as counting each range."""
    starts, ends, at = [], [], 0
    for gap, length in steps:
        starts.append(at + gap)
        ends.append(at + gap + length)
        at = ends[-1]
    expected = [i for a, b in zip(starts, ends) for i in range(a, b)]
    got = _ranges(np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64))
    assert got.dtype == np.int32 and got.tolist() == expected


def test_a_tree_lets_its_level_go_once_every_part_is_made_and_still_answers():
    """A tree makes its parts one terminal at a time; once every candidate's part is made it
    drops the level's arrays (memory), and a part read after that is the published one."""
    engine = Engine(JSON.compile(), VOCAB)
    engine.fill_bitmask(np.zeros(-(-VOCAB.size // 32), dtype=np.int32))
    trees = [tree for tree in engine.index._mid.values() if tree.candidates]
    assert trees
    for tree in trees:
        made = {u: tree.part(u) for u in sorted(tree.candidates)}
        assert tree._source is None
        assert all(tree.part(u) is made[u] for u in made)
        assert tree.part(max(made) + 1) == (None, None)
