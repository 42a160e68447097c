"""The standard library of grammars: every shipped grammar compiles, prints back to
itself, documents itself, accepts real samples and rejects near misses, and works with an
Engine. Each grammar is also checked against an independent oracle (a regex written from
the standard, the standard library's parser, a third-party parser) in both directions:
texts the oracle accepts are accepted, and texts the grammar generates (random
constrained walks with a byte vocabulary) satisfy the oracle."""

from __future__ import annotations

import ast
import calendar
import csv
import io
import json
import keyword
import random
import re
import sqlite3
from datetime import date, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc
from grammarc import stdlib_grammars

NEW = ["csv", "email", "function_call", "iso8601", "json_bounded", "markdown", "pgn", "python_expr",
       "semver", "sql", "tool_call", "url", "yaml"]
BYTES = grammarc.Vocabulary.from_bytes([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=[256])
EOS = 256


@pytest.fixture(scope="module")
def grammars() -> dict[str, grammarc.Grammar]:
    return {name: grammarc.stdlib(name) for name in stdlib_grammars.names()}


@pytest.fixture(scope="module")
def engines(grammars) -> dict[str, grammarc.Engine]:
    return {}


def engine(grammars, engines, name) -> grammarc.Engine:
    if name not in engines:
        engines[name] = grammarc.Engine(grammars[name], BYTES)
    return engines[name]


def test_at_least_twelve_grammars():
    assert len(stdlib_grammars.names()) >= 12
    assert set(NEW) <= set(stdlib_grammars.names())


@pytest.mark.parametrize("name", stdlib_grammars.names())
def test_compiles_and_round_trips(grammars, name):
    grammar = grammars[name]
    grammar.compile()
    assert grammarc.Grammar.from_ebnf(grammar.to_ebnf(), start=grammar.start) == grammar


@pytest.mark.parametrize("name", stdlib_grammars.names())
def test_file_starts_with_its_documentation(name):
    text = stdlib_grammars.text(name)
    assert text.startswith("(* ")
    assert len(text[: text.index("*)")].splitlines()) >= 3  # what it accepts, source, subset


@pytest.mark.parametrize("name", stdlib_grammars.names())
def test_engine_generates_a_valid_sample(grammars, engines, name):
    """Compile + index + mask with a byte vocabulary: a constrained walk ends in a text
    the grammar accepts, and the engine allows EOS exactly there."""
    rng = random.Random(name)
    text = next((t for t in (walk(engine(grammars, engines, name), rng) for _ in range(10)) if t is not None), None)
    assert text is not None
    assert grammars[name].accepts(text) is True


# -- constrained random walks: a sampler of each grammar's language -------------------

PREFER = b"ab1:, \n-'\"[]{}#()=.|</>@"


def walk(eng: grammarc.Engine, rng: random.Random, soft: int = 40, hard: int = 300) -> bytes | None:
    """A random text of the grammar, byte by byte: mostly from a small alphabet so that
    structure appears, stopping at EOS when allowed (surely once past `soft` bytes)."""
    eng.reset()
    out = bytearray()
    for _ in range(hard):
        allowed = eng.allowed_token_ids()
        if EOS in allowed and (len(out) >= soft or rng.random() < 0.05):
            assert eng.accepts_eos()
            return bytes(out)
        choices = [int(t) for t in allowed if t != EOS]
        if not choices:
            assert EOS in allowed, "dead end: no token allowed and EOS not allowed"
            return bytes(out)
        preferred = [t for t in choices if t in PREFER]
        if preferred and (len(out) >= soft or rng.random() < 0.8):
            choices = preferred
        token = rng.choice(choices)
        eng.advance(token)
        out.append(token)
    return None


def samples(grammars, engines, name, count=40) -> list[bytes]:
    rng = random.Random(f"walks-{name}")
    texts = [walk(engine(grammars, engines, name), rng) for _ in range(count)]
    finished = [t for t in texts if t is not None]
    assert len(finished) >= count // 4
    for text in finished:
        assert grammars[name].accepts(text) is True
    return finished


# -- exact tables: real samples and near misses ---------------------------------------------

GOOD: dict[str, list[str]] = {
    "semver": ["0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7", "1.0.0-x.7.z.92",
               "1.0.0-alpha+001", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85", "1.0.0+21AF26D3----117B344092BD",
               "1.0.0-0A.is.legal", "1.2.3----RC-SNAPSHOT.12.9.1--.12+788", "99999999999999999999999.0.0", "1.0.0-0a"],
    "csv": ["", "a", "a,b,c", "name,age\r\nAda,36\r\nAlan,41\r\n", "a,b\nc,d\n", '"a,b","say ""hi""",c',
            '"multi\r\nline",x\r\n', ",,", "é,ü\n", '""', "a,\r\n,b"],
    "iso8601": ["2024-02-29", "2000-02-29", "0000-02-29", "1999-12-31", "2023-04-30", "2024-060", "2024-366",
                "2020-W53-7", "2024-W01-1", "12:00", "23:59:59", "23:59:60", "08:30:00.123456", "08:30:00,5",
                "12:00Z", "12:00:00+05:30", "12:00-08", "2024-01-31T23:59:60.5+01:00", "2024-01-31t10:00:00z",
                "2024-01-31 10:00", "2024-060T12:00", "P1Y2M3DT4H5M6S", "P3W", "PT1M", "P1D", "PT36H", "P1M1D"],
    "url": ["https://user@example.com:8080/a/b?x=1#top", "mailto:someone@example.org", "urn:isbn:0451450523",
            "file:///etc/hosts", "http://[2001:db8::1]/", "http://[::]", "http://[::ffff:192.0.2.1]:80/",
            "ldap://[v7.x]/", "http://[1:2:3:4:5:6:7:8]", "tel:+1-816-555-1212", "news:comp.infosystems.www",
            "foo://example.com:8042/over/there?name=ferret#nose", "a:", "http://a/b%20c?d=%C3%A9", "s+v-1.x:/a//b",
            "http://256.1.1.1/", "http://:80", "http://u:p@h", "x:?#"],
    "email": ["jane.doe+tag@mail.example.com", "a@b", "a@localhost", "\"john doe\"@example.com",
              "\"a\\\"b\"@c.d", "user@[192.0.2.1]", "user@[IPv6:2001:db8::1]", "!#$%&'*+-/=?^_`{|}~@x.org",
              "a@" + "x" * 63 + ".com", "a@xn--bcher-kva.example", "a@1.2.3.4"],
    "json_bounded": ["0", " null ", "[[[[1]]]]", '{"a": {"b": [[]]}}', '[[[["deep"]], 1], {"k": {}}]', "{}",
                     '{"a":[{"b":[1,2]}]}', '[\n  [\n    [\n      {}\n    ]\n  ]\n]\n'],
    "tool_call": ['{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}',
                  '{"arguments":{},"name":"a-b_1"}', '[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": [1, {"y": null}]}}]',
                  ' {\n  "name": "search",\n  "arguments": {"q": "\\u00e9"}\n}\n', '{"name": "' + "n" * 64 + '", "arguments": {}}'],
    "function_call": ["f()", 'get_weather(city="Paris", days=3, units=null)', '[a.b(x=True), c( y = [1, {"k": None}] )]',
                      "f(a=-1.5e3, b=[], c={})", "f(\n  a=1,\n  b=2\n)", "_x9(_=False)"],
    "sql": ["SELECT 1", "select * from users",
            "SELECT id, name FROM users WHERE age >= 18 AND name LIKE 'A%' ORDER BY name DESC LIMIT 10 OFFSET 20;",
            "SELECT u.name, count(*) AS n FROM users u LEFT JOIN orders o ON o.user_id = u.id GROUP BY u.name HAVING count(*) > 1",
            "WITH t AS (SELECT a FROM b) SELECT * FROM t", "SELECT a FROM t WHERE b IN (1, 2) AND c NOT IN (SELECT c FROM d)",
            "SELECT a FROM t WHERE b BETWEEN 1 AND 10 AND c IS NOT NULL", "SELECT CASE WHEN a > 0 THEN 'pos' ELSE 'neg' END FROM t",
            "SELECT CAST(a AS varchar(10)) FROM t", "SELECT a FROM t UNION ALL SELECT b FROM u ORDER BY 1", "SELECT t.* FROM t",
            'SELECT "order" FROM "my table"', "SELECT a FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.a = t.a)",
            "SELECT -a * (b + c) / 2 % 3 || 'x' FROM t", "SELECT a FROM t JOIN u USING (id) CROSS JOIN v",
            "SELECT count(DISTINCT a) FROM t", "SELECT a FROM (SELECT a FROM t) AS s", "SELECT a FROM t ORDER BY a ASC NULLS LAST, b",
            "SELECT 'it''s'", "SELECT a - -1, -(-1), - -1", "SELECT a\nFROM t\nWHERE a = 1\n;\n", "SELECT selected, fromage, order_id, nulls, first FROM t"],
    "pgn": ["1. e4 e5 2. Nf3 {the usual} Nc6 3. Bb5 a6 (3... Nf6 4. O-O) 4. Ba4 1-0",
            '[Event "Casual"]\n[White "Anderssen"]\n\n1. e4 e5 2. Nf3 Nc6 1/2-1/2\n', "e4", "1.e4 e5", "*",
            "1. e4 $1 e5?! 2. Qh5 Nc6 3. Bc4 Nf6?? 4. Qxf7# 1-0", "exd5", "e8=Q+", "bxa1=N", "Nbd7", "R1a3", "Qh4xe1",
            "O-O-O+", "1. e4 ; a comment\ne5", "1. e4 (1. d4 d5 (1... Nf6)) 1... e5 0-1", '[Event "a \\"q\\" b"] 1. d4'],
    "python_expr": ["x + 1", "f(a, *b, key=2)", "[x * x for x in xs if x]", "lambda a, b=1: a + b", 'd["k"].upper()[1:-1]',
                    "a if a is not None else b", "1, 2", "(1,)", "()", "{}", "{1, 2}", '{"a": 1, **d}', "{k: v for k, v in d.items()}",
                    "(x for x in y)", "f(x for x in y)", "a[:, 1:2:3]", "0x_ff + 0o7 + 0b1 + 1_000 + 1.5e-3j + .5 + 5.",
                    "not a == b < c", "a not in b", "~-+x ** -y", "a @ b // c % d << 2 >> 1 & 3 ^ 4 | 5",
                    "r'\\d+' + b'\\x00' + rb'\\'' + u'é'", "...", "f(**k, a=1)", "lambda *args, **kw: 0", "lambda *, a: a",
                    'def f(x: int, y: str = "a", *args, z=1, **kw) -> bool:\n    return x\n', "def f():\n    pass",
                    "def g(a):\n    if a:\n        return 1\n    elif a is None:\n        return 2\n    else:\n        b = 3\n"
                    "    for i in range(3):\n        print(i)\n    y: int = 2\n    a.b[0], c = 1, 2\n    raise ValueError('x')\n"],
    "yaml": ["# service settings\nname: web\nreplicas: 3\nports: [80, 443]\nenv:\n  DEBUG: \"false\"\n  PATH: /usr/bin\n"
             "volumes:\n- name: data\n  size: 10Gi\n- 'logs'\n", "a: 1", "---\na: b # c\n\n# x\nc:\n  - 1\n  - [2, {x: y}]\n",
             "a:\nb: c", "url: http://x.org/a#b", "k: -1", "k: :x", "a:\n  b:\n    c:\n      d: 1", "a:\n- b: 1\n  c:\n    d: 2\n- e",
             "'q k': \"v\\n\"", "k: it's", "k: {}", "k: []", "a: b  ", "a: #"],
    "markdown": ["# Results\n\nThe run took **3 minutes**.\n\n- fast\n  - very fast\n- cheap\n\n| name | score |\n| :--- | ----: |\n| a    | 1     |\n",
                 "hello", "# a\n\n\n> q\n> r\n\n```py\nx = 1\n\n  ``\n```", "1. a\n2. b", "| a |\n|---|", "| a | b \\| c |\n| - | - |\n| 1 |\n",
                 "- [ ] task\n- *em*"],
}

BAD: dict[str, list[str]] = {
    "semver": ["", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03", "v1.2.3", "1.2.3-", "1.2.3+", "1.2.3-01", "1.2.3-a..b",
               "1.2.3-a.", "1.2.3+a_b", "1.2.3 ", "-1.2.3", "1.2.3-é", "1.2.3+.a"],
    "csv": ['a"b', '"a"b"', '"unterminated', "a\rb", "a,b\r", '"a" ,b', 'a, "b"'],
    "iso8601": ["", "2023-02-29", "1900-02-29", "2100-02-29", "2024-04-31", "2024-13-01", "2024-00-10", "2024-01-00", "24-01-01",
                "2024-1-01", "2023-366", "2024-367", "2024-000", "2021-W53-1", "2024-W00-1", "2024-W01-8", "2024-W01", "2024-02",
                "24:00", "12:60", "12:00:61", "12:00:00.", "1200", "12", "12:00+24:00", "12:00Zz", "2024-01-31T", "2024-01-31T10",
                "2024-01-31  10:00", "P", "PT", "P1Y1D", "P1H", "PT1D", "P1W1D", "P1.5D", "-P1D", "20240131", "PT1H1S"],
    "url": ["", "/a/b", "//host", "1http://a", "http://a b", "http://%zz", "http://例え.jp", "http://[1:2:3:4:5:6:7:8:9]",
            "http://[::1::]", "http://[12345::]", "http://[::1.2.3.256]", "http://a/b#c#d", "http://a:b:c@d:x", "http://[v.x]",
            "http://a\\b", "htt p://a", "http://a/^"],
    "email": ["", "a", "@b.c", "a@", ".a@b.c", "a.@b.c", "a..b@c", "a b@c", "a@b..c", "a@-b.c", "a@b-.c", "a@.b", "a@b.",
              "a@" + "x" * 64 + ".com", '"a"b"@c', "a@b@c", "a@[1.2.3]", "a@[IPv6:1::2::3]", "é@x.org", "a@b_c.com", "(c)a@b"],
    "json_bounded": ["", "[[[[[1]]]]]", '{"a": {"b": [[{}]]}}', "[[[[[]]]]]", '[{"a": [{"b": [1]}]}]', "[1,]", "01", "{'a': 1}"],
    "tool_call": ['{"name": "x"}', '{"arguments": {}}', '{"name": "a b", "arguments": {}}', '{"name": "x", "arguments": []}',
                  '{"name": "x", "arguments": "{}"}', '{"name": "x", "arguments": {}, "id": 1}', '{"name": "", "arguments": {}}',
                  '{"name": "' + "n" * 65 + '", "arguments": {}}', '[]', '{"name": "x", "name": "y", "arguments": {}}',
                  '{"name": "x" "arguments": {}}', '{"name": "x", "arguments": {},}'],
    "function_call": ["f", "f(1)", "f(a=1,)", "f (a=1)", "[]", "f(a='x')", "f(a=)", "f(a=1 b=2)", "1f()", "f(a.b=1)", "f(a=01)",
                      "f(a=undefined)", "f(a=1))", "[f(), ]"],
    "sql": ["", "SELECT", "SELECT * FROM", "SELECT a FROM t WHERE", "SELECT a,", "SELECT*FROM t", "SELECTa FROM t",
            "SELECT a FROM t WHERE a=1AND b=2", "SELECT a FROM t LIMIT 'x'", "SELECT 'unterminated", "DELETE FROM t",
            "SELECT a FROM t ORDER a", "SELECT a FROM t GROUP BY", "SELECT a b c FROM t", "SELECT a FROM t;;",
            "SELECT a FROM t WHERE a == 1", "SELECT a FROM t JOIN u ON", "SELECT CASE WHEN a THEN b FROM t",
            "SELECT a FROM t -- comment", "SELECT a FROM t where", "SELECT order FROM t", "SELECT a AS from",
            "SELECT a FROM t LEFT", "SELECT a--1", "SELECT --1", "\u017fELECT 1", "SELECT 1 FROM \u212aelvin"],
    "pgn": ["", "e4e5", "e9", "axc3", "e8", "e7=Q", "Ke", "O-O-O-O", "1. e4 e5 2-1", "1. e4 (e5", "[Event Casual] e4", "e4 {open",
            "Kxe1=Q", "exd", "1. e4 1-0 e5", "Pe4", "$256", "1. e4 e5 *2."],
    "python_expr": ["", " 1", "f(a=1, 2)", "f(**k, *a)", "lambda x=1, y: 0", "[x for x in y if a else b]", "1.real", "not(x)",
                    "x = 1", "def f(x):\nreturn x", "def f(x):\n  return x", "f(1)(", "a b", "if", "True = 1", "1 +", "'\\N'",
                    '"\\q"', "b'é'", "f(,)", "[,]", "(1 2)", "def f(x=1, y):\n    pass", "lambda x: yield", "a[]", "f() = 1",
                    "print 'x'", "a = = b", "class", "x.class", "0777", "1__0"],
    "yaml": ["", "- a", "a", "a:b", "a: b\n c: d", "a:\n   b: 1", "a: [1, 2", "a: 'x'#c", "a: b #c\n  d: 1",
             "a:\n  b:\n    c:\n      d:\n        e: 1", "a: *x", "a: &x 1", "a: !t 1", "a: |\n  x", "a: 'x", "a:\tb", "a: b:",
             "a: x: y", "a:\n  - b\n c: 1", "a: @x", "a: `x`", "a: \x01"],
    "markdown": ["", "\n", "- ---", "* * *", "| a | b |\n| --- |", "# a\n- b", "1. a\n\n\n", "```\ncode", "```\n```\n```",
                 "para\n===", " indented", "<div>", "| a |\n| x |", "####### seven"],
}


def _cases(table):
    return [pytest.param(name, text, id=f"{name}-{i}") for name, texts in table.items() for i, text in enumerate(texts)]


@pytest.mark.parametrize("name, text", _cases(GOOD))
def test_accepts_samples(grammars, name, text):
    assert grammars[name].accepts(text) is True


@pytest.mark.parametrize("name, text", _cases(BAD))
def test_rejects_near_misses(grammars, name, text):
    assert grammars[name].accepts(text) is False


def test_every_new_grammar_has_tables():
    assert set(GOOD) == set(BAD) == set(NEW)


# -- oracles ----------------------------------------------------------------------------

# semver: the regex that semver.org suggests, with ASCII digits
SEMVER = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
                    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789.-+aZ", max_size=14) | st.from_regex(SEMVER, fullmatch=True))
def test_semver_agrees_with_official_regex(grammars, text):
    assert grammars["semver"].accepts(text) is bool(SEMVER.fullmatch(text))


# csv: RFC 4180 as a regex, and Python's csv module
_FIELD = r'(?:"(?:[^"]|"")*"|[^",\r\n]*)'
CSV = re.compile(rf"{_FIELD}(?:,{_FIELD})*(?:(?:\r\n|\n){_FIELD}(?:,{_FIELD})*)*", re.S)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.text(max_size=6), min_size=1, max_size=4), min_size=1, max_size=4),
       st.sampled_from(["\r\n", "\n"]), st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
