"""Make the test helpers (oracle.py, strategies.py) importable as top-level modules."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# Token-index scans are cached on disk (grammarc/tokens/scan_cache.py): keep test runs hermetic.
import os  # noqa: E402
import tempfile  # noqa: E402

os.environ.setdefault("GRAMMARC_CACHE_DIR", tempfile.mkdtemp(prefix="grammarc-test-cache-"))
