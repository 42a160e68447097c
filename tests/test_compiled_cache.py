"""The on-disk cache of compiled grammars (grammarc.lowering.compiled_cache): a grammar loaded
from disk is identical to the compiled one (DFA storage and arrays, BNF, LR tables in order,
masks), a second process loads instead of compiling, keys are stable across processes and
hash seeds, damaged or foreign files are recompiled and rewritten, concurrent writers never
leave a torn file, the directory limit holds, and ``GRAMMARC_CACHE_DIR=off`` writes nothing."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import grammarc
from grammarc import Engine, Grammar, GrammarWarning, stdlib_grammars
from grammarc.automata.comb import CombTable
from grammarc.ir import nodes
from grammarc.lowering import compiled_cache, compiler
from grammarc.lowering.compiler import compile_grammar
from test_scan_cache import _meta, _rewrite  # a container re-saved with edited arrays or header
from grammarc import diskstore

ROOT = Path(__file__).resolve().parents[1]
MASKBENCH = ROOT.parent / "shared" / "data" / "maskbench-dev"
OPTIONS = (grammarc.automata.DEFAULT_MAX_STATES, compiler.DEFAULT_MERGE_MAX_STATES)

# terminals of every kind: a long literal (its DFA is a CombTable), any!, except! with a
# token limit, a nullable terminal, a recursive rule and an ambiguous (conflicting) one
VARIED = Grammar.from_ebnf(
    "start ::= long | other | e | '<' start '>' | '(' x ')' ;\n"
    f"long ::= '{'ab' * 2500}' ;\n"
    "other ::= any! except!('stop', 3) ;\n"
    "e ::= #'[a-z]*' ',' ;\n"
    "x ::= x x | 'q' ;\n"
)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GRAMMARC_GRAMMAR_CACHE_MIN_MS", "0")  # store even the fastest grammars
    monkeypatch.setattr(compiled_cache, "stats", Counter())
    compiler._compile_cached.cache_clear()
    yield tmp_path
    compiler._compile_cached.cache_clear()


def _fresh(grammar: Grammar, **options):
    """Compile in a new 'process': the in-memory cache is emptied first."""
    compiler._compile_cached.cache_clear()
    return compile_grammar(grammar, **options)


def _uncached(grammar: Grammar):
    """The compiled grammar built without any disk cache."""
    saved = os.environ.get("GRAMMARC_CACHE_DIR")
    os.environ["GRAMMARC_CACHE_DIR"] = "off"
    try:
        return _fresh(grammar)
    finally:
        if saved is None:
            del os.environ["GRAMMARC_CACHE_DIR"]
        else:
            os.environ["GRAMMARC_CACHE_DIR"] = saved


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b) and not b.flags.writeable


def assert_identical(expected, got) -> None:
    assert got.grammar == expected.grammar
    assert len(got.terminals) == len(expected.terminals)
    for a, b in zip(expected.terminals, got.terminals):
        assert (a.name, a.any_token, a.token_limit) == (b.name, b.any_token, b.token_limit)
        assert type(a.dfa.trans) is type(b.dfa.trans)
        if isinstance(a.dfa.trans, CombTable):
            assert a.dfa.trans.n == b.dfa.trans.n
            for field in ("base", "check", "next"):
                assert _same_array(getattr(a.dfa.trans, field), getattr(b.dfa.trans, field)), field
        else:
            assert _same_array(a.dfa.trans, b.dfa.trans)
        assert _same_array(a.dfa.accept, b.dfa.accept)
        assert a.dfa.key == b.dfa.key
    assert got.bnf == expected.bnf
    assert got.tables == expected.tables  # the flat arrays
    assert [list(row.items()) for row in got.tables.action] == [list(row.items()) for row in expected.tables.action]
    assert [list(row.items()) for row in got.tables.goto] == [list(row.items()) for row in expected.tables.goto]
    assert got.accepts_empty == expected.accepts_empty


def _round_trip(grammar: Grammar, expected=None) -> None:
    expected = _uncached(grammar) if expected is None else expected
    compiled_cache.stats.clear()
    first = _fresh(grammar)  # compiled and written
    assert compiled_cache.stats == Counter(misses=1, writes=1)
    loaded = _fresh(grammar)  # read back
    assert compiled_cache.stats == Counter(misses=1, writes=1, hits=1)
    assert_identical(expected, first)
    assert_identical(expected, loaded)


@pytest.mark.parametrize("name", stdlib_grammars.names())
def test_stdlib_grammars_round_trip(cache, name):
    _round_trip(stdlib_grammars.load(name))


def test_every_kind_of_terminal_round_trips(cache):
    compiled = _uncached(VARIED)
    kinds = {type(t.dfa.trans) for t in compiled.terminals}
    assert kinds == {np.ndarray, CombTable}
    assert any(t.any_token for t in compiled.terminals) and any(t.token_limit == 3 for t in compiled.terminals)
    assert compiled.tables.conflicts()
    _round_trip(VARIED)


def _maskbench_sample(count: int) -> list[Path]:
    if not MASKBENCH.is_dir():
        pytest.skip(f"MaskBench schemas not found at {MASKBENCH}")
    paths = sorted(MASKBENCH.glob("*.json"))
    picked = [p for p in paths if p.name.startswith("Kubernetes---kb_838")] + paths[:: max(1, len(paths) // count)]
    return picked[: count + 1]


def test_maskbench_schemas_round_trip(cache):
    done = 0
    for path in _maskbench_sample(8):
        try:
            grammar = Grammar.from_json_schema(json.loads(path.read_text())["schema"])
            expected = _uncached(grammar)
        except grammarc.GrammarcError:
            continue  # refused schemas are not cached
        _round_trip(grammar, expected)
        done += 1
    assert done >= 4


def _walk_masks(compiled, vocab, steps: int, seed: int) -> list[bytes]:
    """Packed masks along a pseudo-random constrained walk."""
    engine, rng, masks = Engine(compiled, vocab), random.Random(seed), []
    for _ in range(steps):
        mask = engine.packed_mask()
        masks.append(mask.tobytes())
        allowed = [t for t in engine.allowed_token_ids().tolist() if t not in vocab.eos_token_ids]
        if not allowed or engine.is_finished():
            break
        engine.advance(rng.choice(allowed))
    return masks


def test_loaded_grammars_give_the_same_masks(cache):
    import vocabularies

    vocab = vocabularies.llama3()
    grammars = [stdlib_grammars.load("json")]
    paths = [p for p in _maskbench_sample(8) if p.name.startswith("Kubernetes")]
    if paths:
        grammars.append(Grammar.from_json_schema(json.loads(paths[0].read_text())["schema"]))
    for grammar in grammars:
        expected = _walk_masks(_uncached(grammar), vocab, 25, seed=7)
        _fresh(grammar)  # written
        compiled_cache.stats.clear()
        loaded = _fresh(grammar)
        assert compiled_cache.stats["hits"] == 1
        assert _walk_masks(loaded, vocab, 25, seed=7) == expected


_CHILD = """
import json, sys
from grammarc import Grammar
from grammarc.lowering import compiled_cache
grammar = Grammar.from_ebnf(sys.argv[1])
compiled = grammar.compile()
print(json.dumps({"stats": dict(compiled_cache.stats),
                  "key": compiled_cache.grammar_key(grammar, 10_000, 512),
                  "dfa_keys": [t.dfa.key for t in compiled.terminals]}))
