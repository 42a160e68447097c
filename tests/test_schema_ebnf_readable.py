"""Readable `.ebnf` from JSON Schema (issue 11, item 5): shared rules, short names, same language.

The sharing pass (frontends/jsonschema/sharing.py) only names and renames parts of the IR, so
every test here compares it with the grammar built without it: on MaskBench schemas (their
valid and invalid instances, compact and indent=2), on random IR grammars (the brute-force
oracle), and through the printed text read back.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc import Grammar
from grammarc.errors import GrammarcError, GrammarError
from grammarc.frontends import json_formats as jf
from grammarc.frontends.jsonschema import builder as builder_module
from grammarc.frontends.jsonschema import sharing
from grammarc.ir import (Alt, AnyToken, Except, Expr, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq, Substrings,
                         references)
from grammarc.ir.nodes import MAX_SHAPE_DEPTH, shape
from grammarc.ir.printer import quote
from grammarc.runtime.recognizer import Recognizer

import check_reference
import sharing_reference
import oracle  # noqa: E402  (tests/ is on sys.path)
import strategies

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "maskbench-dev"
KB_838 = DATA / "Kubernetes---kb_838_Normalized.json"
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def unshared(monkeypatch) -> None:
    """Build schema grammars without the sharing pass (the grammar of before)."""
    monkeypatch.setattr(builder_module, "share", lambda rules, start, hints, reserved=(): dict(rules))


def quiet_schema_grammar(schema, **options) -> Grammar:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Grammar.from_json_schema(schema, **options)


# -- the whole text for a small schema ----------------------------------------------------------

PERSON = {
    "title": "Person",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "nick": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0},
        "home": {"title": "Address", "type": "object", "additionalProperties": False, "required": ["city"],
                 "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}},
        "work": {"type": "object", "additionalProperties": False, "required": ["city"],
                 "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name"],
    "additionalProperties": False,
}

# the JSON string regexes are json_formats' (as the printer quotes them): not what is tested here
STRING = quote(jf.string_regex())
STRING_MAX8 = quote(jf.string_regex(0, 8))

PERSON_EBNF = f"""\
start ::= Person;
Person_name ::= string;
Person_nick ::= string_max8;
Person_age ::= integer_min0;
Address_city ::= string;
Address_zip ::= zip_pattern;
Address ::= "{{" "\\"city\\"" ":" Address_city ("," "\\"zip\\"" ":" Address_zip)? "}}";
Person_tags_item ::= string;
Person_tags ::= "[]" | "[" Person_tags_item ("," Person_tags_item)* "]";
Person_from_tags ::= "," "\\"tags\\"" ":" Person_tags;
Person_from_work ::= "," "\\"work\\"" ":" Address Person_from_tags?
                   | Person_from_tags;
Person_from_home ::= "," "\\"home\\"" ":" Address Person_from_work?
                   | Person_from_work;
Person_from_age ::= "," "\\"age\\"" ":" Person_age Person_from_home?
                  | Person_from_home;
