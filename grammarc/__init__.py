"""grammarc: a grammar compiler for constrained decoding of language models.

The public API lives here; every other module is private unless documented.
"""

from grammarc.errors import (
    GrammarError,
    GrammarWarning,
    GrammarcError,
    RegexError,
    SchemaError,
    StateBudgetExceeded,
    UnsupportedSchemaError,
)
from grammarc.grammar import Grammar
from grammarc.tokens.vocabulary import Vocabulary, VocabularyError
from grammarc.engine import Engine, EngineError, TokenRejected
from grammarc.lowering.compiler import CompiledGrammar
from grammarc.integrations.transformers import GrammarLogitsProcessor
from grammarc.integrations.generate import generate
from grammarc.integrations.constrain import Constraint, constrain, constraint_of

__all__ = [
    "CompiledGrammar",
    "Constraint",
    "constrain",
    "constraint_of",
    "Engine",
    "EngineError",
    "GrammarLogitsProcessor",
    "generate",
    "TokenRejected",
    "Vocabulary",
    "VocabularyError",
    "Grammar",
    "GrammarError",
    "GrammarWarning",
    "GrammarcError",
    "RegexError",
    "SchemaError",
    "UnsupportedSchemaError",
    "StateBudgetExceeded",
    "stdlib",
]

__version__ = "0.1.0"


def stdlib(name: str, start: str = "start") -> Grammar:
    """A grammar shipped with grammarc, by name; see ``grammarc.stdlib_grammars.names()``."""
    from grammarc.stdlib_grammars import load

    return load(name, start=start)
