"""Loading the benchmark scripts (bench/ is not a package) as modules for smoke tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load(filename: str, name: str) -> ModuleType:
    """bench/`filename` as module `name`, registered in sys.modules (dataclasses look their
    module up by name); `unload` takes it out again."""
    spec = importlib.util.spec_from_file_location(name, BENCH / filename)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def unload(*names: str) -> None:
    for name in names:
        sys.modules.pop(name, None)