def test_csv_accepts_what_csv_writer_writes(grammars, rows, terminator, quoting):
    rows = [[field.replace("\x00", "") for field in row] for row in rows]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator=terminator, quoting=quoting).writerows(rows)
    text = buffer.getvalue()
    if terminator == "\n" and any("\r" in f and '"' not in f for row in rows for f in row):
        return
    assert grammars["csv"].accepts(text) is True
    assert list(csv.reader(io.StringIO(text, newline=""), strict=True)) == rows


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='a,"\r\n', max_size=10))
def test_csv_agrees_with_rfc_regex(grammars, text):
    assert grammars["csv"].accepts(text) is bool(CSV.fullmatch(text))


# iso8601: the calendar, datetime and an RFC 3339 validator
def test_iso8601_every_day_of_four_centuries(grammars):
    g = grammars["iso8601"]
    for year in (1600, 1700, 1899, 1900, 1996, 2000, 2023, 2024, 2100, 2400):
        for month in range(1, 13):
            last = calendar.monthrange(year, month)[1]
            for day in (28, 29, 30, 31, 32):
                assert g.accepts(f"{year:04d}-{month:02d}-{day:02d}") is (day <= last)
        assert g.accepts(f"{year:04d}-366") is calendar.isleap(year)


def _has_week_53(year: int) -> bool:
    try:
        date.fromisocalendar(year, 53, 1)
    except ValueError:
        return False
    return True


