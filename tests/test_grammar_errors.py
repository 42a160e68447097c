"""Malformed grammars: every error names the exact position, says what went wrong, and
shows the line with a caret. Each case asserts the full rendered text."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest
from hypothesis import given, settings

from grammarc import Grammar, GrammarError, GrammarWarning
from grammarc.errors import Source
from grammarc.ir import Alt, AnyToken, Except, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq
import check_reference
from grammarc.ir import Substrings
from grammarc.ir.check import MAX_DEPTH, _check_rule, _passing_refs, check_depth, check_grammar
from grammarc.ir import _walk
from grammarc.ir.nodes import children, references, walk
from strategies import grammars

CASES = [
    pytest.param(
        "start ::= 'a'\n"
        "b ::= 'b';",
        "g.ebnf:1:14: expected ';' at the end of rule 'start' (before the definition of 'b')\n"
        "start ::= 'a'\n"
        "             ^",
        id='missing_semicolon',
    ),
    pytest.param(
        "start ::= 'a' | 'b'\n",
        "g.ebnf:1:20: expected ';' at the end of rule 'start', found the end of the grammar\n"
        "start ::= 'a' | 'b'\n"
        "                   ^",
        id='missing_semicolon_at_end',
    ),
    pytest.param(
        "start ::= 'abc;\n"
        "x ::= 'x';",
        "g.ebnf:1:11: unterminated string literal\n"
        "start ::= 'abc;\n"
        "          ^^^^^\n"
        "hint: close it with ' on the same line (write \\n for a line break)",
        id='unterminated_string',
    ),
    pytest.param(
        "start ::= \"abc\n"
        ";",
        "g.ebnf:1:11: unterminated string literal\n"
        "start ::= \"abc\n"
        "          ^^^^\n"
        "hint: close it with \" on the same line (write \\n for a line break)",
        id='unterminated_double_string',
    ),
    pytest.param(
        "start ::= 'a';\n"
        "(* never closed\n",
        "g.ebnf:2:1: unterminated comment: '(*' has no matching '*)'\n"
        "(* never closed\n"
        "^^",
        id='unterminated_comment',
    ),
    pytest.param(
        "start ::= 'a' \"x\\qb\";",
        "g.ebnf:1:17: unknown escape '\\q'\n"
        "start ::= 'a' \"x\\qb\";\n"
        "                ^^\n"
        "hint: valid escapes: \\n \\r \\t \\b \\f \\v \\0 \\' \\\" \\\\ \\/ \\xHH \\uXXXX \\u{X...}",
        id='unknown_escape',
    ),
    pytest.param(
        "start ::= '\\u12G4';",
        "g.ebnf:1:12: bad escape: '\\u' must be followed by four hex digits or '{hex digits}'\n"
        "start ::= '\\u12G4';\n"
        "           ^^^^^",
        id='bad_u_escape',
    ),
    pytest.param(
        "start ::= '\\x4';",
        "g.ebnf:1:12: bad escape: '\\x' must be followed by exactly two hex digits\n"
        "start ::= '\\x4';\n"
        "           ^^^",
        id='bad_x_escape',
    ),
    pytest.param(
        "start ::= '\\u{}';",
        "g.ebnf:1:12: bad escape: '\\u{...}' must hold 1 to 6 hex digits\n"
        "start ::= '\\u{}';\n"
        "           ^^^^",
        id='bad_braced_u_escape',
    ),
    pytest.param(
        "start ::= '\\u{110000}';",
        "g.ebnf:1:12: bad escape: '\\u{110000}' is beyond U+10FFFF\n"
        "start ::= '\\u{110000}';\n"
        "           ^^^^^^^^^^",
        id='u_escape_too_large',
    ),
    pytest.param(
        "start ::= 'a\\uD83Db';",
        "g.ebnf:1:13: lone surrogate in escape '\\uD83D': a high surrogate must be followed by a low surrogate escape\n"
        "start ::= 'a\\uD83Db';\n"
        "            ^^^^^^",
        id='lone_high_surrogate',
    ),
    pytest.param(
        "start ::= '\\uDE00';",
        "g.ebnf:1:12: lone surrogate in escape '\\uDE00': a low surrogate must be preceded by a high surrogate escape\n"
        "start ::= '\\uDE00';\n"
        "           ^^^^^^",
        id='lone_low_surrogate',
    ),
    pytest.param(
        "start ::= #'\\d+';",
        "g.ebnf:1:13: unknown escape '\\d'\n"
        "start ::= #'\\d+';\n"
        "            ^^\n"
        "hint: valid escapes: \\n \\r \\t \\b \\f \\v \\0 \\' \\\" \\\\ \\/ \\xHH \\uXXXX \\u{X...}",
        id='unknown_escape_in_regex',
    ),
    pytest.param(
        "start ::= 'x' valeu;\n"
        "value ::= 'v';",
        "g.ebnf:1:15: rule 'start' refers to undefined rule 'valeu'\n"
        "start ::= 'x' valeu;\n"
        "              ^^^^^\n"
        "hint: did you mean 'value'?",
        id='undefined_rule',
    ),
    pytest.param(
        "start ::= zzz;",
        "g.ebnf:1:11: rule 'start' refers to undefined rule 'zzz'\n"
        "start ::= zzz;\n"
        "          ^^^",
        id='undefined_rule_no_suggestion',
    ),
    pytest.param(
        "strat ::= 'a';\n"
        "other ::= strat;",
        "start rule 'start' is not defined; defined rules: 'strat', 'other'\n"
        "hint: did you mean 'strat'?",
        id='missing_start_rule',
    ),
    pytest.param(
        "(* nothing *)\n",
        "the grammar defines no rules (the start rule is 'start')",
        id='no_rules',
    ),
    pytest.param(
        "start 'a';",
        "g.ebnf:1:7: expected '::=' or '=' after rule name 'start', found string literal 'a'\n"
        "start 'a';\n"
        "      ^^^",
        id='missing_define',
    ),
    pytest.param(
        "start := 'a';",
        "g.ebnf:1:7: unexpected character ':'\n"
        "start := 'a';\n"
        "      ^\n"
        "hint: rules are written 'name ::= ...;' or 'name = ...;'",
        id='colon_equals',
    ),
    pytest.param(
        "start ::= 'a' | ;",
        "g.ebnf:1:17: empty alternative: expected an expression after '|', found ';' (write '' for the empty string)\n"
        "start ::= 'a' | ;\n"
        "                ^",
        id='empty_alternative',
    ),
    pytest.param(
        "start ::= 'a' ('b' | );",
        "g.ebnf:1:22: empty alternative: expected an expression after '|', found ')' (write '' for the empty string)\n"
        "start ::= 'a' ('b' | );\n"
        "                     ^",
        id='empty_alternative_in_group',
    ),
    pytest.param(
        "start ::= ;",
        "g.ebnf:1:11: rule 'start' has an empty definition: expected an expression, found ';' (write '' for the empty string)\n"
        "start ::= ;\n"
        "          ^",
        id='empty_definition',
    ),
    pytest.param(
        "start ::= 'a' | | 'b';",
        "g.ebnf:1:17: empty alternative: expected an expression after '|', found '|' (write '' for the empty string)\n"
        "start ::= 'a' | | 'b';\n"
        "                ^",
        id='double_pipe',
    ),
    pytest.param(
        "start ::= ('a' | 'b';",
        "g.ebnf:1:11: '(' is never closed: expected ')' before ';'\n"
        "start ::= ('a' | 'b';\n"
        "          ^",
        id='unclosed_paren',
    ),
    pytest.param(
        "start ::= 'a'\n"
        "  ('b'",
        "g.ebnf:2:3: '(' is never closed: expected ')' before the end of the grammar\n"
        "  ('b'\n"
        "  ^",
        id='unclosed_paren_at_end',
    ),
    pytest.param(
        "start ::= ['a'\n"
        "b ::= 'b';",
        "g.ebnf:1:11: '[' is never closed: expected ']' before the definition of 'b'\n"
        "start ::= ['a'\n"
        "          ^",
        id='unclosed_bracket_before_rule',
    ),
    pytest.param(
        "start ::= 'a' );",
        "g.ebnf:1:15: unmatched ')': no '(' is open\n"
        "start ::= 'a' );\n"
        "              ^",
        id='unmatched_paren',
    ),
    pytest.param(
        "start ::= ['a' );",
        "g.ebnf:1:16: ')' does not match '[' at 1:11: expected ']'\n"
        "start ::= ['a' );\n"
        "               ^",
        id='mismatched_bracket',
    ),
    pytest.param(
        "start ::= {'a' ];",
        "g.ebnf:1:16: ']' does not match '{' at 1:11: expected '}'\n"
        "start ::= {'a' ];\n"
        "               ^",
        id='mismatched_brace',
    ),
    pytest.param(
        "start ::= [];",
        "g.ebnf:1:12: empty '[]': expected an expression after '[', found ']'\n"
        "start ::= [];\n"
        "           ^",
        id='empty_brackets',
    ),
    pytest.param(
        "start ::= {};",
        "g.ebnf:1:12: empty '{}': expected an expression after '{', found '}'\n"
        "start ::= {};\n"
        "           ^",
        id='empty_braces',
    ),
    pytest.param(
        "start ::= 'a'{3,1};",
        "g.ebnf:1:11: rule 'start': repetition {3,1} has its minimum 3 greater than its maximum 1\n"
        "start ::= 'a'{3,1};\n"
        "          ^^^^^^^^",
        id='bad_counted_repetition',
    ),
    pytest.param(
        "start ::= 'a'{3,x};",
        "g.ebnf:1:14: malformed counted repetition: expected '{m}', '{m,}', '{m,n}' or '{,n}'\n"
        "start ::= 'a'{3,x};\n"
        "             ^",
        id='malformed_counted_repetition',
    ),
    pytest.param(
        "start ::= 'a'{,};",
        "g.ebnf:1:14: counted repetition '{,}' needs at least one bound\n"
        "start ::= 'a'{,};\n"
        "             ^^^",
        id='count_without_bounds',
    ),
    pytest.param(
        "start ::= {3};",
        "g.ebnf:1:11: counted repetition '{3}' has nothing to repeat: it must follow an expression\n"
        "start ::= {3};\n"
        "          ^^^",
        id='count_nothing_to_repeat',
    ),
    pytest.param(
        "start ::= 'a' | *;",
        "g.ebnf:1:17: '*' has nothing to repeat: it must follow an expression\n"
        "start ::= 'a' | *;\n"
        "                ^",
        id='postfix_nothing_to_repeat',
    ),
    pytest.param(
        "start ::= except!(w);\n"
        "w ::= 'a' | #'[0-9]';",
        "g.ebnf:1:19: rule 'start': except!(w) needs a literal or a rule that expands to an alternation of literals, but 'w' contains a regex\n"
        "start ::= except!(w);\n"
        "                  ^",
        id='except_non_literal_rule',
    ),
    pytest.param(
        "start ::= except!(w, 2);\n"
        "w ::= 'a' | v;\n"
        "v ::= 'b' 'c';",
        "g.ebnf:1:19: rule 'start': except!(w) needs a literal or a rule that expands to an alternation of literals, but 'w' expands to rule 'v', which contains a sequence\n"
        "start ::= except!(w, 2);\n"
        "                  ^",
        id='except_sequence_rule',
    ),
    pytest.param(
        "start ::= except!('a', 0);",
        "g.ebnf:1:11: rule 'start': the token limit of except! must be at least 1, found 0\n"
        "start ::= except!('a', 0);\n"
        "          ^^^^^^^^^^^^^^^",
        id='except_limit_zero',
    ),
    pytest.param(
        "start ::= except!('');",
        "g.ebnf:1:19: rule 'start': except!('') is meaningless: every text contains the empty string\n"
        "start ::= except!('');\n"
        "                  ^^",
        id='except_empty_literal',
    ),
    pytest.param(
        "start ::= except!(w);\n"
        "w ::= 'a' | '';",
        "g.ebnf:2:13: rule 'start': except!(w) includes the empty literal, which makes it meaningless (every text contains the empty string)\n"
        "w ::= 'a' | '';\n"
        "            ^^",
        id='except_rule_with_empty_literal',
    ),
    pytest.param(
        "start ::= except!(#'a');",
        "g.ebnf:1:19: expected a rule name or a string literal, found regex literal #'a'\n"
        "start ::= except!(#'a');\n"
        "                  ^^^^",
        id='except_regex_argument',
    ),
    pytest.param(
        "start ::= except!('a', n);",
        "g.ebnf:1:24: expected a number, found rule name 'n'\n"
        "start ::= except!('a', n);\n"
        "                       ^",
        id='except_limit_not_number',
    ),
    pytest.param(
        "start ::= except! 'a';",
        "g.ebnf:1:19: expected '(', found string literal 'a'\n"
        "start ::= except! 'a';\n"
        "                  ^^^",
        id='except_missing_paren',
    ),
    pytest.param(
        "start ::= 'a' @ 'b';",
        "g.ebnf:1:15: unexpected character '@'\n"
        "start ::= 'a' @ 'b';\n"
        "              ^",
        id='stray_character',
    ),
    pytest.param(
        "start ::= 'a'\u0007;",
        "g.ebnf:1:14: unexpected character U+0007\n"
        "start ::= 'a'\u0007;\n"
        "             ^",
        id='stray_control_character',
    ),
    pytest.param(
        "start ::= foo!;",
        "g.ebnf:1:11: unknown special nonterminal 'foo!'\n"
        "start ::= foo!;\n"
        "          ^^^^\n"
        "hint: the special nonterminals are 'any!', 'except!(...)' and 'json_string_except!(...)'",
        id='unknown_special',
    ),
    pytest.param(
        "start ::= #x'a';",
        "g.ebnf:1:11: unknown regex prefix '#x'\n"
        "start ::= #x'a';\n"
        "          ^^\n"
        "hint: write #'R', #e'R', #ex'R' (or /R/ instead of 'R'), or #substrs'S'",
        id='unknown_regex_prefix',
    ),
    pytest.param(
        "start ::= # 'a';",
        "g.ebnf:1:11: expected a quoted or /.../ regex after '#'\n"
        "start ::= # 'a';\n"
        "          ^",
        id='regex_without_body',
    ),
    pytest.param(
        "start ::= #e'abc;\n",
        "g.ebnf:1:11: unterminated regex literal\n"
        "start ::= #e'abc;\n"
        "          ^^^^^^^\n"
        "hint: close it with ' on the same line (write \\n for a line break)",
        id='unterminated_quoted_regex',
    ),
    pytest.param(
        "start ::= #/abc;\n",
        "g.ebnf:1:11: unterminated regex literal: '/' has no matching '/' on its line\n"
        "start ::= #/abc;\n"
        "          ^^",
        id='unterminated_raw_regex',
    ),
    pytest.param(
        "start ::= 'a' 3;",
        "g.ebnf:1:15: expected ';', '|' or an expression, found number 3\n"
        "start ::= 'a' 3;\n"
        "              ^",
        id='stray_number',
    ),
    pytest.param(
        "start ::= 'a' ,, 'b';",
        "g.ebnf:1:16: expected ';', '|' or an expression, found ','\n"
        "start ::= 'a' ,, 'b';\n"
        "               ^",
        id='double_comma',
    ),
    pytest.param(
        "start ::= , 'a';",
        "g.ebnf:1:11: expected an expression, found ','\n"
        "start ::= , 'a';\n"
        "          ^",
        id='leading_comma',
    ),
    pytest.param(
        "'a';",
        "g.ebnf:1:1: expected a rule definition (name ::= ...;), found string literal 'a'\n"
        "'a';\n"
        "^^^",
        id='top_level_expression',
    ),
    pytest.param(
        "start ::= 'a';;",
        "g.ebnf:1:15: expected a rule definition (name ::= ...;), found ';'\n"
        "start ::= 'a';;\n"
        "              ^",
        id='double_semicolon',
    ),
    pytest.param(
        "x ::= 'x';\n"
        "\tstart ::=\t'a' |;",
        "g.ebnf:2:17: empty alternative: expected an expression after '|', found ';' (write '' for the empty string)\n"
        " start ::= 'a' |;\n"
        "                ^",
        id='tab_position',
    ),
]


@pytest.mark.parametrize("source, expected", CASES)
def test_error_text(source, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        with pytest.raises(GrammarError) as info:
            Grammar.from_ebnf(source, name="g.ebnf")
    assert str(info.value) == expected


def test_error_parts_are_available_separately():
    with pytest.raises(GrammarError) as info:
        Grammar.from_ebnf("start ::= 'a' valeu;\nvalue ::= 'v';")
    error = info.value
    assert error.message == "rule 'start' refers to undefined rule 'valeu'"
    assert error.hint == "did you mean 'value'?"
    assert (error.span.line, error.span.col, error.span.end_line, error.span.end_col) == (1, 15, 1, 20)
    assert error.span.source == Source("start ::= 'a' valeu;\nvalue ::= 'v';", "<string>")
    assert isinstance(error, ValueError)


def test_error_from_file_names_the_file(tmp_path):
    path = tmp_path / "bad.ebnf"
    path.write_text("start ::= 'a'\n", encoding="utf-8")
    with pytest.raises(GrammarError) as info:
        Grammar.from_file(path)
    assert str(info.value) == (
        f"{path}:1:14: expected ';' at the end of rule 'start', found the end of the grammar\n"
        "start ::= 'a'\n"
        "             ^"
    )


def test_start_option_is_checked():
    with pytest.raises(GrammarError) as info:
        Grammar.from_ebnf("start ::= 'a';", start="value")
    assert str(info.value) == "start rule 'value' is not defined; defined rules: 'start'"


def test_first_error_in_text_order_wins():
    # A syntax error on line 1 is reported before a bad escape on line 2.
    with pytest.raises(GrammarError, match=r"^<string>:1:"):
        Grammar.from_ebnf("start ::= 'a' )\nx ::= '\\q';")


# -- errors on IR built directly (no spans): the message still names the rule ----------


def ir_error(*rules, start="start") -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        with pytest.raises(GrammarError) as info:
            check_grammar(Grammar(rules=rules, start=start))
    return str(info.value)


def test_ir_undefined_ref():
    assert ir_error(("start", Seq((Literal("a"), Ref("nmber")))), ("number", Literal("1"))) == (
        "rule 'start' refers to undefined rule 'nmber'\nhint: did you mean 'number'?"
    )


def test_ir_undefined_ref_inside_except():
    assert ir_error(("start", Except(Ref("stop")))) == "rule 'start' refers to undefined rule 'stop'"


def test_ir_missing_start():
    assert ir_error(("a", Literal("a")), ("b", Ref("a")), start="s") == (
        "start rule 's' is not defined; defined rules: 'a', 'b'"
    )


def test_ir_negative_repeat():
    assert ir_error(("start", Repeat(Literal("a"), -1, 2))) == "rule 'start': repetition {-1,2} has a negative bound"


def test_ir_min_greater_than_max():
    assert ir_error(("start", Alt((Literal("b"), Repeat(AnyToken(), 4, 2))))) == (
        "rule 'start': repetition {4,2} has its minimum 4 greater than its maximum 2"
    )


def test_ir_non_integer_bounds():
    assert ir_error(("start", Repeat(Literal("a"), 1.5, None))) == (
        "rule 'start': repetition bounds must be integers, found min=1.5, max=None"
    )


def test_ir_except_limit():
    assert ir_error(("start", Except(Literal("x"), 0))) == (
        "rule 'start': the token limit of except! must be at least 1, found 0"
    )
    assert ir_error(("start", Except(Literal("x"), -3))) == (
        "rule 'start': the token limit of except! must be at least 1, found -3"
    )


def test_ir_except_of_non_literal_rule():
    rules = (("start", Except(Ref("w"))), ("w", Alt((Literal("a"), Ref("v")))), ("v", Repeat(Literal("b"))))
    assert ir_error(*rules) == (
        "rule 'start': except!(w) needs a literal or a rule that expands to an alternation of literals, "
        "but 'w' expands to rule 'v', which contains a repetition"
    )


def test_ir_except_of_one_item_seq_is_rejected():
    rules = (("start", Except(Ref("w"))), ("w", Seq((Literal("a"),))))
    assert ir_error(*rules).endswith("but 'w' contains a sequence")


def test_ir_except_of_rule_without_literals():
    rules = (("start", Except(Ref("w"))), ("w", Alt((Ref("w"),))))
    assert ir_error(*rules) == "rule 'start': except!(w): rule 'w' expands to no literal"


def test_ir_except_of_recursive_literal_rule_is_fine():
    rules = (("start", Except(Ref("w"), 2)), ("w", Alt((Literal("a"), Ref("w"), Ref("v")))), ("v", Literal("b")))
    check_grammar(Grammar(rules=rules))


def test_ir_except_item_must_be_literal_or_ref():
    assert ir_error(("start", Except(Regex("a")))) == "rule 'start': except! takes a literal or a rule name, not Regex"


def test_ir_empty_alternation():
    assert ir_error(("start", Seq((Alt(()),)))) == "rule 'start' contains an alternation with no alternatives"


def test_ir_lone_surrogate_in_literal():
    assert ir_error(("start", Literal("a\ud800"))) == (
        "rule 'start': literal contains a lone surrogate U+D800, which has no UTF-8 encoding"
    )


def test_ir_bad_regex_mode():
    assert ir_error(("start", Regex("a", "fullmatch"))) == (
        "rule 'start': unknown regex mode 'fullmatch' (expected one of match, early, complement)"
    )


def test_ir_bad_rule_names():
    assert ir_error(("start", Ref("first-name")), ("first-name", Literal("x"))) == (
        "invalid rule name 'first-name': names are letters, digits and '_', not starting with a digit"
    )
    assert ir_error(("start", Literal("a")), ("start", Literal("b"))) == (
        "rule 'start' is defined twice in the IR (merge the definitions into one Alt)"
    )


def test_ir_not_an_expression():
    assert ir_error(("start", Seq((Literal("a"), "b")))) == "rule 'start' contains 'b', which is not an IR expression"


def test_ir_no_rules():
    assert ir_error() == "the grammar defines no rules (the start rule is 'start')"


def test_unreachable_rules_warn_without_spans():
    with pytest.warns(GrammarWarning) as record:
        check_grammar(Grammar(rules=(("start", Literal("a")), ("x", Ref("y")), ("y", Ref("x")))))
    assert [str(w.message) for w in record] == [
        "rule 'x' is not reachable from the start rule 'start'",
        "rule 'y' is not reachable from the start rule 'start'",
    ]


def test_reachable_through_except_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", GrammarWarning)
        check_grammar(Grammar(rules=(("start", Except(Ref("stop"))), ("stop", Literal("x")))))


def test_undefined_rule_inside_except_expansion():
    with pytest.raises(GrammarError) as info:
        Grammar.from_ebnf("start ::= except!(w);\nw ::= 'a' | zz;")
    assert str(info.value) == "<string>:2:13: rule 'w' refers to undefined rule 'zz'\nw ::= 'a' | zz;\n            ^^"


# -- check_grammar's proof that a grammar passes, against the ordered walk --------------

_BAD_NODES = [
    Alt(()), Repeat(Literal("a"), -1, 2), Repeat(Literal("a"), 4, 2), Repeat(Literal("a"), 1.5, None),
    Repeat(Literal("a"), 1, 0.5), Regex("a", "fullmatch"), Regex(b"a"), Literal("\ud800"), Literal(b"a"),
    Ref("nowhere"), Except(Literal("x"), 0), Except(Regex("a")), JsonStringExcept(["a"]),
    JsonStringExcept(("\udc00",)), "a", None,
]


def _deep(depth: int):
    node = Literal("a")
    for _ in range(depth):
        node = Seq((node,))
    return node


@pytest.mark.parametrize("bad", [*_BAD_NODES, _deep(MAX_DEPTH)], ids=repr)
def test_the_passing_proof_leaves_every_malformed_node_to_the_ordered_walk(bad):
    """`_passing_refs` (one dispatch per node) must never pass a grammar that
    `_check_rule` (which names the first error in order) refuses: it answers None, and the
    walk raises."""
    grammar = Grammar(rules=(("start", Seq((Literal("a"), bad))),))
    assert _passing_refs(grammar, dict(grammar.rules)) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        with pytest.raises(GrammarError):
            check_grammar(grammar)


@settings(max_examples=300, deadline=None)
@given(grammars(any_token=True, token_level=True))
def test_the_passing_proof_finds_the_references_the_ordered_walk_finds(grammar):
    rules = dict(grammar.rules)
    checked = _passing_refs(grammar, rules)
    expected = {name: list(dict.fromkeys(_check_rule(name, expr, rules, grammar))) for name, expr in grammar.rules}
    has_except = any(isinstance(node, Except) for _, expr in grammar.rules for node in walk(expr))
    assert (checked is None) == has_except  # except! is left to the walk; every other valid node is proved
    assert checked is None or checked.refs == expected  # in the same order, each once


def _uses_in_order(expr) -> tuple[list[str], bool]:
    """The oracle of what `check_grammar` returns for a rule, as the lowering once found it
    with a walk of its own: (its references in order of first use, depth first and left to
    right; whether it holds any! or except!(X, n) itself)."""
    names: dict[str, None] = {}
    token_level = False
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            names[node.name] = None
        token_level |= isinstance(node, AnyToken) or (isinstance(node, Except) and node.limit is not None)
        stack.extend(reversed(children(node)))
    return list(names), token_level


@settings(max_examples=300, deadline=None)
@given(grammars(any_token=True, token_level=True))
def test_the_check_returns_each_rules_references_in_order_of_use(grammar):
    """The lowering merges regular rules in the order `check_grammar`'s references give (the
    terminals depend on it): each rule's first uses in depth-first order, on either walk."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        checked = check_grammar(grammar)
    found = {name: (refs, name in checked.token_level) for name, refs in checked.refs.items()}
    assert found == {name: _uses_in_order(expr) for name, expr in grammar.rules}
    assert list(checked.refs) == [name for name, _ in grammar.rules]


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except GrammarError as error:
        return ("error", str(error))


