"""Engine semantics with exact expectations on small hand-made vocabularies (DESIGN.md §8-9).

Every expectation is written out by hand (which tokens, which bytes, which message), so a
change of meaning fails here even where the brute-force oracle of test_engine_oracle.py,
which does not cover ``any!``, token budgets or the engine's bookkeeping, cannot see it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammarc
from grammarc import Engine, Grammar, TokenRejected, Vocabulary

EOS = b"<eos>"  # placeholder name; the vocabulary maps it to b""
CTRL = b"<ctrl>"


def make_vocab(*tokens: bytes | str) -> Vocabulary:
    """Tokens in order; ``EOS`` and ``CTRL`` become the EOS id and a non-EOS special id."""
    raw = [t.encode() if isinstance(t, str) else t for t in tokens]
    eos = [i for i, t in enumerate(raw) if t == EOS]
    ctrl = [i for i, t in enumerate(raw) if t == CTRL]
    data = [b"" if t in (EOS, CTRL) else t for t in raw]
    return Vocabulary.from_bytes(data, eos_token_ids=eos, special_token_ids=ctrl)


def allowed(engine: Engine) -> list[bytes]:
    """The allowed tokens by their bytes (EOS shown as ``EOS``), in id order."""
    vocab = engine.vocab
    return [EOS if i in vocab.eos_token_ids else vocab.tokens[i] for i in engine.allowed_token_ids()]


def feed(engine: Engine, *tokens: bytes | str) -> None:
    """Advance by tokens given as bytes (each must exist exactly once in the vocabulary)."""
    for t in tokens:
        (token_id,) = engine.vocab.ids_for(t.encode() if isinstance(t, str) else t)
        engine.advance(token_id)


def snapshot(engine: Engine) -> tuple:
    """Everything observable about an engine's position."""
    return (
        engine.allowed_mask().tobytes(),
        engine.accepts_eos(),
        engine.is_finished(),
        engine.forced_bytes(),
    )


JSON = grammarc.stdlib("json")
JSON_TOKENS = (
    "{", "}", "[", "]", '"', "a", "b", ":", ",", " ", "1", "0", ".", "-", "e", "\\", "u",
    "true", "null", '{"', '":', '",', '"}', '"]', "},", "],", "\n", "  ", "x", EOS, CTRL,
)
JSON_VOCAB = make_vocab(*JSON_TOKENS)


# --------------------------------------------------------------- rejection and bad ids


NESTED = Grammar.from_ebnf("start ::= '(' start ')' | 'a' ;")
NESTED_VOCAB = make_vocab("(", "a", ")", "((", "a)", EOS, CTRL)


def test_rejected_token_has_a_precise_message_and_changes_nothing():
    engine = Engine(NESTED, NESTED_VOCAB)
    feed(engine, "(")
    before = snapshot(engine)
    with pytest.raises(TokenRejected) as info:
        engine.advance(2)  # ')' right after '(': the inner start is missing
    message = str(info.value)
    assert message.startswith("token 2 (b')') cannot continue the text at byte 1; expected "), message
    assert '"("' in message and '"a"' in message, message
    assert snapshot(engine) == before
    # The failed call pushed no history: one rollback undoes '(' itself.
    engine.rollback(1)
    assert snapshot(engine) == snapshot(Engine(NESTED, NESTED_VOCAB))
    # ... and the engine still works after a rejection.
    feed(engine, "(", "a)")
    assert engine.is_finished() and allowed(engine) == [EOS]


def test_rejected_eos_special_and_bad_ids_leave_state_unchanged():
    engine = Engine(NESTED, NESTED_VOCAB)
    feed(engine, "((", "a")
    before = snapshot(engine)
    eos = next(iter(NESTED_VOCAB.eos_token_ids))
    ctrl = next(iter(NESTED_VOCAB.special_ids - NESTED_VOCAB.eos_token_ids))
    assert (eos, ctrl) == (5, 6)
    cases = [
        (eos, "EOS token 5 at byte 3: the text is not complete; expected"),
        (ctrl, "token 6 is a special token and carries no text"),
        (-1, "token id -1 is outside the vocabulary (size 7)"),
        (7, "token id 7 is outside the vocabulary (size 7)"),
        (10**9, f"token id {10**9} is outside the vocabulary (size 7)"),
        (1.0, "token id 1.0 is not an integer"),
        ("1", "token id '1' is not an integer"),
    ]
    for token_id, message in cases:
        with pytest.raises(TokenRejected, match="^" + re.escape(message)):
            engine.advance(token_id)
        assert snapshot(engine) == before, token_id
    engine.advance(np.int64(2))  # numpy integers are ids like any other
    assert allowed(engine) == [b")"]  # "((a)" needs one more ")"


