"""The shortest-completion planner and `Steering` (grammarc.integrations.steering).

Exactness is checked against independent oracles, never against hand-written answers:

* bytes: breadth-first search over single bytes with the byte-level `Recognizer` (the
  reference semantics), deduplicated by its items, from prefixes reached by random walks;
  the planned completion must be exactly as long, use only the alphabet and complete the
  text;
* tokens (``any!``, ``except!(X, n)``): breadth-first search over engine clones advanced
  with single-byte tokens, deduplicated by `Engine.configuration`.

Incrementality is counted: a steered sequence that follows its plan plans once.
"""

from __future__ import annotations

import json
import random
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammarc
from grammarc import Engine, Grammar, TokenRejected, Vocabulary
from grammarc.integrations.steering import (
    CompletionPlanner,
    Steering,
    SteeringError,
    SteeringWarning,
    shortest_completion,
)
from grammarc.integrations.transformers import GrammarLogitsProcessor
from grammarc.runtime.recognizer import Recognizer

BYTES = [bytes([b]) for b in range(256)]


def byte_vocab(alphabet=range(256), extra=()) -> Vocabulary:
    """Single-byte tokens for `alphabet` (others absent), then `extra` tokens, then EOS."""
    tokens = [bytes([b]) for b in alphabet] + [bytes(t) for t in extra] + [None]
    return Vocabulary.from_bytes(tokens, eos_token_ids=[len(tokens) - 1])


# --------------------------------------------------------------------- oracles


def recognizer_bfs(grammar: Grammar, prefix: bytes, alphabet: frozenset[int], limit: int = 60_000):
    """Length of the shortest completion over `alphabet` (-1: none), or None past `limit` states."""
    rec = Recognizer(grammar.compile())
    assert rec.feed(prefix)
    if rec.is_complete():
        return 0
    seen = {rec.items}
    frontier, depth = [rec], 0
    while frontier:
        depth += 1
        nxt = []
        for r in frontier:
            for b in sorted(r.next_bytes() & alphabet):
                c = r.clone()
                c.feed(bytes([b]))
                if c.is_complete():
                    return depth
                if c.items not in seen:
                    seen.add(c.items)
                    nxt.append(c)
            if len(seen) > limit:
                return None
        frontier = nxt
    return -1


def engine_bfs(engine: Engine, limit: int = 60_000):
    """The same over engine clones and single-byte tokens (token-level rules included)."""
    singles = {b: i for b in range(256) for i in engine.vocab.ids_for(bytes([b]))[:1]}
    if engine.accepts_eos():
        return 0
    seen = {engine.configuration()}
    frontier, depth = [engine], 0
    while frontier:
        depth += 1
        nxt = []
        for e in frontier:
            for b in sorted(e.next_bytes()):
                if b not in singles:
                    continue
                c = e.clone()
                try:
                    c.advance(singles[b])
                except TokenRejected:
                    continue
                if c.accepts_eos():
                    return depth
                if c.configuration() not in seen:
                    seen.add(c.configuration())
                    nxt.append(c)
            if len(seen) > limit:
                return None
        frontier = nxt
    return -1


def walk(grammar: Grammar, rng: random.Random, steps: int, alphabet: frozenset[int]) -> bytes:
    """A random viable prefix: bytes the recognizer allows, drawn one at a time."""
    rec = Recognizer(grammar.compile())
    out = bytearray()
    for _ in range(steps):
        choices = sorted(rec.next_bytes() & alphabet)
        if not choices:
            break
        b = rng.choice(choices)
        rec.feed(bytes([b]))
        out.append(b)
    return bytes(out)


# ------------------------------------------------------------------ exactness

PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "age": {"type": "integer", "minimum": 10},
        "tags": {"type": "array", "items": {"enum": ["ab", "c"]}, "minItems": 2},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}

