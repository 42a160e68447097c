"""Running a transformers model under a `Target`: the machinery behind `grammarc.generate`.

`run` takes prompts (texts or chat messages) and a `Target` (a grammar, and how its text
becomes the result) and returns texts or values. One prompt is decoded in grammarc's own
loop (`grammarc.integrations.decode`: KV cache, opportunistic masking, jump-forward) unless
a keyword argument only ``model.generate`` understands is given; a list of prompts, or such
an argument, goes to ``model.generate`` with a `GrammarLogitsProcessor` (left-padded batch).

The text is what the grammar was checked on: the bytes the generated tokens add
(`Vocabulary`), decoded as UTF-8. With SentencePiece tokenizers that includes the space
that a first token such as ``▁{`` adds, which ``tokenizer.decode`` would strip (see
`grammarc.integrations.transformers` on the prompt/generation boundary).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from grammarc.engine import Engine
from grammarc.errors import GrammarcError
from grammarc.integrations.progress import stage
from grammarc.integrations.transformers import GrammarLogitsProcessor, _model_eos_ids, vocabulary_for
from grammarc.tokens.vocabulary import Vocabulary

__all__ = ["Target", "run"]


# Keyword arguments our decode loop understands; any other goes to model.generate.
LOOP_KWARGS = frozenset({"do_sample", "temperature", "top_k", "top_p", "generator", "pad_token_id"})
# Generation-config settings the loop does not reproduce, with their neutral values: a
# model whose generation_config sets one goes to model.generate, which honours it.
_CONFIG_NEUTRAL = {
    "repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "encoder_no_repeat_ngram_size": 0,
    "bad_words_ids": None, "min_new_tokens": None, "min_length": 0, "min_p": None, "typical_p": 1.0,
    "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "suppress_tokens": None, "begin_suppress_tokens": None,
    "forced_bos_token_id": None, "forced_eos_token_id": None, "sequence_bias": None,
    "exponential_decay_length_penalty": None, "guidance_scale": None, "num_beams": 1,
}


@dataclass(frozen=True)
class Target:
    """What a generation must produce: the grammar it is constrained to, and how its text
    becomes the result (`parse`; None: the text itself, with a warning when incomplete)."""

    grammar: Any  # a Grammar or CompiledGrammar
    parse: Callable[[str], Any] | None = None


def run(
    model: Any,
    tokenizer: Any,
    target: Target,
    prompt: str | Sequence[str] | None = None,
    *,
    messages: Sequence[dict] | Sequence[Sequence[dict]] | None = None,
    vocab: Vocabulary | None = None,
    finish_after: int | None = None,
    max_new_tokens: int = 256,
    jump_forward: bool | None = None,
    opportunistic: bool | None = None,
    progress: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Generate under `target` after each prompt; see `grammarc.generate` for every argument."""
    if kwargs.get("num_return_sequences", 1) != 1 or kwargs.get("num_beams", 1) != 1:
        raise GrammarcError(
            "grammarc.generate makes one sequence per prompt without beam search; for more, "
            "pass a list of prompts or a GrammarLogitsProcessor to model.generate"
        )
    goal = target
    prompts, batched = _prompts(prompt, messages)
    encoded = [_encode(tokenizer, p) for p in prompts]
    with stage("grammarc: compiling the grammar and its token index", progress=progress):
        vocab = vocab if vocab is not None else vocabulary_for(tokenizer, model)
        engine = Engine(goal.grammar, vocab)
    other = sorted(set(kwargs) - LOOP_KWARGS) or _config_settings(model)
    if batched or other:
        if jump_forward or opportunistic:
            why = "a list of prompts" if batched else ", ".join(other)
            raise GrammarcError(
                f"jump_forward and opportunistic need grammarc's decode loop, which does not take "
                f"{why}: drop those, or leave jump_forward/opportunistic unset to use model.generate"
            )
        if batched and "generator" in kwargs:
            raise GrammarcError("generator= works with one prompt; for a batch seed torch (torch.manual_seed)")
        outputs = _with_model_generate(model, tokenizer, engine, encoded, finish_after, max_new_tokens, kwargs)
    else:
        outputs = [_with_decode_loop(
            model, tokenizer, engine, encoded[0], finish_after, max_new_tokens,
            jump_forward is not False, opportunistic is not False, kwargs,
        )]
    results = [_result(goal, *output) for output in outputs]
    return results if batched else results[0]


