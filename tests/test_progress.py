"""Progress for slow steps (grammarc.integrations.progress) and how the CLI reports warnings."""

from __future__ import annotations

import io
import time
import warnings

import pytest

from grammarc.cli import main
from grammarc.integrations import progress
from grammarc.integrations.progress import stage


@pytest.fixture(autouse=True)
def quiet_again():
    before = progress.enabled()
    yield
    progress.enable(before)


def test_a_slow_stage_is_shown_and_a_fast_one_is_not():
    out = io.StringIO()
    with stage("compiling a big schema", progress=True, delay=0.05, stream=out):
        time.sleep(0.4)
    shown = out.getvalue()
    assert "compiling a big schema" in shown
    out = io.StringIO()
    with stage("quick", progress=True, delay=5, stream=out):
        pass
    assert out.getvalue() == ""


def test_progress_is_off_unless_asked():
    out = io.StringIO()
    progress.enable(False)
    with stage("slow", delay=0.01, stream=out):
        time.sleep(0.1)
    assert out.getvalue() == ""
    progress.enable(True)
    with stage("slow", delay=0.01, stream=out):
        time.sleep(0.1)
    assert "slow" in out.getvalue()
    out = io.StringIO()
    with stage("slow", progress=False, delay=0.01, stream=out):  # the call's own choice wins
        time.sleep(0.1)
    assert out.getvalue() == ""


def test_a_stage_that_raises_still_ends_its_display():
    out = io.StringIO()
    with pytest.raises(ValueError):
        with stage("failing", progress=True, delay=0.01, stream=out):
            time.sleep(0.1)
            raise ValueError("boom")
    assert "failing" in out.getvalue()


def test_cli_progress_follows_the_terminal_or_the_flag(capsys):
    assert main(["fmt", "json"]) == 0
    assert not progress.enabled()  # captured stderr is not a terminal
    assert main(["--progress", "fmt", "json"]) == 0
    assert progress.enabled()
    assert main(["--no-progress", "fmt", "json"]) == 0
    assert not progress.enabled()


def test_cli_prints_each_warning_once_as_a_line(tmp_path, capsys):
    (tmp_path / "u.ebnf").write_text("start ::= 'a' ;\nunused ::= 'b' ;\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("a", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing escapes to Python's own warning printer
        assert main(["check", str(tmp_path / "u.ebnf"), str(tmp_path / "a.txt")]) == 0
    err = capsys.readouterr().err
    assert err == f"warning: {tmp_path / 'u.ebnf'}:2:1: rule 'unused' is not reachable from the start rule 'start'\n"
    (tmp_path / "s.json").write_text('{"type": "array", "uniqueItems": true}', encoding="utf-8")
    assert main(["from-schema", "--lenient", str(tmp_path / "s.json")]) == 0
    assert capsys.readouterr().err == "warning: ignored JSON Schema keywords (lenient=True): uniqueItems at #/uniqueItems\n"
    assert main(["from-schema", str(tmp_path / "s.json")]) == 2  # not lenient: an error, after the warnings
    assert capsys.readouterr().err == (
        "error: #/uniqueItems: keyword 'uniqueItems' is not supported: its items are not a short list of values "
        "(enum, const, boolean or null)\n"
    )