SMALL = {
    "arithmetic": lambda: grammarc.stdlib("arithmetic"),
    "json": lambda: grammarc.stdlib("json"),
    "ambiguous": lambda: Grammar.from_ebnf(
        "start ::= s ; s ::= s s | 'a' | 'b' s 'c' | 'xyz' ;"
    ),
    "right-recursive": lambda: Grammar.from_ebnf(
        "start ::= item ; item ::= '[' list ']' | #/[0-9]{3,5}/ ; list ::= item | item ',' list ;"
    ),
    "counted": lambda: Grammar.from_ebnf(
        "start ::= ( 'ab' | 'c' ){2,4} ( #e/[a-z]*q/ | #substrs'hello' ) '!' ;"
    ),
    "schema-compact": lambda: Grammar.from_json_schema(PERSON_SCHEMA, whitespace="compact"),
    "schema-bounded": lambda: Grammar.from_json_schema(PERSON_SCHEMA, whitespace="bounded"),
}


@pytest.mark.parametrize("name", sorted(SMALL))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 40))
def test_plan_is_exactly_as_short_as_breadth_first_search(name, seed, steps):
    grammar = SMALL[name]()
    vocab = byte_vocab()
    alphabet = frozenset(range(256))
    prefix = walk(grammar, random.Random(seed), steps, alphabet)
    engine = Engine(grammar, vocab)
    engine.advance_bytes(prefix)
    plan = shortest_completion(engine)
    assert grammar.accepts(prefix + plan), (prefix, plan)
    expected = recognizer_bfs(grammar, prefix, alphabet)
    if expected is not None:  # the oracle ran out of room only on long whitespace-heavy walks
        assert len(plan) == expected, (prefix, plan)
    for k in range(len(plan)):  # and no shorter prefix of it is complete
        assert not grammar.accepts(prefix + plan[:k])


def test_the_oracle_decided_most_cases():
    """The exactness test above is not hollow: the oracle answers on typical prefixes."""
    rng = random.Random(7)
    decided = 0
    for name in sorted(SMALL):
        grammar = SMALL[name]()
        for _ in range(5):
            prefix = walk(grammar, rng, rng.randrange(30), frozenset(range(256)))
            decided += recognizer_bfs(grammar, prefix, frozenset(range(256))) is not None
    assert decided >= 30


@pytest.mark.parametrize("name", ["arithmetic", "json", "schema-bounded", "right-recursive"])
def test_plan_over_a_restricted_alphabet(name):
    """Bytes without a single-byte token are never planned, and the plan is still shortest."""
    grammar = SMALL[name]()
    alphabet = frozenset(b for b in range(256) if b not in b"0123456 \nb")
    vocab = byte_vocab(sorted(alphabet), extra=[b"01", b" \n"])  # longer tokens are not the alphabet
    rng = random.Random(3)
    compared = 0
    for _ in range(25):
        prefix = walk(grammar, rng, rng.randrange(25), alphabet)
        engine = Engine(grammar, vocab)
        engine.advance_bytes(prefix)
        expected = recognizer_bfs(grammar, prefix, alphabet)
        if expected == -1:  # e.g. a '\r' that only a missing '\n' may follow
            with pytest.raises(SteeringError, match="single-byte tokens"):
                shortest_completion(engine)
            compared += 1
            continue
        plan = shortest_completion(engine)
        assert set(plan) <= alphabet and grammar.accepts(prefix + plan)
        if expected is not None:
            assert len(plan) == expected
            compared += 1
    assert compared >= 20


TOKEN_LEVEL = [
    "start ::= '<' any! any! '>' ;",
    "start ::= 'note: ' except!('\\n', 3) '\\n' ;",
    "start ::= ( except!('ab', 2) ';' ){1,3} ;",
    "start ::= 'k=' ( any! | #/[0-9]{4}/ ) ';' ;",
]


@pytest.mark.parametrize("text", TOKEN_LEVEL)
def test_token_level_rules_match_an_engine_search(text):
    grammar = Grammar.from_ebnf(text)
    vocab = byte_vocab(extra=[b"xy", b"xyz", b"ab", b"note: x"])
    singles = {b: b for b in range(256)}  # byte b is token id b
    rng = random.Random(11)
    compared = 0
    for _ in range(80):
        engine = Engine(grammar, vocab)
        for _ in range(rng.randrange(8)):  # a random walk over tokens, multi-byte ones included
            allowed = [i for i in engine.allowed_token_ids().tolist() if i not in vocab.eos_token_ids]
            if not allowed or engine.is_finished():
                break
            engine.advance(rng.choice(allowed))
        if engine.is_finished():
            continue
        expected = engine_bfs(engine)
        compared += 1
        if expected == -1:  # see test_except_budget_dead_end below
            with pytest.raises(SteeringError, match="single-byte tokens"):
                shortest_completion(engine)
            continue
        plan = shortest_completion(engine)
        assert len(plan) == expected
        follower = engine.clone()
        for b in plan:  # the plan is taken byte by byte, as steering offers it
            follower.advance(singles[b])
        assert follower.accepts_eos()
    assert compared >= 30


