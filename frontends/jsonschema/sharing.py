"""Shared rules for what a schema repeats, so that its `.ebnf` can be read.

Schemas repeat themselves: every string field is the same 300-character JSON-string regex,
every copy of a subschema builds the same rules under another name. This pass rewrites the
built rules without changing any language (it only names and renames parts of the IR):

- *merge*: rules written the same way (equal bodies, up to references to rules already
  found equal) become one rule, named by what their names share (``spec_selector`` and
  ``status_selector``: ``selector``) or else by the shortest. Small bodies stay apart: their
  own names say more than a shared one would. Copies that refer to each other recursively
  are not found;
- *hoist*: a large regex (or ``json_string_except!``) terminal that occurs twice or more
  becomes one rule of its own, referenced where it was; so does a terminal the builder has
  a name for (``string``, ``date_time``, ``integer_min0``, ``ObjectMeta_other_key``), even
  once: the structure then reads like the schema, the lexical definitions come last.

The lowering merges a referenced regular rule back into the terminal DFAs, so the compiled
terminals are those of the grammar before the pass.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Mapping, NamedTuple

from grammarc.ir import Alt, Expr, JsonStringExcept, Ref, Regex, Repeat, Seq, walk
from grammarc.ir.nodes import shape, substituted

__all__ = ["share", "hoist_terminals", "merge_equal_rules", "identifier", "reachable_from", "shorten", "unique"]

MIN_TERMINAL = 24  # pattern length from which a repeated regex gets a rule (and a named one, once)
MIN_NAMED_TERMINAL = 12  # pattern length from which a regex the builder names gets a rule, repeated
MIN_MERGED_NODES = 5  # IR nodes from which equal rule bodies are merged
MAX_MERGE_ROUNDS = 16  # each round may make bodies that referred to merged rules equal
MAX_NAME = 40


def share(rules: Mapping[str, Expr], start: str, hints: Mapping[Expr, str],
          reserved: tuple[str, ...] = ()) -> dict[str, Expr]:
    """Merge equal rules, then hoist terminals (see the module docstring). Both passes decide
    from each rule's shape, references and terminals (one walk per rule, `_Shapes`); a rule
    that changes is then rebuilt once, its references renamed and its terminals hoisted in
    one substitution (they replace different leaves: the tree of one pass after the other)."""
    plan = _merge_plan(rules, start, reserved)
    terminals = {name: plan.forms[old][3] for name, old in plan.kept.items()}
    return _rewritten(rules, plan, _hoist_plan(plan.kept, hints, reserved, terminals))


# -- terminals ------------------------------------------------------------------------------

_TERMINALS = frozenset((Regex, JsonStringExcept))  # the leaves hoisted (literals stay: see below)


def _size(expr: Regex | JsonStringExcept) -> int:
    """Characters of the terminal's text, about as printed."""
    return len(expr.pattern) if type(expr) is Regex else 20 + sum(len(w) + 4 for w in expr.words)


def hoist_terminals(rules: Mapping[str, Expr], hints: Mapping[Expr, str], reserved: tuple[str, ...] = ()) -> dict[str, Expr]:
    """Rules of their own for the large regexes (and ``json_string_except!`` terminals) that
    repeat, or that `hints` names (literals stay where they are: they read well, and the
    lowering groups alternatives of literals).

    New rules come after the others, in the order their terminals first occur; a name that
    is taken gets a numeric suffix."""
    plan = _MergePlan({name: name for name in rules}, {}, {}, set())
    terminals = {name: _terminals(body) for name, body in rules.items()}
    return _rewritten(rules, plan, _hoist_plan(rules, hints, reserved, terminals))


class _HoistPlan(NamedTuple):
    """What hoisting does: the new rule's name for each chosen terminal (keyed
    ``(Regex, pattern, mode)`` or ``(JsonStringExcept, words)``, in the order they first
    occur), the terminal where each first occurs, and the rules holding each candidate (a
    rule once per occurrence)."""
    names: dict[tuple, str]
    first: dict[tuple, Expr]
    holders: dict[tuple, list[str]]


