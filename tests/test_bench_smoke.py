"""bench/mask_latency.py runs every workload end to end on the tiny vocabulary.

Speed is never asserted (DESIGN.md §11); this only keeps the benchmark runnable and its
built-in checks (every replayed token allowed, EOS finishing each document) exercised.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import grammarc

BENCH = Path(__file__).resolve().parents[1] / "bench" / "mask_latency.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("mask_latency", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["mask_latency"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("mask_latency", None)


def test_every_workload_runs_on_the_tiny_vocabulary(bench, capsys):
    results = bench.main(["--vocab", "tiny", "--docs", "2", "--repeat", "2"])
    out = capsys.readouterr().out
    assert [r.workload for r in results] == ["json", "arithmetic", "json-schema"]
    for r in results:
        assert r.documents == 2 and r.tokens > 2
        # one mask per token (EOS included), one advance per token
        assert len(r.mask_us) == len(r.memo_mask_us) == len(r.advance_us) == r.tokens
        assert r.index_states > 0 and r.compile_cold_ms > 0
        assert all(t >= 0 for t in r.mask_us + r.advance_us)
        assert f"\n{r.workload} " in out
    assert "mask p50 us" in out and "compile cold ms" in out


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