def test_iso8601_week_53_exactly(grammars):
    g = grammars["iso8601"]
    for year in range(1, 10000, 7):
        assert g.accepts(f"{year:04d}-W53-1") is _has_week_53(year), year


@settings(max_examples=200, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
       st.sampled_from(["T", " "]), st.sampled_from(["auto", "minutes", "seconds", "milliseconds"]),
       st.sampled_from([None, 0, 90, -330, 23 * 60 + 59]))
def test_iso8601_accepts_isoformat(grammars, moment, sep, timespec, offset_minutes):
    from datetime import timezone
    if offset_minutes is not None:
        moment = moment.replace(tzinfo=timezone(timedelta(minutes=offset_minutes)))
    text = moment.isoformat(sep=sep, timespec=timespec)
    assert grammars["iso8601"].accepts(text) is True
    assert grammars["iso8601"].accepts(moment.date().isoformat()) is True
    year, week, weekday = moment.date().isocalendar()
    assert grammars["iso8601"].accepts(f"{year:04d}-W{week:02d}-{weekday}") is True


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 24), st.integers(0, 60),
       st.integers(0, 61), st.sampled_from(["Z", "+01:00", "-23:59", "+24:00", ""]))
def test_iso8601_agrees_with_rfc3339_validator(grammars, y, mo, d, h, mi, s, offset):
    from rfc3339_validator import validate_rfc3339
    text = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{offset}"
    # the validator knows no leap second: check second 59 in its place
    probe = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{min(s, 59) if s == 60 else s:02d}{offset or 'Z'}"
    expected = validate_rfc3339(probe) and (offset != "+24:00")
    assert grammars["iso8601"].accepts(text) is bool(expected)