@settings(max_examples=300, deadline=None)
@given(grammars(any_token=True, token_level=True))
def test_the_core_walks_answer_as_the_python_ones(grammar):
    """`_walk.passing` and `_walk.too_deep` (C) against the Python walks they replaced
    (tests/check_reference.py), on generated grammars."""
    rules = dict(grammar.rules)
    assert _passing_refs(grammar, rules) == _first_uses(check_reference.passing_refs(grammar, rules))
    assert _outcome(check_depth, grammar) == _outcome(check_reference.check_depth, grammar)


def _first_uses(checked):
    """The oracle's answer with each rule's references once, where first used (as the core's)."""
    if checked is None:
        return None
    return type(checked)({name: list(dict.fromkeys(refs)) for name, refs in checked.refs.items()}, checked.token_level)


@pytest.mark.parametrize("bad", [*_BAD_NODES, _deep(MAX_DEPTH - 1), _deep(MAX_DEPTH), Repeat(_deep(MAX_DEPTH - 1)),
                                 Repeat(_deep(MAX_DEPTH - 2)), Alt((Literal("a"), _deep(MAX_DEPTH))),
                                 Except(Ref("start"), 2), AnyToken(), Seq(()), Regex("a", "early"),
                                 JsonStringExcept(("a", "é")), Substrings("ab\ud800")], ids=repr)
