"""Generate with a real `vllm.LLM` and grammarc's logits processor; print the results as JSON.

Run as a script (vLLM starts its workers with spawn, so nothing may run at import):
``python e2e_generate.py MODEL_DIR REQUESTS_JSON OUT_JSON``. REQUESTS_JSON is a list of
``{"prompt": str, "grammarc": {...} | null, "seed": int, "max_tokens": int}``; OUT_JSON
gets, per request, the generated token ids, text and finish reason, and the error that a
request with an invalid grammar got. grammarc is not named anywhere here: vLLM loads it
through its ``vllm.logits_processors`` entry point.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main(model_dir: str, requests_path: str, out_path: str) -> None:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from vllm import LLM, SamplingParams

    requests = json.loads(open(requests_path, encoding="utf-8").read())
    began = time.perf_counter()
    llm = LLM(
        model=model_dir,
        gpu_memory_utilization=0.1,
        max_model_len=256,
        max_num_seqs=8,
        seed=0,
        enforce_eager=True,
    )
    started = time.perf_counter() - began
    params = [
        SamplingParams(
            temperature=1.0,
            seed=r["seed"],
            max_tokens=r["max_tokens"],
            extra_args=None if r["grammarc"] is None else {"grammarc": r["grammarc"]},
        )
        for r in requests
    ]
    began = time.perf_counter()
    outputs = llm.generate([r["prompt"] for r in requests], params, use_tqdm=False)
    generated = time.perf_counter() - began
    results = [
        {
            "token_ids": list(o.outputs[0].token_ids),
            "text": o.outputs[0].text,
            "finish_reason": o.outputs[0].finish_reason,
        }
        for o in outputs
    ]
    try:  # a bad grammar is refused when the request is admitted
        llm.generate(["x"], SamplingParams(max_tokens=4, extra_args={"grammarc": {"regex": "(?<=a)b"}}), use_tqdm=False)
        refused = None
    except Exception as error:  # noqa: BLE001 - vLLM's VLLMValidationError, whatever its base
        refused = f"{type(error).__name__}: {error}"
    with open(out_path, "w", encoding="utf-8") as out:
        json.dump({"results": results, "refused": refused, "startup_s": started, "generate_s": generated}, out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
