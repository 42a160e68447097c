"""Random constrained walks through the engine produce JSON that jsonschema itself accepts.

For a fixed sample of JSON-Schema-Test-Suite (draft 2020-12) schemas that the front-end
compiles, we walk the engine with the Llama-3 vocabulary: uniformly over the allowed tokens
for a while, then with a *closing policy* that prefers EOS, then tokens that close strings,
arrays and objects, then short tokens. Every finished text must be accepted by the grammar's
recognizer and by `jsonschema.Draft202012Validator` with format checking. A walk that hits the
hard cap without finishing is a failure too: under a sound engine the closing policy always
gets out (the masks only offer tokens after which the text can still be completed).

`random_walk` is shared with test_pydantic.py.
"""

from __future__ import annotations

import importlib.util
import json
import random
from collections import deque
from decimal import Decimal
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from grammarc import Engine
from grammarc.errors import GrammarcError
from grammarc import Grammar

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "json-schema-test-suite"
SUITE = DATA / "tests" / "draft2020-12"
SAMPLE = 120  # schemas walked
WALKS = 2  # walks per schema
FREE_TOKENS = 40  # uniform steps before the closing policy
HARD_CAP = 600  # tokens; a walk still running then is a failure
CLOSERS = frozenset(b'"]}')


class WalkStuck(AssertionError):
    """A walk could not finish within the hard cap (or the engine offered nothing)."""


@cache
def _token_classes(vocab) -> tuple[np.ndarray, np.ndarray]:
    """Bool masks over `vocab`: tokens made only of ``"]}`` bytes; single non-space bytes."""
    closing = np.zeros(vocab.size, dtype=bool)
    single = np.zeros(vocab.size, dtype=bool)
    for i, t in enumerate(vocab.tokens):
        if t and set(t) <= CLOSERS:
            closing[i] = True
        if len(t) == 1 and not t.isspace():
            single[i] = True
    return closing, single


def _pick(mask: np.ndarray, rng: random.Random) -> int | None:
    ids = np.flatnonzero(mask)
    return int(ids[rng.randrange(len(ids))]) if len(ids) else None


def shortest_completion(engine: Engine, max_depth: int = 24, budget: int = 4000) -> list[int] | None:
    """Single-byte tokens that complete the text soonest (breadth first over engine states)."""
    _, single = _token_classes(engine.vocab)
    queue = deque([(engine.clone(), [])])
    seen = {engine._state}  # the engine's state is a frozenset of parser items: dedup on it
    while queue:
        current, path = queue.popleft()
        if current.accepts_eos():
            return path
        if len(path) >= max_depth:
            continue
        for token in np.flatnonzero(current.allowed_mask() & single):
            budget -= 1
            if budget < 0:
                return None
            nxt = current.clone()
            if nxt.advance(int(token)):
                return path + [int(token)]
            if nxt._state not in seen:
                seen.add(nxt._state)
                queue.append((nxt, path + [int(token)]))
    return None


def _closing_choice(engine: Engine, rng: random.Random, plan: list[int]) -> int:
    """EOS if allowed; else follow a shortest completion; else a closing or short token."""
    mask = engine.allowed_mask()
    eos = [t for t in engine.vocab.eos_token_ids if mask[t]]
    if eos:
        return min(eos)
    if not plan:
        plan.extend(shortest_completion(engine) or [])
    if plan and mask[plan[0]]:
        return plan.pop(0)
    plan.clear()
    closing, single = _token_classes(engine.vocab)
    for choice in (mask & closing, mask & single, mask):
        token = _pick(choice, rng)
        if token is not None:
            return token
    raise WalkStuck("no token allowed")