Person ::= "{{" "\\"name\\"" ":" Person_name ("," "\\"nick\\"" ":" Person_nick Person_from_age? | Person_from_age)? "}}";
string ::= #{STRING};
string_max8 ::= #{STRING_MAX8};
integer_min0 ::= #/(?:(?:-0|0|[1-9][0-9]*))(?:\\.0+)?/;
zip_pattern ::= #/"(?:(?:[0-9]|\\\\u003[0-9])){{5}}"/;
"""


def test_small_schema_reads_like_the_schema():
    # names from the titles (Person, Address) and property names; the two equal address
    # objects are one rule; the string regex is written once; each terminal named for what it is
    assert Grammar.from_json_schema(PERSON, whitespace="compact").to_ebnf() == PERSON_EBNF


def test_small_schema_same_language_as_without_sharing(monkeypatch):
    shared = Grammar.from_json_schema(PERSON, whitespace="compact")
    unshared(monkeypatch)
    plain = Grammar.from_json_schema(PERSON, whitespace="compact")
    regex = quote(jf.string_regex())
    assert plain.to_ebnf().count(regex) == 4 and shared.to_ebnf().count(regex) == 1
    texts = [
        '{"name":"a"}', '{"name":"a","nick":"12345678"}', '{"name":"a","nick":"123456789"}',
        '{"name":"a","age":0,"home":{"city":"x","zip":"12345"},"work":{"city":"y"}}',
        '{"name":"a","work":{"city":"y","zip":"1234"}}', '{"name":"a","home":{"zip":"12345"}}',
        '{"name":"a","tags":["x","y\\u0041"]}', '{"name":"a","age":-1}', '{"name":"a","age":3.0}',
        '{"name":"a","other":1}', '{"nick":"a"}', '{"name":"a","home":{"city":"x","zip":"1234\\u0035"}}',
    ]
    verdicts = [(plain.accepts(t), shared.accepts(t)) for t in texts]
    assert [a for a, _ in verdicts] == [b for _, b in verdicts]
    assert [a for a, _ in verdicts] == [True, True, False, True, False, False, True, False, True, False, False, True]


def test_names_come_from_titles_only_where_they_name_a_thing():
    schema = {"title": "The order of a customer, as sent by the shop front-end", "type": "object",
              "properties": {"id": {"title": "Identifier", "type": "integer"},
                             "item": {"title": "Line item", "type": "object", "properties": {"sku": {"type": "string"}}}}}
    names = Grammar.from_json_schema(schema, whitespace="compact").names
    assert "root" in names  # the long title is not a name
    assert "LineItem" in names and "LineItem_sku" in names  # an object's short title is
    assert "root_id" in names  # a title on a scalar is not used


def test_a_documented_ref_is_its_target():
    # {allOf: [{$ref}, {description}]} documents a $ref (draft 7 ignores $ref's siblings): it
    # is built once, as the target, and named for it
    point = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    documented = lambda text: {"allOf": [{"$ref": "#/$defs/point"}, {"description": text, "title": text}]}  # noqa: E731
    schema = {"$defs": {"point": point}, "type": "object",
              "properties": {"a": documented("A"), "b": documented("B"), "c": {"allOf": [{"$ref": "#/$defs/point"}, True]}}}
    g = Grammar.from_json_schema(schema, whitespace="compact")
    assert "point" in g.names and not any(name.startswith(("root_a", "root_b", "root_c")) for name in g.names)
    for key in "abc":
        assert g.accepts('{"%s":{"x":1}}' % key) and not g.accepts('{"%s":{"y":1}}' % key)


def test_same_schema_same_text_and_names_never_collide():
    schema = {"$defs": {"string": {"type": "object", "properties": {"ws": {"type": "string"}, "char": {"type": "number"}}},
                        "start": {"type": "string", "format": "date-time"}},
              "type": "object",
              "properties": {"a": {"$ref": "#/$defs/string"}, "b": {"$ref": "#/$defs/start"},
                             "c": {"type": "string", "format": "date-time"}, "d": {"type": "number"}}}
    first = Grammar.from_json_schema(schema).to_ebnf()
    assert first == Grammar.from_json_schema(schema).to_ebnf()
    names = [line.split(" ::= ")[0] for line in first.splitlines() if " ::= " in line]
    assert len(names) == len(set(names))
    assert all(IDENTIFIER.fullmatch(name) and len(name) <= 40 for name in names)
    assert "string" in names and "string_2" in names and "date_time" in names
    assert names.count("start") == 1 and names[0] == "start"
    assert Grammar.from_ebnf(first) == Grammar.from_json_schema(schema)


def test_shorten_keeps_the_end_of_a_name():
    assert sharing.shorten("ScopedResourceSelectorRequirement_other_key_q19") == "SelectorRequirement_other_key_q19"
    assert sharing.shorten("short_name") == "short_name"
    assert sharing.shorten("a" * 50) == "a" * 36
    assert sharing.shorten("x_" + "1" * 40).startswith("_")
    assert sharing.identifier("io.k8s.api.core.v1.PodSpec") == "io_k8s_api_core_v1_PodSpec"
    assert sharing.identifier("9lives") == "_9lives"
    assert sharing.identifier("---") == "value"
    # every leading segment loses its leading words first, left to right; then whole segments go
    assert sharing.shorten("AlphaBeta_GammaDelta_EpsilonZeta_end", 20) == "Beta_Delta_Zeta_end"
    assert sharing.shorten("AlphaBeta_GammaDelta_EpsilonZeta_end", 12) == "Zeta_end"
    assert sharing.shorten("a_" * 30 + "LastWord", 10) == "a_LastWord"


# -- kb_838: the Kubernetes schema that motivated this --------------------------------------------

def test_kubernetes_schema_is_small_and_shared(monkeypatch):
    """kb_838 was 340 KB of EBNF; its keys other than the named properties are one
    ``json_string_except!`` each (they were tries of rules, ~36 KB of the text), and
    sharing halves the rest."""
    if not KB_838.exists():
        pytest.skip(f"MaskBench data not found at {KB_838}")
    schema = json.loads(KB_838.read_text())["schema"]
    shared = Grammar.from_json_schema(schema)
    text = shared.to_ebnf()
    assert len(text) < 15_000 and text.count("json_string_except!(") == 8, len(text)
    unshared(monkeypatch)
    before = Grammar.from_json_schema(schema).to_ebnf()
    assert len(text) * 1.6 < len(before), (len(text), len(before))
    string = Regex(jf.string_regex())
    assert sum(1 for _, body in shared.rules for node in _nodes(body) if node == string) == 1
    assert dict(shared.rules)["string"] == string
    assert max(len(name) for name in shared.names) <= 40
    assert all(IDENTIFIER.fullmatch(name) for name in shared.names)


def _nodes(expr: Expr):
    from grammarc.ir import walk

    return walk(expr)


# -- differential: MaskBench schemas -----------------------------------------------------------------

def _maskbench_sample(every: int = 90) -> list[Path]:
    return sorted(DATA.glob("*.json"))[5::every] if DATA.is_dir() else []


@pytest.mark.parametrize("path", _maskbench_sample() or [None], ids=lambda p: p.name if p else "no-data")
def test_maskbench_same_language_and_terminals(path, monkeypatch):
    if path is None:
        pytest.skip(f"MaskBench data not found at {DATA}")
    case = json.loads(path.read_text())
    outcomes = []
    for share in (False, True):
        with monkeypatch.context() as patch:
            if not share:
                unshared(patch)
            try:
                grammar = quiet_schema_grammar(case["schema"])
                outcomes.append((grammar, grammar.compile()))
            except GrammarcError as error:  # refused either way, for the same reason
                outcomes.append((type(error), str(error)))
    if not isinstance(outcomes[0][0], Grammar):
        assert outcomes[1] == outcomes[0]
        return
    (plain, before), (shared, compiled) = outcomes
    reread = Grammar.from_ebnf(shared.to_ebnf(), start=shared.start)
    assert reread == shared
    # referenced regular rules are merged back into the terminal automata
    for key in ("terminals", "dfa_states"):
        assert compiled.summary()[key] == before.summary()[key], key
    judges = [Recognizer(before), Recognizer(compiled), Recognizer(reread.compile())]
    for test in case["tests"]:
        for text in (json.dumps(test["data"], separators=(",", ":")), json.dumps(test["data"], indent=2)):
            verdicts = [judge.accepts(text) for judge in judges]
            assert verdicts == [verdicts[0]] * 3, (text[:200], verdicts)


# -- differential: random grammars, against the brute-force oracle ---------------------------------

def _with_copies(grammar: Grammar, tweak: bool) -> Grammar:
    """`grammar` (its start rule renamed) beside a renamed copy of each of its rules, the new
    start rule choosing either: rules that the sharing pass should merge. `tweak`: the copy
    of the last rule also derives ``c`` (a character the grammars never use), so that the
    copies referring to it (however deeply) must stay apart."""
    original = {name: "start_0" if name == "start" else name for name, _ in grammar.rules}
    copy = {name: f"{name}_copy" for name, _ in grammar.rules}

    def renamed(expr: Expr, names: dict) -> Expr:
        return sharing._substituted(expr, {old: Ref(new) for old, new in names.items()}, {})

    rules = [("start", Alt((Ref("start_0"), Ref("start_copy"))))]
    rules += [(original[name], renamed(body, original)) for name, body in grammar.rules]
    rules += [(copy[name], renamed(body, copy)) for name, body in grammar.rules]
    if tweak:
        name, body = rules[-1]
        rules[-1] = (name, Alt((body, Literal("c"))))
    return Grammar(rules=tuple(rules), start="start")


@st.composite
def regex_hints(draw, grammar: Grammar) -> dict:
    from grammarc.ir import walk

    regexes = sorted({node.pattern for _, body in grammar.rules for node in walk(body) if isinstance(node, Regex)})
    return {Regex(p): draw(st.sampled_from(["string", "start", "r1", "char", "x"])) for p in regexes if draw(st.booleans())}


def _sharing_input(data) -> tuple[Grammar, dict]:
    """A random grammar (with renamed copies of its rules, or not) and names for its regexes."""
    grammar = data.draw(strategies.grammars("ab", any_token=False), label="grammar")
    if data.draw(st.booleans(), label="copies"):
        grammar = _with_copies(grammar, tweak=data.draw(st.booleans(), label="tweak"))
    return grammar, data.draw(regex_hints(grammar), label="hints")


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_sharing_keeps_the_language_of_random_grammars(data):
    grammar, hints = _sharing_input(data)
    with pytest.MonkeyPatch.context() as patch:  # every rule and regex is worth sharing
        for threshold in ("MIN_MERGED_NODES", "MIN_TERMINAL", "MIN_NAMED_TERMINAL"):
            patch.setattr(sharing, threshold, 1)
        rules = sharing.share(dict(grammar.rules), grammar.start, hints)
    shared = Grammar(rules=tuple(rules.items()), start=grammar.start)
    assert list(rules)[0] == grammar.start
    assert oracle.language(shared, "abc", 4) == oracle.language(grammar, "abc", 4)
    assert Grammar.from_ebnf(shared.to_ebnf(), start=shared.start) == shared


def test_copies_merge_into_one_rule_recursive_ones_too(monkeypatch):
    monkeypatch.setattr(sharing, "MIN_MERGED_NODES", 1)
    rules = {
        "start": Seq((Ref("spec_list"), Ref("status_list"), Ref("x"), Ref("y"))),
        "spec_list": Alt((Literal(""), Seq((Ref("spec_item"), Ref("spec_list"))))),
        "status_list": Alt((Literal(""), Seq((Ref("status_item"), Ref("status_list"))))),
        "spec_item": Seq((Literal("<"), Regex("[a-z]+"), Literal(">"))),
        "status_item": Seq((Literal("<"), Regex("[a-z]+"), Literal(">"))),
        "x": Repeat(Ref("spec_item"), 0, 2),
        "y": Repeat(Ref("status_item"), 0, 3),
    }
    merged = sharing.merge_equal_rules(rules, "start")
    assert merged == {
        "start": Seq((Ref("list"), Ref("list"), Ref("x"), Ref("y"))),
        "list": Alt((Literal(""), Seq((Ref("item"), Ref("list"))))),
        "item": Seq((Literal("<"), Regex("[a-z]+"), Literal(">"))),
        "x": Repeat(Ref("item"), 0, 2),
        "y": Repeat(Ref("item"), 0, 3),
    }


def test_rules_referring_to_different_rules_stay_apart(monkeypatch):
    monkeypatch.setattr(sharing, "MIN_MERGED_NODES", 1)
    rules = dict(Grammar.from_ebnf('start ::= s0 | s1; s0 ::= "a" r0; r0 ::= "b"; s1 ::= "a" r1; r1 ::= "b" | "c";').rules)
    assert sharing.merge_equal_rules(rules, "start") == rules


def test_small_equal_rules_keep_their_names(monkeypatch):
    rules = {"start": Seq((Ref("a_name"), Ref("b_name"))), "a_name": Ref("s"), "b_name": Ref("s"), "s": Regex("x+")}
    assert sharing.merge_equal_rules(rules, "start") == rules


# -- shapes: what merge_equal_rules compares rule bodies by -------------------------------------

def _blank(expr: Expr) -> Expr:
    """`expr` with every reference to the one name "" (what a shape leaves out)."""
    return sharing._substituted(expr, {name: Ref("") for name in references(expr)}, {})


def _same_shape_exactly_when_equal(bodies: list[Expr]) -> None:
    shapes = sharing._Shapes()
    forms = [shapes.form(body) for body in bodies]
    for x, fx in zip(bodies, forms):
        assert sorted(fx[1]) == sorted(references(x))
        assert list(map(id, fx[3])) == list(map(id, sharing._terminals(x)))
        for y, fy in zip(bodies, forms):
            assert (fx[0] == fy[0]) == (_blank(x) == _blank(y)), (x, y)
            assert (fx[0] == fy[0] and fx[1] == fy[1]) == (x == y), (x, y)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_shapes_of_random_bodies_are_equal_exactly_when_the_bodies_are_but_for_names(data):
    grammar = data.draw(strategies.grammars("ab"), label="grammar")
    bodies = [body for _, body in grammar.rules]
    renamed = [sharing._substituted(body, {name: Ref(name + "_x") for name in references(body)}, {}) for body in bodies]
    _same_shape_exactly_when_equal(bodies + renamed + [_blank(body) for body in bodies])


def test_shapes_tell_apart_what_only_a_field_or_a_class_tells_apart():
    _same_shape_exactly_when_equal([
        Regex("a"), Regex("a", "early"), Regex("a", "complement"), Literal("a"), Substrings("a"),
        JsonStringExcept(("a",)), JsonStringExcept(("b",)), JsonStringExcept(("a", "b")), AnyToken(),
        Repeat(Literal("a"), 1, 2), Repeat(Literal("a"), 1, 3), Repeat(Literal("a"), 0, 2), Repeat(Ref("x")),
        Repeat(Ref("y")), Except(Ref("x")), Except(Ref("y")), Except(Ref("x"), 3), Except(Literal("x")),
        Except(Literal("x"), 3), Seq((Literal("a"),)), Alt((Literal("a"),)), Seq((Ref("x"), Ref("y"))),
        Seq((Ref("y"), Ref("x"))), Seq((Ref("x"), Ref("x"))), Alt((Seq((Ref("x"),)), Regex("a"))),
        Alt((Seq((Ref("y"),)), Regex("a"))), Alt((Seq((Ref("y"),)), Regex("a", "early"))), Seq(()), Alt(()),
    ])


_EDGE_BODIES = [  # opaque nodes (an except! of a literal, classes of their own) and the leaves
    Except(Literal("x")), Seq((Except(Alt((Ref("a"), Ref("b")))), Ref("c"))), Except(Ref("x"), 2), AnyToken(),
    Substrings("ab"), JsonStringExcept(("k",)), Seq(()), Alt((Repeat(Except(Ref("y")), 0, 3), Regex("a", "early"))),
]


def _same_shapes_as_the_oracle(bodies: list[Expr]) -> None:
    """`nodes.shape` (the core) and its oracle: the same shapes, numbered alike in their
    tables, the same references in order, opaque names and terminals (the same objects)."""
    got_table: dict = {}
    want_table: dict = {}
    for body in bodies:
        got, want = ([], set(), []), ([], set(), [])
        assert shape(body, got_table, *got) == check_reference.shape(body, want_table, *want)
        assert got[:2] == want[:2] and list(map(id, got[2])) == list(map(id, want[2]))
    assert got_table == want_table


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_shapes_in_the_core_are_the_python_walks(data):
    grammar = data.draw(strategies.grammars("ab", any_token=True, token_level=True), label="grammar")
    bodies = [body for _, body in grammar.rules]
    _same_shapes_as_the_oracle(bodies + [Seq((body, Ref("z"), body)) for body in bodies] + _EDGE_BODIES + bodies)


def test_shapes_in_the_core_refuse_what_is_no_node_precisely():
    _same_shapes_as_the_oracle(_EDGE_BODIES)
    with pytest.raises(TypeError, match="items are not a tuple"):
        shape(Seq("ab"), {}, [], set(), [])
    deep = Literal("a")
    for _ in range(1_000_000):  # hashing its shape recursed in C past the stack (a segfault)
        deep = Repeat(deep)
    message = f"an expression nests deeper than {MAX_SHAPE_DEPTH} levels"
    with pytest.raises(GrammarError) as caught:  # never a RecursionError: the walk has a stack of its own
        shape(Seq((deep,)), {}, [], set(), [])
    assert str(caught.value) == message


def _chain(depth: int, leaf: Expr) -> Expr:
    """`depth` nested Seq, Repeat and Alt nodes (in turn) around `leaf`, with a reference
    and a terminal beside each level (the order of `used` and `terminals`)."""
    expr = leaf
    for i in range(depth):
        kind = i % 3
        if kind == 0:
            expr = Seq((Ref(f"r{i}"), expr, Regex(f"t{i}")))
        elif kind == 1:
            expr = Repeat(expr, i % 2, None if i % 4 else i)
        else:
            expr = Alt((expr, Literal(f"l{i}"), Ref(f"r{i}")))
    return expr


def test_deep_shapes_in_the_core_are_the_python_walks():
    """The core's own stack against the oracle's recursion, as deep as the oracle goes."""
    _same_shapes_as_the_oracle([_chain(depth, leaf) for depth in (1, 2, 3, 50, 301)
                                for leaf in (Literal("a"), Ref("z"), Except(Literal("x")))])


def test_shapes_in_the_core_go_exactly_as_deep_as_the_limit():
    table: dict = {}
    used: list = []
    terminals: list = []
    top = shape(_chain(MAX_SHAPE_DEPTH, Ref("z")), table, used, set(), terminals)
    seqs, alts = (MAX_SHAPE_DEPTH + 2) // 3, (MAX_SHAPE_DEPTH + 0) // 3
    assert (top, len(table)) == (seqs + alts - 1, seqs + alts)
    assert used == [f"r{i}" for i in reversed(range(MAX_SHAPE_DEPTH)) if i % 3 == 0] + ["z"] + \
        [f"r{i}" for i in range(MAX_SHAPE_DEPTH) if i % 3 == 2]
    assert [t.pattern for t in terminals] == [f"t{i}" for i in range(MAX_SHAPE_DEPTH) if i % 3 == 0]
    for expr in (_chain(MAX_SHAPE_DEPTH + 1, Ref("z")), Seq((_chain(MAX_SHAPE_DEPTH, Ref("z")),))):
        with pytest.raises(GrammarError) as caught:
            shape(expr, {}, [], set(), [])
        assert str(caught.value) == f"an expression nests deeper than {MAX_SHAPE_DEPTH} levels"


@given(st.text(st.sampled_from("aZ09_-. é\u00b2\u0660"), max_size=12) | st.text(max_size=8))
@settings(max_examples=300, deadline=None)
def test_names_skip_the_substitution_only_where_it_changes_nothing(text) -> None:
    """`sharing._is_name` (identifier's fast path) says yes only where `_NOT_NAME` finds
    nothing to replace (digits and letters beyond ASCII included: ``²``, ``٠``, ``é``), and
    to every name of ASCII letters and digits."""
    if sharing._is_name(text):
        assert sharing._NOT_NAME.sub("_", text) == text
    if re.fullmatch(r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*", text):
        assert sharing._is_name(text)


def _reference_shorten(name: str, limit: int = sharing.MAX_NAME - 4) -> str:
    """Test oracle: `sharing.shorten` as first written (a segment's words found anew each
    time it is looked at; the implementation keeps the words of the segments it has seen)."""
    if len(name) <= limit:
        return name
    segments = [s for s in name.split("_") if s]
    length = len("_".join(segments))
    i = 0
    while len(segments) > 1 and length > limit:
        while i < len(segments) - 1:
            words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", segments[i])
            if len(words) > 1 and "".join(words) == segments[i]:
                break
            i += 1
        if i < len(segments) - 1:
            segments[i] = "".join(words[1:])
            length -= len(words[0])
        else:
            length -= len(segments.pop(0)) + 1
            i -= 1
    out = "_".join(segments)[-limit:].lstrip("_")
    return "_" + out if out[:1].isdigit() else out


@given(st.one_of(st.lists(st.from_regex(r"[A-Za-z0-9]{0,9}", fullmatch=True), max_size=12).map("_".join),
                 st.text(alphabet="aBcDE19_-.é", max_size=70)), st.integers(4, 40))
@settings(max_examples=500, deadline=None)
def test_shorten_agrees_with_the_reference(name: str, limit: int) -> None:
    assert sharing.shorten(name, limit) == _reference_shorten(name, limit)


def _reference_identifier(text: str, limit: int) -> str:
    """Test oracle: `sharing.identifier` without its fast paths (the substitution always,
    the shortening always asked)."""
    base = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "value"
    return _reference_shorten("_" + base if base[0].isdigit() else base, limit)


@given(st.one_of(st.lists(st.from_regex(r"[A-Za-z0-9]{0,9}", fullmatch=True), max_size=8).map("_".join),
                 st.text(alphabet="aBcDE19_-.é\u0660", max_size=50)), st.integers(1, 40))
@settings(max_examples=500, deadline=None)
def test_identifier_agrees_with_the_reference(text: str, limit: int) -> None:
    # limits the text's length and a character under included (a name of exactly the limit)
    for at in {limit, max(len(text), 1), max(len(text) - 1, 1)}:
        assert sharing.identifier(text, "value", at) == _reference_identifier(text, at)


@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=20))
@settings(max_examples=200, deadline=None)
def test_equal_rule_sets_come_in_rule_order(unions):
    # sets() reads the order of the sets off the dict of sets (a union only removes a key):
    # the same as sorting them by their first rules
    names = [f"r{i}" for i in range(10)]
    classes = sharing._Classes(dict.fromkeys(names))
    for a, b in unions:
        classes.union(names[a], names[b])
    order = {name: i for i, name in enumerate(names)}
    every = sorted((sorted(members, key=order.get) for members in classes._members.values()), key=lambda m: order[m[0]])
    assert classes.sets() == [members for members in every if len(members) > 1]


# -- the pass against its plain form (tests/sharing_reference.py) ---------------------------------

def _same_sharing(rules: dict, start: str, hints: dict, reserved: tuple[str, ...] = ()) -> None:
    """`share`, `merge_equal_rules` and `hoist_terminals` give what the plain passes give:
    the same rules, bodies and names, in the same order."""
    assert list(sharing.share(rules, start, hints, reserved).items()) == list(
        sharing_reference.share(rules, start, hints, reserved).items())
    assert list(sharing.merge_equal_rules(rules, start, reserved).items()) == list(
        sharing_reference.merge_equal_rules(rules, start, reserved).items())
    assert list(sharing.hoist_terminals(rules, hints, reserved).items()) == list(
        sharing_reference.hoist_terminals(rules, hints, reserved).items())


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_sharing_is_its_plain_form_on_random_grammars(data):
    grammar, hints = _sharing_input(data)
    rules = dict(grammar.rules)
    reserved = tuple(data.draw(st.lists(st.sampled_from(list(rules)), max_size=2, unique=True), label="reserved"))
    with pytest.MonkeyPatch.context() as patch:
        if data.draw(st.booleans(), label="small"):  # every rule and regex worth sharing
            for threshold in ("MIN_MERGED_NODES", "MIN_TERMINAL", "MIN_NAMED_TERMINAL"):
                patch.setattr(sharing, threshold, 1)
        _same_sharing(rules, grammar.start, hints, reserved)


def test_a_rule_renamed_and_hoisted_at_once(monkeypatch):
    """A rule that refers to merged rules and holds a hoisted terminal is rebuilt once with
    both; the merged rules' terminals count once."""
    monkeypatch.setattr(sharing, "MIN_MERGED_NODES", 1)
    long = Regex("[a-z]{1,30}[0-9]{1,30}[A-Z]{1,30}")
    rules = {
        "start": Seq((Ref("spec_item"), Ref("status_item"), long, Except(Ref("spec_item")), Ref("loop_a"))),
        "spec_item": Seq((Literal("<"), long, Literal(">"))),
        "status_item": Seq((Literal("<"), long, Literal(">"))),
        "loop_a": Alt((Literal(""), Seq((Literal("x"), Ref("loop_a"))))),
    }
    out = sharing.share(rules, "start", {})
    assert out == {
        "start": Seq((Ref("item"), Ref("item"), Ref("regex"), Except(Ref("item")), Ref("loop_a"))),
        "item": Seq((Literal("<"), Ref("regex"), Literal(">"))),
        "loop_a": rules["loop_a"],
        "regex": long,
    }
    _same_sharing(rules, "start", {})


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json"))[3::40] if DATA.is_dir() else [None],
                         ids=lambda p: p.name if p else "no-data")
def test_sharing_is_its_plain_form_on_maskbench(path, monkeypatch):
    """The builder's own rules (layouts, hints, ``ws`` reserved) of a sample of MaskBench schemas."""
    if path is None:
        pytest.skip(f"MaskBench data not found at {DATA}")
    seen = []
    monkeypatch.setattr(builder_module, "share", lambda *args, **kw: seen.append((args, kw)) or sharing.share(*args, **kw))
    for options in ({}, {"whitespace": "compact"}):
        try:
            quiet_schema_grammar(json.loads(path.read_text())["schema"], **options)
        except GrammarcError:
            pass
    for (rules, start, hints), kw in seen:
        _same_sharing(rules, start, hints, kw.get("reserved", ()))