"""


def _child(cache_dir, text: str, **env) -> dict:
    environment = dict(os.environ, GRAMMARC_CACHE_DIR=str(cache_dir), **env)
    done = subprocess.run([sys.executable, "-c", _CHILD, text], env=environment, capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_instead_of_compiling(cache):
    text = "start ::= '[' item (', ' item)* ']' ; item ::= #'\"[a-z]*\"' | #'[0-9]+' ;"
    first = _child(cache, text, PYTHONHASHSEED="1")
    second = _child(cache, text, PYTHONHASHSEED="2")
    assert first["stats"] == {"misses": 1, "writes": 1}
    assert second["stats"] == {"hits": 1}
    assert first["key"] == second["key"] and first["dfa_keys"] == second["dfa_keys"]
    assert [p.name for p in cache.rglob("*.grammar")] == [f"{first['key']}.grammar"]


_COMPILED_DIGEST = """
import hashlib, json, sys
from grammarc import Grammar
compiled = Grammar.from_json_schema(json.load(open(sys.argv[1]))["schema"]).compile()
parts = ([(t.name, t.dfa.key) for t in compiled.terminals], compiled.bnf,
         [sorted(row.items()) for row in compiled.tables.action], [sorted(row.items()) for row in compiled.tables.goto])
print(hashlib.sha1(repr(parts).encode()).hexdigest())
"""


def test_a_compiled_grammar_does_not_depend_on_string_hashing():
    """The cache stores whatever the first process compiled, so compiling must be a function
    of the IR alone: the same terminals, BNF and tables under any hash seed. This schema's
    compiled terminals once followed the iteration order of a set of rule names."""
    path = MASKBENCH / "Github_ultra---o69206.json"
    if not path.is_file():
        pytest.skip(f"MaskBench schema not found at {path}")
    environment = dict(os.environ, GRAMMARC_CACHE_DIR="off")
    digests = {subprocess.run([sys.executable, "-c", _COMPILED_DIGEST, str(path)], capture_output=True, text=True,
                              env=dict(environment, PYTHONHASHSEED=seed), timeout=300, check=True).stdout.strip()
               for seed in ("1", "2", "3")}
    assert len(digests) == 1


def test_keys_follow_grammar_equality_and_options():
    a = Grammar.from_ebnf("start ::= 'a' b ;\nb ::= #'[0-9]+' ;")
    spaced = Grammar.from_ebnf("\n\nstart ::=   'a'   b;  b ::= #'[0-9]+';")
    assert a == spaced  # spans differ, equality ignores them: so does the key
    key = compiled_cache.grammar_key
    assert key(a, *OPTIONS) == key(spaced, *OPTIONS)
    others = [
        Grammar.from_ebnf("start ::= 'a' b ;\nb ::= #'[0-8]+' ;"),
        Grammar.from_ebnf("start ::= 'a' b ;\nb ::= #e'[0-9]+' ;"),
        Grammar(a.rules, start="b"),
        Grammar.from_ebnf("start ::= b 'a' ;\nb ::= #'[0-9]+' ;"),
    ]
    keys = {key(g, *OPTIONS) for g in others} | {key(a, 99, 512), key(a, 10_000, 64), key(a, *OPTIONS)}
    assert len(keys) == len(others) + 3


def test_the_key_sees_every_field_that_equality_compares():
    # the key reads the compared fields of the IR's own classes and the repr of any other
    # node (a subclass): a field compared by == but hidden from repr would let two different
    # grammars share a file (test_grammar_key checks the fields read)
    for cls in (nodes.Literal, nodes.Regex, nodes.Substrings, nodes.Ref, nodes.Seq, nodes.Alt, nodes.Repeat,
                nodes.AnyToken, nodes.Except):
        for field in dataclasses.fields(cls):
            assert field.compare == field.repr, (cls.__name__, field.name)


def _only_file(cache_dir: Path) -> Path:
    (path,) = cache_dir.rglob("*.grammar")
    return path


def _bump(name: str):
    def apply(arrays):
        arrays[name] = arrays[name].copy()
        arrays[name].reshape(-1)[-1] += 1
    return apply


DAMAGE = {
    "garbage": lambda path: path.write_bytes(b"not a cache file"),
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
    "empty": lambda path: path.write_bytes(b""),
    "other-container": lambda path: path.write_bytes(diskstore.pack({"version": 2}, {"ints": np.zeros(3)})),
    "other-format-version": lambda path: _rewrite(path, _meta(lambda m: m.__setitem__("version", 99))),
    "other-package": lambda path: _rewrite(path, _meta(lambda m: m.__setitem__("package", "0.0.0-other"))),
    "other-key": lambda path: _rewrite(path, _meta(lambda m: m.__setitem__("key", "0" * 48))),
    "no-checksum": lambda path: _rewrite(path, _meta(lambda m: m.pop("checksum"))),
    "lr-cell": lambda path: _rewrite(path, _bump("ints")),
    "dfa-cell": lambda path: _rewrite(path, _bump("dense_cells")),
    "comb-cell": lambda path: _rewrite(path, _bump("comb_next")),
    "names": lambda path: _rewrite(path, _meta(lambda m: m["names"].__setitem__(0, "other"))),
    "packed-lengths": lambda path: _rewrite(path, _meta(lambda m: m["packed"][-1].__setitem__(1, 0))),
}


def _lr_rewritten(grammar: Grammar, name: str, change) -> None:
    """Write `grammar`'s file again, well-formed and checksummed, with its LR array `name`
    changed: damage only the tables' own check (`_lalr.check`) can see."""
    compiled = _uncached(grammar)
    parts = compiled_cache.Parts(tuple((t.name, t.dfa, t.any_token, t.token_limit) for t in compiled.terminals),
                                 compiled.bnf, compiled.tables, compiled.accepts_empty)
    meta, stored = compiled_cache._encode(parts)
    arrays = compiled_cache._unpack(meta["packed"], stored)
    arrays[name] = change(arrays[name])
    meta["packed"], stored = compiled_cache._pack(arrays)
    entry = compiled_cache.entry(grammar, *OPTIONS)
    diskstore.write(entry.path, dict(entry.header(), **meta), stored)


