"""Test oracle: the JSON Schema front end's sharing pass as it was before it read only the
rules that can change (frontends/jsonschema/sharing.py). Every rule's key in every merge
round, the refs of every rule as a set, a substitution for the renames and another for the
hoisted terminals: slow and plain, so that the pass can be compared with it exactly (same
rules, same names, same order)."""

from __future__ import annotations

from grammarc.frontends.jsonschema import sharing
from grammarc.ir import JsonStringExcept, Ref, Regex
from grammarc.ir.nodes import substituted


def share(rules: dict, start: str, hints: dict, reserved: tuple[str, ...] = ()) -> dict:
    return hoist_terminals(merge_equal_rules(rules, start, reserved), hints, reserved)


def _key(t) -> tuple:
    return (Regex, t.pattern, t.mode) if type(t) is Regex else (JsonStringExcept, t.words)


def hoist_terminals(rules: dict, hints: dict, reserved: tuple[str, ...] = ()) -> dict:
    named = {_key(t): name for t, name in hints.items() if type(t) in (Regex, JsonStringExcept)}
    uses: dict = {}
    first: dict = {}
    holding: dict = {}
    for name, body in rules.items():
        for node in sharing._terminals(body):
            key = _key(node)
            floor = sharing.MIN_NAMED_TERMINAL if key in named else sharing.MIN_TERMINAL
            if sharing._size(node) < floor:
                continue
            first.setdefault(key, node)
            uses[key] = uses.get(key, 0) + 1
            holding.setdefault(name, set()).add(key)
    chosen = [k for k, n in uses.items() if n >= 2 or (k in named and sharing._size(first[k]) >= sharing.MIN_TERMINAL)]
    taken = set(rules) | set(reserved)
    names = {key: sharing.unique(named.get(key) or sharing._fallback_name(first[key]), taken) for key in chosen}
    hoist = {key: Ref(name) for key, name in names.items()}
    out = {name: substituted(body, {}, hoist) if holding.get(name, set()) & names.keys() else body
           for name, body in rules.items()}
    out.update((name, first[key]) for key, name in names.items())
    return out


def merge_equal_rules(rules: dict, start: str, reserved: tuple[str, ...] = ()) -> dict:
    out = dict(rules)
    shapes = sharing._Shapes()
    forms = {name: shapes.form(body) for name, body in out.items()}
    refs = {name: frozenset(used) | frozenset(opaque) for name, (_, used, opaque, _) in forms.items()}
    written = {name: ["" if used == name else used for used in form[1]] for name, form in forms.items()}
    classes = sharing._Classes(out)
    groups: dict = {}
    todo = [name for name in out if name not in reserved]
    for _ in range(sharing.MAX_MERGE_ROUNDS):
        touched = set()
        for name in todo:
            key = (forms[name][0], tuple(classes.first.get(used, used) for used in written[name]))
            first = groups.setdefault(key, name)
            if first != name and classes.union(first, name):
                touched.add(first)
        if not touched:
            break
        changed = {member for name in touched for member in classes.members(name)}
        todo = [name for name in out if name not in reserved and refs[name] & changed]
    renames: dict = {}
    taken = set(out) | set(reserved)
    for names in classes.sets():
        if sharing._has_nodes(out[names[0]], sharing.MIN_MERGED_NODES):
            keep = sharing._merged_name(names, start, taken)
            taken.add(keep)
            renames.update((name, keep) for name in names if name != keep)
    if not renames:
        return out
    rename = {old: Ref(new) for old, new in renames.items()}
    merged: dict = {}
    merged_refs: dict = {}
    for name, body in out.items():
        new = renames.get(name, name)
        if new not in merged:
            merged[new] = substituted(body, rename, {})
            merged_refs[new] = {renames.get(used, used) for used in forms[name][1]} | set(forms[name][2])
    return sharing.reachable_from(merged, start, reserved, merged_refs)
