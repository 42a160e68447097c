"""The regexes grammarc.automata.prebuilt stores: every string format the JSON Schema front
end asserts, as it renders them. Regenerate the store after changing them:

    python tests/prebuilt_formats.py
"""

from __future__ import annotations

from grammarc.automata import DEFAULT_MAX_STATES, DFA, nfa, prebuilt
from grammarc.frontends.jsonschema import formats


def names() -> list[str]:
    """The string formats, in name order."""
    return sorted(formats.JSON_FORMATS | set(formats.STRING_PATTERNS))


def patterns() -> list[str]:
    """The formats' regexes, in name order, rendered from scratch (the store not consulted)."""
    return [formats.rendered_regex(name) for name in names()]


def built(pattern: str) -> DFA:
    """The DFA `from_regex` builds from scratch (the store not consulted)."""
    return nfa._built(pattern, False, False, DEFAULT_MAX_STATES)


if __name__ == "__main__":
    prebuilt.save({pattern: built(pattern) for pattern in patterns()}, names())
    print(f"{prebuilt.PATH}: {len(patterns())} automata")
