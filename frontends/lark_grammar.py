"""Lark grammars -> IR, read by Lark's own loader so imports, templates and overrides agree.

Lark's `GrammarBuilder` resolves ``%import`` (``common.lark`` and friends ship with lark),
``%override``/``%extend``, templates, ``?rule``/``_rule``/``!rule``, aliases and priorities, and
compiles terminals into Python regexes and rules into BNF. We translate that result: each rule
and each terminal becomes an IR rule of the same name, each terminal's pattern a `Regex` in
grammarc syntax (frontends/lark_regex.py). Inlining, aliases and priorities shape Lark's parse
tree or its lexer's choices, never the language, so they leave no trace here.

``%ignore``: the ignored terminals may occur, any number of times, before the first token,
after every token (hence between any two) -- after each terminal used in a rule we insert a
reference to ``__ignore``, and the start rule begins with one. Terminal bodies are untouched
(Lark never ignores inside a token).

Semantics (docs/importing.rst): the language is every text some split into terminals derives,
like Lark's Earley parser with ``lexer="dynamic_complete"``; Lark's standard and contextual
lexers take the longest match and may reject texts that only another split derives.
"""

from __future__ import annotations

import re

from grammarc import automata
from grammarc.automata.codepoints import code_point_dfa
from grammarc.automata.regex import negate, normalize
from grammarc.errors import GrammarcError, GrammarError, Source, Span
from grammarc.frontends.lark_lookahead import split_follows
from grammarc.frontends.lark_regex import LarkRegexError, translate_alternatives
from grammarc.ir import Alt, Expr, Grammar, Literal, Ref, Regex, Repeat, Seq

IGNORE_RULE = "__ignore"


def _lark():
    """Lark's loader pieces (imported late: only this front-end needs them)."""
    from lark import exceptions
    from lark.grammar import NonTerminal, Terminal
    from lark.load_grammar import GrammarBuilder

    return exceptions, GrammarBuilder, NonTerminal, Terminal


def _lark_error(error: Exception, source: Source) -> GrammarError:
    """A Lark loader error as ours, with the position Lark names when it names one."""
    message = str(error).split("\n\n")[0].strip()
    line = getattr(error, "line", None)
    column = getattr(error, "column", None)
    found = re.search(r"at line (\d+) column (\d+)", message)
    if found:
        line, column = int(found[1]), int(found[2])
        message = re.sub(r",? *at line \d+ column \d+( in \S+)?:?", "", message).strip()
    if isinstance(line, int) and isinstance(column, int) and line > 0:
        span = Span(line, column, line, column + 1, source)
        return GrammarError(f"Lark grammar: {message}", span)
    return GrammarError(f"{source.name}: Lark grammar: {message}")


def _definition_span(source: Source, name: str) -> Span | None:
    """Where `name` is defined (``NAME:``/``NAME.2:``), declared or imported, if we can see it."""
    n = re.escape(name)
    patterns = (
        rf"^[ \t]*[?!]?(?P<n>{n})[ \t]*(\.[ \t]*-?\d+)?[ \t]*:",
        rf"^[ \t]*%declare\b[^\n]*?\b(?P<n>{n})\b",
        rf"^[ \t]*%import\b[^\n]*?\b(?P<n>{n})\b",
    )
    for pattern in patterns:
        found = re.search(pattern, source.text, re.MULTILINE)
        if found:
            return source.span(found.start("n"), found.end("n"))
    return None


def _load(text: str, source: Source):
    """Lark's loader: (terminal defs, BNF rules, ignored names); refuses %declare."""
    exceptions, GrammarBuilder, _, _ = _lark()
    builder = GrammarBuilder(False, [])
    try:
        builder.load_grammar(text, source.name)
        builder.validate()
    except (exceptions.GrammarError, exceptions.UnexpectedInput) as error:
        raise _lark_error(error, source) from None
    for name, definition in builder._definitions.items():
        if definition.tree is None:
            raise GrammarError(
                f"%declare {name} is not supported: a declared symbol has no definition "
                "(Lark leaves it to a postlexer), so grammarc cannot know its language",
                _definition_span(source, name),
            )
    return builder


