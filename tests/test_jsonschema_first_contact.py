"""The JSON Schema front end's shortcuts for a never-seen schema equal the general path.

- `documents._defragged` and `documents.join_uri` skip urllib's parse for plain http(s) URIs
  (`documents._plain`): on random URIs (plain ones, near misses, urllib's edge cases) they
  give what ``urldefrag``/``urljoin`` give, errors included;
- `Builder.any_value` keeps the bodies of the generic `value` rule per process: a grammar
  built with the kept bodies is the grammar built with none kept, for every layout, with
  `value` names taken by the schema's own rules, nested at every depth of an indented layout.
"""

from __future__ import annotations

from urllib.parse import urldefrag, urljoin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc import Grammar
from grammarc.frontends.jsonschema import builder, documents

_PIECES = ["http://", "https://", "HTTP://", "Https://", "urn:x:", "file:///", "//", "/", "./", "../", ".", "-", "_", "~",
           ":", ":80", "#", "?", ";", "%2F", "@", "[", "]", "[::1]", " ", "\t", "\r", "\n", "\x00", "é", "ａ",
           "a", "b", "Z", "0", "9", "x.org", "schema.json", "$defs", "//a/b", "#/definitions/a", "!", "$", "&", "'",
           "(", "*", "+", ",", "="]
_uri = st.lists(st.sampled_from(_PIECES), max_size=8).map("".join)
_plain_uri = st.builds(lambda s, h, p: s + h + p, st.sampled_from(["http://", "https://"]),
                       st.from_regex(r"[A-Za-z0-9.-]{1,8}(:[0-9]{1,4})?", fullmatch=True),
                       st.from_regex(r"(/[A-Za-z0-9._~/-]{0,10})?", fullmatch=True))
# a plain URI with a piece put in somewhere (urllib's edge cases next to the shortcut's)
_near_plain = st.builds(lambda u, i, piece: u[:i] + piece + u[i:], _plain_uri, st.integers(0, 30), st.sampled_from(_PIECES))
_some_uri = st.one_of(_uri, _plain_uri, _near_plain)
_base = st.one_of(st.just(documents.DEFAULT_BASE), _plain_uri, _near_plain, _uri)


def _outcome(f, *args):
    try:
        return "ok", f(*args)
    except ValueError as exc:
        return "error", str(exc)


def _reference_join(base: str, ref: str) -> str:
    """`join_uri` as first written: urllib for every reference but a fragment."""
    if ref == "" or ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_some_uri, st.builds(lambda u, f: u + "#" + f, st.one_of(_plain_uri, _near_plain), _uri)))
def test_defragged_is_urldefrag(uri):
    assert _outcome(documents._defragged.__wrapped__, uri) == _outcome(lambda u: tuple(urldefrag(u)), uri)


@settings(max_examples=1500, deadline=None)
@given(_base, st.one_of(_some_uri, st.builds(lambda u, f: u + f, _plain_uri, _uri)))
def test_join_uri_is_urljoin(base, ref):
    assert _outcome(documents.join_uri.__wrapped__, base, ref) == _outcome(_reference_join, base, ref)


def test_plain_uris_take_the_shortcut():
    """The shortcut is taken where it should be (else the tests above test urllib alone)."""
    assert documents._plain(documents.DEFAULT_BASE)
    assert documents._plain("https://example.com:8080/a/b-c_d.json")
    for near in ("HTTPS://x.org/a", "https://x.org/a?b", "https://x.org/a;b", "https://x.org/a#", "https://[::1]/",
                 " https://x.org/", "https://x.org/a b", "https:///a", "urn:x"):
        assert not documents._plain(near), near


_SCHEMAS = [
    {},
    {"type": "object", "properties": {"value": {}, "value_2": {"type": "array"}, "a": {"type": "object"}}},
    {"type": "array", "items": {"type": "object", "additionalProperties": True}},
    {"$defs": {"value": {"type": "object", "properties": {"x": {"$ref": "#/$defs/value"}, "y": {}}}},
     "$ref": "#/$defs/value"},
    {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"v": {"type": "array", "items": {}}}}]},
]
_LAYOUTS = [{}, {"whitespace": "compact"}, {"whitespace": "unbounded"}, {"indent": 2}, {"indent": 0},
            {"separators": (", ", ": ")}, {"separators": [",", ":"]}, {"indent": 3, "separators": (";", "=")}]


def _fresh(schema, layout: dict) -> str:
    """The grammar's text built with no body kept."""
    builder._ANY_VALUES.clear()
    return Grammar.from_json_schema(schema, **layout).to_ebnf()


@pytest.mark.parametrize("layout", _LAYOUTS, ids=str)
def test_kept_any_value_bodies_give_the_same_grammar(layout):
    fresh = [_fresh(schema, layout) for schema in _SCHEMAS]
    assert builder._ANY_VALUES  # each schema has an unconstrained value
    for order in (range(len(_SCHEMAS)), reversed(range(len(_SCHEMAS)))):  # kept from the others, and its own
        for i in order:
            assert Grammar.from_json_schema(_SCHEMAS[i], **layout).to_ebnf() == fresh[i], i


def test_kept_any_value_bodies_across_layouts():
    """Bodies kept for one layout never serve another (the layouts' texts differ)."""
    fresh = {str(layout): [_fresh(schema, layout) for schema in _SCHEMAS] for layout in _LAYOUTS}
    for layouts in (_LAYOUTS, _LAYOUTS[::-1]):
        for layout in layouts:
            for i, schema in enumerate(_SCHEMAS):
                assert Grammar.from_json_schema(schema, **layout).to_ebnf() == fresh[str(layout)][i], (layout, i)
