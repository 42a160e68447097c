"""Skip a test module, with the reason, where vLLM is not installed."""

from __future__ import annotations

import pytest


def require() -> None:
    """Call at the top of a test module, before importing vLLM."""
    try:  # (a bare ``import vllm`` finds tests/vllm itself as a namespace package)
        from vllm import SamplingParams  # noqa: F401
    except Exception as error:  # noqa: BLE001 - not installed, or a broken install
        pytest.skip(
            f"vLLM is not installed in this environment ({type(error).__name__}: {error}); the vLLM "
            "tests run in their own: see docs/serving.rst, or .ci/run, which builds .venv-vllm",
            allow_module_level=True,
        )
