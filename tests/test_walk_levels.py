"""Token tree walks shift several terminals per token on hypothetical GSS levels
(`ParserCore.shift`); every intermediate level must keep what the next terminal of the
path needs. Regression: ``b' [],'`` inside a JSON array was blocked after the GSS
levels began to drop vertices by lookahead (the `upcoming` of a walk path is that of its
last shift, not of the intermediate ones).
"""

from __future__ import annotations

import numpy as np
import pytest

import grammarc
from grammarc import Vocabulary
from grammarc.engine import Engine
from grammarc.runtime.recognizer import Recognizer

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
