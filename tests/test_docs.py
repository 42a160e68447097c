"""The documentation builds without a single warning, and what it shows is true: every
``>>>`` example runs as written and every grammar snippet parses."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest

import grammarc
from grammarc import stdlib_grammars

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.glob("*.rst"))


def test_sphinx_build_has_no_warnings(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-b", "html", "-d", str(tmp_path / "doctrees"),
         str(DOCS), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for page in PAGES:
        assert (tmp_path / "html" / f"{page.stem}.html").is_file()


def test_expected_pages():
    assert {page.stem for page in PAGES} >= {"index", "tutorial", "dialect", "stdlib", "api"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_run(page):
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0
    if page.stem in {"index", "tutorial", "dialect", "stdlib"}:
        assert result.attempted > 0


def grammar_snippets() -> list:
    """Bodies of every ``.. code-block:: grammarc`` directive, with where they stand."""
    snippets = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if line.strip() != ".. code-block:: grammarc":
                continue
            body, index = [], number + 1
            while index < len(lines) and (not lines[index].strip() or lines[index].startswith("   ")):
                body.append(lines[index][3:])
                index += 1
            snippets.append(pytest.param("\n".join(body), id=f"{page.name}:{number + 1}"))
    return snippets


@pytest.mark.parametrize("text", grammar_snippets())
def test_grammar_snippets_parse(text):
    grammar = grammarc.Grammar.from_ebnf(text)
    assert grammar.from_ebnf(grammar.to_ebnf()) == grammar


def test_every_stdlib_grammar_is_shown():
    page = (DOCS / "stdlib.rst").read_text(encoding="utf-8")
    included = set(re.findall(r"\.\. literalinclude:: \.\./stdlib_grammars/(\w+)\.ebnf", page))
    assert included == set(stdlib_grammars.names())


@pytest.mark.parametrize(
    "construct",
    ["::=", "(*", "[ x ]", "{ x }", "x{m,n}", "x{,n}", "#'R'", "#/R/", "#e'R'", "#ex'R'", "#substrs'S'",
     "any!", "except!(X)", "except!(X, n)", "except!('\\n\\n') '\\n\\n'", "Differences from kbnf",
     "Differences from GBNF"],
)
def test_dialect_reference_covers(construct):
    assert construct in (DOCS / "dialect.rst").read_text(encoding="utf-8")


def test_tutorial_console_session(tmp_path):
    """The shell session in the tutorial prints what the CLI really prints."""
    lines = (DOCS / "tutorial.rst").read_text(encoding="utf-8").splitlines()
    grammar = next(text.values[0] for text in grammar_snippets() if "greet.ebnf" in text.values[0])
    (tmp_path / "greet.ebnf").write_text(grammar, encoding="utf-8")
    start = lines.index(".. code-block:: console") + 2
    session = []
    for line in lines[start:]:
        if line and not line.startswith("   "):
            break
        session.append(line[3:])
    while session and not session[-1]:
        session.pop()
    commands = [i for i, line in enumerate(session) if line.startswith("$ ")]
    assert len(commands) >= 2
    grammarc_command = f"{sys.executable} -m grammarc"
    for i, at in enumerate(commands):
        end = commands[i + 1] if i + 1 < len(commands) else len(session)
        expected = "\n".join(session[at + 1:end])
        command = session[at][2:].replace("grammarc ", grammarc_command + " ", 1)
        result = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert (result.stdout + result.stderr).rstrip("\n") == expected, session[at]
