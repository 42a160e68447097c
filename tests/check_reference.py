"""The Python walks of grammarc.ir.check that the compiled core (``grammarc/ir/_walk.c``)
replaces: the test oracle. `check_depth` raises as `check.check_depth` does; `passing_refs`
answers as `check._passing_refs` does (a `Checked`, or None when a node may fail a check);
`references`, `shape`, `inline_rules` and `substituted` as `grammarc.ir.nodes` does.
tests/test_grammar_errors.py, test_schema_ebnf_readable.py and test_inline_rules.py compare them
on generated grammars.
"""

from __future__ import annotations

from typing import Mapping

from grammarc.ir.check import MAX_DEPTH, Checked, _deepest, _too_deep
from grammarc.ir.nodes import (
    AnyToken, Alt, Except, Expr, Grammar, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq, Substrings, children,
)

_MODES = ("match", "early", "complement")
_LEAVES = frozenset((Literal, Regex, Substrings, JsonStringExcept, Ref, AnyToken))


def check_depth(grammar: Grammar) -> None:
    """Raise `GrammarError` where a rule nests expressions deeper than `MAX_DEPTH` levels.

    Iterative, and safe to call before anything else touches (hashes, prints) the grammar.
    """
    for name, expr in grammar.rules:
        level, depth = [expr], 1  # level by level: each node once, no (node, depth) pairs
        while level:
            if depth > MAX_DEPTH:
                raise _too_deep(name, _deepest(expr), grammar)
            below: list[Expr] = []
            for node in level:  # `children`, its common cases inline (every node of every rule)
                kind = type(node)
                if kind is Seq or kind is Alt:
                    below.extend(node.items)
                elif kind is Repeat or kind is Except:
                    below.append(node.item)
                elif kind not in _LEAVES:
                    below.extend(children(node))
            level, depth = below, depth + 1


def passing_refs(grammar: Grammar, rules: dict[str, Expr]) -> Checked | None:
    """What `check_grammar` returns (the references in the order `_check_rule` finds them)
    when every node passes every check of `_check_rule`; None when one may not. Almost
    every grammar passes: this walk proves it for the price of a dispatch per node (depth
    kept by a marker pushed below each node's children, not by (node, depth) pairs; the
    texts searched for surrogates in one string), and leaves the failures, and nodes of a
    class of its own, to `_check_rule`, which names the first error in source order."""
    texts: list[str] = []
    refs: dict[str, list[str]] = {}
    token_level: set[str] = set()
    up = _UP
    for name, expr in grammar.rules:
        refs[name] = names = []
        stack: list = [expr]
        pop, push, extend = stack.pop, stack.append, stack.extend
        depth = 1  # of the node on top of the stack
        while stack:
            node = pop()
            if node is up:
                depth -= 1
                continue
            kind = type(node)
            if kind is Seq or kind is Alt:
                items = node.items
                if not items:
                    if kind is Alt:
                        return None
                    continue
                if depth == MAX_DEPTH:
                    return None
                push(up)
                extend(reversed(items))
                depth += 1
            elif kind is Literal or kind is Substrings:
                texts.append(node.text)
            elif kind is Ref:
                names.append(node.name)
            elif kind is Repeat:
                low, high = node.min, node.max
                if type(low) is not int or low < 0 or not (high is None or (type(high) is int and high >= low)):
                    return None
                if depth == MAX_DEPTH:
                    return None
                push(up)
                push(node.item)
                depth += 1
            elif kind is Regex:
                if node.mode not in _MODES:
                    return None
                texts.append(node.pattern)
            elif kind is JsonStringExcept:
                if type(node.words) is not tuple:
                    return None
                texts.extend(node.words)
            elif kind is AnyToken:
                token_level.add(name)
            else:  # except! (its own checks raise), or a class of its own
                return None
        if not all(ref in rules for ref in names):
            return None
    if not all(type(text) is str for text in texts) or __import__('re').compile('[\ud800-\udfff]').search("\0".join(texts)):
        return None
    return Checked(refs, frozenset(token_level))


_UP = object()  # below a node's children on `_passing_refs`'s stack: their depth ends there


def references(expr: Expr) -> list[str]:
    """The rule names `expr` refers to, once per reference, in stack order."""
    out = []
    stack = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is Ref:
            out.append(node.name)
        elif kind is Seq or kind is Alt:
            stack.extend(node.items)
        elif kind is Repeat or kind is Except:
            stack.append(node.item)
        elif kind not in _LEAVES:  # a subclass
            if isinstance(node, Ref):
                out.append(node.name)
            stack.extend(children(node))
    return out


_REF = -1  # the shape of every reference (numbered shapes count from 0)