def _refusal(terminal, error: LarkRegexError, source: Source) -> GrammarError:
    """A terminal the regex translation refuses, named and located."""
    pattern = terminal.pattern
    span = _definition_span(source, terminal.name)
    if span is None and pattern.raw and pattern.raw in source.text:
        start = source.text.index(pattern.raw)
        span = source.span(start, start + len(pattern.raw))
    shown = pattern.raw if terminal.name.startswith("__ANON") else terminal.name
    return GrammarError(f"terminal {shown}: {error}", span)


def _parts(parts) -> Expr:
    items = [Regex(text, mode) for text, mode in parts]
    return items[0] if len(items) == 1 else Seq(tuple(items))


def _terminal_alternatives(terminal, source: Source, first=None) -> list[tuple[Expr, object]]:
    """A Lark terminal as ``(expression, follow)`` pairs (frontends/lark_regex.py: follow is
    what a trailing lookahead asks of the next character, None for nothing); with `first`,
    only its strings starting with a character in those ranges."""
    pattern = terminal.pattern
    if pattern.type == "str" and not pattern.flags:
        keep = first is None or any(lo <= ord(pattern.value[0]) <= hi for lo, hi in first)
        return [(Literal(pattern.value), None)] if pattern.value and keep else []
    try:
        return [(_parts(parts), follow) for parts, follow in translate_alternatives(pattern.to_regexp(), first)]
    except LarkRegexError as error:
        raise _refusal(terminal, error, source) from None


def _terminal_expr(terminal, source: Source) -> tuple[Expr, dict | None]:
    """A Lark terminal's pattern as IR, and its alternatives grouped by follow when a trailing
    lookahead asks something of the next character (else None)."""
    alternatives = _terminal_alternatives(terminal, source)
    groups: dict = {}
    for expr, follow in alternatives:
        groups.setdefault(follow, []).append(expr)
    bodies = {f: exprs[0] if len(exprs) == 1 else Alt(tuple(exprs)) for f, exprs in groups.items()}
    if set(bodies) == {None}:
        return bodies[None], None
    return Alt(tuple(bodies.values())), bodies


def _greedy_follow(body: Expr):
    """The follow that makes an ignored terminal match greedily, as Lark matches ignored
    terminals (one regex match, never a shorter one): the next character must not be one
    that could extend the match. Only when every accepting state extends by the same
    characters (``//[^\n]*``, ``[ \t]+``): None when nothing extends a match, and False
    (no exact follow) when the extensions differ between states."""
    if not isinstance(body, Regex) or body.mode != "match":
        return False
    try:
        chars = code_point_dfa(automata.from_regex(body.pattern))
    except (GrammarcError, ValueError):
        return False
    extensions = {normalize([r for ranges, _ in chars.edges[q] for r in ranges])
                  for q, accepting in enumerate(chars.accept) if accepting}
    if extensions == {()}:
        return None
    if len(extensions) != 1:
        return False
    return (negate(extensions.pop()), True)


def _first_of_terminal(terminal, follow, first, source: Source) -> Expr | None:
    """The strings of `terminal` (those of its `follow` group) starting with a character in `first`."""
    exprs = [expr for expr, f in _terminal_alternatives(terminal, source, first) if f == follow]
    return None if not exprs else exprs[0] if len(exprs) == 1 else Alt(tuple(exprs))


def _rename(rules: list[tuple[str, Expr]]) -> list[tuple[str, Expr]]:
    """Template instances (``_sep{A,COMMA}``) as IR-valid names: other characters become '_'."""
    mapping: dict[str, str] = {}
    taken = {name for name, _ in rules}
    for name, _ in rules:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            continue
        base = re.sub(r"\W", "_", name).strip("_") or "rule"
        new, k = base, 1
        while new in taken:
            k += 1
            new = f"{base}_{k}"
        taken.add(new)
        mapping[name] = new
    if not mapping:
        return rules

    def fix(expr: Expr) -> Expr:
        if isinstance(expr, Ref):
            return Ref(mapping.get(expr.name, expr.name))
        if isinstance(expr, (Seq, Alt)):
            return type(expr)(tuple(fix(x) for x in expr.items))
        if isinstance(expr, Repeat):
            return Repeat(fix(expr.item), expr.min, expr.max)
        return expr

    renamed = [(mapping.get(name, name), fix(expr)) for name, expr in rules]
    del fix  # a recursive closure is a reference cycle: unbound, refcounting frees it
    return renamed


