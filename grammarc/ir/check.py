"""Static checks every grammar passes before anything is compiled from it.

Front-ends call `check_grammar` on what they build and the compiler calls it again on the
IR it receives (IR built by hand skips the front-ends), so the checks are cheap, total and
independent of any vocabulary. Errors point at the offending node when it has a span;
IR built directly has none, so every message also names the rule it is about.
"""

from __future__ import annotations

import difflib
import re
import warnings
from collections import OrderedDict
from dataclasses import dataclass

from grammarc.errors import GrammarError, GrammarWarning, Span
from grammarc.ir import _walk
from grammarc.ir.nodes import (
    EXPR_TYPES, WALK_CLASSES, Alt, AnyToken, Except, Expr, Grammar, JsonStringExcept, Literal, Ref, Regex, Repeat,
    Seq, Substrings, children, references, walk,
)

__all__ = ["MAX_DEPTH", "Checked", "check_depth", "check_grammar", "literal_alternatives"]

MAX_DEPTH = 200
"""Deepest nesting of expressions a rule may have. Printing, comparing, hashing and lowering
an expression recurse on its structure; this bound keeps them far from Python's recursion
limit, so a deeper grammar gets a precise error instead of a RecursionError."""

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MODES = ("match", "early", "complement")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Checked:
    """What the walk of `check_grammar` found on the way, so the compiler need not walk the
    grammar again: the rules each rule refers to, in order of first use (depth first, left
    to right; the order the lowering merges regular rules in follows it), and the rules that
    hold a vocabulary-level node themselves (``any!``, ``except!(X, n)``)."""

    refs: dict[str, list[str]]
    token_level: frozenset[str]


def check_grammar(grammar: Grammar) -> Checked:
    """Raise `GrammarError` for a malformed grammar; warn (`GrammarWarning`) for unreachable
    rules; return what the walk found (`Checked`)."""
    rules = _check_names(grammar)
    _check_start(grammar, rules)
    checked = _passing_refs(grammar, rules)
    if checked is None:  # some check may fail: the ordered walk raises the error it meets first
        refs = {name: list(dict.fromkeys(_check_rule(name, expr, rules, grammar))) for name, expr in grammar.rules}
        checked = Checked(refs, frozenset(name for name, expr in grammar.rules if _has_token_level(expr)))
    _warn_unreachable(grammar, checked.refs)
    return checked


def _has_token_level(expr: Expr) -> bool:
    return any(isinstance(node, AnyToken) or (isinstance(node, Except) and node.limit is not None)
               for node in walk(expr))


def warn_unreachable(grammar: Grammar) -> None:
    """The warnings of `check_grammar` without its checks, for a grammar equal to one that
    passed them (a compiled grammar found in the disk cache)."""
    _warn_unreachable(grammar, {name: references(expr) for name, expr in grammar.rules})


def check_depth(grammar: Grammar) -> None:
    """Raise `GrammarError` where a rule nests expressions deeper than `MAX_DEPTH` levels.

    Iterative (in the compiled core, `_walk.too_deep`), and safe to call before anything
    else touches (hashes, prints) the grammar.
    """
    found = _walk.too_deep(grammar.rules, WALK_CLASSES, children, MAX_DEPTH)
    if found >= 0:
        name, expr = grammar.rules[found]
        raise _too_deep(name, _deepest(expr), grammar)