def random_walk(engine: Engine, seed: int, free: int = FREE_TOKENS, cap: int = HARD_CAP) -> bytes:
    """One random constrained walk from the engine's start; returns the text it finished with."""
    engine.reset()
    rng = random.Random(seed)
    ids: list[int] = []
    plan: list[int] = []
    for step in range(cap):
        if step < free:
            token = _pick(engine.allowed_mask(), rng)
            if token is None:
                raise WalkStuck(f"no token allowed after {engine.vocab.decode(ids)!r}")
        else:
            token = _closing_choice(engine, rng, plan)
        finished = engine.advance(token)
        ids.append(token)
        if finished:
            return engine.vocab.decode(ids)
    raise WalkStuck(f"no end after {cap} tokens: {engine.vocab.decode(ids)[:300]!r}...")


def _exact(text: str | bytes):
    """JSON with exact numbers: a float would round ``<116 digits>.1`` to an integer value."""
    return json.loads(text, parse_float=Decimal)


def _is_integer(checker, instance) -> bool:
    """JSON Schema's integer: any number with a zero fraction (numbers are int or Decimal here)."""
    if isinstance(instance, Decimal):
        return instance.is_finite() and instance == instance.to_integral_value()
    return isinstance(instance, int) and not isinstance(instance, bool)


def _oracle(schema):
    """Draft 2020-12 validation with format checking, over exact (Decimal) numbers."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    validator = jsonschema.validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _is_integer))
    return validator(schema, format_checker=jsonschema.FormatChecker())


def _cases() -> list[tuple[str, dict, dict, list]]:
    """Every (id, schema, exact schema, exact tests) of the draft 2020-12 suite, optional/
    included, in a stable order."""
    out = []
    for path in sorted(SUITE.rglob("*.json")):
        rel = path.relative_to(SUITE).as_posix()
        text = path.read_text(encoding="utf-8")
        for number, (case, exact) in enumerate(zip(json.loads(text), _exact(text))):
            out.append((f"{rel}#{number}", case["schema"], exact["schema"], exact["tests"]))
    return out


def _oracle_agrees(schema: dict, tests: list) -> bool:
    """Whether jsonschema (our oracle) can judge this schema: it labels the suite's own
    instances as the suite does (it cannot when Python's `re` rejects an ECMA pattern, or when
    a format checker needs a package that is not installed)."""
    try:
        validator = _oracle(schema)
        return all(validator.is_valid(test["data"]) == test["valid"] for test in tests)
    except Exception:
        return False


def _sample() -> list:
    if not SUITE.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"test suite data absent: {SUITE}"))]
    if importlib.util.find_spec("jsonschema") is None:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason="pip install jsonschema"))]
    cases = _cases()
    rng = random.Random(2020_12)
    rng.shuffle(cases)
    picked = []
    for case_id, schema, exact, tests in cases:
        if "format.json" in case_id and "optional" not in case_id:
            continue  # format as an annotation: the oracle and grammarc disagree by design
        if not _oracle_agrees(exact, tests):
            continue
        try:
            grammar = Grammar.from_json_schema(schema, draft="2020-12")
            grammar.compile()
        except GrammarcError:  # refused (SchemaError); front-end bugs are test_schema_suite's to count
            continue
        picked.append(pytest.param(exact, grammar, id=case_id))
        if len(picked) == SAMPLE:
            break
    return picked


@pytest.fixture(scope="module")
def vocab():
    from vocabularies import llama3

    return llama3()


def test_sample_is_large_enough():
    if not SUITE.is_dir():
        pytest.skip(f"test suite data absent: {SUITE}")
    assert len(_sample()) == SAMPLE


@pytest.mark.parametrize(("schema", "grammar"), _sample())
def test_walks_validate(schema, grammar, vocab):
    validator = _oracle(schema)
    engine = Engine(grammar.compile(), vocab)
    for seed in range(WALKS):
        text = random_walk(engine, seed)
        assert grammar.accepts(text), f"engine finished on a text the recognizer rejects: {text!r}"
        instance = _exact(text)
        errors = [e.message for e in validator.iter_errors(instance)]
        assert not errors, f"walk {seed} produced {text!r}: {errors}"
