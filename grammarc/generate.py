"""`grammarc.generate`: one constrained completion with a transformers model, as text.

The returned text is what the grammar was checked on: the bytes the generated tokens add
(`Vocabulary`), decoded as UTF-8. With SentencePiece tokenizers that includes the space
that a first token such as ``▁{`` adds, which ``tokenizer.decode`` would strip (see
`grammarc.hf` on the prompt/generation boundary).
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

from .errors import GrammarcError
from .hf import GrammarLogitsProcessor, GrammarSpec
from .vocabulary import Vocabulary

__all__ = ["generate"]


def generate(
    model: Any,
    tokenizer: Any,
    grammar: GrammarSpec,
    prompt: str | Sequence[dict] = "",
    *,
    vocab: Vocabulary | None = None,
    finish_after: int | None = None,
    max_new_tokens: int = 256,
    **kwargs: Any,
) -> str:
    """Generate a continuation of `prompt` that is a string of `grammar`; return its text.

    `grammar`: a `Grammar`, a stdlib name (``"json"``), or EBNF text. `prompt`: text, or
    chat messages (``[{"role": "user", "content": ...}]``) put through the tokenizer's chat
    template with the generation prompt. `finish_after`: steer to a shortest completion
    after that many tokens (see `GrammarLogitsProcessor`). Other keyword arguments go to
    ``model.generate`` (``do_sample``, ``temperature``, ...).

    Warns (RuntimeWarning) when generation stopped before the text was complete, e.g. at
    `max_new_tokens`; the partial text is returned.
    """
    import torch

    if kwargs.get("num_return_sequences", 1) != 1 or kwargs.get("num_beams", 1) != 1:
        raise GrammarcError(
            "grammarc.generate makes one sequence without beam search; for more, pass a "
            "GrammarLogitsProcessor to model.generate"
        )
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
    if not processor.is_complete(0):
        warnings.warn(
            f"generation stopped after {sequences.shape[1] - input_ids.shape[1]} tokens, before the "
            "text was complete: raise max_new_tokens or set finish_after",
            RuntimeWarning,
            stacklevel=2,
        )
    return processor.generated_bytes(0).decode("utf-8", errors="replace")


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