LR_DAMAGE = {
    "la-truncated": ("la", lambda a: a[:-1]),
    "trans-start-truncated": ("trans_start", lambda a: a[:-1]),
    "trans-to-out-of-range": ("trans_to", lambda a: a + 10**6),
    "red-prod-out-of-range": ("red_prod", lambda a: np.full_like(a, 10**6)),
    "la-start-flat": ("la_start", lambda a: np.zeros_like(a)),
    "one-more-state": ("n_lr_states", lambda a: a + 1),
}


@pytest.mark.parametrize("name, change", LR_DAMAGE.values(), ids=LR_DAMAGE.keys())
def test_checksummed_files_with_malformed_lr_tables_are_recompiled(cache, name, change):
    expected = _uncached(VARIED)
    _fresh(VARIED)
    _lr_rewritten(VARIED, name, change)
    compiled_cache.stats.clear()
    with pytest.warns(GrammarWarning, match=r"ignoring unreadable compiled-grammar cache .*\.grammar: "):
        got = _fresh(VARIED)
    assert compiled_cache.stats == Counter(rejected=1, writes=1)
    assert_identical(expected, got)


def test_an_unchanged_rewrite_loads(cache):
    """The rewrite above, with nothing changed, gives a file that loads: the damage is what
    the check refuses, not the rewrite."""
    _fresh(VARIED)
    _lr_rewritten(VARIED, "la", lambda a: a)
    compiled_cache.stats.clear()
    assert_identical(_uncached(VARIED), _fresh(VARIED))
    assert compiled_cache.stats == Counter(hits=1)


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_damaged_files_are_recompiled_and_rewritten(cache, damage):
    expected = _uncached(VARIED)
    _fresh(VARIED)
    path = _only_file(cache)
    damage(path)
    compiled_cache.stats.clear()
    with pytest.warns(GrammarWarning, match=r"ignoring unreadable compiled-grammar cache .*\.grammar: "):
        got = _fresh(VARIED)
    assert compiled_cache.stats == Counter(rejected=1, writes=1)
    assert_identical(expected, got)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = _fresh(VARIED)  # rewritten: read back silently
    assert compiled_cache.stats["hits"] == 1
    assert_identical(expected, again)


