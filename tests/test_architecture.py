"""The package layout is a pipeline: imports point down it, never up, and never in a circle.

Counted from the source, imports inside functions included (an import inside a function is
still a dependency; it only hides it). See docs/architecture.rst for the layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"grammarc": ROOT / "grammarc", "grammarc.frontends": ROOT / "frontends",
           "grammarc.stdlib_grammars": ROOT / "stdlib_grammars"}

# Lower ranks are further down the pipeline; a module may import only strictly lower ranks,
# or modules of its own subpackage. Front-ends and the lowering are siblings: neither
# imports the other.
LAYERS = {
    "grammarc.errors": 0,
    "grammarc.allocation": 0,
    "grammarc.diskstore": 0,
    "grammarc.ir": 1,
    "grammarc.automata": 2,
    "grammarc.frontends": 3,
    "grammarc.lowering": 3,
    "grammarc.runtime": 4,
    "grammarc.tokens": 5,
    "grammarc.engine": 6,
    "grammarc.grammar": 7,
    "grammarc.stdlib_grammars": 8,
    "grammarc.integrations": 9,
    "grammarc.cli": 10,
    "grammarc.__main__": 11,
    "grammarc": 12,
}
MAX_LINES = 900


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in SOURCES.items():
        for path in (*folder.rglob("*.py"), *folder.rglob("*.c")):  # .c: compiled modules (automata._core)
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = _modules()


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path) -> set[str]:
    """Project modules that `module` imports, with the subpackages that get initialised on the way."""
    targets: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path.name == "__init__.py", node)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for name in names:
            while name not in MODULES and "." in name:
                name = name.rpartition(".")[0]
            if name not in MODULES:
                continue  # not ours
            targets.add(name)
            # importing a.b.c initialises a.b too; the top package is the public API and is
            # counted only where it is named
            parent = name.rpartition(".")[0]
            while parent and parent != "grammarc":
                if not module.startswith(parent + "."):  # our own package is initialised already
                    targets.add(parent)
                parent = parent.rpartition(".")[0]
    targets.discard(module)
    return targets


GRAPH = {module: _imports(module, path) if path.suffix == ".py" else set() for module, path in MODULES.items()}


def _layer(module: str) -> tuple[str, int]:
    name = module
    while name not in LAYERS:
        name = name.rpartition(".")[0]
    return name, LAYERS[name]


def test_no_import_cycle():
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycle = stack[stack.index(target):] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)


def test_imports_point_down_the_pipeline():
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        home, rank = _layer(module)
        for target in sorted(targets):
            there, target_rank = _layer(target)
            if there != home and target_rank >= rank:
                wrong.append(f"{module} imports {target} ({home} is layer {rank}, {there} is {target_rank})")
    assert wrong == []


def test_internal_modules_do_not_import_the_public_package():
    assert sorted(m for m, targets in GRAPH.items() if "grammarc" in targets and m != "grammarc.__main__") == []


def test_the_graph_sees_the_imports_it_must():
    # guards the scanner itself: a known edge inside a function and a known top-level edge
    assert "grammarc.frontends.ebnf" in GRAPH["grammarc.grammar"]
    assert "grammarc.lowering.compiler" in GRAPH["grammarc.engine"]
    assert "grammarc.ir.nodes" in GRAPH["grammarc.ir.check"]
    assert "grammarc.tokens" in GRAPH["grammarc.engine"]  # a package initialised on the way
    assert "grammarc.automata._core" in GRAPH["grammarc.automata.dfa"]  # a compiled module (_core.c)


def test_no_source_file_is_too_long_to_read_in_one_sitting():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def _recursive_closures_left_bound(path: Path) -> list[str]:
    """Nested functions that call themselves and that their enclosing function never
    unbinds with ``del``: each call leaves a reference cycle (function -> cell -> function)
    holding everything the closure captured, freed only by a collection."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for outer in ast.walk(tree):
        if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        deleted = {target.id for node in ast.walk(outer) if isinstance(node, ast.Delete)
                   for target in node.targets if isinstance(target, ast.Name)}
        for inner in outer.body:
            if isinstance(inner, ast.FunctionDef) and inner.name not in deleted:
                if any(isinstance(n, ast.Name) and n.id == inner.name for n in ast.walk(inner)):
                    found.append(f"{path.name}:{inner.lineno} {outer.name}.{inner.name}")
    return found


def test_recursive_closures_are_unbound_after_use():
    # compiling and masking run with the collector paused or rarely running (grammarc.allocation):
    # what they leave must go by reference counting (tests/test_garbage.py checks the result)
    left = [hit for m, p in MODULES.items() if p.suffix == ".py" for hit in _recursive_closures_left_bound(p)]
    assert left == []


def test_the_sdist_carries_every_compiled_source():
    """pip builds the extensions from an sdist as well: every C source and header of the
    package must be listed in MANIFEST.in (one left out builds from a checkout, where CI
    installs, and fails from the sdist)."""
    listed = {line.split(None, 1)[1].strip() for line in (ROOT / "MANIFEST.in").read_text().splitlines()
              if line.startswith("include ")}
    sources = {p.relative_to(ROOT).as_posix() for pattern in ("*.c", "*.h") for p in (ROOT / "grammarc").rglob(pattern)}
    assert sources and not sources - listed, sorted(sources - listed)
