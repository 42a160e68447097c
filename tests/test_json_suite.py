"""The stdlib JSON grammar against JSONTestSuite (../shared/data/json-test-suite).

Every ``y_`` file must be accepted and every ``n_`` file rejected. The ``i_`` files
(implementation-defined) are decided by what RFC 8259 says about the bytes: accepted
exactly when they are valid UTF-8 and the decoded text matches the RFC grammar. The
expected verdicts are recorded in tests/data/json_suite_i_outcomes.json and checked two
ways: the grammar must agree with the record, and so must an independent oracle built
on Python's json module.
"""

from __future__ import annotations

import json
import json.scanner
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc

SUITE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "json-test-suite" / "test_parsing"
I_OUTCOMES = Path(__file__).resolve().parent / "data" / "json_suite_i_outcomes.json"
MISSING = f"JSONTestSuite data not found at {SUITE}"

# The copy documented in the suite's README: 95 y_, 188 n_, 35 i_ files.
EXPECTED_COUNTS = {"y_": 95, "n_": 188, "i_": 35}


def suite_files(prefix: str) -> list:
    """File names with `prefix`, or one skipped parameter when the data is absent."""
    if not SUITE.is_dir():
        return [pytest.param("<missing>", marks=pytest.mark.skip(reason=MISSING))]
    return sorted(p.name for p in SUITE.iterdir() if p.name.startswith(prefix))


def rfc8259_oracle(data: bytes) -> bool:
    """Whether `data` is a JSON text by RFC 8259, decided without grammarc.

    Strict UTF-8 decoding rejects overlong forms, encoded surrogates and code points
    past U+10FFFF. Python's decoder is then RFC-exact except for NaN / Infinity /
    -Infinity, which `parse_constant` rejects. The C scanner is required: the pure
    Python fallback accepts non-ASCII digits and loose \\u escapes.
    """
    assert json.scanner.c_make_scanner is not None, "the oracle needs CPython's C JSON scanner"
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        return False

    def reject_constant(name: str):
        raise ValueError(f"{name} is not JSON")

    try:
        json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return False
    return True


@pytest.fixture(scope="module")
def json_grammar() -> grammarc.Grammar:
    return grammarc.stdlib("json")


@pytest.fixture(scope="module")
def i_outcomes() -> dict[str, bool]:
    return json.loads(I_OUTCOMES.read_text(encoding="utf-8"))


def test_suite_is_complete():
    if not SUITE.is_dir():
        pytest.skip(MISSING)
    names = [p.name for p in SUITE.iterdir()]
    counts = {prefix: sum(name.startswith(prefix) for name in names) for prefix in EXPECTED_COUNTS}
    assert counts == EXPECTED_COUNTS


def test_i_outcomes_cover_exactly_the_i_files(i_outcomes):
    if not SUITE.is_dir():
        pytest.skip(MISSING)
    assert sorted(i_outcomes) == suite_files("i_")
    assert all(isinstance(v, bool) for v in i_outcomes.values())


@pytest.mark.parametrize("name", suite_files("y_"))
def test_accepts_valid(json_grammar, name):
    assert json_grammar.accepts((SUITE / name).read_bytes()) is True


@pytest.mark.parametrize("name", suite_files("n_"))
def test_rejects_invalid(json_grammar, name):
    assert json_grammar.accepts((SUITE / name).read_bytes()) is False


@pytest.mark.parametrize("name", suite_files("i_"))
def test_implementation_defined_matches_record(json_grammar, i_outcomes, name):
    assert json_grammar.accepts((SUITE / name).read_bytes()) is i_outcomes[name]


@pytest.mark.parametrize("name", suite_files("i_"))
def test_record_matches_oracle(i_outcomes, name):
    assert rfc8259_oracle((SUITE / name).read_bytes()) is i_outcomes[name]


@pytest.mark.parametrize("prefix, expected", [("y_", True), ("n_", False)])
def test_oracle_agrees_with_suite(prefix, expected):
    """The oracle itself must be right on every decided file, or the i_ record means nothing."""
    if not SUITE.is_dir():
        pytest.skip(MISSING)
    wrong = [n for n in suite_files(prefix) if rfc8259_oracle((SUITE / n).read_bytes()) is not expected]
    assert wrong == []


def test_transform_files(json_grammar):
    """test_transform/ holds syntactically valid JSON whose *value* differs between parsers,
    except three files with raw UTF-8-encoded surrogates (ED A0 80), which are not UTF-8."""
    folder = SUITE.parent / "test_transform"
    if not folder.is_dir():
        pytest.skip(MISSING)
    rejected = sorted(p.name for p in folder.iterdir() if not json_grammar.accepts(p.read_bytes()))
    assert rejected == [
        "string_1_invalid_codepoint.json",
        "string_2_invalid_codepoints.json",
        "string_3_invalid_codepoints.json",
    ]
    assert rejected == sorted(p.name for p in folder.iterdir() if not rfc8259_oracle(p.read_bytes()))


# -- differential: small mutations of JSON texts, grammar vs oracle ----------------------

ALPHABET = list('{}[]",:-+.0123456789eEtrufalsn \t\n\r\\/bu') + ["\x00", "\x1f", "\x7f", "é", "\ufeff", "A"]
SEEDS = [
    '{"a": [1, -2.5e+3, true, false, null], "b\\n": {}}',
    '[0, 10, 0.5, 1E9, "\\u00e9\\"\\\\\\/"]',
    ' "x" ',
    "-0.0e-0",
]


@st.composite
def mutated_json(draw) -> bytes:
    text = list(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        if action == "insert":
            text.insert(position, draw(st.sampled_from(ALPHABET)))
        elif text and position < len(text):
            if action == "delete":
                del text[position]
            else:
                text[position] = draw(st.sampled_from(ALPHABET))
    data = "".join(text).encode("utf-8")
    if draw(st.booleans()) and data:
        # now and then cut the bytes anywhere, possibly inside a multi-byte character
        data = data[: draw(st.integers(0, len(data)))]
    return data


@settings(max_examples=200, deadline=None)
@given(mutated_json())
def test_mutations_agree_with_oracle(json_grammar, data):
    assert json_grammar.accepts(data) is rfc8259_oracle(data)