# url: RFC 3986 Appendix A, translated by hand into a Python regex
def _rfc3986() -> re.Pattern:
    unreserved, sub_delims, pct = r"[A-Za-z0-9._~-]", r"[!$&'()*+,;=]", r"%[0-9A-Fa-f]{2}"
    pchar = rf"(?:{unreserved}|{pct}|{sub_delims}|[:@])"
    h16 = r"[0-9A-Fa-f]{1,4}"
    octet = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
    ipv4 = rf"{octet}\.{octet}\.{octet}\.{octet}"
    ls32 = rf"(?:{h16}:{h16}|{ipv4})"
    ipv6 = "|".join([
        rf"(?:{h16}:){{6}}{ls32}", rf"::(?:{h16}:){{5}}{ls32}", rf"(?:{h16})?::(?:{h16}:){{4}}{ls32}",
        rf"(?:(?:{h16}:){{0,1}}{h16})?::(?:{h16}:){{3}}{ls32}", rf"(?:(?:{h16}:){{0,2}}{h16})?::(?:{h16}:){{2}}{ls32}",
        rf"(?:(?:{h16}:){{0,3}}{h16})?::{h16}:{ls32}", rf"(?:(?:{h16}:){{0,4}}{h16})?::{ls32}",
        rf"(?:(?:{h16}:){{0,5}}{h16})?::{h16}", rf"(?:(?:{h16}:){{0,6}}{h16})?::"])
    host = rf"(?:\[(?:{ipv6}|v[0-9A-Fa-f]+\.(?:{unreserved}|{sub_delims}|:)+)\]|{ipv4}|(?:{unreserved}|{pct}|{sub_delims})*)"
    authority = rf"(?:(?:{unreserved}|{pct}|{sub_delims}|:)*@)?{host}(?::[0-9]*)?"
    segment, segment_nz = rf"{pchar}*", rf"{pchar}+"
    hier = rf"(?://{authority}(?:/{segment})*|/(?:{segment_nz}(?:/{segment})*)?|{segment_nz}(?:/{segment})*|)"
    return re.compile(rf"[A-Za-z][A-Za-z0-9+.-]*:{hier}(?:\?(?:{pchar}|[/?])*)?(?:#(?:{pchar}|[/?])*)?")