def test_token_rejected_is_a_grammarc_error_and_a_value_error():
    assert issubclass(TokenRejected, grammarc.GrammarcError)
    assert issubclass(TokenRejected, ValueError)


def test_nothing_is_accepted_after_eos():
    engine = Engine(NESTED, NESTED_VOCAB)
    feed(engine, "a")
    assert engine.advance(5) is True
    assert engine.is_finished() and not engine.accepts_eos()
    assert allowed(engine) == [] and not engine.allowed_mask().any()
    for token_id in (1, 5):
        with pytest.raises(TokenRejected, match=f"^token {token_id} after the end: the engine is finished$"):
            engine.advance(token_id)
    with pytest.raises(TokenRejected, match="text after the end"):
        engine.advance_bytes("a")


# ------------------------------------------------------------------ masks: exact sets


def test_eos_allowed_exactly_when_the_text_is_complete():
    grammar = Grammar.from_ebnf("start ::= 'a'+ 'b'? ;")
    vocab = make_vocab("a", "b", "ab", "ba", EOS, "aa", EOS)  # two EOS ids
    engine = Engine(grammar, vocab)
    assert allowed(engine) == [b"a", b"ab", b"aa"] and not engine.accepts_eos()
    feed(engine, "a")
    assert allowed(engine) == [b"a", b"b", b"ab", EOS, b"aa", EOS]
    assert engine.accepts_eos() and not engine.is_finished()
    feed(engine, "b")
    assert allowed(engine) == [EOS, EOS]
    assert engine.accepts_eos() and engine.is_finished()


def test_accepts_eos_matches_the_grammar_along_a_text():
    grammar = grammarc.stdlib("arithmetic")
    vocab = make_vocab("1", "2", "+", "*", "(", ")", " ", "-", ".", "5", EOS)
    engine = Engine(grammar, vocab)
    text = b""
    for token in ["(", "1", " ", "+", "2", ".", "5", ")", "*", "-", "2", " "]:
        feed(engine, token)
        text += token.encode()
        assert engine.accepts_eos() == grammar.accepts(text), text
        assert (10 in engine.allowed_token_ids()) == grammar.accepts(text), text
    assert engine.accepts_eos()


def test_is_finished_means_complete_and_not_extendable():
    grammar = Grammar.from_ebnf("start ::= 'a' | 'ab' ;")
    vocab = make_vocab("a", "b", "ab", EOS)
    engine = Engine(grammar, vocab)
    assert engine.advance(0) is False  # "a" is complete but "ab" extends it
    assert engine.accepts_eos() and not engine.is_finished()
    assert allowed(engine) == [b"b", EOS]
    assert engine.advance(1) is True  # "ab": complete, nothing longer
    assert engine.is_finished() and engine.accepts_eos()
    assert allowed(engine) == [EOS]
    engine.reset()
    assert engine.advance(2) is True
    assert engine.advance(3) is True  # EOS consumed
    assert engine.is_finished() and not engine.accepts_eos()


def test_token_may_not_overshoot_the_language():
    grammar = Grammar.from_ebnf("start ::= 'ab' | 'abcd' ;")
    vocab = make_vocab("a", "ab", "abc", "abx", "abcd", "abcde", "c", "cd", "d", "b", EOS)
    engine = Engine(grammar, vocab)
    # abc is a prefix of abcd; abx and abcde are prefixes of nothing.
    assert allowed(engine) == [b"a", b"ab", b"abc", b"abcd"]
    feed(engine, "ab")
    assert allowed(engine) == [b"c", b"cd", EOS]
    feed(engine, "c")
    assert allowed(engine) == [b"d"] and not engine.accepts_eos()
    with pytest.raises(TokenRejected):
        feed(engine, "cd")


def test_json_bridge_tokens_are_allowed():
    engine = Engine(JSON, JSON_VOCAB)
    feed(engine, '{"', "a", '":', '"', "b")  # {"a":"b  -- inside a value string
    got = set(allowed(engine))
    assert {b'"', b'"}', b'",'} <= got  # the string ends and the object closes / goes on
    assert b'"]' not in got  # an object cannot close with ]
    assert b'":' not in got  # a value is not a key
    engine.reset()
    feed(engine, "[", '"', "b")
    got = set(allowed(engine))
    assert {b'"', b'"]', b'",'} <= got
    assert b'"}' not in got and b'":' not in got
    engine.reset()
    feed(engine, '{"', "a")  # inside a key: only ":" may follow its end
    got = set(allowed(engine))
    assert b'":' in got and b'",' not in got and b'"}' not in got