def _hoist_plan(rules: Mapping[str, object], hints: Mapping[Expr, str], reserved: tuple[str, ...],
                terminals: Mapping[str, list[Expr]]) -> _HoistPlan:
    """The terminals `hoist_terminals` gives rules of their own, given each rule's terminals in
    order (`_terminals`); `rules` only for their names, in order."""
    named = {(Regex, t.pattern, t.mode) if type(t) is Regex else (JsonStringExcept, t.words): name
             for t, name in hints.items() if type(t) in _TERMINALS}  # keyed as below
    holders: dict[tuple, list[str]] = {}  # candidate -> the rules holding it, once per occurrence
    first: dict[tuple, Expr] = {}  # candidate -> the terminal where it first occurs
    small: set[tuple] = set()  # terminals too small to be candidates
    for name in rules:
        for node in terminals[name]:
            # what makes terminals equal (as IR), as a tuple: hashed without a call per node
            key = (Regex, node.pattern, node.mode) if type(node) is Regex else (JsonStringExcept, node.words)
            held = holders.get(key)
            if held is None:
                if key in small:
                    continue
                if _size(node) < (MIN_NAMED_TERMINAL if key in named else MIN_TERMINAL):
                    small.add(key)
                    continue
                first[key] = node
                holders[key] = held = []
            held.append(name)
    chosen = [k for k, held in holders.items() if len(held) >= 2 or (k in named and _size(first[k]) >= MIN_TERMINAL)]
    if not chosen:
        return _HoistPlan({}, first, holders)
    taken = set(rules) | set(reserved)
    names = {key: unique(named.get(key) or _fallback_name(first[key]), taken) for key in chosen}
    return _HoistPlan(names, first, holders)


def _rewritten(rules: Mapping[str, Expr], merge: _MergePlan, hoist: _HoistPlan) -> dict[str, Expr]:
    """The rules `merge` keeps (under their new names, in order), each rebuilt once where it
    refers to a merged rule or holds a hoisted terminal, then the hoisted terminals' rules."""
    names = hoist.names
    rename = {old: Ref(new) for old, new in merge.renames.items()}
    hoisted = {key: Ref(name) for key, name in names.items()}
    holding = {name for key in names for name in hoist.holders[key]}  # the rules holding a hoisted terminal
    referring = merge.referring
    out: dict[str, Expr] = {}
    for name, old in merge.kept.items():
        body = rules[old]
        if old in referring or name in holding:
            body = _substituted(body, rename, hoisted)
        out[name] = body
    out.update((name, hoist.first[key]) for key, name in names.items())
    return out


def _terminals(expr: Expr) -> list[Expr]:
    """The terminals of `expr` in order, outside ``except!`` (whose operand stays a literal)."""
    out = []
    stack = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in _TERMINALS:
            out.append(node)
        elif kind is Seq or kind is Alt:
            stack.extend(reversed(node.items))
        elif kind is Repeat:
            stack.append(node.item)
    return out


def _fallback_name(terminal: Regex | JsonStringExcept) -> str:
    if type(terminal) is JsonStringExcept:
        return "other_key"
    return "string_pattern" if terminal.pattern.startswith('"') else "regex"


# -- equal rules ----------------------------------------------------------------------------

def merge_equal_rules(rules: Mapping[str, Expr], start: str, reserved: tuple[str, ...] = ()) -> dict[str, Expr]:
    """One rule for each set of equal rules of at least MIN_MERGED_NODES nodes.

    Rules are equal when their bodies are, up to references to rules already found equal
    (round after round, rules of any size, so that two objects whose members are ``x_city
    ::= string`` and ``y_city ::= string`` are equal too). Only the large ones are merged:
    the start rule keeps its name, the merged rule the place of the first of its set, and the
    small rules left without a reference go away. Each body is walked once (`_Shapes`: its
    shape and its references); the rounds compare shapes and names, not rebuilt bodies."""
    return _rewritten(rules, _merge_plan(rules, start, reserved), _HoistPlan({}, {}, {}))


class _MergePlan(NamedTuple):
    """What merging does: the rules kept (new name -> the rule whose body it takes, in
    order, unreachable ones left out), the merged rules' new names, each rule's form, and
    the kept bodies that refer to a merged rule (by their rules' old names; references
    inside opaque nodes are not renamed: they do not count)."""
    kept: dict[str, str]
    renames: dict[str, str]
    forms: dict[str, _Form]
    referring: set[str]


