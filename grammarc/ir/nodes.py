"""The intermediate representation every front-end produces and every back-end consumes.

A `Grammar` is an ordered mapping from rule names to expressions plus a start rule. The
expressions form a small closed set of frozen dataclasses. Source spans ride along for
error messages but never take part in equality or hashing, so two grammars are equal
exactly when they denote the same rules written the same way.

The meaning of each node (DESIGN.md §4): the language of a grammar is a set of UTF-8 byte
strings; there is no implicit whitespace and no lexer priority.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Iterator, Literal as TypingLiteral, Mapping, Union

from grammarc.allocation import remember_hash, slot_init
from grammarc.ir import _canon, _walk
from grammarc.errors import GrammarError, Span

RegexMode = TypingLiteral["match", "early", "complement"]


class _Node:
    """Base of the IR nodes: no per-node ``__dict__`` (``slots=True`` on each class).

    Front ends build hundreds of thousands of nodes for a large schema and the compiler's
    caches keep the grammars they compiled: with a dict per node, the dicts were a quarter
    of the objects a full collection traverses after compiling 200 MaskBench schemas (672k;
    ~0.5 s per full collection), and every construction made one. The ``_hash`` slot is
    where a composite node remembers its hash (`_REMEMBERING`); it is not a field,
    so equality, ``repr`` and `dataclasses.replace` never see it.
    """

    __slots__ = ("_hash",)

    def __reduce__(self):  # pickled by its fields: the remembered hash is per process
        return type(self), tuple(getattr(self, f.name) for f in fields(self))


@slot_init
@dataclass(frozen=True, slots=True)
class Literal(_Node):
    """Exactly this text (UTF-8 encoded). The empty literal denotes the empty string."""

    text: str
    span: Span | None = field(default=None, compare=False, repr=False)


@slot_init
@dataclass(frozen=True, slots=True)
class Regex(_Node):
    """A regular-expression terminal, `pattern` in grammarc's regex syntax (already unescaped).

    mode "match" (``#'R'``): every string that R matches in full, of every length.
    mode "early" (``#e'R'``): the strings R matches in full that have no proper prefix R matches.
    mode "complement" (``#ex'R'``): non-empty text that contains no match of R anywhere.
    """

    pattern: str
    mode: RegexMode = "match"
    span: Span | None = field(default=None, compare=False, repr=False)


@slot_init
@dataclass(frozen=True, slots=True)
class Substrings(_Node):
    """Any substring of `text` (the empty string included), cut at character boundaries."""

    text: str
    span: Span | None = field(default=None, compare=False, repr=False)


@slot_init
@dataclass(frozen=True, slots=True)
class JsonStringExcept(_Node):
    """``json_string_except!('a', ...)``: a JSON string literal, quotes included, in any of its
    JSON spellings (raw characters, short escapes, ``\\uXXXX`` in either case, surrogate
    pairs), whose decoded text is none of `words`. A JSON object's keys other than its named
    properties: as rules over characters this is a trie with every spelling of every
    character, which the lowering builds directly instead (`automata.json_string_except`)."""

    words: tuple[str, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@slot_init
@dataclass(frozen=True, slots=True)
class Ref(_Node):
    """A reference to the rule called `name`."""

    name: str
    span: Span | None = field(default=None, compare=False, repr=False)


@slot_init
@dataclass(frozen=True, slots=True)
class Seq(_Node):
    """Concatenation. The empty sequence denotes the empty string."""

    items: tuple["Expr", ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@slot_init
@dataclass(frozen=True, slots=True)
class Alt(_Node):
    """Union of at least one alternative."""

    items: tuple["Expr", ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@slot_init
@dataclass(frozen=True, slots=True)
class Repeat(_Node):
    """`item` repeated between `min` and `max` times (`max=None`: unbounded)."""

    item: "Expr"
    min: int = 0
    max: int | None = None
    span: Span | None = field(default=None, compare=False, repr=False)


@slot_init
@dataclass(frozen=True, slots=True)
class AnyToken(_Node):
    """``any!``: exactly one vocabulary token (special tokens excluded).

    Without a vocabulary (``Grammar.accepts``) it stands for any non-empty byte string.
    """

    span: Span | None = field(default=None, compare=False, repr=False)


@slot_init
@dataclass(frozen=True, slots=True)
class Except(_Node):
    """``except!(X)`` / ``except!(X, n)``: non-empty text in which no string of X occurs.

    `item` is a `Literal` or a `Ref` to a rule that expands to an alternation of literals.
    `limit`, when given, bounds the text to at most that many vocabulary tokens; it has no
    effect on text checked without a vocabulary.
    """

    item: Union[Literal, Ref]
    limit: int | None = None
    span: Span | None = field(default=None, compare=False, repr=False)


Expr = Union[Literal, Regex, Substrings, JsonStringExcept, Ref, Seq, Alt, Repeat, AnyToken, Except]
EXPR_TYPES = (Literal, Regex, Substrings, JsonStringExcept, Ref, Seq, Alt, Repeat, AnyToken, Except)
_REMEMBERING = (Seq, Alt, Repeat)
# what `_canon.tree_hash` reads: each class's hashed fields (the dataclass's: compared ones
# unless a field says otherwise), which classes keep their hash, and the slot they keep it in
_HASHING = (
    EXPR_TYPES,
    tuple(tuple(f.name for f in fields(cls) if (f.compare if f.hash is None else f.hash)) for cls in EXPR_TYPES),
    bytes(cls in _REMEMBERING for cls in EXPR_TYPES),
    _Node.__dict__["_hash"],
)
# A composite node keeps its hash once computed: the dataclass's hashes the whole tree under
# the node on every call, and the compiler keys its memos by subtrees, so an uncached hash
# makes memo lookups quadratic in the depth of a schema's grammar. The first hash of a node
# is the compiled core's (`_canon.tree_hash`: the dataclass's value, ``hash(tuple(fields))``),
# which leaves the hash of every composite node below it kept too; later ones read the slot,
# in C (`remember_hash`: a Python ``__hash__`` was a frame per memo lookup).
for _cls in _REMEMBERING:
    remember_hash(_cls, _HASHING[3], _canon.tree_hash, *_HASHING)
_LEAVES = frozenset((Literal, Regex, Substrings, JsonStringExcept, Ref, AnyToken))
# the IR's classes in the order the compiled walks read them (grammarc/ir/_walk.c)
WALK_CLASSES = (Seq, Alt, Repeat, Except, Literal, Substrings, Ref, Regex, JsonStringExcept, AnyToken)
MAX_SHAPE_DEPTH = 10_000  # nested Seq, Alt and Repeat nodes `shape` reads (a GrammarError past it)


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of `expr` (dispatch on the exact class first: every pass
    over a grammar asks this of every node; a subclass takes the slower isinstance path)."""
    kind = type(expr)
    if kind is Seq or kind is Alt:
        return expr.items
    if kind is Repeat or kind is Except:
        return (expr.item,)
    if kind in _LEAVES:
        return ()
    if isinstance(expr, (Seq, Alt)):  # a subclass
        return expr.items
    return (expr.item,) if isinstance(expr, (Repeat, Except)) else ()


def walk(expr: Expr) -> Iterator[Expr]:
    """`expr` and all its sub-expressions, depth first, parents before children."""
    stack = [expr]
    pop, push = stack.pop, stack.extend
    while stack:
        node = pop()
        yield node
        kind = type(node)
        if kind is Seq or kind is Alt:
            push(reversed(node.items))
        elif kind is Repeat or kind is Except:
            stack.append(node.item)
        elif kind not in _LEAVES:
            push(reversed(children(node)))


def references(expr: Expr) -> list[str]:
    """The rule names `expr` refers to, once per reference, in no particular order (a walk
    of its own, in the compiled core: front ends and checks ask it of every rule, some of
    them more than once; its oracle is tests/check_reference.py's `references`)."""
    return _walk.references(expr, WALK_CLASSES, children)


def shape(expr: Expr, table: dict, used: list[str], opaque: set[str], terminals: list[Expr]) -> object:
    """The shape of `expr`: equal shapes exactly for trees equal up to the names their
    references carry (the JSON Schema front end merges rules by it, sharing._Shapes). A
    leaf's shape is its class and fields, a repetition's its class, its item's shape and its
    bounds, a reference's -1; a sequence's, an alternation's and an ``except!`` of a
    reference's a number: its class and its parts' shapes looked up in `table` (hash-consing),
    so a shape hashes and compares in about constant time. The walk appends the names
    referred to to `used` in walk order (depth first, left to right) and the Regex and
    ``json_string_except!`` terminals to `terminals` in order; any other node (a class of its
    own, an ``except!`` of something but a reference) is *opaque*: its shape is ``(None,
    node)``, its references added to `opaque`. In the compiled core (``_walk.shape``, with a
    stack of its own); its oracle is tests/check_reference.py's `shape`. A tree nesting
    deeper than `MAX_SHAPE_DEPTH` is a `GrammarError` (its shape would nest as deep, and
    hashing it recurses in C); the front ends nest far less."""
    return _walk.shape(expr, WALK_CLASSES, table, used, opaque, terminals, references, -1, GrammarError, MAX_SHAPE_DEPTH)


def inline_rules(rules: dict[str, Expr], inline: set[str], max_nesting: int) -> dict[str, Expr]:
    """`rules` with each reference to a rule of `inline` replaced by that rule's body, in the
    rules' order: a chain of such rules is inlined at most `max_nesting` levels deep, and the
    rule where it is cut stays a rule (inlined in turn), so no expression nests deeper than
    that however long the chain is; a reference inside a node the walk does not enter (an
    ``except!``, a class of its own) also keeps its rule. Sequences and alternations come out
    flat; a body with nothing to inline or flatten is kept as it is (the same object). The
    JSON Schema front end's single-use helpers (builder._inline_single_use), in the compiled
    core (``_walk.inline_rules``: a Python call per node was a seventh of translating a
    schema); its oracle is tests/check_reference.py's `inline_rules`."""
    return _walk.inline_rules(rules, inline, max_nesting, WALK_CLASSES, references)


def substituted(expr: Expr, refs: dict[str, Expr], terminals: dict[tuple, Expr]) -> Expr:
    """`expr` with the references that `refs` has a replacement for (by name; also as the
    operand of ``except!``) and the terminals that `terminals` has one for (keyed
    ``(Regex, pattern, mode)`` or ``(JsonStringExcept, words)``) replaced; unchanged
    subtrees are kept as they are (the same objects), a rebuilt node keeps its span. The JSON
    Schema front end's renames and hoisted terminals (sharing.py), in the compiled core
    (``_walk.substituted``); its oracle is tests/check_reference.py's `substituted`."""
    return _walk.substituted(expr, refs, terminals, WALK_CLASSES)


@dataclass(frozen=True, eq=False)
class Grammar:
    """An ordered set of rules and the name of the start rule: the data every front-end builds.

    `rules` is a tuple of ``(name, expression)`` pairs in definition order; `rule_spans`
    optionally maps names to where each rule was defined (excluded from equality).
    This class is data only. Users meet it as `grammarc.Grammar` (grammarc/grammar.py), a
    subclass that adds the front doors (``from_ebnf``, ``compile``, ``accepts``, ...); the two
    compare equal whenever their rules and start rule are equal, so front-ends never need to
    know about the facade.
    """

    rules: tuple[tuple[str, Expr], ...]
    start: str = "start"
    rule_spans: Mapping[str, Span] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        if isinstance(self.rules, Mapping):
            object.__setattr__(self, "rules", tuple(self.rules.items()))
        else:
            object.__setattr__(self, "rules", tuple((name, expr) for name, expr in self.rules))

    # -- mapping-like access ------------------------------------------------------------
    @property
    def rule_map(self) -> dict[str, Expr]:
        return dict(self.rules)

    def __getitem__(self, name: str) -> Expr:
        for rule_name, expr in self.rules:
            if rule_name == name:
                return expr
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(rule_name == name for rule_name, _ in self.rules)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.rules)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return self.start == other.start and self.rules == other.rules

    def __hash__(self) -> int:
        """``hash((start, rules))``, the rules' nodes hashed (and kept) in one compiled call."""
        return _canon.tree_hash((self.start, self.rules), *_HASHING)
