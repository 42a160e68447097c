"""JSON-Schema-Test-Suite (draft4, draft6, draft7, draft2019-09, draft2020-12) against the front-end.

Each draft's folder is read with ``draft=`` set to that draft. Per file we count, over test
instances:
- passed: the schema compiled, every valid instance is accepted both as ``json.dumps(x)`` and
  ``json.dumps(x, indent=2)``, every invalid instance (compact form) is rejected;
- refused: the schema raised UnsupportedSchemaError / SchemaError (every instance of it);
- false accepts: an invalid instance was accepted (a soundness bug: must stay 0);
- false rejects: a valid instance was rejected (we narrowed the language);
- bugs: compiling raised anything else (must stay 0).

`format` is judged under the reading each file tests: the top-level ``format.json`` files
treat it as an annotation (run with ``formats="ignore"``), the ``optional/format/`` files as an
assertion (``formats="strict"``: a format grammarc does not implement is refused). Every other
file runs with the defaults.

The expected counts live in tests/data/schema_suite_<draft>.json; the test fails on any false
accept or bug, and on any per-file drop in passed cases. Regenerate the snapshots with
``python tests/test_schema_suite.py --update`` (``-v`` lists every refusal and false reject).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from grammarc import Grammar
from grammarc.errors import SchemaError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "json-schema-test-suite"
SNAPSHOTS = Path(__file__).resolve().parent / "data"
DRAFTS = {"draft4": "4", "draft6": "6", "draft7": "7", "draft2019-09": "2019-09", "draft2020-12": "2020-12"}
COUNTS = ("passed", "refused", "false_rejects", "false_accepts", "bugs")


def _registry() -> dict:
    """The suite's remote documents, offered as pre-loaded URIs (nothing is fetched)."""
    out = {}
    remotes = DATA / "remotes"
    for path in sorted(remotes.rglob("*.json")):
        rel = path.relative_to(remotes).as_posix()
        out[f"http://localhost:1234/{rel}"] = json.loads(path.read_text(encoding="utf-8"))
    return out


def options_for(rel: str) -> dict:
    """The `formats=` reading a suite file tests (see the module docstring)."""
    if rel == "format.json":
        return {"formats": "ignore"}
    if rel.startswith("optional/format/"):
        return {"formats": "strict"}
    return {}


def run_file(path: Path, draft: str, registry: dict, options: dict) -> dict:
    counts = dict.fromkeys(COUNTS, 0)
    details = []
    for case in json.loads(path.read_text(encoding="utf-8")):
        tests = case["tests"]
        try:
            grammar = Grammar.from_json_schema(case["schema"], draft=draft, registry=registry, **options)
            grammar.compile()
        except SchemaError as exc:
            counts["refused"] += len(tests)
            details.append(f"refused {case['description']}: {exc}")
            continue
        except Exception as exc:  # a compiler bug, not a refusal
            counts["bugs"] += len(tests)
            details.append(f"BUG {case['description']}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        for test in tests:
            data = test["data"]
            if test["valid"]:
                ok = grammar.accepts(json.dumps(data)) and grammar.accepts(json.dumps(data, indent=2))
                counts["passed" if ok else "false_rejects"] += 1
                if not ok:
                    details.append(f"false reject: {case['description']} / {test['description']}")
            else:
                accepted = grammar.accepts(json.dumps(data))
                counts["false_accepts" if accepted else "passed"] += 1
                if accepted:
                    details.append(f"FALSE ACCEPT: {case['description']} / {test['description']}")
    counts["details"] = details
    return counts


def run_draft(folder: str, registry: dict | None = None) -> dict:
    registry = _registry() if registry is None else registry
    root = DATA / "tests" / folder
    results = {}
    for path in sorted(root.rglob("*.json")):
        rel = path.relative_to(root).as_posix()
        results[rel] = run_file(path, DRAFTS[folder], registry, options_for(rel))
    return results


def totals(results: dict) -> dict:
    return {key: sum(c[key] for c in results.values()) for key in COUNTS}


def snapshot_path(folder: str) -> Path:
    return SNAPSHOTS / f"schema_suite_{folder}.json"


@pytest.fixture(scope="module", params=sorted(DRAFTS))
def draft_results(request):
    if not DATA.exists():
        pytest.skip(f"JSON-Schema-Test-Suite data not found at {DATA}")
    return request.param, run_draft(request.param)


def test_no_false_accepts_and_no_bugs(draft_results):
    folder, results = draft_results
    bad = {name: [d for d in c["details"] if d.startswith(("FALSE ACCEPT", "BUG"))]
           for name, c in results.items() if c["false_accepts"] or c["bugs"]}
    assert not bad, json.dumps(bad, indent=1)


def test_no_drop_below_snapshot(draft_results):
    folder, results = draft_results
    print(f"{folder}: {totals(results)}")
    snapshot = json.loads(snapshot_path(folder).read_text(encoding="utf-8"))
    drops = [f"{name}: {results.get(name, {}).get('passed', 0)} passed < snapshot {expected['passed']}"
             for name, expected in snapshot["files"].items()
             if results.get(name, {}).get("passed", 0) < expected["passed"]]
    assert not drops, "\n".join(drops)
    assert totals(results)["passed"] >= snapshot["totals"]["passed"]
    if folder == "draft2020-12":
        assert totals(results)["passed"] >= 1300, totals(results)


if __name__ == "__main__":
    registry = _registry()
    for folder in sys.argv[1:] if any(a in DRAFTS for a in sys.argv[1:]) else sorted(DRAFTS):
        if folder not in DRAFTS:
            continue
        results = run_draft(folder, registry)
        if "-v" in sys.argv:
            for name, c in results.items():
                print(name, {k: c[k] for k in COUNTS})
                for d in c["details"]:
                    print("   ", d)
        print(f"{folder}: {totals(results)}", flush=True)
        if "--update" in sys.argv:
            files = {name: {k: c[k] for k in COUNTS} for name, c in results.items()}
            snapshot_path(folder).write_text(json.dumps({"totals": totals(results), "files": files}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
