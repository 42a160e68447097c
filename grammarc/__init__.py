"""grammarc: a grammar compiler for constrained decoding of language models.

The public API lives here; every other module is private unless documented.
"""

from .errors import (
    GrammarError,
    GrammarWarning,
    GrammarcError,
    RegexError,
    SchemaError,
    StateBudgetExceeded,
    UnsupportedSchemaError,
)
from .ir import Grammar
from .vocabulary import Vocabulary, VocabularyError
from .engine import Engine, TokenRejected
from .compiler import CompiledGrammar
from .hf import GrammarLogitsProcessor
from .generate import generate
from .constrain import Constraint, constrain, constraint_of

__all__ = [
    "CompiledGrammar",
    "Constraint",
    "constrain",
    "constraint_of",
    "Engine",
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
    from .stdlib_grammars import load

    return load(name, start=start)
