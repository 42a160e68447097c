"""bench/generate.py runs every workload and mode end to end in its tiny smoke mode.

Speed is never asserted (DESIGN.md §11); this keeps the benchmark runnable and its
built-in check (every constrained document complete and in its grammar) exercised, and
checks the bookkeeping that does not depend on timing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import bench_scripts

pytest.importorskip("torch", reason="bench/generate.py needs torch")
pytest.importorskip("transformers", reason="bench/generate.py needs transformers")

BENCH = Path(__file__).resolve().parents[1] / "bench" / "generate.py"
WORKLOADS = ["json", "rpg-compact", "rpg-pretty", "gsm8k-compact", "gsm8k-pretty"]
MODES = ["unconstrained", "mask-first", "opportunistic", "opp+jump"]


@pytest.fixture(scope="module")
def bench():
    yield bench_scripts.load("generate.py", "bench_generate")
    bench_scripts.unload("bench_generate", "mask_latency")


def test_every_workload_and_mode_runs_in_tiny_mode(bench, capsys, tmp_path):
    rows = bench.main(["--tiny", "--tokens", "24", "--runs", "1", "--warmup", "1", "--save", str(tmp_path)])
    out = capsys.readouterr().out
    assert [(r.workload, r.mode) for r in rows] == [(w, m) for w in WORKLOADS for m in MODES]
    by = {(r.workload, r.mode): r for r in rows}
    for w in WORKLOADS:
        base, first, opp, jump = (by[w, m] for m in MODES)
        assert all(r.runs == 1 and r.tokens > 0 for r in (base, first, opp, jump))
        assert first.valid == opp.valid == jump.valid == 1
        assert base.tokens == first.tokens  # the baseline makes as many tokens as mask-first
        assert first.checks == 0 and first.masks >= first.forward_passes - 1  # -1: EOS ending a steered plan
        assert opp.checks - opp.hits <= opp.masks  # every rejected free draw is masked; back-off steps mask first
        assert first.jumped_tokens == opp.jumped_tokens == 0
        assert jump.forward_passes <= jump.tokens
    for w in ("rpg-compact", "rpg-pretty", "gsm8k-compact", "gsm8k-pretty"):  # schemas force text
        assert by[w, "opp+jump"].jumped_tokens > 0 and by[w, "opp+jump"].forward_passes < by[w, "opp+jump"].tokens
    assert "vs unconstrained" in out and "opp+jump" in out
    rows_csv = (tmp_path / "generate-tiny.csv").read_text().splitlines()
    assert rows_csv[0].startswith("workload,mode,tokens/doc,tok/s") and len(rows_csv) == 1 + len(rows)
    assert (tmp_path / "generate-tiny.json").is_file()


def test_command_line(tmp_path):
    done = subprocess.run(
        [sys.executable, str(BENCH), "--tiny", "--tokens", "16", "--runs", "1", "--warmup", "0",
         "--workload", "gsm8k-compact"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "gsm8k-compact" in done.stdout and "rpg-compact" not in done.stdout