URI = _rfc3986()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(GOOD["url"] + BAD["url"]), st.lists(st.tuples(st.integers(0, 60), st.sampled_from(list(":/?#[]@%.1fv x"))), max_size=3))
def test_url_agrees_with_rfc3986_regex(grammars, seed, edits):
    text = list(seed)
    for position, char in edits:
        text.insert(min(position, len(text)), char)
    text = "".join(text)
    assert grammars["url"].accepts(text) is bool(URI.fullmatch(text))


# email: hypothesis's generator of valid addresses, and a regex of the documented subset
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
EMAIL = re.compile(rf'(?:{_ATEXT}+(?:\.{_ATEXT}+)*|"(?:[ !#-\[\]-~]|\\[ -~])*")@{_LABEL}(?:\.{_LABEL})*')


@settings(max_examples=150, deadline=None)
@given(st.emails())
def test_email_accepts_generated_addresses(grammars, address):
    assert grammars["email"].accepts(address) is True


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab.@-"\\ 1', max_size=10))
def test_email_agrees_with_regex(grammars, text):
    assert grammars["email"].accepts(text) is bool(EMAIL.fullmatch(text))


# json_bounded: json.loads and a depth count
def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                           lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
                           max_leaves=10)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from([None, 2]))
def test_json_bounded_is_json_with_depth_at_most_4(grammars, value, indent):
    text = json.dumps(value, indent=indent)
    assert grammars["json_bounded"].accepts(text) is (_depth(value) <= 4)