def test_json_mask_is_exact_after_a_key():
    engine = Engine(JSON, JSON_VOCAB)
    feed(engine, '{"', "a", '"')
    assert allowed(engine) == [b":", b" ", b"\n", b"  "]
    feed(engine, ":")
    # '":' and friends open a string value that starts with ':' (or ',', '}', ']').
    assert allowed(engine) == [
        b"{", b"[", b'"', b" ", b"1", b"0", b"-", b"true", b"null", b'{"',
        b'":', b'",', b'"}', b'"]', b"\n", b"  ",
    ]


def test_special_tokens_never_match_text():
    engine = Engine(Grammar.from_ebnf("start ::= #'.*' ;"), make_vocab("a", CTRL, "b", EOS))
    assert allowed(engine) == [b"a", b"b", EOS]  # empty text is complete; CTRL never allowed


# ---------------------------------------------------------------------- any! / except!


def test_any_token_takes_exactly_one_whole_token():
    grammar = Grammar.from_ebnf("start ::= 'x' any! 'y' ;")
    vocab = make_vocab("x", "y", "a", "xa", "ay", "ya", "xy", EOS, CTRL)
    engine = Engine(grammar, vocab)
    # any! starts only at a token boundary: "xa", "xy" would put 'x' and any! in one token.
    assert allowed(engine) == [b"x"]
    feed(engine, "x")
    assert allowed(engine) == [b"x", b"y", b"a", b"xa", b"ay", b"ya", b"xy"]  # no EOS, no CTRL
    with pytest.raises(TokenRejected, match="special token"):
        engine.advance(8)
    for token in ("y", "a", "ya", "xy"):  # whatever the token, exactly 'y' must follow it
        twin = engine.clone()
        assert twin.advance(vocab.ids_for(token.encode())[0]) is False
        assert allowed(twin) == [b"y"] and not twin.accepts_eos(), token
        assert twin.forced_bytes() == b"y"
        assert twin.advance(1) is True
        assert allowed(twin) == [EOS] and twin.accepts_eos()
    feed(engine, "ay")  # the whole token is any!'s, its 'y' is not the final 'y'
    assert allowed(engine) == [b"y"]
    with pytest.raises(TokenRejected):
        feed(engine, "ya")  # 'y' then 'a' overshoots


def test_any_token_in_repetition():
    grammar = Grammar.from_ebnf("start ::= '<' any! any! '>' ;")
    vocab = make_vocab("<", ">", "a", "<a", "a>", EOS)
    engine = Engine(grammar, vocab)
    assert allowed(engine) == [b"<"]
    feed(engine, "<")
    assert allowed(engine) == [b"<", b">", b"a", b"<a", b"a>"]
    feed(engine, ">")  # any! takes '>' as its token
    assert allowed(engine) == [b"<", b">", b"a", b"<a", b"a>"]
    feed(engine, "a>")
    assert allowed(engine) == [b">"]
    assert engine.advance(1) is True


def test_except_with_token_budget():
    grammar = Grammar.from_ebnf("start ::= except!('\\n', 2) '\\n' ;")
    vocab = make_vocab("a", "b", "ab", "\n", "a\n", "\na", EOS)
    engine = Engine(grammar, vocab)
    # except! text is non-empty and has no newline; "a\n" touches it once, then ends it.
    assert allowed(engine) == [b"a", b"b", b"ab", b"a\n"]
    feed(engine, "a")
    assert allowed(engine) == [b"a", b"b", b"ab", b"\n", b"a\n"]
    feed(engine, "b")  # two tokens spent: only the newline may come
    assert allowed(engine) == [b"\n"]
    with pytest.raises(TokenRejected):
        feed(engine, "a")
    assert engine.advance(3) is True
    assert allowed(engine) == [EOS]
    engine.reset()
    feed(engine, "ab", "a\n")  # 2 tokens touched the except! text
    assert engine.is_finished() and allowed(engine) == [EOS]
    engine.reset()
    feed(engine, "ab", "a")
    assert allowed(engine) == [b"\n"]