def shape(expr: Expr, table: dict, used: list[str], opaque: set[str], terminals: list[Expr]) -> object:
    """`grammarc.ir.nodes.shape` (frontends/jsonschema/sharing.py's walk before it moved to the core)."""
    kind = type(expr)
    if kind is Seq or kind is Alt:
        parts: list = [kind]
        for item in expr.items:  # the common leaves inline: a call per node is most of the walk
            sub = type(item)
            if sub is Ref:
                used.append(item.name)
                parts.append(_REF)
            elif sub is Literal:
                parts.append((Literal, item.text))
            elif sub is Regex:
                terminals.append(item)
                parts.append((Regex, item.pattern, item.mode))
            elif sub is Repeat and type(item.item) is Ref:  # optional whitespace: everywhere
                used.append(item.item.name)
                parts.append((Repeat, _REF, item.min, item.max))
            else:
                parts.append(shape(item, table, used, opaque, terminals))
        key: tuple = tuple(parts)
    elif kind is Repeat:  # a tuple as leaves are (not numbered): most repeat a leaf
        return (kind, shape(expr.item, table, used, opaque, terminals), expr.min, expr.max)
    elif kind is Except and type(expr.item) is Ref:
        used.append(expr.item.name)
        key = (kind, _REF, expr.limit)
    elif kind is Ref:
        used.append(expr.name)
        return _REF
    elif kind is Literal or kind is Substrings:
        return (kind, expr.text)
    elif kind is Regex:
        terminals.append(expr)
        return (kind, expr.pattern, expr.mode)
    elif kind is JsonStringExcept:
        terminals.append(expr)
        return (kind, expr.words)
    elif kind is AnyToken:
        return (kind,)
    else:
        opaque.update(references(expr))
        return (None, expr)
    found = table.get(key)
    if found is None:
        found = table[key] = len(table)
    return found


_KEPT_LEAVES = frozenset((Literal, Regex, JsonStringExcept, Substrings, AnyToken))  # what inlining never changes


def inline_rules(rules: dict, inline: set, max_nesting: int) -> dict:
    """`grammarc.ir.nodes.inline_rules` (the JSON Schema front end's builder._inline_single_use
    walk before it moved to the core)."""
    cut: list[str] = []  # helpers where a chain was cut (or that subst does not enter)

    def subst(expr, level: int):
        kind = type(expr)
        if kind is Ref and expr.name in inline:
            if level < max_nesting:
                return subst(rules[expr.name], level + 1)
            cut.append(expr.name)
            return expr
        if kind is Seq or kind is Alt:
            items = []
            changed = kind is Seq and len(expr.items) == 1
            for item in expr.items:
                sub = type(item)
                if sub is Repeat:  # most repeat a leaf (optional whitespace: everywhere)
                    inner = item.item
                    sub = type(inner)
                    if sub in _KEPT_LEAVES or (sub is Ref and inner.name not in inline):
                        items.append(item)
                        continue
                elif sub in _KEPT_LEAVES or (sub is Ref and item.name not in inline):
                    items.append(item)  # kept as it is: no call per leaf
                    continue
                new = subst(item, level)
                if type(new) is kind:
                    items.extend(new.items)
                    changed = True
                else:
                    items.append(new)
                    changed = changed or new is not item
            if not changed:
                return expr
            return items[0] if kind is Seq and len(items) == 1 else kind(tuple(items))
        if kind is Repeat:
            item = expr.item
            if type(item) in _KEPT_LEAVES or (type(item) is Ref and item.name not in inline):
                return expr
            item = subst(item, level)
            return expr if item is expr.item else Repeat(item, expr.min, expr.max)
        if kind is not Ref and kind not in _KEPT_LEAVES:  # except!, or a subclass: not entered
            cut.extend(name for name in references(expr) if name in inline)
        return expr

    out = {name: subst(body, 0) for name, body in rules.items() if name not in inline}
    while cut:  # helpers where a chain was cut: rules of their own
        name = cut.pop()
        if name not in out:
            out[name] = subst(rules[name], 0)
    return {name: out[name] for name in rules if name in out}


def _terminal_key(terminal: Regex | JsonStringExcept) -> tuple:
    return (Regex, terminal.pattern, terminal.mode) if type(terminal) is Regex else (JsonStringExcept, terminal.words)


def substituted(expr: Expr, refs: Mapping[str, Expr], terminals: Mapping[tuple, Expr]) -> Expr:
    """`grammarc.ir.nodes.substituted` (frontends/jsonschema/sharing.py's walk before it moved to
    the core): `expr` with the references that `refs` has a replacement for (by name; also as the
    operand of ``except!``) and the terminals that `terminals` has one for (by
    `_terminal_key`) replaced; unchanged subtrees are kept as they are (the same objects)."""
    kind = type(expr)
    if kind is Ref:
        return refs.get(expr.name, expr)
    if kind is Seq or kind is Alt:
        items = expr.items
        for i, item in enumerate(items):
            sub = type(item)
            if sub is Literal or (sub is Regex and not terminals):  # most items: no call for them
                continue
            new = refs.get(item.name, item) if sub is Ref else substituted(item, refs, terminals)
            if new is not item:
                rest = tuple([substituted(later, refs, terminals) for later in items[i + 1:]])
                return kind(items[:i] + (new,) + rest, expr.span)
        return expr
    if kind is Regex or kind is JsonStringExcept:
        return terminals.get(_terminal_key(expr), expr) if terminals else expr
    if kind is Repeat:
        item = expr.item
        new = refs.get(item.name, item) if type(item) is Ref else substituted(item, refs, terminals)
        return expr if new is item else Repeat(new, expr.min, expr.max, expr.span)
    if kind is Except and type(expr.item) is Ref:
        item = refs.get(expr.item.name)
        return expr if item is None else Except(item, expr.limit, expr.span)
    return expr