# tool_call and function_call: generated calls
tool_names = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)
arguments = st.dictionaries(st.text(max_size=4), json_values, max_size=3)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(tool_names, arguments, st.booleans()), min_size=1, max_size=3), st.booleans(), st.sampled_from([None, 2]))
def test_tool_call_accepts_envelopes(grammars, calls, as_list, indent):
    objects = [({"name": n, "arguments": a} if name_first else {"arguments": a, "name": n}) for n, a, name_first in calls]
    payload = objects if as_list or len(objects) > 1 else objects[0]
    assert grammars["tool_call"].accepts(json.dumps(payload, indent=indent)) is True


identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True).filter(lambda s: not keyword.iskeyword(s))


@settings(max_examples=100, deadline=None)
@given(identifiers, st.dictionaries(identifiers, json_values, max_size=3), st.sampled_from(["", " ", "\n  "]))
def test_function_call_accepts_keyword_calls(grammars, name, kwargs, space):
    text = f"{name}({space}" + f",{space}".join(f"{k}={json.dumps(v)}" for k, v in kwargs.items()) + ")"
    assert grammars["function_call"].accepts(text) is True


# reserved words: sql (any ASCII case) and python_expr (keyword.kwlist)
SQL_RESERVED = set("""ALL AND AS ASC BETWEEN BY CASE CAST CROSS DESC DISTINCT ELSE END EXCEPT EXISTS FALSE FROM FULL GROUP
HAVING IN INNER INTERSECT IS JOIN LEFT LIKE LIMIT NOT NULL OFFSET ON OR ORDER OUTER RIGHT SELECT THEN TRUE UNION USING
WHEN WHERE WITH""".split())