def _merge_plan(rules: Mapping[str, Expr], start: str, reserved: tuple[str, ...]) -> _MergePlan:
    """What `merge_equal_rules` does. Only rules whose shape another rule has can be equal to
    one: the rounds read the others never (over the cold protocol's 30 schemas, 489 of 945
    rules are read, with 813 of their 5,368 references: a schema's large rules, those with
    the most references, mostly have shapes of their own)."""
    forms, candidates = _Shapes().forms(rules, reserved)
    classes = _Classes(candidates)
    if candidates:
        _find_equal(forms, candidates, classes)
    renames: dict[str, str] = {}
    taken = set(rules) | set(reserved)
    for names in classes.sets():
        if len(names) > 1 and _has_nodes(rules[names[0]], MIN_MERGED_NODES):
            keep = _merged_name(names, start, taken)
            taken.add(keep)
            renames.update((name, keep) for name in names if name != keep)
    if not renames:
        return _MergePlan({name: name for name in rules}, renames, forms, set())
    kept: dict[str, str] = {}
    refs: dict[str, list[str]] = {}
    referring: set[str] = set()
    for name, (_, used, opaque, _) in forms.items():
        new = renames.get(name, name)
        if new not in kept:
            kept[new] = name
            if not renames.keys().isdisjoint(used):
                used = [renames.get(ref, ref) for ref in used]
                referring.add(name)
            refs[new] = [*used, *opaque] if opaque else used
    live = reachable_from(kept, start, reserved, refs)
    return _MergePlan(live, renames, forms, referring)


def _find_equal(forms: Mapping[str, _Form], candidates: list[str], classes: _Classes) -> None:
    """Join into `classes` the candidates equal up to references to rules found equal, round
    after round (at most MAX_MERGE_ROUNDS)."""
    # references to the rule itself all alike (so that ``a ::= "" | x a`` and ``b ::= "" | x
    # b``, the same language, compare equal): no rule has the empty name. Most rules do not
    # refer to themselves: their list of references is read as it is
    written = {}
    for name in candidates:
        used = forms[name][1]
        written[name] = ["" if ref == name else ref for ref in used] if name in used else used
    # a key stays true of its rule as more rules are found equal: keys of earlier rounds stay
    groups: dict[tuple, str] = {}
    todo = candidates
    first_of = classes.first.get
    for _ in range(MAX_MERGE_ROUNDS):
        touched = set()
        for name in todo:
            used = written[name]
            # what equal rules share: the body's shape, each reference written as the first
            # rule known equal to its target (equal keys: bodies equal as IR once so written)
            first = groups.setdefault((forms[name][0], tuple(map(first_of, used, used))), name)
            if first != name and classes.union(first, name):
                touched.add(first)
        if not touched:
            return
        changed = {member for name in touched for member in classes.members(name)}
        todo = [name for name in candidates
                if not (changed.isdisjoint(forms[name][1]) and changed.isdisjoint(forms[name][2]))]


_Form = tuple  # (shape, names referred to in walk order, names inside opaque nodes, terminals in order)