def _prompts(prompt: Any, messages: Any) -> tuple[list[Any], bool]:
    """The prompts to encode (text, or a list of messages) and whether a list was given."""
    if prompt is not None and messages is not None:
        raise GrammarcError("give prompt or messages=, not both")
    if messages is not None:
        if not isinstance(messages, (list, tuple)) or not messages:
            raise GrammarcError("messages= takes a list of chat messages (dicts), or a list of such lists")
        if all(isinstance(m, dict) for m in messages):
            return [list(messages)], False
        if all(isinstance(c, (list, tuple)) and all(isinstance(m, dict) for m in c) for c in messages):
            return [list(c) for c in messages], True
        raise GrammarcError("messages= takes a list of chat messages (dicts), or a list of such lists")
    if prompt is None or isinstance(prompt, str):
        return [prompt or ""], False
    if isinstance(prompt, (list, tuple)):
        if not prompt:
            raise GrammarcError("the list of prompts is empty")
        if all(isinstance(p, str) for p in prompt):
            return list(prompt), True
        if any(isinstance(p, dict) for p in prompt):
            raise GrammarcError("chat messages go in messages=, not in prompt (a prompt list holds texts)")
    raise GrammarcError(f"prompt must be a text or a list of texts, got {type(prompt).__name__}")


def _result(goal: Target, text: bytes, complete: bool, n: int) -> Any:
    decoded = text.decode("utf-8", errors="replace")
    if not complete:
        message = (f"generation stopped after {n} tokens, before the text was complete: raise "
                   "max_new_tokens or set finish_after")
        if goal.parse is not None:
            raise GrammarcError(f"{message} (got {decoded[:80]!r})")
        warnings.warn(message, RuntimeWarning, stacklevel=4)  # _result, run, generate, the caller
    return decoded if goal.parse is None else goal.parse(decoded)


def _config_settings(model: Any) -> list[str]:
    """The settings of ``model.generation_config`` only ``model.generate`` applies."""
    config = getattr(model, "generation_config", None)
    settings = []
    for name, neutral in _CONFIG_NEUTRAL.items():
        value = getattr(config, name, neutral)
        if value is not None and value != neutral:
            settings.append(f"generation_config.{name}")
    return settings


def _model_eos(model: Any, engine: Engine) -> int | None:
    """The model's EOS id that the vocabulary knows (None: the vocabulary's smallest is used)."""
    return next((i for i in _model_eos_ids(model) if i in engine.vocab.eos_token_ids), None)


def _with_decode_loop(
    model: Any, tokenizer: Any, engine: Engine, prompt_ids: list[int],
    finish_after: int | None, max_new_tokens: int, jump_forward: bool, opportunistic: bool, kwargs: dict,
) -> tuple[bytes, bool, int]:
    from grammarc.integrations.decode import Sampling, decode

    eos = _model_eos(model, engine)
    config = getattr(model, "generation_config", None)

    def option(name: str, default: Any) -> Any:
        value = kwargs.get(name, getattr(config, name, None))
        return default if value is None else value

    sampling = Sampling(
        do_sample=bool(option("do_sample", False)),
        temperature=float(option("temperature", 1.0)),
        top_k=int(option("top_k", 0)),
        top_p=float(option("top_p", 1.0)),
    )
    result = decode(
        model, prompt_ids, engine, max_new_tokens=max_new_tokens, sampling=sampling,
        generator=kwargs.get("generator"), opportunistic=opportunistic, jump_forward=jump_forward,
        encode=lambda text: tokenizer(text, add_special_tokens=False)["input_ids"],
        finish_after=finish_after, eos_token_id=eos,
    )
    return result.text, result.complete, len(result.ids)


def _with_model_generate(
    model: Any, tokenizer: Any, engine: Engine, prompts: list[list[int]],
    finish_after: int | None, max_new_tokens: int, kwargs: dict,
) -> list[tuple[bytes, bool, int]]:
    """model.generate over left-padded prompts, a clone of `engine` per row."""
    import torch

    processor = GrammarLogitsProcessor([engine], eos_token_id=_model_eos(model, engine), finish_after=finish_after)
    kwargs = dict(kwargs)
    pad = kwargs.pop("pad_token_id", None)
    if pad is None:
        pad = getattr(model.generation_config, "pad_token_id", None)
    if pad is None:
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else processor._forced_eos[0]
    width = max(map(len, prompts))
    input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], dtype=torch.long)
    attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long)
    device = getattr(model, "device", None)
    if device is not None:
        input_ids, attention = input_ids.to(device), attention.to(device)
    extra = list(kwargs.pop("logits_processor", None) or [])
    output = model.generate(
        input_ids,
        attention_mask=attention,
        logits_processor=[processor, *extra],
        max_new_tokens=max_new_tokens,
        pad_token_id=pad,
        **kwargs,
    )
    sequences = output.sequences if hasattr(output, "sequences") else output
    processor.update(sequences)
    return [
        (processor.generated_bytes(row), processor.is_complete(row), len(processor.generated_ids(row)))
        for row in range(len(prompts))
    ]


def _encode(tokenizer: Any, prompt: str | list[dict]) -> list[int]:
    """Prompt ids; chat messages through the chat template; an empty prompt becomes BOS."""
    if isinstance(prompt, list):
        text = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    else:
        ids = tokenizer(prompt)["input_ids"] if prompt else []
    if not ids:
        bos = getattr(tokenizer, "bos_token_id", None)
        if bos is None:
            raise GrammarcError("the prompt is empty and the tokenizer has no BOS token to start from")
        ids = [bos]
    return list(ids)
