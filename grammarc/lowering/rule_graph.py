"""The rule graph of a grammar, as the lowering (grammarc.lowering.compiler) orders its work.

* `regular_order`: the rules that are not recursive and use only regular constructs, callees
  first: each is merged into one DFA before any rule that refers to it.
* `rule_kinds`: those, and the grammar's *library*: a small recursive rule with the rules it
  uses and nothing else (a JSON Schema grammar's ``value``, ``ws``, ``string``, ``number``,
  in nearly every schema that allows properties it does not name). The lowering lowers the
  library first, on its own, so what that makes is a function of the library's rules and
  the options alone, and keeps it here (`keep_library`, `lowered_library`; bounded by the
  automaton states the kept libraries hold): the next grammar with the same library starts
  from a copy instead of lowering it again (~0.2-0.4 ms of a never-seen schema's ~1-1.5 ms
  compile). The compiled grammar does not depend on whether the memo answered.
"""

from __future__ import annotations

import threading

from grammarc.ir.check import Checked
from grammarc.lowering.bnf import sccs

LIBRARY_MAX_RULES = 32  # rules: a larger library is lowered with the rest, not kept
LIBRARY_MAX_STATES = 2_048  # automaton states a kept library may hold (~2 MB of tables)
MEMO_STATES = 16_384  # states all kept libraries may hold together, the oldest dropped first

# (options, the library's (name, rule) pairs) -> (the lowering's state after lowering them
# alone, the automaton states it holds); oldest first
_LIBRARIES: dict[tuple, tuple[tuple, int]] = {}
_LOCK = threading.Lock()


def lowered_library(key: tuple) -> tuple | None:
    """The state a lowering kept for the library `key` (never to be changed: copy it), or None."""
    with _LOCK:
        kept = _LIBRARIES.get(key)
    return None if kept is None else kept[0]


def keep_library(key: tuple, state: tuple, states: int) -> None:
    """Keep `state`, a lowering's after lowering the library `key` alone, whose automata
    have `states` states in all (not kept past `LIBRARY_MAX_STATES`: a library holding a
    large enumeration is not worth its memory)."""
    if states > LIBRARY_MAX_STATES:
        return
    with _LOCK:
        _LIBRARIES[key] = (state, states)
        total = sum(size for _, size in _LIBRARIES.values())
        while total > MEMO_STATES:
            total -= _LIBRARIES.pop(next(iter(_LIBRARIES)))[1]


def rule_kinds(checked: Checked, start: str) -> tuple[list[str], tuple[str, ...]]:
    """The regular rules, callees first (`regular_order`), and the grammar's library:
    the first recursive group of rules (callees first) that refers only to itself and to
    regular rules, with the rules it uses (`_closure` of its first rule in grammar order); ()
    when that is more than `LIBRARY_MAX_RULES` rules or holds the start rule (then it is
    the grammar, which the compiled-grammar caches hold whole). JSON Schema grammars
    share theirs (``value``, ``ws``, ``string``, ``number``), lowered once per process."""
    refs = checked.refs
    order, group = regular_order(refs, checked.token_level)
    if not group:
        return order, ()
    library = _closure(next(name for name in refs if name in group), refs)
    if start in library or len(library) > LIBRARY_MAX_RULES:
        return order, ()
    return order, library


def regular_order(refs: dict[str, list[str]], token_level: frozenset[str]) -> tuple[list[str], frozenset[str]]:
    """Rules that are not (mutually) recursive and use only regular constructs, callees first,
    from the references (`refs`, of the rules given) and vocabulary-level rules `check_grammar`
    found; and the first recursive group that refers only to itself and to those (or an
    empty set). References in order of first use (not a set's order, which string hashing
    makes vary from one process to the next): the order rules are merged in decides what
    sizes `_merged_size` knows, so it decides the terminals."""
    regular: set[str] = set()
    order: list[str] = []
    group: frozenset[str] = frozenset()
    for component in sccs(list(refs), refs.__getitem__):  # reverse topological order
        if len(component) > 1 or component[0] in refs[component[0]]:  # recursive
            if not group and all(r in regular or r in component for name in component for r in refs[name]):
                group = frozenset(component)
            continue
        (name,) = component
        if name not in token_level and all(r in regular for r in refs[name]):
            regular.add(name)
            order.append(name)
    return order, group


def _closure(first: str, refs: dict[str, list[str]]) -> tuple[str, ...]:
    """`first` and every rule it uses, breadth first, each rule's references in order of first use."""
    order = [first]
    seen = {first}
    for name in order:  # grows while iterating
        for ref in refs[name]:
            if ref not in seen:
                seen.add(ref)
                order.append(ref)
    return tuple(order)
