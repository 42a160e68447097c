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

# Hypothesis: random exploration on developers' machines; in CI (.ci/run sets
# HYPOTHESIS_PROFILE=ci) the same examples every run, so that CI judges the change and not
# the luck of a draw. A failure prints the example and a reproduction blob either way.
try:
    from hypothesis import settings
except ImportError:  # the vLLM environments (tests/vllm) have no hypothesis and need none
    settings = None
if settings is not None:
    settings.register_profile("ci", derandomize=True, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
