"""Hostile grammars at compile time (issue 10): each ends in grammarc's own precise error, or
compiles, within a time and memory limit, in a child process (see tests/hostile.py).

The limits are generous guards against hangs and blow-ups, not speed measurements.
"""

from __future__ import annotations

import pytest

import grammarc
from grammarc.ir import Alt, Literal, Seq
from grammarc.ir.check import MAX_DEPTH
from hostile import assert_grammarc_error, run_hostile


def _compile(text: str, start: str = "start") -> str:
    return f"import grammarc\ngrammarc.Grammar.from_ebnf({text!r}, start={start!r}).compile()\n"


# -- counted repetitions: the budget is checked before anything is built ------------------

@pytest.mark.parametrize("count, shown", [
    ("{0,1000000000}", "{0,1000000000}"),  # was MemoryError
    ("{1000000000}", "{1000000000}"),  # was MemoryError
    ("{99999999999999999999999999}", "{99999999999999999999999999}"),  # was OverflowError
    ("{200001,}", "{200001,}"),
])
def test_huge_counted_repetition(count: str, shown: str) -> None:
    outcome = run_hostile(_compile(f"start ::= 'a'{count} ;"))
    assert_grammarc_error(outcome, "GrammarError", "<string>:1:11: ",
                          f"counted repetition {shown} in rule 'start' is too large: its bounds may be at most 200000")


def test_huge_repetition_inside_a_regex() -> None:
    outcome = run_hostile(_compile("start ::= #'a{1000000000}' ;"))
    assert_grammarc_error(outcome, "StateBudgetExceeded", "<string>:1:11: ", "pattern 'a{1000000000}' is too large")


# -- what is not grammar text ------------------------------------------------------------

@pytest.mark.parametrize("value, message", [
    (None, "grammar text must be a str, not NoneType"),  # was TypeError from re
    (b"start ::= 'a' ;", "grammar text must be a str, not bytes\nhint: decode it first, e.g. data.decode('utf-8')"),
    (["start ::= 'a' ;"], "grammar text must be a str, not list"),
])
def test_from_ebnf_needs_text(value, message: str) -> None:
    with pytest.raises(grammarc.GrammarError) as info:
        grammarc.Grammar.from_ebnf(value)
    assert str(info.value) == message


def test_from_ebnf_needs_a_start_name() -> None:
    with pytest.raises(grammarc.GrammarError, match="^the start rule name must be a str, not int$"):
        grammarc.Grammar.from_ebnf("start ::= 'a' ;", start=3)


# -- nesting: iterative where cheap, a precise limit elsewhere ---------------------------------

def _nested_alternation(depth: int) -> str:
    return "start ::= " + "('a' | " * depth + "'b'" + ")" * depth + " ;"


def test_nesting_up_to_the_limit_works_everywhere() -> None:
    # MAX_DEPTH levels: MAX_DEPTH - 1 alternations and the innermost literal
    text = _nested_alternation(MAX_DEPTH - 1)
    g = grammarc.Grammar.from_ebnf(text)
    assert grammarc.Grammar.from_ebnf(g.to_ebnf()) == g and hash(g) == hash(grammarc.Grammar.from_ebnf(text))
    assert g.accepts("a") and g.accepts("b") and not g.accepts("ab")
    outcome = run_hostile(f"import grammarc\ng = grammarc.Grammar.from_ebnf({text!r})\n"
                          "assert g.accepts('b') and grammarc.Grammar.from_ebnf(g.to_ebnf()) == g\n")
    assert outcome.kind == "" and not outcome.timed_out, str(outcome)


@pytest.mark.parametrize("depth", [MAX_DEPTH, 1000, 100_000])  # 100 was a RecursionError
def test_nesting_past_the_limit(depth: int) -> None:
    outcome = run_hostile(_compile(_nested_alternation(depth)))
    col = len("start ::= ") + len("('a' | ") * (MAX_DEPTH - 1) + 2  # 'a' of the innermost allowed level
    assert_grammarc_error(outcome, "GrammarError", f"<string>:1:{col}: rule 'start' nests expressions deeper "
                          f"than {MAX_DEPTH} levels", "hint: split the expression into rules")


def test_parentheses_alone_do_not_nest() -> None:
    text = "start ::= " + "(" * 100_000 + "'a'" + ")" * 100_000 + " ;"  # 100 was a RecursionError
    outcome = run_hostile(f"import grammarc\ng = grammarc.Grammar.from_ebnf({text!r})\nassert g.accepts('a')\n"
                          "print(g.to_ebnf())")
    assert outcome.kind == "" and outcome.output.strip() == 'start ::= "a";', str(outcome)


def test_postfix_chains_nest() -> None:
    outcome = run_hostile(_compile("start ::= 'a'" + "?" * 100_000 + " ;"))
    assert_grammarc_error(outcome, "GrammarError", "<string>:1:11: rule 'start' nests expressions deeper than")


def test_deep_ir_built_by_hand() -> None:
    outcome = run_hostile("import grammarc\nfrom grammarc.ir import Seq, Literal\ne = Literal('a')\n"
                          "for _ in range(5000):\n    e = Seq((e, Literal('b')))\n"
                          "g = grammarc.Grammar(rules=(('start', e),))\n"
                          "try:\n    g.to_ebnf()\nexcept grammarc.GrammarError as exc:\n    print(exc)\n"
                          "g.compile()\n")
    assert_grammarc_error(outcome, "GrammarError", f"rule 'start' nests expressions deeper than {MAX_DEPTH} levels")
    assert outcome.output.startswith(f"rule 'start' nests expressions deeper than {MAX_DEPTH} levels")


def test_depth_is_counted_in_the_ir_check() -> None:
    e = Literal("a")
    for _ in range(MAX_DEPTH - 1):
        e = Alt((e,)) if isinstance(e, Seq) else Seq((e,))
    grammarc.Grammar(rules=(("start", e),)).compile()
    with pytest.raises(grammarc.GrammarError, match=f"^rule 'start' nests expressions deeper than {MAX_DEPTH} levels"):
        grammarc.Grammar(rules=(("start", Seq((e,))),)).compile()


@pytest.mark.parametrize("kind", ["regular", "recursive", "except"])
def test_long_chains_of_rules(kind: str) -> None:
    # a chain of 164 rules was a RecursionError (lowering followed references recursively)
    n = 5000
    body = {"regular": "r{j} 'x' | 'y'", "recursive": "r{j} 'x' | 'y' r{i}", "except": "r{j} | 'y{i}'"}[kind]
    text = "".join(f"r{i} ::= {body.format(i=i, j=i + 1)} ;\n" for i in range(n)) + f"r{n} ::= 'z' ;\n"
    if kind == "except":
        text += "start ::= except!(r0) ;\n"
    start = "start" if kind == "except" else "r0"
    probe = {"regular": "'y' + 'x' * 10", "recursive": "'yyz' + 'x' * 5000", "except": "'abc'"}[kind]
    outcome = run_hostile(f"import grammarc, warnings\nwarnings.simplefilter('ignore')\n"
                          f"g = grammarc.Grammar.from_ebnf({text!r}, start={start!r})\n"
                          f"g.compile()\nprint(g.accepts({probe}), len(g.to_ebnf().splitlines()))\n", timeout=180)
    assert outcome.kind == "" and not outcome.timed_out, str(outcome)
    lines = n + 1 + (kind == "except")
    assert outcome.output == f"True {lines}", str(outcome)
