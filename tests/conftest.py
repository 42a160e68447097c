"""Make the test helpers (oracle.py, strategies.py) importable as top-level modules."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