class _Shapes:
    """Shapes of IR trees: equal shapes exactly for trees equal up to the names their
    references carry. A leaf's shape is its class and fields, a repetition's its class, its
    item's shape and its bounds, a sequence's or alternation's a number (hash-consing: its
    class and its items' shapes looked up in one table), so a shape hashes and compares in
    about constant time.

    `merge_equal_rules` compares rule bodies round after round with their references
    rewritten; a shape and a tuple of names compare in one tuple comparison, where
    rewritten bodies had to be rebuilt and hashed node by node each round. The walk enters
    what `_substituted` enters; any other node (a subclass, an ``except!`` of something but a
    reference) is *opaque*: compared as it is, its references kept apart. The walk lists the
    terminals it passes too, in order (what `_terminals` finds: hoisting needs no walk of its own).
    The walk is `grammarc.ir.nodes.shape`, in the compiled core (a Python call per node was
    most of this pass)."""

    def __init__(self) -> None:
        self._table: dict[tuple, int] = {}

    def form(self, body: Expr) -> _Form:
        return self.forms({"": body}, ())[0][""]

    def forms(self, rules: Mapping[str, Expr], reserved: tuple[str, ...]) -> tuple[dict[str, _Form], list[str]]:
        """Each rule's form, by name; and the rules (but `reserved` ones) whose shape another
        such rule has, in rule order (the only ones that can be equal to another)."""
        table = self._table
        forms: dict[str, _Form] = {}
        first_with: dict = {}  # shape -> the first rule of that shape
        shared: set[str] = set()
        for name, body in rules.items():
            used: list[str] = []
            opaque: set[str] = set()  # read only, once filled
            terminals: list[Expr] = []
            forms[name] = form = (shape(body, table, used, opaque, terminals), used, opaque, terminals)
            if name not in reserved:
                first = first_with.setdefault(form[0], name)
                if first != name:
                    shared.add(first)
                    shared.add(name)
        return forms, [name for name in forms if name in shared] if shared else []


class _Classes:
    """Rules known to derive the same language: sets that only grow (so that what made two
    rules equal stays true as more rules are found equal), each named by its first rule."""

    def __init__(self, rules: Mapping[str, Expr]):
        self.order = {name: i for i, name in enumerate(rules)}
        self.first = {name: name for name in rules}  # rule -> the first rule of its set
        self._members = {name: [name] for name in rules}

    def union(self, a: str, b: str) -> bool:
        """Join the sets of `a` and `b` (the earlier rule names the set); False if one already."""
        a, b = self.first[a], self.first[b]
        if a == b:
            return False
        if self.order[b] < self.order[a]:
            a, b = b, a
        moved = self._members.pop(b)
        for name in moved:
            self.first[name] = a
        self._members[a].extend(moved)
        return True

    def members(self, name: str) -> list[str]:
        return self._members[self.first[name]]

    def sets(self) -> list[list[str]]:
        """Every set of two or more rules, its members in rule order, the sets in the order of
        their first rules: the order `_members` keeps its keys in (a union only removes one)."""
        order = self.order.__getitem__
        return [sorted(members, key=order) for members in self._members.values() if len(members) > 1]


def reachable_from(rules: Mapping[str, Expr], start: str, reserved: tuple[str, ...],
                   refs: Mapping[str, Iterable[str]]) -> dict[str, Expr]:
    """The rules that the start rule (or a `reserved` one) can reach, in their order: helpers
    built for dead branches go away. `refs`: the names each rule refers to, by the rule's name
    (the builder and the merge know them without walking a body again). A rule's references
    are read as one set less those already seen: a Python step per rule reached, not one per
    reference (layouts refer to ``ws`` from every member)."""
    seen = {start, *(name for name in reserved if name in rules)}
    todo = list(seen)
    while todo:
        found = set(refs[todo.pop()])
        found -= seen
        for name in found:
            if name in rules:
                seen.add(name)
                todo.append(name)
    if len(seen) == len(rules) and start in rules:  # nothing dead (seen holds rules only)
        return dict(rules)
    return {name: body for name, body in rules.items() if name in seen}


def _has_nodes(expr: Expr, count: int) -> bool:
    for _ in walk(expr):
        count -= 1
        if count <= 0:
            return True
    return False


def _merged_name(names: list[str], start: str, taken: set[str]) -> str:
    """The name of a set of equal rules: the start rule's, else the words all the names end
    with (unless another rule has that name), else the shortest name (the first of those)."""
    if start in names:
        return start
    common = _common_suffix(names)
    if common and (common not in taken or common in names) and not common[0].isdigit() and not common.startswith("q"):
        return common
    return min(names, key=len)


def _common_suffix(names: list[str]) -> str:
    parts = [name.split("_") for name in names]
    words: list[str] = []
    for column in zip(*(reversed(p) for p in parts)):
        if len(set(column)) != 1 or not column[0]:
            break
        words.insert(0, column[0])
    if len(words) == min(len(p) for p in parts):
        return ""  # one name is the suffix of another: keep the shortest
    return "_".join(words)


# -- names ----------------------------------------------------------------------------------

