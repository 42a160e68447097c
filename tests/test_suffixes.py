"""The shared suffixes of big token tree levels (grammarc.tokens.suffixes): interned by
content over one vocabulary's rows, picked by next byte exactly as a test of each suffix
picks them, and a terminal's part walked once per automaton for every grammar that has it,
its masks still those of a brute-force check of every token."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc
from grammarc import Vocabulary
from grammarc.engine import Engine
from grammarc.runtime.recognizer import Recognizer
from grammarc.tokens import index, kin, scan_cache, suffixes
from grammarc.tokens.rows import token_bytes
from grammarc.tokens.scan_cache import Scan

TOKENS = [bytes([b]) for b in range(256)] + [b", ", b" ,", b"a,", b"a ,", b"a]", b"a)", b"ab", b" a", b""]
VOCAB = Vocabulary.from_bytes(TOKENS, eos_token_ids=[len(TOKENS) - 1])


def _scan(rows: list[int], pos: list[int]) -> Scan:
    return Scan(None, np.array(rows, dtype=np.int32), np.array(pos, dtype=np.int32))


def test_equal_splits_share_one_suffixes_and_others_do_not():
    tokens = token_bytes(VOCAB)
    long = [r for r in range(len(tokens.ids)) if tokens.lengths[r] > 1]
    first, again = _scan(long, [1] * len(long)), _scan(list(long), [1] * len(long))
    assert suffixes.shared(first, tokens) is suffixes.shared(again, tokens) is suffixes.shared(first, tokens)
    other = _scan(long[:-1], [1] * (len(long) - 1))
    assert suffixes.shared(other, tokens) is not suffixes.shared(first, tokens)
    # same size and the same sampled entries (one in two of 600), yet not equal: not merged
    rows, pos = list(range(600)), [0] * 600
    sampled = _scan(rows, pos)
    pos[1] = 1
    differing = _scan(rows, pos)
    one, two = suffixes.shared(sampled, tokens), suffixes.shared(differing, tokens)
    assert one is not two and two.pos.tolist() == pos
    assert suffixes.shared(_scan(list(range(600)), [0] * 600), tokens) is one


@settings(max_examples=200, deadline=None)
@given(opens=st.sets(st.integers(0, 255) | st.sampled_from([32, 34, 44, 97]), max_size=30))
def test_suffixes_taken_by_opening_bytes_are_those_a_test_of_each_finds(opens):
    tokens = token_bytes(VOCAB)
    rows = [r for r in range(len(tokens.ids)) for p in range(1, int(tokens.lengths[r]))]
    pos = [p for r in range(len(tokens.ids)) for p in range(1, int(tokens.lengths[r]))]
    shared = suffixes.Suffixes(tokens, np.array(rows, dtype=np.int32), np.array(pos, dtype=np.int32))
    mask = np.zeros(256, dtype=bool)
    mask[list(opens)] = True
    next_byte = [tokens.data[tokens.offsets[r] + p] for r, p in zip(rows, pos)]
    expected = [i for i, b in enumerate(next_byte) if mask[b]]
    assert shared.taking(mask).tolist() == expected
    assert shared.taking(mask.copy()) is shared.taking(mask)  # gathered once per set of bytes


def _brute_force(recognizer: Recognizer) -> np.ndarray:
    allowed = np.zeros(VOCAB.size, dtype=bool)
    for i, token in enumerate(TOKENS[:-1]):
        allowed[i] = recognizer.clone().feed(token)
    allowed[-1] = recognizer.is_complete()
    return allowed


def test_grammars_with_one_terminal_walk_its_part_once_over_shared_suffixes():
    """Two grammars with the same item and separator terminals (the same automata: the
    process builds each once) and other brackets. With every root level shared
    (`BUCKETED_ROWS` 0) and every scan stored (`PERSIST_MIN_ROWS` 0: a stored scan keeps its
    suffixes), the suffixes after the item (``,`` of ``a,``, `` ,`` of ``a ,``) are one
    `Suffixes`, and the separator's part over them is walked for the first grammar and read
    by the second. Masks equal brute force all along."""
    grammars = [grammarc.Grammar.from_ebnf(f'start ::= "{o}" value ( sep value )* "{c}"; value ::= "a"{more} | start;'
                                           ' sep ::= #"[ ]*,[ ]*";')
                for o, c, more in (("[", "]", ""), ("(", ")", ' | "b"'))]
    asked: list[tuple[int, int, object, bool]] = []  # (grammar, suffixes, automaton, walked)
    part = suffixes.Suffixes.part

    def spied(self, dfa, make):
        walked = []
        found = part(self, dfa, lambda: walked.append(True) or make())
        asked.append((len(separators) - 1, id(self), dfa, bool(walked)))
        return found

    separators = []
    with mock.patch.object(index, "BUCKETED_ROWS", 0), mock.patch.object(index, "PERSIST_MIN_ROWS", 0), \
            mock.patch.object(suffixes.Suffixes, "part", spied), \
            mock.patch.object(scan_cache, "_registry", scan_cache.ScanRegistry()), \
            mock.patch.object(kin, "KIN", kin.Kin()):  # no scans from other tests
        for grammar, text in zip(grammars, ("[a ,a ,", "(a ,b ,")):
            engine, recognizer = Engine(grammar, VOCAB), Recognizer(grammar.compile())
            separators.append(next(t.dfa for t in engine.index.terminals if t.name == "sep"))
            for end in range(len(text) + 1):
                if end:
                    engine.advance_bytes(text[end - 1])
                    assert recognizer.feed(text[end - 1])
                assert np.array_equal(engine.allowed_mask(), _brute_force(recognizer))
    assert separators[0] is separators[1]
    walks = [(where, dfa) for _, where, dfa, walked in asked if walked]
    assert len(walks) == len(set(walks))  # each (suffixes, automaton) walked once
    first = {where for g, where, dfa, _ in asked if g == 0 and dfa is separators[0]}
    second = [(where, walked) for g, where, dfa, walked in asked if g == 1 and dfa is separators[0]]
    assert any(where in first and not walked for where, walked in second)  # read off the first grammar's walk