def test_the_core_walks_answer_as_the_python_ones_on_edges(bad):
    for grammar in (Grammar(rules=(("start", Seq((Literal("a"), bad))),)),
                    Grammar(rules=(("start", Ref("x")), ("x", bad)))):
        rules = dict(grammar.rules)
        assert _passing_refs(grammar, rules) == _first_uses(check_reference.passing_refs(grammar, rules))
        assert _outcome(check_depth, grammar) == _outcome(check_reference.check_depth, grammar)


@settings(max_examples=300, deadline=None)
@given(grammars(any_token=True, token_level=True))
def test_references_in_the_core_are_the_python_walks(grammar):
    """`nodes.references` (`_walk.references`, C) against its Python oracle, in the same order."""
    for _, expr in grammar.rules:
        assert references(expr) == check_reference.references(expr)
        wrapped = Seq((expr, Repeat(Ref("x")), expr))
        assert references(wrapped) == check_reference.references(wrapped)


@dataclass(frozen=True)
class _NamedSeq(Seq):
    """A node of a class of its own (opened by `children`)."""


@dataclass(frozen=True)
class _Call(Ref):
    """A reference of a class of its own."""


@pytest.mark.parametrize("bad", [*_BAD_NODES, Seq([Ref("a"), Alt([Ref("b")])]), _NamedSeq((Ref("a"), _Call("b"))),
                                 Repeat(_NamedSeq((_Call("c"), Except(Ref("d"))))), Seq(()), AnyToken()], ids=repr)
