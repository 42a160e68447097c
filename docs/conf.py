"""Sphinx configuration for the grammarc documentation.

Builds offline with Sphinx's own autodoc (the API reference is generated from the
docstrings) and no third-party extension: ``sphinx-build -W -b html docs docs/_build/html``. Grammar snippets are highlighted by a small Pygments lexer for
grammarc's dialect, defined here so that no third-party lexer is needed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pygments.lexer import RegexLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

project = "grammarc"
author = "the grammarc authors"
copyright = "the grammarc authors"
release = "0.1.0"

extensions: list[str] = ["sphinx.ext.autodoc"]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
exclude_patterns = ["_build", "_generated"]
html_theme = "alabaster"
highlight_language = "none"
pygments_style = "sphinx"


class GrammarcLexer(RegexLexer):
    """grammarc's EBNF dialect. Every character matches some rule, so lexing never fails
    (Sphinx turns a lexing error into a warning, and -W into a failed build)."""

    name = "grammarc"
    aliases = ["grammarc"]
    filenames = ["*.ebnf"]

    _prefix = r"#(?:substrs|ex|e)?"
    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"\(\*", Comment.Multiline, "comment"),
            (_prefix + r"'(?:[^'\\\n]|\\.)*'", String.Regex),
            (_prefix + r'"(?:[^"\\\n]|\\.)*"', String.Regex),
            (_prefix + r"/(?:[^/\\\n]|\\.)*/", String.Regex),
            (r"'(?:[^'\\\n]|\\.)*'", String.Single),
            (r'"(?:[^"\\\n]|\\.)*"', String.Double),
            (r"(?:any|except)!", Keyword),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r"::=|=", Operator),
            (r"\{\s*\d+\s*(?:,\s*\d*\s*)?\}|\{\s*,\s*\d+\s*\}", Operator),
            (r"[|?*+]", Operator),
            (r"[;,()\[\]{}]", Punctuation),
            (r"\d+", Number),
            (r".", Text),
        ],
        "comment": [
            (r"[^*]+", Comment.Multiline),
            (r"\*\)", Comment.Multiline, "#pop"),
            (r"\*", Comment.Multiline),
        ],
    }


def setup(app):
    app.add_lexer("grammarc", GrammarcLexer)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import schema_gallery  # the schema page's gallery is compiled now, never pasted by hand

    schema_gallery.write()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