def test_except_without_budget_is_byte_level():
    grammar = Grammar.from_ebnf("start ::= except!('ab') '.' ;")
    vocab = make_vocab("a", "b", "ba", "ab", ".", "a.", EOS)
    engine = Engine(grammar, vocab)
    # "." alone is a fine except! text (the final '.' comes later); "ab" is not.
    assert allowed(engine) == [b"a", b"b", b"ba", b".", b"a."]
    feed(engine, "a")
    assert allowed(engine) == [b"a", b".", b"a."]  # "b" would spell "ab"
    feed(engine, "a", "a", ".")
    # "aaa." is complete, and "." may also be except! text: "aaa.." extends it.
    assert engine.accepts_eos() and not engine.is_finished()
    assert allowed(engine) == [b"a", b"b", b"ba", b".", b"a.", EOS]


# ----------------------------------------------------------------------- forced_bytes


SCHEMA_LIKE = Grammar.from_ebnf("""start ::= '{"name": ' #'[0-9]+' '}';""")
SCHEMA_VOCAB = make_vocab("{", '"', '{"', "name", '":', " ", "1", "23", "}", EOS)


def test_forced_bytes_exact():
    engine = Engine(SCHEMA_LIKE, SCHEMA_VOCAB)
    assert engine.forced_bytes() == b'{"name": '
    assert engine.forced_bytes(limit=3) == b'{"n'
    feed(engine, '{"')
    assert engine.forced_bytes() == b'name": '
    assert allowed(engine) == [b"name"]
    engine.advance_bytes(engine.forced_bytes())  # jump forward
    assert engine.forced_bytes() == b""  # any digit may come
    assert engine.next_bytes() == frozenset(b"0123456789")
    assert allowed(engine) == [b"1", b"23"]
    feed(engine, "23")
    assert engine.forced_bytes() == b""  # more digits or '}'
    assert engine.next_bytes() == frozenset(b"0123456789}")
    feed(engine, "}")
    assert engine.forced_bytes() == b"" and engine.is_finished()


def test_forced_bytes_stops_at_a_complete_text_and_at_a_choice():
    engine = Engine(JSON, JSON_VOCAB)
    assert engine.forced_bytes() == b""
    feed(engine, "[")
    engine.advance_bytes("tr")
    assert engine.forced_bytes() == b"ue"
    engine = Engine(Grammar.from_ebnf("start ::= 'ab' | 'abcd' ;"), make_vocab("a", EOS))
    assert engine.forced_bytes() == b"ab"  # complete there: EOS or "cd" may follow
    engine.advance_bytes("abc")
    assert engine.forced_bytes() == b"d"


def test_advance_bytes_rejects_and_keeps_state():
    engine = Engine(SCHEMA_LIKE, SCHEMA_VOCAB)
    engine.advance_bytes('{"na')
    before = snapshot(engine)
    with pytest.raises(TokenRejected, match=re.escape("bytes b'mx' cannot continue the text at byte 4")):
        engine.advance_bytes(b"mx")
    assert snapshot(engine) == before
    engine.advance_bytes(b"me")
    assert engine.forced_bytes() == b'": '


# ------------------------------------------------- clone, reset, rollback (lifecycle)


def test_clones_are_independent():
    engine = Engine(JSON, JSON_VOCAB)
    feed(engine, "[", "1")
    twin = engine.clone()
    assert snapshot(twin) == snapshot(engine)
    original = snapshot(engine)
    feed(twin, ",", "true", "]")
    assert twin.is_finished() is False and twin.accepts_eos()
    assert snapshot(engine) == original
    feed(engine, "]")
    assert engine.accepts_eos()
    twin.rollback(3)  # rolling back the twin does not touch the original's history
    assert snapshot(twin) == original
    engine.rollback(1)
    assert snapshot(engine) == original
    assert twin.compiled is engine.compiled and twin.index is engine.index  # shared parts


def test_reset_equals_a_new_engine():
    engine = Engine(JSON, JSON_VOCAB)
    fresh = snapshot(Engine(JSON, JSON_VOCAB))
    feed(engine, '{"', "a", '":', "1", "}")
    engine.advance(JSON_VOCAB.size - 2)  # EOS
    engine.reset()
    assert snapshot(engine) == fresh
    with pytest.raises(ValueError, match=re.escape("cannot roll back 1 tokens: 0 can be undone")):
        engine.rollback(1)