def _near_words(words):
    near = set()
    for w in words:
        near.update({w, w[:-1], w + "x", w + "_", w[1:], w + "1", w.swapcase(), w.capitalize()})
    return sorted(x for x in near if x and (x[0].isalpha() or x[0] == "_"))


@pytest.mark.parametrize("word", _near_words(SQL_RESERVED))
def test_sql_reserved_words_exactly(grammars, word):
    assert grammars["sql"].accepts(f"SELECT a AS {word}") is (word.upper() not in SQL_RESERVED)


@pytest.mark.parametrize("word", _near_words(keyword.kwlist))
def test_python_keywords_exactly(grammars, word):
    assert grammars["python_expr"].accepts(f"lambda {word}: 0") is (word not in keyword.kwlist)


# -- generated texts satisfy the oracles ---------------------------------------------------

def _top_blocks(text: str) -> set[str]:
    from markdown_it import MarkdownIt
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    return {t.type for t in tokens if t.level == 0 and t.nesting != -1}


def _sqlite_syntax_ok(text: str) -> bool:
    try:
        sqlite3.connect(":memory:").execute(text)
    except sqlite3.Warning:  # more than one statement cannot happen here
        return False
    except sqlite3.Error as error:
        message = str(error)
        return "syntax error" not in message and "unrecognized token" not in message and "incomplete" not in message
    return True