def test_except_budget_dead_end():
    engine = Engine(Grammar.from_ebnf("start ::= 'note: ' except!('\\n', 3) '\\n' ;"), byte_vocab())
    engine.advance_bytes("note: ")
    engine.advance(ord("x"))
    engine.advance(ord("s"))
    # the last token of the budget must end a character: no lead byte such as 0xC4 (its
    # continuation would be a fourth token), but '\n' may close the terminal
    assert engine.allowed_token_ids().tolist() == list(range(0x80))
    engine.advance(ord("\n"))
    assert engine.accepts_eos()


def test_no_completion_over_the_alphabet_is_a_precise_error():
    grammar = Grammar.from_ebnf("start ::= 'a' #/[0-9]+/ ;")
    vocab = byte_vocab([ord("a")], extra=[b"12"])
    engine = Engine(grammar, vocab)
    engine.advance(0)
    with pytest.raises(SteeringError) as info:
        shortest_completion(engine)
    assert str(info.value) == (
        "no completion can be spelled with the vocabulary's single-byte tokens "
        "(it has none for 255 bytes, e.g. b'\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07')"
    )


def test_budgets_are_errors_not_partial_plans():
    grammar = Grammar.from_ebnf("start ::= '[' #/[a-z]{300}/ ']' ;")
    engine = Engine(grammar, byte_vocab())
    engine.advance_bytes("[")
    assert shortest_completion(engine) == b"a" * 300 + b"]"
    with pytest.raises(SteeringError, match="^the shortest completion is 301 bytes, more than 100$"):
        shortest_completion(engine, max_length=100)
    deep = Grammar.from_ebnf("start ::= e ; e ::= '(' e ')' | 'x' ;")
    engine = Engine(deep, byte_vocab())
    engine.advance_bytes("(" * 50)
    assert shortest_completion(engine) == b"x" + b")" * 50
    with pytest.raises(SteeringError, match="^no completion found within 10 search steps$"):
        shortest_completion(engine, max_pairs=10)


def test_complete_and_finished_texts_need_no_plan():
    engine = Engine(Grammar.from_ebnf("start ::= 'a' | 'ab' ;"), byte_vocab())
    engine.advance_bytes("a")
    assert shortest_completion(engine) == b""
    engine.advance(ord("b"))
    assert engine.is_finished() and shortest_completion(engine) == b""


def test_plans_prefer_letters_and_digits_to_control_bytes():
    grammar = Grammar.from_ebnf("start ::= '\"' #/[^\"]+/ '\"' ':' #/[0-9a-f]/ ;")
    engine = Engine(grammar, byte_vocab())
    assert shortest_completion(engine) == b'"a":a'


def test_planner_tables_are_built_per_grammar_and_alphabet():
    grammar = grammarc.stdlib("json").compile()
    planner = CompletionPlanner(grammar, range(256))
    lengths = {grammar.bnf.nonterminals[i]: planner.length(grammar.bnf.n_terminals + i)
               for i in range(len(grammar.bnf.nonterminals))}
    assert min(n for n in lengths.values() if n is not None) == 1  # a digit is a JSON value


# ------------------------------------------------------------------ Steering


