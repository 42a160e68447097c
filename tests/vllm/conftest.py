"""Fixtures of the vLLM integration tests: a tiny model on disk and vLLM's config for it.

vLLM pins its own torch build, so it never shares the main test environment: CI builds
``.venv-vllm`` (docs/serving.rst's recipe) and runs ``python -m pytest tests/vllm`` there.
Each test module starts with `vllm_env.require()`, which skips it with the reason where
vLLM is not installed. (A skip raised here, in the conftest, would crash pytest when the
folder is named on the command line.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tiny_model

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # else VllmConfig cannot infer a device on CPU
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """A tiny random Llama and its tokenizer on disk (built once per session)."""
    return tiny_model.build(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def vllm_config(model_dir):
    from vllm.config import ModelConfig, VllmConfig

    return VllmConfig(model_config=ModelConfig(model=str(model_dir)))