ORACLES = {
    "semver": lambda t: bool(SEMVER.fullmatch(t)),
    "csv": lambda t: bool(CSV.fullmatch(t)) and list(csv.reader(io.StringIO(t, newline=""), strict=True)) is not None,
    "url": lambda t: bool(URI.fullmatch(t)),
    "email": lambda t: bool(EMAIL.fullmatch(t)) or "[" in t,
    "json_bounded": lambda t: _depth(json.loads(t)) <= 4,
    "tool_call": lambda t: all(set(c) == {"name", "arguments"} and isinstance(c["arguments"], dict)
                               for c in (lambda v: v if isinstance(v, list) else [v])(json.loads(t))),
    "function_call": lambda t: isinstance(ast.parse(t, mode="eval").body, (ast.Call, ast.List)),
    "python_expr": lambda t: ast.parse(t) is not None,
    "yaml": lambda t: isinstance(__import__("yaml").safe_load(t), dict),
    "markdown": lambda t: _top_blocks(t) <= {"heading_open", "paragraph_open", "bullet_list_open", "ordered_list_open",
                                             "table_open", "blockquote_open", "fence"},
    "sql": _sqlite_syntax_ok,
    "iso8601": lambda t: True,
    "pgn": lambda t: True,
}


@pytest.mark.parametrize("name", NEW)
def test_generated_texts_satisfy_oracle(grammars, engines, name):
    for text in samples(grammars, engines, name):
        assert ORACLES[name](text.decode("utf-8")), text
