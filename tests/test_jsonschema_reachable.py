"""`sharing.reachable_from` (the JSON Schema front end's dead-rule pass, fed each rule's
references by name) against a plain graph search, on random rule graphs: references to
missing rules, self-references, repeated references, reserved rules, a start rule that
is not defined."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc.frontends.jsonschema.sharing import reachable_from
from grammarc.ir import Literal


def reference_reachable(rules: dict, start: str, reserved: tuple, refs: dict) -> dict:
    """Test oracle: a breadth-first search one reference at a time."""
    seen = [start] + [name for name in reserved if name in rules]
    i = 0
    while i < len(seen):
        for name in refs[seen[i]] if seen[i] in refs else ():
            if name in rules and name not in seen:
                seen.append(name)
        i += 1
    return {name: body for name, body in rules.items() if name in seen}


_NAMES = st.sampled_from(["start", "a", "b", "c", "d", "e", "ws", "missing"])


@given(st.lists(_NAMES, unique=True, max_size=7), st.data(), st.lists(_NAMES, max_size=2))
@settings(max_examples=300, deadline=None)
def test_reachable_from_is_a_graph_search(names, data, reserved) -> None:
    rules = {name: Literal(name) for name in names}
    refs = {name: data.draw(st.lists(_NAMES, max_size=6)) for name in names}
    start = data.draw(st.sampled_from(names)) if names and data.draw(st.booleans()) else "start"
    refs.setdefault(start, data.draw(st.lists(_NAMES, max_size=6)))
    got = reachable_from(rules, start, tuple(reserved), refs)
    want = reference_reachable(rules, start, tuple(reserved), refs)
    assert list(got.items()) == list(want.items())


def test_reachable_from_drops_exactly_the_dead_rules() -> None:
    rules = {n: Literal(n) for n in ("start", "a", "b", "dead", "ws")}
    refs = {"start": ["a", "a", "ws"], "a": ["start", "b", "nowhere"], "b": [], "dead": ["a"], "ws": []}
    assert list(reachable_from(rules, "start", (), refs)) == ["start", "a", "b", "ws"]
    assert list(reachable_from(rules, "b", ("dead",), refs)) == ["start", "a", "b", "dead", "ws"]
