"""Tests of the vLLM integration: they need vLLM, which lives in its own environment.

vLLM pins its own torch build, so it never shares the main test environment: CI builds
``.venv-vllm`` (docs/serving.rst's recipe) and runs ``python -m pytest tests/vllm`` there.
Anywhere vLLM cannot be imported, this whole folder is skipped with the reason.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # else VllmConfig cannot infer a device here
os.environ.setdefault("HF_HUB_OFFLINE", "1")

try:
    import vllm  # noqa: F401
except Exception as error:  # noqa: BLE001 - ImportError, or a broken install
    pytest.skip(
        f"vLLM is not importable here ({type(error).__name__}: {error}); the vLLM tests run in their own "
        "environment: see docs/serving.rst, or .ci/run which builds .venv-vllm",
        allow_module_level=True,
    )

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import tiny_model  # noqa: E402


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """A tiny random Llama and its tokenizer on disk (built once per session)."""
    return tiny_model.build(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def vllm_config(model_dir):
    from vllm.config import ModelConfig, VllmConfig

    return VllmConfig(model_config=ModelConfig(model=str(model_dir)))