def test_every_flipped_byte_gives_the_fresh_grammar(cache):
    grammar = stdlib_grammars.load("arithmetic")
    expected = _uncached(grammar)
    _fresh(grammar)
    path = _only_file(cache)
    original = path.read_bytes()
    for offset in range(0, len(original), max(1, len(original) // 61)):
        damaged = bytearray(original)
        damaged[offset] ^= 0x10
        path.write_bytes(bytes(damaged))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = _fresh(grammar)
        assert len([w for w in caught if issubclass(w.category, GrammarWarning)]) <= 1
        assert_identical(expected, got)


def test_a_failed_write_leaves_nothing_behind(cache, monkeypatch):
    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.warns(GrammarWarning, match="cannot write compiled-grammar cache .*disk full"):
        _fresh(VARIED)
    assert not list(cache.rglob("*.grammar")) and not list(cache.rglob("*.tmp"))


_WRITER = """
import json, sys
from grammarc import Grammar
from grammarc.lowering import compiled_cache
from grammarc.lowering.compiler import compile_grammar
grammar = Grammar.from_ebnf(sys.stdin.read())
entry = compiled_cache.entry(grammar, 10_000, 512)
compiled = compile_grammar(grammar)
parts = compiled_cache.Parts(tuple((t.name, t.dfa, t.any_token, t.token_limit) for t in compiled.terminals),
                             compiled.bnf, compiled.tables, compiled.accepts_empty)
for _ in range(int(sys.argv[1])):
    entry.save(parts)
    assert entry.load() is not None
print(json.dumps(dict(compiled_cache.stats)))
"""


def test_concurrent_writers_never_leave_a_torn_file(cache):
    text = "\n".join(f"r{i} ::= '{'xy' * 600}{i}' ;" for i in range(12)) + "\nstart ::= " + " | ".join(
        f"r{i}" for i in range(12)) + " ;"
    environment = dict(os.environ, GRAMMARC_CACHE_DIR=str(cache))
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, "15"], env=environment, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for writer in writers:
        writer.stdin.write(text)
        writer.stdin.close()
    for writer in writers:
        assert writer.wait(timeout=300) == 0, writer.stderr.read()
        stats = json.loads(writer.stdout.read())
        assert "rejected" not in stats and stats["hits"] >= 15, stats
    assert not list(cache.rglob("*.tmp"))
    assert_identical(_uncached(Grammar.from_ebnf(text)), _fresh(Grammar.from_ebnf(text)))


def test_the_directory_keeps_under_its_limit_oldest_first(cache, monkeypatch):
    a, b = Grammar.from_ebnf("start ::= 'a'+ ;"), Grammar.from_ebnf("start ::= 'b'+ ;")
    _fresh(a)
    old = _only_file(cache)
    os.utime(old, (1_000_000, 1_000_000))
    monkeypatch.setenv("GRAMMARC_GRAMMAR_CACHE_MAX_MB", repr((old.stat().st_size * 1.5) / (1 << 20)))
    _fresh(b)
    (kept,) = cache.rglob("*.grammar")
    assert kept != old and kept.name == f"{compiled_cache.grammar_key(b, *OPTIONS)}.grammar"


def test_turned_off_it_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(compiled_cache, "stats", Counter())
    assert compiled_cache.entry(VARIED, *OPTIONS) is None
    _fresh(VARIED)
    _fresh(VARIED)
    compiler._compile_cached.cache_clear()
    assert compiled_cache.stats == Counter() and list(tmp_path.rglob("*")) == []


def test_the_in_memory_cache_comes_first(cache):
    first = _fresh(VARIED)
    compiled_cache.stats.clear()
    assert compile_grammar(VARIED) is first and compiled_cache.stats == Counter()


_WARNS = """
import warnings
from grammarc.ir.nodes import Grammar, Literal, Ref, Seq
from grammarc.lowering import compiled_cache
from grammarc.lowering.compiler import compile_grammar
grammar = Grammar((("start", Seq((Literal("a"), Ref("b")))), ("b", Literal("b")), ("lost", Literal("c"))))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    compile_grammar(grammar)
print(sorted(compiled_cache.stats.items()), [str(w.message) for w in caught])
"""


def test_a_loaded_grammar_still_warns_about_unreachable_rules(cache):
    environment = dict(os.environ, GRAMMARC_CACHE_DIR=str(cache))
    outputs = [subprocess.run([sys.executable, "-c", _WARNS], env=environment, capture_output=True, text=True,
                              timeout=300, check=True).stdout.strip() for _ in range(2)]
    warning = "[\"rule 'lost' is not reachable from the start rule 'start'\"]"
    assert outputs == [f"[('misses', 1), ('writes', 1)] {warning}", f"[('hits', 1)] {warning}"]


def test_grammars_that_do_not_compile_are_not_stored(cache):
    broken = nodes.Grammar((("start", nodes.Seq((nodes.Literal("a"), nodes.Ref("missing")))),))
    for _ in range(2):
        with pytest.raises(grammarc.GrammarError, match="missing"):
            _fresh(broken)
    assert compiled_cache.stats == Counter(misses=2) and not list(cache.rglob("*.grammar"))


def test_the_limit_is_checked_after_a_32nd_of_it_is_written(cache, monkeypatch):
    _fresh(Grammar.from_ebnf("start ::= 'a'+ ;"))
    size = _only_file(cache).stat().st_size
    monkeypatch.setattr(compiled_cache, "_written", 0)
    monkeypatch.setenv("GRAMMARC_GRAMMAR_CACHE_MAX_MB", repr(20 * size / (1 << 20)))  # room for 20 files
    calls = []
    monkeypatch.setattr(compiled_cache.diskstore, "enforce_limit", lambda *a, **k: calls.append(a) or 0)
    _fresh(Grammar.from_ebnf("start ::= 'b'+ ;"))  # 1/20 of the limit: past 1/32, checked
    assert len(calls) == 1 and compiled_cache._written == 0
    monkeypatch.setenv("GRAMMARC_GRAMMAR_CACHE_MAX_MB", repr(100 * size / (1 << 20)))
    _fresh(Grammar.from_ebnf("start ::= 'c'+ ;"))  # 1/100: not yet
    assert len(calls) == 1 and compiled_cache._written > 0


def test_grammars_that_compile_fast_are_not_stored(cache, monkeypatch):
    """Below $GRAMMARC_GRAMMAR_CACHE_MIN_MS of compile time, a file would cost more than it saves."""
    monkeypatch.setenv("GRAMMARC_GRAMMAR_CACHE_MIN_MS", "60000")
    _fresh(grammarc.stdlib("arithmetic"))
    assert compiled_cache.stats["writes"] == 0 and not list(cache.rglob("*.grammar"))
    monkeypatch.setenv("GRAMMARC_GRAMMAR_CACHE_MIN_MS", "0")
    _fresh(grammarc.stdlib("arithmetic"))
    assert compiled_cache.stats["writes"] == 1 and len(list(cache.rglob("*.grammar"))) == 1
    monkeypatch.delenv("GRAMMARC_GRAMMAR_CACHE_MIN_MS")
    assert compiled_cache.worth_storing(0.05) and not compiled_cache.worth_storing(0.049)


def test_a_grammar_of_a_shape_never_stored_is_looked_up_without_its_key(cache):
    # the files live under a folder per shape (options, start rule, rule names): a lookup
    # whose shape has no folder makes no key (a never-seen schema's usual case)
    a = Grammar.from_ebnf("start ::= item+ ; item ::= 'a' | 'b' ;")
    same_names = Grammar.from_ebnf("start ::= item '!' ; item ::= 'c' ;")
    other_names = Grammar.from_ebnf("start ::= thing+ ; thing ::= 'a' | 'b' ;")
    entry = compiled_cache.entry(a, *OPTIONS)
    assert entry.load() is None and "key" not in entry.__dict__ and compiled_cache.stats == Counter(misses=1)
    _fresh(a)  # stored (the fixture stores every grammar)
    shape = compiled_cache.grammar_shape(a, *OPTIONS)
    assert [p.relative_to(cache).parts for p in cache.rglob("*.grammar")] == [
        ("grammars", f"v{compiled_cache.FORMAT_VERSION}", shape, f"{compiled_cache.grammar_key(a, *OPTIONS)}.grammar")]
    assert compiled_cache.grammar_shape(same_names, *OPTIONS) == shape
    assert compiled_cache.grammar_shape(other_names, *OPTIONS) != shape
    assert compiled_cache.grammar_shape(a, OPTIONS[0], OPTIONS[1] + 1) != shape
    looked_up = compiled_cache.entry(other_names, *OPTIONS)
    assert looked_up.load() is None and "key" not in looked_up.__dict__
    looked_up = compiled_cache.entry(same_names, *OPTIONS)  # its shape's folder is there: the key decides
    assert looked_up.load() is None and looked_up.key == compiled_cache.grammar_key(same_names, *OPTIONS)
    assert _fresh(same_names).grammar.accepts("c!") and not _fresh(same_names).grammar.accepts("a")
    assert compiled_cache.entry(a, *OPTIONS).load() is not None


def test_a_shape_folder_emptied_by_the_limit_is_removed(cache, monkeypatch):
    a, b = Grammar.from_ebnf("start ::= 'a'+ ;"), Grammar.from_ebnf("begin ::= 'b'+ ;", start="begin")
    _fresh(a)
    old = _only_file(cache)
    os.utime(old, (1_000_000, 1_000_000))
    monkeypatch.setenv("GRAMMARC_GRAMMAR_CACHE_MAX_MB", repr((old.stat().st_size * 1.5) / (1 << 20)))
    _fresh(b)
    compiled_cache.enforce_limit()
    (kept,) = cache.rglob("*.grammar")
    assert kept.parent.name == compiled_cache.grammar_shape(b, *OPTIONS)
    assert sorted(p.name for p in kept.parent.parent.iterdir()) == [kept.parent.name]  # a's folder is gone
    entry = compiled_cache.entry(a, *OPTIONS)
    assert entry.load() is None and "key" not in entry.__dict__