def test_steering_follows_one_plan_and_plans_again_only_off_it():
    vocab = byte_vocab(extra=[b'":', b"]]"])
    grammar = grammarc.stdlib("json")
    engine = Engine(grammar, vocab)
    engine.advance_bytes('[[{"ab')
    steering = Steering(0, eos=vocab.size - 1)
    allowed = engine.allowed_token_ids().astype(np.int64)
    first = steering.candidates(engine, allowed)
    assert steering.plan == b'":0}]]' and steering.plans == 1
    assert sorted(first.tolist()) == [ord('"'), 256]  # '"' and '":' spell prefixes of the plan
    engine.advance(256)
    steering.consumed(b'":')
    assert steering.plan == b"0}]]"
    steering.candidates(engine, engine.allowed_token_ids().astype(np.int64))
    assert steering.plans == 1  # followed: no new plan
    engine.advance(ord("7"))  # a digit, but not the planned one
    steering.consumed(b"7")
    assert steering.plan is None
    steering.candidates(engine, engine.allowed_token_ids().astype(np.int64))
    assert steering.plans == 2 and steering.plan == b"}]]"


def test_processor_plans_once_per_row_and_finishes_every_row():
    vocab = byte_vocab(range(32, 127), extra=[b'{"', b'":', b"[[", b"  "])
    eos = vocab.size - 1
    grammar = Grammar.from_json_schema(PERSON_SCHEMA)  # whitespace="bounded"
    torch = pytest.importorskip("torch", reason="pip install torch (CPU build) for the logits processor")
    for seed in range(6):
        processor = GrammarLogitsProcessor([Engine(grammar, vocab)] * 2, finish_after=8)
        rows: list[list[int]] = [[], []]
        gen = torch.Generator().manual_seed(seed)
        for _ in range(200):
            scores = torch.randn(2, vocab.size, generator=gen)
            out = processor(torch.tensor([[0] + r for r in rows]), scores)
            rows = [r + [int(out[i].argmax())] for i, r in enumerate(rows)]
            if all(r[-1] == eos for r in rows):
                break
        for i in range(2):
            text = processor.generated_bytes(i)
            rows[i] = rows[i][: rows[i].index(eos) + 1]  # a row that ended first got padding since
            assert grammar.accepts(text), text
            steering = processor.steering(i)
            assert steering.plans == 1
            # the bound: 8 free tokens, then at most one token per planned byte, then EOS
            head = Engine(grammar, vocab)
            for t in rows[i][:8]:
                head.advance(t)
            assert len(rows[i]) <= 8 + len(shortest_completion(head)) + 1
            json.loads(text)


def test_a_vocabulary_without_the_needed_bytes_warns_once_and_falls_back():
    torch = pytest.importorskip("torch", reason="pip install torch (CPU build) for the logits processor")
    grammar = Grammar.from_ebnf("start ::= 'a' #/[0-9]+/ ;")
    vocab = byte_vocab([ord("a")], extra=[b"12"])  # digits only in pairs: no plan exists
    processor = GrammarLogitsProcessor([Engine(grammar, vocab)], finish_after=1)
    processor(torch.tensor([[7]]), torch.zeros(1, vocab.size))  # the prompt; not steered yet
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = processor(torch.tensor([[7, 0]]), torch.zeros(1, vocab.size))  # 'a'
        processor(torch.tensor([[7, 0, 1]]), torch.zeros(1, vocab.size))
    assert [type(w.message) for w in caught] == [SteeringWarning]
    assert str(caught[0].message).startswith("finish_after: steering is off for this sequence: no completion")
    assert torch.isfinite(out[0]).tolist() == [False, True, False]  # the plain mask: '12'


def test_rollback_drops_the_plan():
    torch = pytest.importorskip("torch", reason="pip install torch (CPU build) for the logits processor")
    vocab = byte_vocab()
    grammar = grammarc.stdlib("json")
    processor = GrammarLogitsProcessor([Engine(grammar, vocab)], finish_after=0)
    scores = torch.zeros(1, vocab.size)
    processor(torch.tensor([[0]]), scores.clone())
    assert processor.steering(0).plan == b"0" and processor.steering(0).plans == 1
    processor(torch.tensor([[0, ord("[")]]), scores.clone())  # off the plan
    assert processor.steering(0).plan == b"]" and processor.steering(0).plans == 2
    processor(torch.tensor([[0, ord("{")]]), scores.clone())  # a different history: rolled back
    assert processor.steering(0).plan == b"}" and processor.steering(0).plans == 3
