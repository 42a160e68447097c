"""bench/maskbench.py runs both modes end to end on four small MaskBench-format files.

Speed is never asserted (DESIGN.md §11): these check the verdicts, the groupings and the
structure of what the benchmark prints and saves, on schemas whose outcome is known:
one grammarc passes, one it refuses, one whose valid instance lists its properties out of
the schema's order (a documented narrowing: rejected), and one more that passes.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import time

import pytest

import bench_scripts

CASES = {
    "a_pass.json": {
        "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]},
        "tests": [{"data": {"n": 3}, "valid": True}, {"data": {"n": -1}, "valid": False},
                  {"data": {}, "valid": False}],
    },
    "b_refused.json": {
        "schema": {"type": "object", "unevaluatedProperties": False},
        "tests": [{"data": {}, "valid": True}],
    },
    "c_order.json": {
        "schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}},
        "tests": [{"data": {"b": "x", "a": 1}, "valid": True}, {"data": {"a": "no"}, "valid": False}],
    },
    "d_pass.json": {
        "schema": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 2},
        "tests": [{"data": ["x", "y"], "valid": True}, {"data": ["x", "y", "x"], "valid": False}],
    },
}


# llguidance only: importing xgrammar (and torch with it) takes ~15 s; tests/test_bench_smoke.py
# drives xgrammar through the same peers.py adapters
PEER = ["--peer", "llguidance"]
try:
    import llguidance  # noqa: F401

    LLGUIDANCE = True
except ImportError:
    LLGUIDANCE = False


@pytest.fixture(scope="module")
def mb():
    module = bench_scripts.load("maskbench.py", "maskbench")
    yield module
    bench_scripts.unload("maskbench", "mask_latency", "peers")


@pytest.fixture()
def data(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    for name, case in CASES.items():
        (folder / name).write_text(json.dumps({**case, "meta": {}}))
    (folder / "README.md").write_text("not a case")
    return folder


def test_pass_mode_verdicts_groups_and_files(mb, data, tmp_path, capsys):
    out_dir = tmp_path / "out"
    records, meta = mb.main(["--mode", "pass", "--data", str(data), "--limit", "3", "--jobs", "2",
                             "--save", str(out_dir), *PEER])
    printed = capsys.readouterr().out
    engines = meta["engines"]
    assert engines == ["grammarc", *(["llguidance"] if LLGUIDANCE else [])]
    assert [(r["schema"], r["engine"]) for r in records] == [(n, e) for n in sorted(CASES)[:3] for e in engines]
    ours = {r["schema"]: r for r in records if r["engine"] == "grammarc"}
    assert {n: r["status"] for n, r in ours.items()} == {"a_pass.json": "pass", "b_refused.json": "refused",
                                                         "c_order.json": "fail"}
    assert ours["a_pass.json"]["wrong"] == [] and ours["a_pass.json"]["layouts_ok"] == {"compact": True, "indent2": True}
    # rejected for the order of its keys only: accepted once they are in the schema's order
    assert ours["c_order.json"]["wrong"] == [{"test": 0, "valid": True, "layout": "compact", "order": True},
                                             {"test": 0, "valid": True, "layout": "indent2", "order": True}]
    assert ours["b_refused.json"]["reason"] == "UnsupportedSchemaError: keyword 'unevaluatedProperties' is not supported"
    assert ours["a_pass.json"]["compile_ms"] > 0 and ours["a_pass.json"]["schema_ms"] > 0
    for r in records:
        assert r["status"] in ("pass", "fail", "refused", "crash"), r
    summary = mb.pass_summary(records, engines)
    row = summary[0]
    assert {k: row[k] for k in ("engine", "schemas", "pass", "refused", "valid rejected", "false accepts",
                                "of which order only", "crashes")} == {
        "engine": "grammarc", "schemas": 3, "pass": 1, "refused": 1, "valid rejected": 1, "false accepts": 0,
        "of which order only": 1, "crashes": 0}
    assert row["pass %"] == pytest.approx(100 / 3)
    assert mb.refusal_groups(records, "grammarc") == [
        ("UnsupportedSchemaError: keyword 'unevaluatedProperties' is not supported", 1, "b_refused.json")]
    assert "grammarc: refusals by reason" in printed and "c_order.json" in printed
    # saved: the summary (one row per engine), one row per (schema, engine), everything in JSON
    with open(out_dir / "maskbench-pass.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["engine"] for r in rows] == engines and rows[0]["pass"] == "1"
    with open(out_dir / "maskbench-pass-schemas.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 * len(engines)
    assert rows[0]["schema"] == "a_pass.json" and rows[0]["status"] == "pass"
    ours_c = next(r for r in rows if r["schema"] == "c_order.json" and r["engine"] == "grammarc")
    assert ours_c["wrong"] == "0/compact/valid/order 0/indent2/valid/order"
    saved = json.loads((out_dir / "maskbench-pass.json").read_text())
    assert set(saved) == {"meta", "summary", "refusals", "records"}
    assert saved["meta"]["command"].startswith("python bench/maskbench.py --mode pass")
    assert saved["refusals"]["grammarc"] == [{"reason": ours["b_refused.json"]["reason"], "count": 1,
                                              "example": "b_refused.json"}]


def test_cold_mode_measures_never_seen_schemas(mb, data, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", str(tmp_path / "outer-cache"))
    out_dir = tmp_path / "out"
    responses, meta = mb.main(["--mode", "cold", "--data", str(data), "--vocab", "tiny", "--schemas", "3",
                               "--warmup", "1", "--save", str(out_dir), "--profile", str(tmp_path / "prof"), *PEER])
    printed = capsys.readouterr().out
    assert os.environ["GRAMMARC_CACHE_DIR"] == str(tmp_path / "outer-cache")  # the run's own cache is gone
    engines = meta["engines"]
    measured = sorted({r.schema for r in responses})
    assert len(measured) == 3 and len(meta["warmup"]) == 1 and set(measured) | set(meta["warmup"]) == set(CASES)
    assert len(responses) == 3 * len(engines)
    vocab, encode = mb.ml.tiny_vocab()
    expected = {"a_pass.json": "ok", "b_refused.json": "refused", "c_order.json": "rejected", "d_pass.json": "ok"}
    for r in responses:
        if r.engine == "grammarc":
            assert r.status == expected[r.schema], (r.schema, r.detail)
        assert r.status in ("ok", "refused", "rejected", "crash")
        if r.status == "ok":
            instance = mb.Case(r.schema, None, tuple(CASES[r.schema]["tests"])).valid_instance()
            assert r.tokens == len(encode(json.dumps(instance, ensure_ascii=False))) > 0
            assert len(r.tbm_us) == len(r.mask_us) == len(r.advance_us) == r.tokens
            assert r.ttfm_us == pytest.approx(sum(r.parts_us.values()), rel=1e-6, abs=0.01)
            assert r.whole_us() == pytest.approx(r.ttfm_us + sum(r.tbm_us))
    ours = [r for r in responses if r.engine == "grammarc" and r.status == "ok"]
    assert ours and all(list(r.parts_us) == ["schema", "compile", "engine", "first mask"] for r in ours)
    summary = mb.cold_summary(responses, engines)
    assert [row["engine"] for row in summary] == engines
    assert list(summary[0]) == ["engine", "schemas", "ok", "refused", "rejected", "crash", "tokens", "TTFM p50 ms",
                                "TTFM p99 ms", "TBM mean us", "TBM p50 us", "TBM p99 us", "whole p50 ms",
                                "whole p90 ms"]
    assert summary[0]["ok"] == sum(expected[s] == "ok" for s in measured)
    assert "where TTFM goes" in printed and "not answered in full" in printed
    names = {p.name for p in out_dir.iterdir()}
    assert names == {"maskbench-cold-tiny.csv", "maskbench-cold-tiny-common.csv", "maskbench-cold-tiny-responses.csv",
                     "maskbench-cold-tiny.json"}
    saved = json.loads((out_dir / "maskbench-cold-tiny.json").read_text())
    assert saved["meta"]["warmup"] == meta["warmup"] and len(saved["responses"]) == len(responses)
    profiles = {p.name for p in (tmp_path / "prof").iterdir()}
    assert profiles == {"cold-ttfm.prof", "cold-ttfm-top.txt", "cold-tbm.prof", "cold-tbm-top.txt"}
    assert "by cumulative time" in (tmp_path / "prof" / "cold-ttfm-top.txt").read_text()


def test_repeated_cold_runs_keep_each_responses_fastest_run(mb, data, tmp_path, capsys, monkeypatch):
    """--repeat 2: every schema answered twice, in fresh forks; one response per (schema,
    engine) is kept, said in the header and the saved meta."""
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", str(tmp_path / "outer-cache"))
    responses, meta = mb.main(["--mode", "cold", "--data", str(data), "--vocab", "tiny", "--schemas", "2",
                               "--warmup", "1", "--repeat", "2", "--peer", "none"])
    assert meta["repeat"] == 2 and len(responses) == 2
    assert "each response the fastest of 2 runs" in capsys.readouterr().out


def test_the_run_kept_is_the_fastest_of_the_usual_outcome(mb):
    def run(status, ttfm, tbm=()):
        return mb.Response("grammarc", "s.json", status, ttfm_us=ttfm, tbm_us=list(tbm))

    fast, slow, crash = run("ok", 5.0, [1.0]), run("ok", 4.0, [9.0]), run("crash", 0.0)
    assert mb.best_run([slow, crash, fast]) is fast
    assert mb.best_run([crash, run("crash", 1.0), fast]).status == "crash"
    assert mb.best_run([crash, slow]) is slow  # as often: the answer is kept over the crash
    with pytest.raises(SystemExit):
        mb.parse_args(["--mode", "cold", "--repeat", "0"])


def test_isolated_workers_report_errors_hangs_and_deaths(mb):
    def boom():
        raise KeyError("k")

    tasks = [("ok", lambda: 7), ("error", boom), ("hang", lambda: time.sleep(30)), ("died", lambda: os.kill(os.getpid(), signal.SIGKILL))]
    outcomes = dict(mb.run_isolated(tasks, workers=2, timeout=2.0))
    assert outcomes["ok"].kind == "ok" and outcomes["ok"].value == 7
    assert outcomes["error"].kind == "error" and outcomes["error"].error == "KeyError: 'k'"
    assert "boom" in outcomes["error"].trace
    assert outcomes["hang"].kind == "timeout" and outcomes["hang"].error == "no answer after 2 s"
    assert outcomes["died"].kind == "died" and outcomes["died"].error == "killed by SIGKILL"


def _shared_pages() -> int:
    """Pages of this process's private writable mappings still shared with another (present,
    not exclusively mapped: /proc/self/pagemap bits 63 and 56)."""
    import numpy as np

    page, count = os.sysconf("SC_PAGE_SIZE"), 0
    with open("/proc/self/maps") as maps, open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        for line in maps.read().splitlines():
            span, perms = line.split()[:2]
            if perms.startswith("rw") and perms[3] == "p":
                lo, hi = (int(x, 16) for x in span.split("-"))
                pagemap.seek(lo // page * 8)
                entries = np.frombuffer(pagemap.read((hi - lo) // page * 8), dtype=np.uint64)
                count += int(((entries >> np.uint64(63)) & ~(entries >> np.uint64(56)) & np.uint64(1)).sum())
    return count


@pytest.mark.skipif(not os.path.exists("/proc/self/pagemap"), reason="needs Linux's /proc/self/pagemap")
def test_a_cold_fork_copies_the_pages_it_shares_before_answering(mb):
    """`unshare`: a response in a fork meets no copy-on-write page (a server's never does)."""
    warm = bytearray(b"x" * (8 << 20))  # 2,048 pages of the parent's, shared by each fork

    def task(copy: bool) -> tuple[int, int, int]:
        before = _shared_pages()
        copied = mb.unshare_memory() if copy else 0
        return before, copied, _shared_pages()

    outcomes = dict(mb.run_isolated([("copied", lambda: task(True)), ("kept", lambda: task(False))]))
    before, copied, after = outcomes["copied"].value
    assert before >= 2048 and copied >= 2048 and after == 0
    assert outcomes["kept"].value[2] >= 2048  # without it, the parent's pages stay shared
    assert len(warm) == 8 << 20


def test_schema_order_follows_refs_branches_and_items(mb):
    schema = {"$defs": {"P": {"properties": {"y": {"type": "integer"}, "x": {"type": "integer"}}}},
              "properties": {"b": {"$ref": "#/$defs/P"}, "a": {"type": "array", "items": {"$ref": "#/$defs/P"}}},
              "allOf": [{"properties": {"c": {}}}]}
    value = {"z": 0, "c": 1, "a": [{"x": 1, "y": 2}], "b": {"x": 3, "y": 4}}
    ordered = mb.in_schema_order(value, schema, schema)
    assert json.dumps(ordered) == '{"b": {"y": 4, "x": 3}, "a": [{"y": 2, "x": 1}], "c": 1, "z": 0}'


def test_schema_order_picks_the_branch_and_pattern_a_value_uses(mb):
    schema = {"$defs": {"S": {"properties": {"image": {}, "env": {"properties": {"k": {}, "j": {}}}}}},
              "patternProperties": {"^svc": {"$ref": "#/$defs/S"}},
              "properties": {"u": {"oneOf": [{"properties": {"p": {}, "q": {}}}, {"properties": {"s": {}, "r": {}}}]}}}
    value = {"svc1": {"env": {"j": 1, "k": 2}, "image": "x"}, "u": {"r": 1, "s": 2}}
    ordered = mb.in_schema_order(value, schema, schema)
    assert json.dumps(ordered) == '{"u": {"s": 2, "r": 1}, "svc1": {"image": "x", "env": {"k": 2, "j": 1}}}'


def test_isolated_workers_have_a_memory_limit(mb):
    outcomes = dict(mb.run_isolated([("big", lambda: len(bytearray(1 << 30)))], memory_mb=256))
    assert outcomes["big"].kind == "error" and outcomes["big"].error == "MemoryError: "


@pytest.mark.parametrize("error, expected", [
    ("UnsupportedSchemaError: #/definitions/x/oneOf: keyword 'oneOf' is not supported: its branches are not "
     "provably disjoint, and the negation of 'pattern' is not supported",
     "UnsupportedSchemaError: keyword 'oneOf' is not supported: its branches are not provably disjoint, and the "
     "negation of 'pattern' is not supported"),
    ("UnsupportedSchemaError: #/properties/u/format: keyword 'format' is not supported: unknown format 'url'",
     "UnsupportedSchemaError: keyword 'format' is not supported: unknown format"),
    ("StateBudgetExceeded: pattern '\"(?:[a-z]|\\\\u00'){0,4096}\"' is too large: its automaton would need about "
     "327685 states, more than the budget of 50000",
     "StateBudgetExceeded: pattern '...' is too large: its automaton would need about N states, more than the "
     "budget of N"),
    ("UnsupportedSchemaError: #/p/pattern: keyword 'pattern' is not supported: lookaround and inline flags are "
     "not supported (at offset 2 of pattern '^(?!x).*')",
     "UnsupportedSchemaError: keyword 'pattern' is not supported: lookaround and inline flags are not supported"),
    ("SchemaError: #/oneOf/0/$ref: $ref '#/$defs/a' does not resolve", "SchemaError: $ref '...' does not resolve"),
])
def test_refusal_reasons_abstract_pointers_and_values(mb, error, expected):
    assert mb.reason(error) == expected


def test_a_response_names_each_part_as_it_ends(mb, data):
    """`respond_grammarc(ended=...)`: every part in order for an answered schema, only those
    reached for a refused one (bench/instructions.py --per-phase dumps a count at each)."""
    vocab, encode = mb.ml.tiny_vocab()
    cases = {case.name: case for case in mb.load_cases(data)}
    for name, expected in (("a_pass.json", list(mb.PHASES)), ("b_refused.json", [])):
        ended: list[str] = []
        ids = encode(json.dumps(cases[name].valid_instance(), ensure_ascii=False))
        response = mb.respond_grammarc(cases[name], ids, vocab, "flexible", ended=ended.append)
        assert ended == expected, (name, response.status)
    assert mb.PHASES == ("schema", "compile", "engine + first mask", "masks")


def test_instruction_reports_read_per_schema_and_per_phase_dumps(tmp_path, capsys):
    instructions = bench_scripts.load("instructions.py", "instructions")
    try:
        def dump(n: int, name: str, total: int) -> None:
            (tmp_path / f"cg.{n}").write_text(f"desc: Trigger: Client Request: {name}\nsummary: {total}\n")

        for n, (name, total) in enumerate([("b.json", 3_000_000), ("a.json", 1_000_000), ("c.json", 2_000_000)]):
            dump(n + 1, name, total)
        instructions.report(str(tmp_path / "cg"))
        assert capsys.readouterr().out.splitlines() == [
            "     1.00 M  a.json", "     2.00 M  c.json", "     3.00 M  b.json",
            "     2.00 M  median of 3 schemas; 6.0 M in all"]
        for path in tmp_path.glob("cg.*"):
            path.unlink()
        parts = {"a.json": (1, 2, 3, 4), "b.json": (2, 2, 2, 2)}
        n = 0
        for name, counts in parts.items():
            for phase, count in zip(instructions.mb.PHASES, counts):
                n += 1
                dump(n, f"{name}{instructions.PHASE_MARK}{phase}", count * 1_000_000)
        instructions.report(str(tmp_path / "cg"))
        assert capsys.readouterr().out.splitlines() == [
            "    schema   compile  engine + first mask     masks     total  (M instructions)",
            "      2.00      2.00                 2.00      2.00      8.00  b.json",
            "      1.00      2.00                 3.00      4.00     10.00  a.json",
            "      1.50      2.00                 2.50      3.00            median of each phase",
            "     9.00 M  median of 2 schemas; 18.0 M in all"]
    finally:
        bench_scripts.unload("instructions", "maskbench", "mask_latency", "peers")