def test_rollback_is_bounded_by_max_rollback():
    engine = Engine(JSON, JSON_VOCAB, max_rollback=3)
    states = [snapshot(engine)]
    for token in ("[", "1", ",", "0", "]"):
        feed(engine, token)
        states.append(snapshot(engine))
    with pytest.raises(ValueError, match=re.escape("cannot roll back 4 tokens: 3 can be undone")):
        engine.rollback(4)
    assert snapshot(engine) == states[-1]  # a refused rollback changes nothing
    with pytest.raises(ValueError):
        engine.rollback(-1)
    engine.rollback(3)
    assert snapshot(engine) == states[2]
    with pytest.raises(ValueError, match="0 can be undone"):
        engine.rollback(1)
    engine.rollback(0)
    assert snapshot(engine) == states[2]


def test_rollback_undoes_eos():
    engine = Engine(NESTED, NESTED_VOCAB)
    feed(engine, "a")
    before = snapshot(engine)
    engine.advance(5)
    assert not engine.accepts_eos()
    engine.rollback(1)
    assert snapshot(engine) == before and engine.accepts_eos() and allowed(engine) == [EOS]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rollback_equals_replaying_the_prefix(data):
    """Random walks with random rollbacks: after rollback(n), the engine is observably the
    engine that replays the remaining prefix from scratch (masks, EOS, finished, forced)."""
    max_rollback = data.draw(st.integers(1, 12), label="max_rollback")
    engine = Engine(JSON, JSON_VOCAB, max_rollback=max_rollback)
    eos = next(iter(JSON_VOCAB.eos_token_ids))
    prefix: list[int] = []
    seen = [snapshot(engine)]  # seen[i] = snapshot after prefix[:i]
    undoable = 0  # history is bounded by max_rollback and consumed by rollbacks
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        if prefix and data.draw(st.booleans(), label="roll back?"):
            n = data.draw(st.integers(0, undoable), label="n")
            engine.rollback(n)
            undoable -= n
            del prefix[len(prefix) - n :]
            del seen[len(seen) - n :]
            replay = Engine(JSON, JSON_VOCAB, max_rollback=max_rollback)
            for token_id in prefix:
                replay.advance(token_id)
            assert snapshot(engine) == snapshot(replay) == seen[-1]
            with pytest.raises(ValueError, match=f"cannot roll back {undoable + 1} tokens: {undoable} can"):
                engine.rollback(undoable + 1)
            assert snapshot(engine) == seen[-1]
            continue
        choices = [int(i) for i in engine.allowed_token_ids()]
        if not choices:
            break
        token_id = data.draw(st.sampled_from(choices), label="token")
        engine.advance(token_id)
        prefix.append(token_id)
        seen.append(snapshot(engine))
        undoable = min(undoable + 1, max_rollback)
        if token_id == eos:
            assert engine.is_finished() and not engine.allowed_mask().any()


# ---------------------------------------------------------- fill_bitmask / mask_logits


LETTERS = Grammar.from_ebnf("start ::= #'[a-z]+' ;")
# 10 digits, 26 letters, EOS: 37 ids (not a multiple of 32); letter 'v' is id 31 (the sign bit).
LETTER_VOCAB = make_vocab(*"0123456789abcdefghijklmnopqrstuvwxyz", EOS)


