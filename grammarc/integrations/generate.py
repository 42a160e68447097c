"""`grammarc.generate`: one constrained completion with a transformers model, as text.

The returned text is what the grammar was checked on: the bytes the generated tokens add
(`Vocabulary`), decoded as UTF-8. With SentencePiece tokenizers that includes the space
that a first token such as ``▁{`` adds, which ``tokenizer.decode`` would strip (see
`grammarc.integrations.transformers` on the prompt/generation boundary).

Decoding runs in grammarc's own loop (`grammarc.integrations.decode`: KV cache, opportunistic masking,
jump-forward) unless a keyword argument only ``model.generate`` understands is given; then
``model.generate`` with a `GrammarLogitsProcessor` does it, as in earlier versions.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

from grammarc.engine import Engine
from grammarc.errors import GrammarcError
from grammarc.integrations.transformers import GrammarLogitsProcessor, GrammarSpec, _model_eos_ids, resolve_grammar, vocabulary_for
from grammarc.tokens.vocabulary import Vocabulary

__all__ = ["generate"]


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


def generate(
    model: Any,
    tokenizer: Any,
    grammar: GrammarSpec,
    prompt: str | Sequence[dict] = "",
    *,
    vocab: Vocabulary | None = None,
    finish_after: int | None = None,
    max_new_tokens: int = 256,
    jump_forward: bool | None = None,
    opportunistic: bool | None = None,
    **kwargs: Any,
) -> str:
    """Generate a continuation of `prompt` that is a string of `grammar`; return its text.

    `grammar`: a `Grammar`, a stdlib name (``"json"``), or EBNF text. `prompt`: text, or
    chat messages (``[{"role": "user", "content": ...}]``) put through the tokenizer's chat
    template with the generation prompt. `finish_after`: steer to a shortest completion
    after that many tokens (see `GrammarLogitsProcessor`). `max_new_tokens` counts every
    generated token, jumped ones included.

    Decoding runs in grammarc's own loop (`grammarc.integrations.decode.decode`: the model's KV cache,
    one sequence) when every other keyword argument is one of ``do_sample``,
    ``temperature``, ``top_k``, ``top_p`` (defaults from ``model.generation_config``, as
    in ``model.generate``), ``generator`` (a ``torch.Generator``; default: the global
    torch RNG) or ``pad_token_id`` (ignored). That loop saves work in two ways, both on
    by default (``None``):

    * `opportunistic`: the token drawn from the unmasked logits is checked first and the
      mask computed only when the grammar rejects it. Exact (same distribution as masking
      first) for greedy search and plain temperature sampling; with top-k or top-p the
      loop masks first, since truncation on unmasked logits would change the result
      (transformers' default ``top_k=50`` applies when sampling: pass ``top_k=0``);
    * `jump_forward`: text the grammar forces is tokenized canonically and fed to the
      model in one forward pass with the sampled token, stopping before any token the
      model could still want to run across the end of the forced text.

    Any other keyword argument (``repetition_penalty``, ``logits_processor``, ...), or a
    ``model.generation_config`` that sets something the loop does not reproduce (a
    repetition penalty, ``min_new_tokens``, ``bad_words_ids``, ...), sends the call to
    ``model.generate`` with a `GrammarLogitsProcessor` instead, as before (no
    opportunistic masking, no jump-forward); asking for ``jump_forward=True`` or
    ``opportunistic=True`` together with such an argument raises `GrammarcError`.

    Warns (RuntimeWarning) when generation stopped before the text was complete, e.g. at
    `max_new_tokens`; the partial text is returned.
    """
    if kwargs.get("num_return_sequences", 1) != 1 or kwargs.get("num_beams", 1) != 1:
        raise GrammarcError(
            "grammarc.generate makes one sequence without beam search; for more, pass a "
            "GrammarLogitsProcessor to model.generate"
        )
    other = sorted(set(kwargs) - LOOP_KWARGS) or _config_settings(model)
    if other:
        if jump_forward or opportunistic:
            raise GrammarcError(
                f"jump_forward and opportunistic need grammarc's decode loop, which does not take "
                f"{', '.join(other)}: drop those, or leave jump_forward/opportunistic unset to use "
                "model.generate"
            )
        text, complete, n = _with_model_generate(
            model, tokenizer, grammar, prompt, vocab, finish_after, max_new_tokens, kwargs
        )
    else:
        text, complete, n = _with_decode_loop(
            model, tokenizer, grammar, prompt, vocab, finish_after, max_new_tokens,
            jump_forward is not False, opportunistic is not False, kwargs,
        )
    if not complete:
        warnings.warn(
            f"generation stopped after {n} tokens, before the text was complete: raise "
            "max_new_tokens or set finish_after",
            RuntimeWarning,
            stacklevel=2,
        )
    return text.decode("utf-8", errors="replace")


def _config_settings(model: Any) -> list[str]:
    """The settings of ``model.generation_config`` only ``model.generate`` applies."""
    config = getattr(model, "generation_config", None)
    settings = []
    for name, neutral in _CONFIG_NEUTRAL.items():
        value = getattr(config, name, neutral)
        if value is not None and value != neutral:
            settings.append(f"generation_config.{name}")
    return settings


def _with_decode_loop(
    model: Any, tokenizer: Any, grammar: GrammarSpec, prompt: Any, vocab: Vocabulary | None,
    finish_after: int | None, max_new_tokens: int, jump_forward: bool, opportunistic: bool, kwargs: dict,
) -> tuple[bytes, bool, int]:
    from grammarc.integrations.decode import Sampling, decode

    vocab = vocab if vocab is not None else vocabulary_for(tokenizer, model)
    engine = Engine(resolve_grammar(grammar), vocab)
    eos = next((i for i in _model_eos_ids(model) if i in vocab.eos_token_ids), None)
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
    prompt_ids = _encode(tokenizer, prompt)[0].tolist()
    result = decode(
        model, prompt_ids, engine, max_new_tokens=max_new_tokens, sampling=sampling,
        generator=kwargs.get("generator"), opportunistic=opportunistic, jump_forward=jump_forward,
        encode=lambda text: tokenizer(text, add_special_tokens=False)["input_ids"],
        finish_after=finish_after, eos_token_id=eos,
    )
    return result.text, result.complete, len(result.ids)


def _with_model_generate(
    model: Any, tokenizer: Any, grammar: GrammarSpec, prompt: Any, vocab: Vocabulary | None,
    finish_after: int | None, max_new_tokens: int, kwargs: dict,
) -> tuple[bytes, bool, int]:
    import torch

    processor = GrammarLogitsProcessor.from_grammars(
        [grammar], tokenizer, model=model, vocab=vocab, finish_after=finish_after
    )
    input_ids = _encode(tokenizer, prompt).to(model.device)
    if getattr(model.generation_config, "pad_token_id", None) is None and "pad_token_id" not in kwargs:
        kwargs["pad_token_id"] = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else processor._forced_eos[0]
    extra = list(kwargs.pop("logits_processor", None) or [])
    output = model.generate(
        input_ids,
        attention_mask=torch.ones_like(input_ids),
        logits_processor=[processor, *extra],
        max_new_tokens=max_new_tokens,
        **kwargs,
    )
    sequences = output.sequences if hasattr(output, "sequences") else output
    processor.update(sequences)
    return processor.generated_bytes(0), processor.is_complete(0), sequences.shape[1] - input_ids.shape[1]


def _encode(tokenizer: Any, prompt: str | Sequence[dict]) -> Any:
    """Prompt ids as a (1, n) tensor; an empty prompt becomes the BOS token."""
    import torch

    if not isinstance(prompt, str):
        text = tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=False)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    else:
        ids = tokenizer(prompt)["input_ids"] if prompt else []
    if not ids:
        bos = getattr(tokenizer, "bos_token_id", None)
        if bos is None:
            raise GrammarcError("the prompt is empty and the tokenizer has no BOS token to start from")
        ids = [bos]
    return torch.tensor([ids], dtype=torch.long)
