"""Ready-made grammars in grammarc's EBNF dialect, shipped as package data."""

from __future__ import annotations

from importlib import resources


def names() -> list[str]:
    """The names of the shipped grammars, sorted."""
    return sorted(p.name[: -len(".ebnf")] for p in resources.files(__name__).iterdir() if p.name.endswith(".ebnf"))


def text(name: str) -> str:
    """The source text of the shipped grammar `name`."""
    if name not in names():
        raise KeyError(f"no stdlib grammar named {name!r}; available: {', '.join(names())}")
    return resources.files(__name__).joinpath(f"{name}.ebnf").read_text(encoding="utf-8")


def load(name: str, start: str = "start"):
    """Parse the shipped grammar `name`."""
    from grammarc.grammar import Grammar

    return Grammar.from_ebnf(text(name), start=start, name=f"<stdlib {name}.ebnf>")