_NOT_NAME = re.compile(r"[^A-Za-z0-9_]+")  # compiled once: re.sub looks a pattern text up per call


def identifier(text: str, default: str = "value", limit: int = MAX_NAME - 4) -> str:
    """A rule name from free text: runs of other characters become ``_``, no leading digit,
    at most `limit` characters (words dropped from the left, see `shorten`). Most hints are
    one already (an ASCII identifier, no ``_`` at either end, within the limit: what
    `_identifier` gives back as it is), and a never-seen schema's hints are new: those are
    answered without the cache, whose misses cost twice these tests."""
    if len(text) <= limit and text.isascii() and text.isidentifier() and text[0] != "_" and text[-1] != "_":
        return text
    return _identifier(text, default, limit)


@lru_cache(maxsize=8192)  # the builder asks for a name per rule, from hints that recur
def _identifier(text: str, default: str, limit: int) -> str:
    """`identifier`, for any text."""
    base = (text if _is_name(text) else _NOT_NAME.sub("_", text)).strip("_") or default
    if base[0].isdigit():
        base = "_" + base
    return base if len(base) <= limit else shorten(base, limit)  # a call less for most names


def _is_name(text: str) -> bool:
    """Whether `text` is letters, digits and ``_`` only (ASCII): what `_NOT_NAME` leaves as it
    is. Most hints are (property names), and three string methods cost a tenth of a regex
    substitution that changes nothing. Most of them are identifiers too (``root_tags_item``):
    one pass says so, where the underscores made a copy without them and a second pass."""
    return text.isascii() and (text.isidentifier() or text.replace("_", "").isalnum())


def shorten(name: str, limit: int = MAX_NAME - 4) -> str:
    """`name` within `limit` characters, keeping its end (the most specific part): the
    leading words of its first segments go first (``ScopedResourceSelectorRequirement_key``:
    ``SelectorRequirement_key``), then whole leading segments, then characters."""
    if len(name) <= limit:
        return name
    segments = [s for s in name.split("_") if s]
    excess = len("_".join(segments)) - limit
    # Each segment but the last, left to right, loses its leading words (all but one) until
    # the name fits: its words are found once, as the words of what is left of a segment
    # are the words it had (a word's match reads no character before it). Linear: a
    # distributed anyOf's hints grow a segment per level.
    last = len(segments) - 1
    i = 0
    while excess > 0 and i < last:
        words = _words(segments[i])
        if words is not None:
            cut = 0
            while excess > 0 and cut < len(words) - 1:
                excess -= len(words[cut])
                cut += 1
            segments[i] = "".join(words[cut:])
        i += 1
    while excess > 0 and len(segments) > 1:  # then whole leading segments
        excess -= len(segments.pop(0)) + 1
    out = "_".join(segments)[-limit:].lstrip("_")
    return "_" + out if out[:1].isdigit() else out


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


@lru_cache(maxsize=8192)  # segments recur: a hint is its parent's hint and one more segment
def _words(segment: str) -> tuple[str, ...] | None:
    """The words `segment` is written in (``ScopedResource``: Scoped, Resource), when it is
    exactly two or more of them; else None (a segment `shorten` cannot cut by words)."""
    words = tuple(_WORD.findall(segment))
    return words if len(words) > 1 and "".join(words) == segment else None


def unique(base: str, taken: set[str]) -> str:
    """`base`, or `base_2`, `base_3`... the first not in `taken` (which gets it)."""
    name = base
    i = 2
    while name in taken:
        name = f"{base}_{i}"
        i += 1
    taken.add(name)
    return name


# -- rewriting ------------------------------------------------------------------------------

def _substituted(expr: Expr, refs: dict[str, Expr], terminals: dict[tuple, Expr]) -> Expr:
    """`expr` with the references that `refs` has a replacement for (by name; also as the
    operand of ``except!``) and the terminals that `terminals` has one for (by
    ``(Regex, pattern, mode)`` or ``(JsonStringExcept, words)``) replaced; unchanged subtrees are kept as they are (the same objects).
    In the compiled core (`grammarc.ir.nodes.substituted`)."""
    return substituted(expr, refs, terminals)
