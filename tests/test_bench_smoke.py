"""bench/mask_latency.py runs every workload end to end on the tiny vocabulary.

Speed is never asserted (DESIGN.md §11); this only keeps the benchmark runnable and its
built-in checks (every replayed token allowed, EOS finishing each document) exercised.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import bench_scripts
import grammarc

BENCH = Path(__file__).resolve().parents[1] / "bench" / "mask_latency.py"
WORKLOADS = ["json", "arithmetic", "json-schema", "rpg-compact", "rpg-pretty", "gsm8k-compact", "gsm8k-pretty",
             "c", "xml"]


@pytest.fixture(scope="module")
def bench():
    yield bench_scripts.load("mask_latency.py", "mask_latency")
    bench_scripts.unload("mask_latency")


def test_every_workload_runs_on_the_tiny_vocabulary(bench, capsys, tmp_path, monkeypatch):
    # store every scan, however narrow, so that the disk figures are exercised on 256 tokens
    monkeypatch.setattr("grammarc.tokens.index.PERSIST_MIN_ROWS", 0)
    results = bench.main(["--vocab", "tiny", "--docs", "2", "--repeat", "2", "--save", str(tmp_path)])
    out = capsys.readouterr().out
    assert [r.workload for r in results] == WORKLOADS
    for r in results:
        assert r.documents == 2 and r.tokens > 2
        # one mask per token (EOS included), one advance per token
        assert len(r.mask_us) == len(r.cold_mask_us) == len(r.memo_mask_us) == len(r.advance_us) == r.tokens
        assert r.index_states > 0 and r.compile_cold_ms > 0
        assert all(t >= 0 for t in r.mask_us + r.cold_mask_us + r.advance_us)
        assert f"\n{r.workload} " in out
        assert r.index_bytes > 0 and r.shared_bytes > 0 and r.peak_rss_mb > 0
        assert r.disk_bytes > 0  # the terminal scans written to the (test) cache directory
    assert "mask p50 us" in out and "computed p50 us" in out and "compile cold ms" in out
    # the files docs/performance.rst renders: one CSV per table, same rows as printed
    for table in ("setup", "latency", "memory"):
        rows = (tmp_path / f"tiny-{table}.csv").read_text().splitlines()
        assert [row.split(",")[0] for row in rows[1:]] == WORKLOADS
    saved = json.loads((tmp_path / "tiny.json").read_text())
    assert [r["workload"] for r in saved["results"]] == WORKLOADS
    assert saved["meta"]["command"].startswith("python bench/mask_latency.py --vocab tiny")


def test_measured_documents_are_not_the_warm_up_ones(bench):
    for workload in bench.WORKLOADS.values():
        warm, measured = bench.split_documents(workload, 3)
        assert len(warm) == len(measured) == 3
        assert not set(warm) & set(measured), workload.name


def test_workload_documents_are_in_their_languages(bench):
    for workload in bench.WORKLOADS.values():
        grammar = workload.grammar()
        docs = workload.documents(5)
        assert len(docs) == 5 and len(set(docs)) == 5
        assert all(grammar.accepts(doc) for doc in docs), workload.name


def test_a_document_outside_the_language_is_reported(bench):
    bad = bench.Workload("bad", lambda: grammarc.stdlib("arithmetic"), lambda n: ["1 +"])
    vocab, encode = bench.tiny_vocab()
    with pytest.raises(AssertionError, match="not in the language"):
        bench.run_workload(bad, vocab, encode, 1, repeat=1)


def test_tiny_encoder_round_trips(bench):
    vocab, encode = bench.tiny_vocab()
    text = '{"name": "Zoë 😀",\r\n  "id": [12, true]}'
    ids = encode(text)
    assert vocab.decode(ids) == text.encode()
    assert len(ids) < len(text.encode())  # multi-byte pieces are used


@pytest.mark.parametrize("p, expected", [(0, 1), (50, 2), (99, 4), (100, 4), (75, 3)])
def test_percentile_is_nearest_rank(bench, p, expected):
    assert bench.percentile([4, 1, 3, 2], p) == expected


def test_command_line(tmp_path):
    done = subprocess.run(
        [sys.executable, str(BENCH), "--vocab", "tiny", "--docs", "1", "--repeat", "1", "--workload", "arithmetic"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "arithmetic" in done.stdout and "json-schema" not in done.stdout


def test_schema_workloads_carry_their_schema(bench):
    schema_workloads = [w for w in bench.WORKLOADS.values() if w.schema is not None]
    assert {w.name for w in schema_workloads} >= {"rpg-compact", "rpg-pretty", "gsm8k-compact", "gsm8k-pretty"}
    for name, layout in (("rpg-compact", {"separators": (",", ":")}), ("rpg-pretty", {"indent": 2}),
                         ("gsm8k-compact", {"separators": (",", ":")}), ("gsm8k-pretty", {"indent": 2})):
        for doc in bench.WORKLOADS[name].documents(4):
            assert doc == json.dumps(json.loads(doc), ensure_ascii="\\u" in doc, **layout), name


@pytest.fixture(scope="module")
def peers(bench):
    yield bench_scripts.load("peers.py", "peers")
    bench_scripts.unload("peers")


@pytest.mark.parametrize("name", ["json", "arithmetic", "c", "xml"])
def test_peer_translations_accept_the_benchmark_documents(peers, bench, name):
    """The hand translations (Lark for llguidance, EBNF for xgrammar) keep the documents
    in their languages; checked with the peers' own matchers when installed."""
    assert name in peers.LARK and name in peers.XGRAMMAR_EBNF
    docs = bench.WORKLOADS[name].documents(3)
    xgrammar = pytest.importorskip("xgrammar")
    info = xgrammar.TokenizerInfo([bytes([b]) for b in range(256)])
    compiled = xgrammar.GrammarCompiler(info, cache_enabled=False).compile_grammar(
        peers.XGRAMMAR_EBNF[name], root_rule_name="root")
    for doc in docs:
        assert xgrammar.GrammarMatcher(compiled).accept_string(doc.encode()), doc[:80]


def test_peers_run_on_the_tiny_vocabulary(peers, capsys, tmp_path):
    """Every installed peer runs every workload (or says why not); masks are compared."""
    results = peers.main(["--vocab", "tiny", "--docs", "1", "--repeat", "1", "--save", str(tmp_path)])
    out = capsys.readouterr().out
    assert "ratio p50" in out
    installed = [name for name, make in peers.PEERS.items() if make().available() is None]
    if not installed:
        assert "skipping" in out
        return
    assert {r.peer for r in results} == set(installed)
    assert {r.workload for r in results} == set(WORKLOADS)
    for r in results:
        assert r.status == "ok" or r.status.startswith("unsupported"), (r.peer, r.workload, r.status)
    assert (tmp_path / "tiny-peers.csv").is_file() and (tmp_path / "tiny-peers-differences.csv").is_file()
