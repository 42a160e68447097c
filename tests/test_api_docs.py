"""The API reference (docs/api.rst) documents every public name, from its docstring."""

from __future__ import annotations

import re
from pathlib import Path

import grammarc

API = (Path(__file__).resolve().parents[1] / "docs" / "api.rst").read_text(encoding="utf-8")


def test_every_exported_name_has_an_autodoc_entry():
    documented = set(re.findall(r"^\.\. auto(?:class|function|exception):: grammarc\.(\w+)$", API, re.M))
    assert documented == set(grammarc.__all__)


def test_every_documented_name_has_a_docstring():
    for name in grammarc.__all__:
        assert (getattr(grammarc, name).__doc__ or "").strip(), name


def test_the_package_is_typed():
    assert (Path(grammarc.__file__).parent / "py.typed").is_file()