def bits_of(words: np.ndarray, size: int) -> list[int]:
    """Token ids whose bit is set: bit i % 32 of 32-bit word i // 32 (independent unpacking)."""
    unsigned = [int(w) & 0xFFFFFFFF for w in words]
    return [i for i in range(size) if (unsigned[i // 32] >> (i % 32)) & 1]


def test_fill_bitmask_layout():
    engine = Engine(LETTERS, LETTER_VOCAB)
    buf = np.full(2, -1, dtype=np.int32)  # ceil(37 / 32) words, dirty
    engine.fill_bitmask(buf)
    assert bits_of(buf, 64) == list(range(10, 36))
    assert buf[0] == np.int32(np.uint32(0xFFFFFC00).view(np.int32))  # ids 10..31: negative word
    assert buf[1] == 0b1111  # ids 32..35
    assert bits_of(buf, 64) == engine.allowed_token_ids().tolist()
    feed(engine, "a")  # complete: EOS (id 36) joins
    engine.fill_bitmask(buf)
    assert buf[1] == 0b11111
    assert bits_of(buf, 37) == engine.allowed_token_ids().tolist()


def test_fill_bitmask_wider_buffer_and_too_small():
    engine = Engine(LETTERS, LETTER_VOCAB)
    feed(engine, "z")
    wide = np.full(5, -1, dtype=np.int32)
    engine.fill_bitmask(wide)
    assert wide[2:].tolist() == [0, 0, 0]  # words past the vocabulary are cleared
    assert bits_of(wide, 160) == engine.allowed_token_ids().tolist()
    with pytest.raises(ValueError, match="bitmask buffer has 1 words; 2 needed"):
        engine.fill_bitmask(np.zeros(1, dtype=np.int32))


def test_fill_bitmask_batch_rows_and_bad_buffers():
    engine = Engine(LETTERS, LETTER_VOCAB)
    batch = np.full((3, 2), -1, dtype=np.int32)
    engine.fill_bitmask(batch[1])  # one row of a batch, written in place
    assert batch[0].tolist() == [-1, -1] and batch[2].tolist() == [-1, -1]
    assert bits_of(batch[1], 64) == engine.allowed_token_ids().tolist()
    column = np.full((4, 3), -1, dtype=np.int32)
    engine.fill_bitmask(column[:, 1])  # a strided view is written through, its tail cleared
    assert bits_of(column[:, 1], 128) == engine.allowed_token_ids().tolist()
    assert column[2:, 1].tolist() == [0, 0]
    assert (column[:, [0, 2]] == -1).all()  # nothing between its words is touched
    frozen = np.zeros(2, dtype=np.int32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        engine.fill_bitmask(frozen)
    with pytest.raises(ValueError, match=r"1-D int32 buffer \(for a batch, pass one row: buf\[i\]\); got shape \(3, 2\) of int32"):
        engine.fill_bitmask(batch)
    with pytest.raises(ValueError, match=r"got shape \(2,\) of int64"):
        engine.fill_bitmask(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match=r"got shape \(2,\) of >i4"):  # int32, but not the machine's order
        engine.fill_bitmask(np.zeros(2, dtype=">i4"))
    with pytest.raises(ValueError, match="^fill_bitmask writes into a NumPy array or a torch tensor, not list$"):
        engine.fill_bitmask([0, 0])
    row = np.full((1, 2), -1, dtype=np.int32)
    engine.fill_bitmask(row)  # a batch of one: its row
    assert bits_of(row[0], 64) == engine.allowed_token_ids().tolist()


def test_fill_bitmask_against_allowed_ids_on_json():
    engine = Engine(JSON, JSON_VOCAB)
    buf = np.zeros(-(-JSON_VOCAB.size // 32), dtype=np.int32)
    for token in ("[", '{"', "a", '":', "1", "}", "]"):
        engine.fill_bitmask(buf)
        assert bits_of(buf, JSON_VOCAB.size) == engine.allowed_token_ids().tolist()
        feed(engine, token)


def test_fill_bitmask_when_finished_is_empty():
    engine = Engine(LETTERS, LETTER_VOCAB)
    feed(engine, "q")
    engine.advance(36)
    buf = np.full(2, -1, dtype=np.int32)
    engine.fill_bitmask(buf)
    assert buf.tolist() == [0, 0]


def test_allowed_token_ids_are_sorted_int32():
    engine = Engine(LETTERS, LETTER_VOCAB)
    ids = engine.allowed_token_ids()
    assert ids.dtype == np.int32 and ids.tolist() == sorted(ids.tolist())
    mask = engine.allowed_mask()
    assert mask.dtype == bool and mask.shape == (37,) and np.flatnonzero(mask).tolist() == ids.tolist()


def test_mask_logits_numpy_1d_and_one_row():
    engine = Engine(LETTERS, LETTER_VOCAB)
    feed(engine, "b")
    expected = np.full(37, -np.inf, dtype=np.float32)
    expected[10:37] = np.arange(10, 37)
    for shape in ((37,), (1, 37)):
        logits = np.arange(37, dtype=np.float32).reshape(shape)
        out = engine.mask_logits(logits)
        assert out is logits  # in place
        np.testing.assert_array_equal(logits.reshape(-1), expected)


def test_mask_logits_wider_and_narrower_logits():
    engine = Engine(LETTERS, LETTER_VOCAB)
    logits = np.zeros(37 + 27, dtype=np.float64)  # padded logits: the padding is blocked
    engine.mask_logits(logits)
    assert np.isfinite(logits).tolist() == [False] * 10 + [True] * 26 + [False] * 28
    narrow = np.zeros(36)  # EOS (id 36) is not allowed at the start: nothing falls off
    engine.mask_logits(narrow)
    assert np.isfinite(narrow).sum() == 26
    feed(engine, "a")  # now EOS is allowed and would fall off a 36-wide row
    with pytest.raises(ValueError, match="logits have 36 columns but the vocabulary has 37 tokens"):
        engine.mask_logits(np.zeros(36))


def test_mask_logits_torch():
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch case of mask_logits is untested")
    engine = Engine(LETTERS, LETTER_VOCAB)
    feed(engine, "b")
    for shape in ((37,), (1, 37)):
        logits = torch.arange(37, dtype=torch.float32).reshape(shape)
        out = engine.mask_logits(logits)
        assert out is logits
        flat = logits.reshape(-1)
        assert torch.isinf(flat[:10]).all() and (flat[10:] == torch.arange(10, 37)).all()
    buf = torch.full((2,), -1, dtype=torch.int32)
    engine.fill_bitmask(buf)
    assert bits_of(buf.numpy(), 37) == engine.allowed_token_ids().tolist()


def test_eos_mask_when_a_nonempty_text_returns_to_the_start_items():
    """Under (a*ba)*, the text "a" leaves the lexer in the DFA's start state, so the engine's
    items equal those of the empty text; only the empty text is complete. (The mask memo
    once served the empty text's mask, EOS included, for "a".)"""
    engine = Engine(Grammar.from_ebnf("start ::= (#'a*ba')* ;"), make_vocab("a", "b", EOS))
    assert allowed(engine) == [b"a", b"b", EOS]
    feed(engine, "a")
    assert allowed(engine) == [b"a", b"b"] and not engine.accepts_eos()
    feed(engine, "b")
    assert allowed(engine) == [b"a"]
    feed(engine, "a")  # "aba" is complete
    assert allowed(engine) == [b"a", b"b", EOS] and engine.accepts_eos()
    feed(engine, "a")  # "abaa": back to the start items, not complete
    assert allowed(engine) == [b"a", b"b"] and not engine.accepts_eos()


# ------------------------------------------- token budgets that end inside a character


def test_last_token_of_an_except_budget_must_end_where_the_terminal_can():
    """Issue 10: `a\\xc3` spent the only token of the budget inside the character é, after
    which the text could neither grow (no token may touch the except! text) nor end."""
    grammar = Grammar.from_ebnf("start ::= except!(';', 1) ';' ;")
    vocab = make_vocab("a", b"a\xc3", b"\xc3\xa9", ";", EOS)
    engine = Engine(grammar, vocab)
    assert allowed(engine) == [b"a", b"\xc3\xa9"]
    with pytest.raises(TokenRejected, match=re.escape("token 1 (b'a\\xc3') cannot continue the text at byte 0")):
        engine.advance(1)
    assert allowed(engine) == [b"a", b"\xc3\xa9"]  # refused: nothing changed
    feed(engine, b"\xc3\xa9")
    assert allowed(engine) == [b";"]
    # With a budget of 2 the first token may stop inside é if one token can finish it:
    # none of this vocabulary starts with the byte \xa9, so "a\xc3" is still refused...
    engine = Engine(Grammar.from_ebnf("start ::= except!(';', 2) ';' ;"), vocab)
    assert allowed(engine) == [b"a", b"\xc3\xa9"]
    # ... and allowed where one can.
    engine = Engine(Grammar.from_ebnf("start ::= except!(';', 2) ';' ;"), make_vocab("a", b"a\xc3", b"\xa9", b"\xa9;", ";", EOS))
    assert allowed(engine) == [b"a", b"a\xc3"]
    feed(engine, b"a\xc3")
    assert allowed(engine) == [b"\xa9", b"\xa9;"]
    feed(engine, b"\xa9")
    assert allowed(engine) == [b";"]


def test_budget_of_one_opened_inside_a_token_must_end_in_it_too():
    grammar = Grammar.from_ebnf("start ::= 'x' except!(';', 1) ';' ;")
    vocab = make_vocab("x", "xa", b"xa\xc3", b"x\xc3\xa9", "a", ";", "a;", EOS)
    engine = Engine(grammar, vocab)
    # "xa\xc3" opens the except! text and stops inside é: its one token is spent there.
    assert allowed(engine) == [b"x", b"xa", b"x\xc3\xa9"]
    feed(engine, "xa")
    assert allowed(engine) == [b";"]
    engine.reset()
    feed(engine, "x")
    assert allowed(engine) == [b"x", b"xa", b"x\xc3\xa9", b"a", b"a;"]  # never "xa\xc3"


def test_advance_bytes_of_nothing_keeps_pending_any_token():
    engine = Engine(Grammar.from_ebnf("start ::= 'x' any! ;"), make_vocab("x", "y", EOS))
    feed(engine, "x")
    before = snapshot(engine)
    engine.advance_bytes(b"")
    assert snapshot(engine) == before and allowed(engine) == [b"x", b"y"]
    feed(engine, "y")
    assert engine.is_finished()


# ------------------------------------------------------ rollback counts tokens only


def test_rollback_counts_tokens_not_advance_bytes():
    engine = Engine(SCHEMA_LIKE, SCHEMA_VOCAB, max_rollback=2)
    feed(engine, "{")
    after_brace = snapshot(engine)
    engine.advance_bytes('"name": ')  # forced text: not a token, no history entry of its own
    feed(engine, "1")
    after_one = snapshot(engine)
    engine.advance_bytes("2")
    feed(engine, "23")
    engine.rollback(1)  # undoes "23" only: the state right before it, "2" included
    assert engine.forced_bytes() == b"" and engine.next_bytes() == frozenset(b"0123456789}")
    engine.advance_bytes("")
    engine.rollback(1)  # undoes "1" and the "2" fed after it
    assert snapshot(engine) != after_brace and snapshot(engine) == snapshot(_replayed('{"name": '))
    with pytest.raises(ValueError, match=re.escape("cannot roll back 1 tokens: 0 can be undone")):
        engine.rollback(1)  # max_rollback=2 tokens, both spent; "{" is out of reach
    assert after_one != after_brace


def _replayed(text: str) -> Engine:
    engine = Engine(SCHEMA_LIKE, SCHEMA_VOCAB)
    feed(engine, "{")
    engine.advance_bytes(text[1:])
    return engine


def test_max_rollback_zero_keeps_no_history_and_everything_else_works():
    engine = Engine(SCHEMA_LIKE, SCHEMA_VOCAB, max_rollback=0)
    feed(engine, "{")
    assert engine.forced_bytes() == b'"name": '
    engine.advance_bytes(engine.forced_bytes())  # jump-forward needs no history
    feed(engine, "23", "}")
    assert engine.is_finished()
    with pytest.raises(ValueError, match=re.escape("cannot roll back 1 tokens: 0 can be undone")):
        engine.rollback(1)
    engine.rollback(0)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", None, True])
def test_max_rollback_must_be_a_non_negative_int(bad):
    with pytest.raises(grammarc.GrammarcError, match=re.escape(f"max_rollback must be a non-negative int, got {bad!r}")):
        Engine(JSON, JSON_VOCAB, max_rollback=bad)


# ---------------------------------------------------------- arguments refused precisely


def test_engine_refuses_what_is_not_a_grammar_or_a_vocabulary():
    with pytest.raises(grammarc.GrammarcError, match=re.escape(
            "Engine needs a grammarc.Grammar or CompiledGrammar, got str (build one with grammarc.Grammar.from_ebnf(text))")):
        Engine("start ::= 'a' ;", JSON_VOCAB)
    with pytest.raises(grammarc.GrammarcError, match=re.escape("Engine needs a grammarc.Vocabulary, got list")):
        Engine(JSON, [b"a", b"b"])


def test_mask_logits_refuses_a_batch():
    engine = Engine(LETTERS, LETTER_VOCAB)
    logits = np.zeros((3, 37), dtype=np.float32)
    with pytest.raises(grammarc.GrammarcError, match=re.escape(
            "mask_logits takes the logits of one sequence, shape (V,) or (1, V); got shape (3, 37)")):
        engine.mask_logits(logits)
    assert not np.isinf(logits).any()  # nothing was written
    for shape in ((), (1, 2, 37)):
        with pytest.raises(ValueError, match="one sequence"):
            engine.mask_logits(np.zeros(shape))
    one = np.zeros((1, 1, 37))
    engine.mask_logits(one)
    assert np.isinf(one).sum() == 11


def test_any_token_never_starts_inside_a_token():
    """`"a" any!` with the token "ab": any! takes whole tokens only, so "ab" (which would
    need any! to start at its second byte) is neither allowed nor accepted when forced, and
    the engine never believes the text complete. (It once took the "b" as the any!.)"""
    vocab = Vocabulary.from_bytes([b"a", b"b", b"ab", b""], eos_token_ids=[3], special_token_ids=[3])
    engine = Engine(Grammar.from_ebnf('start ::= "a" any!;'), vocab)
    assert np.flatnonzero(engine.allowed_mask()).tolist() == [0]
    with pytest.raises(TokenRejected, match="^" + re.escape("token 2 (b'ab') cannot continue the text at byte 0")):
        engine.advance(2)
    engine.advance(0)
    assert np.flatnonzero(engine.allowed_mask()).tolist() == [0, 1, 2]
    engine.advance(2)
    assert np.flatnonzero(engine.allowed_mask()).tolist() == [3]