def _deepest(expr: Expr) -> Expr:
    """The node the error of a too deep rule points at: the first one past `MAX_DEPTH` in
    depth-first order, last child first."""
    stack = [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return node
        stack.extend((child, depth + 1) for child in children(node))
    return expr


def _too_deep(name: str, node: Expr, grammar: Grammar) -> GrammarError:
    span = getattr(node, "span", None) or grammar.rule_spans.get(name)
    return GrammarError(f"rule '{name}' nests expressions deeper than {MAX_DEPTH} levels",
                        span, hint="split the expression into rules that refer to each other")


def literal_alternatives(grammar_rules: dict[str, Expr], item: Literal | Ref) -> tuple[str, ...]:
    """The strings an ``except!`` item stands for (assumes `check_grammar` passed)."""
    found: list[str] = []
    _collect_literals(item, grammar_rules, found, set(), rule=None)
    return tuple(dict.fromkeys(found))


# --------------------------------------------------------------------------------------


def _check_names(grammar: Grammar) -> dict[str, Expr]:
    rules: dict[str, Expr] = {}
    for name, expr in grammar.rules:
        span = grammar.rule_spans.get(name)
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise GrammarError(f"invalid rule name {name!r}: names are letters, digits and '_', "
                               "not starting with a digit", span)
        if name in rules:
            raise GrammarError(f"rule '{name}' is defined twice in the IR (merge the definitions "
                               "into one Alt)", span)
        rules[name] = expr
    return rules


def _check_start(grammar: Grammar, rules: dict[str, Expr]) -> None:
    if grammar.start in rules:
        return
    if not rules:
        raise GrammarError(f"the grammar defines no rules (the start rule is '{grammar.start}')")
    defined = ", ".join(f"'{name}'" for name in rules)
    close = difflib.get_close_matches(grammar.start, list(rules), n=1)
    raise GrammarError(f"start rule '{grammar.start}' is not defined; defined rules: {defined}",
                       hint=f"did you mean '{close[0]}'?" if close else None)


def _check_rule(name: str, expr: Expr, rules: dict[str, Expr], grammar: Grammar) -> list[str]:
    """Check every node of rule `name`; returns the names it refers to (for reachability)."""
    refs: list[str] = []
    stack = [(expr, 1)]
    pop, push = stack.pop, stack.extend
    while stack:
        node, depth = pop()
        kind = type(node)
        if kind not in _NODE_CLASSES and not isinstance(node, EXPR_TYPES):
            raise GrammarError(f"rule '{name}' contains {_short_repr(node)}, which is not an IR expression",
                               grammar.rule_spans.get(name))
        if depth > MAX_DEPTH:
            raise _too_deep(name, node, grammar)
        if kind is not Seq:  # a sequence has nothing of its own to check
            _check_node(name, node, rules)
            if kind is Ref or isinstance(node, Ref):
                refs.append(node.name)
        below = children(node)
        if below:
            depth += 1
            push([(child, depth) for child in reversed(below)])
    return refs


_NODE_CLASSES = frozenset(EXPR_TYPES)


def _passing_refs(grammar: Grammar, rules: dict[str, Expr]) -> Checked | None:
    """What `check_grammar` returns (the references in the order `_check_rule` first finds
    them) when every node passes every check of `_check_rule`; None when one may not. Almost
    every grammar passes: this walk (in the compiled core, `_walk.passing`) proves it for
    the price of a dispatch per node, and leaves the failures, and nodes of a class of its
    own, to `_check_rule`, which names the first error in source order."""
    found = _walk.passing(grammar.rules, WALK_CLASSES, _MODES, rules, MAX_DEPTH)
    return None if found is None else Checked(found[0], frozenset(found[1]))



def _short_repr(value: object) -> str:
    try:
        text = repr(value)
    except RecursionError:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _check_node(rule: str, node: Expr, rules: dict[str, Expr]) -> None:
    span = node.span
    if isinstance(node, Ref):
        if node.name not in rules:
            close = difflib.get_close_matches(node.name, list(rules), n=1)
            raise GrammarError(f"rule '{rule}' refers to undefined rule '{node.name}'", span,
                               hint=f"did you mean '{close[0]}'?" if close else None)
    elif isinstance(node, (Literal, Substrings)):
        _check_text(rule, node.text, "literal" if isinstance(node, Literal) else "#substrs", span)
    elif isinstance(node, Regex):
        if node.mode not in _MODES:
            raise GrammarError(f"rule '{rule}': unknown regex mode {node.mode!r} (expected one of "
                               f"{', '.join(_MODES)})", span)
        _check_text(rule, node.pattern, "regex", span)
    elif isinstance(node, JsonStringExcept):
        if not isinstance(node.words, tuple):
            raise GrammarError(f"rule '{rule}': json_string_except! words must be a tuple, not "
                               f"{type(node.words).__name__}", span)
        for word in node.words:
            _check_text(rule, word, "json_string_except!", span)
    elif isinstance(node, Alt):
        if not node.items:
            raise GrammarError(f"rule '{rule}' contains an alternation with no alternatives", span)
    elif isinstance(node, Repeat):
        _check_repeat(rule, node)
    elif isinstance(node, Except):
        _check_except(rule, node, rules)


def _check_text(rule: str, text: str, what: str, span: Span | None) -> None:
    if not isinstance(text, str):
        raise GrammarError(f"rule '{rule}': {what} text must be a str, not {type(text).__name__}", span)
    found = _SURROGATE.search(text)
    if found is not None:
        raise GrammarError(f"rule '{rule}': {what} contains a lone surrogate U+{ord(found.group()):04X}, "
                           "which has no UTF-8 encoding", span)


def _bounds(node: Repeat) -> str:
    high = "" if node.max is None else str(node.max)
    return f"{{{node.min},{high}}}"


def _check_repeat(rule: str, node: Repeat) -> None:
    ints = isinstance(node.min, int) and (node.max is None or isinstance(node.max, int))
    if not ints or isinstance(node.min, bool) or isinstance(node.max, bool):
        raise GrammarError(f"rule '{rule}': repetition bounds must be integers, found "
                           f"min={node.min!r}, max={node.max!r}", node.span)
    if node.min < 0 or (node.max is not None and node.max < 0):
        raise GrammarError(f"rule '{rule}': repetition {_bounds(node)} has a negative bound", node.span)
    if node.max is not None and node.min > node.max:
        raise GrammarError(f"rule '{rule}': repetition {_bounds(node)} has its minimum {node.min} "
                           f"greater than its maximum {node.max}", node.span)


def _check_except(rule: str, node: Except, rules: dict[str, Expr]) -> None:
    if node.limit is not None and (not isinstance(node.limit, int) or isinstance(node.limit, bool)
                                   or node.limit < 1):
        raise GrammarError(f"rule '{rule}': the token limit of except! must be at least 1, found "
                           f"{node.limit!r}", node.span)
    item = node.item
    if isinstance(item, Ref):
        _check_node(rule, item, rules)
    if isinstance(item, Literal):
        if item.text == "":
            raise GrammarError(f"rule '{rule}': except!('') is meaningless: every text contains the "
                               "empty string", item.span or node.span)
        return
    if not isinstance(item, Ref):
        raise GrammarError(f"rule '{rule}': except! takes a literal or a rule name, not "
                           f"{type(item).__name__}", getattr(item, "span", None) or node.span)
    found: list[str] = []
    _collect_literals(item, rules, found, set(), rule=rule, at=node)
    if not found:
        raise GrammarError(f"rule '{rule}': except!({item.name}): rule '{item.name}' expands to no "
                           "literal", item.span or node.span)


def _collect_literals(expr: Expr, rules: dict[str, Expr], found: list[str], seen: set[str],
                      rule: str | None, at: Except | None = None, current: str | None = None) -> None:
    """Gather the literals `expr` expands to through Refs and Alts; raise if anything else.

    Depth first, left to right, with an explicit stack (chains of rules can be long).
    """
    stack: list[tuple[Expr, str | None]] = [(expr, current)]
    while stack:
        expr, current = stack.pop()
        if isinstance(expr, Literal):
            if expr.text == "" and rule is not None:
                raise GrammarError(f"rule '{rule}': except!({at.item.name}) includes the empty literal, "
                                   "which makes it meaningless (every text contains the empty string)",
                                   expr.span or at.item.span or at.span)
            found.append(expr.text)
        elif isinstance(expr, Ref):
            if expr.name in seen:
                continue
            if expr.name not in rules:
                _check_node(current or "?", expr, rules)  # raises: undefined rule
            seen.add(expr.name)
            stack.append((rules[expr.name], expr.name))
        elif isinstance(expr, Alt):
            stack.extend((item, current) for item in reversed(expr.items))
        elif rule is not None:
            what = {"Seq": "a sequence", "Repeat": "a repetition", "Regex": "a regex", "Substrings":
                    "#substrs", "AnyToken": "any!", "Except": "except!",
                    "JsonStringExcept": "json_string_except!"}.get(type(expr).__name__, "a non-literal")
            name = at.item.name
            via = f"'{name}'" if current == name else f"'{name}' expands to rule '{current}', which"
            raise GrammarError(f"rule '{rule}': except!({name}) needs a literal or a rule that expands to an "
                               f"alternation of literals, but {via} contains {what}",
                               at.item.span or at.span)


_WARNED: "OrderedDict[tuple[int, str, int], None]" = OrderedDict()
_WARNED_MAX = 1024


def _first_time(grammar: Grammar) -> bool:
    """Whether this grammar's unreachable rules were not yet reported: a front-end checks
    what it builds and the compiler checks again; the user hears it once. Keyed by the
    grammar's hash (equal grammars alike), bounded, pinning no grammar in memory."""
    key = (hash(grammar), grammar.start, len(grammar.rules))
    if key in _WARNED:
        _WARNED.move_to_end(key)
        return False
    _WARNED[key] = None
    if len(_WARNED) > _WARNED_MAX:
        _WARNED.popitem(last=False)
    return True


def _warn_unreachable(grammar: Grammar, refs: dict[str, list[str]]) -> None:
    """Warn about the rules the start rule cannot reach (`refs`: each rule's references)."""
    reached = {grammar.start}
    stack = [grammar.start]
    while stack:
        for name in refs[stack.pop()]:
            if name not in reached:
                reached.add(name)
                stack.append(name)
    unreached = [name for name in refs if name not in reached]
    if not unreached or not _first_time(grammar):
        return
    for name in unreached:
        span = grammar.rule_spans.get(name)
        where = f"{span.location()}: " if span is not None else ""
        warnings.warn(GrammarWarning(f"{where}rule '{name}' is not reachable from the start rule "
                                     f"'{grammar.start}'"), stacklevel=4)