def test_references_in_the_core_are_the_python_walks_on_edges(bad):
    for expr in (bad, Seq((Ref("x"), bad, Ref("y"))), Alt((Repeat(bad), Ref("z")))):
        assert references(expr) == check_reference.references(expr)


def test_references_refuses_what_is_no_node_precisely():
    with pytest.raises(TypeError, match="children are not a tuple"):
        references(Seq("ab"))
    with pytest.raises(ValueError, match="ten classes"):
        _walk.references(Ref("a"), (Seq,), children)


@pytest.mark.parametrize("source, rule, line", [
    ('start ::= a;\na ::= "x" a;', "start", 1),  # the start rule never ends
    ('start ::= "x";\nb ::= b "y";', "b", 2),  # an unreachable rule that never ends
    ('start ::= "x" | b;\nb ::= "y" b;', "b", 2),  # an alternative that never ends
    ('start ::= "x" | b;\nb ::= "y" #/[^\\s\\S]/;', "b", 2),  # a terminal that matches nothing
], ids=["start", "unreachable", "alternative", "empty-terminal"])
def test_a_rule_that_derives_no_string_is_reported_at_its_definition(source, rule, line):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        try:
            Grammar.from_ebnf(source).compile()
        except GrammarError as error:
            assert str(error).splitlines()[0] == (
                f"<string>:{line}:1: rule '{rule}' derives no string: every expansion of it either never ends "
                "or uses a terminal that matches nothing")
        else:
            pytest.fail("compiled")