def _seq(items: list[Expr]) -> Expr:
    return items[0] if len(items) == 1 else Seq(tuple(items))


def _reachable(start: str, bodies: dict[str, list[list[str]]]) -> list[str]:
    seen, stack = {start}, [start]
    while stack:
        for alternative in bodies.get(stack.pop(), ()):
            for name in alternative:
                if name not in seen:
                    seen.add(name)
                    stack.append(name)
    return [name for name in bodies if name in seen]


def lark_to_grammar(text: str, *, start: str = "start", name: str = "<string>") -> Grammar:
    """The IR of a Lark grammar; `start` names a rule (or a terminal: its language alone)."""
    source = Source(text, name)
    _, _, NonTerminal, Terminal = _lark()
    builder = _load(text, source)
    exceptions = _lark()[0]
    try:
        terminals, rules, ignored = builder.build().compile([start], "*")
    except exceptions.GrammarError as error:
        raise _lark_error(error, source) from None
    terminal_of = {str(t.name): t for t in terminals}
    rule_bodies: dict[str, list[list]] = {}
    for rule in rules:
        rule_bodies.setdefault(str(rule.origin.name), []).append(rule.expansion)
    if start not in rule_bodies and start not in terminal_of:
        raise GrammarError(f"{name}: Lark grammar: start rule {start!r} is not defined")
    after_token = [Ref(IGNORE_RULE)] if ignored else []

    def symbol(sym) -> list[Expr]:
        return [Ref(str(sym.name))] + after_token if sym.is_term else [Ref(str(sym.name))]

    names = {key: [[str(s.name) for s in alt] for alt in alts] for key, alts in rule_bodies.items()}
    names.update({t: [] for t in terminal_of})
    # terminals that are only ignored, never a token of a rule: Lark matches them greedily
    greedy = {str(t) for t in ignored} - {n for alts in names.values() for alt in alts for n in alt}
    greedy_follows: dict[str, object] = {}  # their follows, which their regexes do not spell
    if ignored:
        names[start] = names.get(start, []) + [[str(t) for t in ignored]]
    order = _reachable(start, names)
    out: list[tuple[str, Expr]] = []
    follows: dict[str, dict] = {}
    for rule_name in order:
        if rule_name in rule_bodies:
            alts = [_seq([x for s in alt for x in symbol(s)]) for alt in rule_bodies[rule_name]]
            body: Expr = alts[0] if len(alts) == 1 else Alt(tuple(alts))
        else:
            body, groups = _terminal_expr(terminal_of[rule_name], source)
            if groups is None and rule_name in greedy:
                follow = _greedy_follow(body)
                if follow:
                    groups = {follow: body}
                    greedy_follows[rule_name] = follow
            if groups is not None:
                follows[rule_name] = groups
        if rule_name == start and ignored:
            body = Seq((Ref(IGNORE_RULE), body))
        out.append((rule_name, body))
    if ignored:
        refs = tuple(Ref(str(t)) for t in dict.fromkeys(ignored))
        out.append((IGNORE_RULE, Repeat(refs[0] if len(refs) == 1 else Alt(refs))))
    if follows:
        out = split_follows(
            out, start, {t: terminal_of[t].pattern.min_width == 0 for t in terminal_of},
            follows, lambda t, follow, first: _first_of_terminal(
                terminal_of[t], None if follow == greedy_follows.get(t) else follow, first, source),
            lambda rule: _definition_span(source, rule))
        if not out:
            raise GrammarError(
                f"{name}: Lark grammar: the start rule {start!r} derives no string once the "
                "lookaheads at the ends of terminals are enforced")
    out = _rename(out)
    spans = {n: span for n, _ in out if (span := _definition_span(source, n)) is not None}
    return Grammar(rules=tuple(out), start=start, rule_spans=spans)
