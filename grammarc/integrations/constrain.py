"""``@grammarc.constrain``: a Pydantic model (or dataclass, or typing type) as a generation target.

The decorator returns the class *unchanged*: a model's namespace belongs to its fields, and
any attribute we added (``grammar``, ``parse``, ...) could collide with a field of that name
or shadow one. Instead the class is recorded in a weak registry, and `constraint_of` hands back a
frozen `Constraint` holding everything grammarc derives from it::

    @grammarc.constrain                      # or @grammarc.constrain(whitespace="compact")
    class Person(BaseModel):
        name: str
        age: int

    c = grammarc.constraint_of(Person)
    c.grammar                                # the Grammar (Grammar.from_model(Person))
    c.ebnf                                   # its canonical .ebnf text
    c.parse('{"name": "Ada", "age": 36}')    # -> Person(name='Ada', age=36), validated
    c.engine(vocab)                          # an Engine for one sequence
    c.generate(model, tokenizer, prompt)     # -> Person (grammarc.generate(model, tokenizer, Person, prompt))

The grammar is built when the class is decorated, so an unsupported field type fails at
import time with `UnsupportedSchemaError`, not in the middle of generation.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from grammarc.grammar import Grammar



@dataclass
class _Registered:
    """What the registry keeps per class: the grammar and options, and the `Constraint` only
    weakly. A constraint refers to its class, and a weak mapping's value that refers to its
    key keeps both alive forever; so the registry hands back the same constraint while
    anyone holds it, and rebuilds one around the same grammar after that."""

    grammar: Grammar
    options: tuple[tuple[str, Any], ...]
    constraint: "weakref.ref[Constraint]"


_registry: "weakref.WeakKeyDictionary[type, _Registered]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Constraint:
    """What grammarc derives from one target type; immutable and shareable across threads."""

    target: Any
    grammar: Grammar = field(repr=False)
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def build(cls, target: Any, **options) -> "Constraint":
        grammar = Grammar.from_model(target, **options)
        return cls(target, grammar, tuple(sorted(options.items())))

    @cached_property
    def ebnf(self) -> str:
        """The grammar as canonical ``.ebnf`` text, after one comment line per described field
        (``(* Person.name: full name *)``; pydantic ``Field(description=...)``)."""
        from grammarc.frontends.pydantic_model import description_comments

        return description_comments(self.target) + self.grammar.to_ebnf()

    @cached_property
    def _adapter(self):
        import pydantic

        if isinstance(self.target, type) and issubclass(self.target, pydantic.BaseModel):
            return None
        return pydantic.TypeAdapter(self.target)

    def parse(self, text: str | bytes) -> Any:
        """Validate generated JSON text into an instance of the target (pydantic's errors on failure)."""
        if self._adapter is None:
            return self.target.model_validate_json(text)
        return self._adapter.validate_json(text)

    def engine(self, vocab: Any) -> "Engine":
        """A fresh `Engine` for one sequence; `vocab` is a `Vocabulary` or a transformers tokenizer."""
        from grammarc.engine import Engine
        from grammarc.tokens.vocabulary import Vocabulary

        if not isinstance(vocab, Vocabulary):
            vocab = Vocabulary.from_tokenizer(vocab)
        return Engine(self.grammar.compile(), vocab)

    def generate(self, model: Any, tokenizer: Any, prompt: Any = None, **options: Any) -> Any:
        """Generate with a transformers causal LM; a validated instance (a list for a list of
        prompts). The same as ``grammarc.generate(model, tokenizer, self, prompt, **options)``:
        sampling, ``finish_after``, ``messages=`` and batches included. Raises `GrammarcError`
        when the token budget runs out before the text is complete."""
        from grammarc.integrations.generation import Target, run

        options.setdefault("max_new_tokens", 512)
        return run(model, tokenizer, Target(self.grammar, self.parse), prompt, **options)


def constrain(target: Any = None, /, **options):
    """Register a model class for constrained generation; returns the class unchanged.

    Use as ``@constrain``, ``@constrain(**options)`` or ``constrain(Model)``. `options` go to
    `Grammar.from_model` (``whitespace``, ``indent``, ``separators``, ...). The grammar is built
    now, so unsupported field types raise `UnsupportedSchemaError` here.
    """
    if target is None:
        return lambda cls: constrain(cls, **options)
    constraint = Constraint.build(target, **options)
    if not _register(constraint):
        raise TypeError(f"@constrain needs a class; for {target!r} use constraint_of({target!r})")
    return target


def _register(constraint: Constraint) -> bool:
    """Record `constraint` for its target; False when the target cannot be weakly referenced."""
    try:
        _registry[constraint.target] = _Registered(constraint.grammar, constraint.options, weakref.ref(constraint))
    except TypeError:
        return False
    return True


def _registered(target: Any) -> Constraint | None:
    try:
        entry = _registry.get(target)
    except TypeError:  # not weak-referenceable (list[int], Literal[...])
        return None
    if entry is None:
        return None
    constraint = entry.constraint()
    if constraint is None:
        constraint = Constraint(target, entry.grammar, entry.options)
        entry.constraint = weakref.ref(constraint)
    return constraint


def constraint_of(target: Any, **options) -> Constraint:
    """The `Constraint` of `target`: the registered one, else built now with `options`.

    Works for undecorated models and for typing types such as ``list[int]`` too. Passing
    `options` for a decorated class builds a new constraint with those options instead.
    """
    if not options:
        found = _registered(target)  # None for list[int], Literal[...]: built afresh
        if found is not None:
            return found
    constraint = Constraint.build(target, **options)
    if not options:
        _register(constraint)
    return constraint
