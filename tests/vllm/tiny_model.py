"""A tiny random-weight Llama with a small byte-level BPE tokenizer, written to a folder.

Everything is built offline: the tokenizer is trained by the `tokenizers` library on a
fixed, generated corpus (JSON-like text, so JSON tokens are multi-byte), and the model
is a randomly initialised `LlamaForCausalLM`. Its logits are wider than the tokenizer
(`PADDING` extra columns), as in real models with padded vocabularies. Head size 64:
vLLM's CPU attention refuses 16.
"""

from __future__ import annotations

import random
from pathlib import Path

SPECIALS = ("<s>", "</s>", "<pad>")  # ids 0, 1, 2
BOS, EOS, PAD = 0, 1, 2
TOKENIZER_SIZE = 600
PADDING = 40  # logits columns past the tokenizer


def _corpus(seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = ["name", "age", "ok", "true", "false", "null", "items", "id", "value", "email", "example",
             "com", "alpha", "beta", "gamma", "the", "and", "of", "a", "is"]
    lines = []
    for _ in range(2000):
        key, other = rng.choice(words), rng.choice(words)
        number = rng.randint(-999, 9999)
        lines.append(f'{{"{key}": "{other}", "{other}": {number}, "ok": {rng.choice(["true", "false", "null"])}}}')
        lines.append(" ".join(rng.choice(words) for _ in range(8)) + f" {other}@{key}.com")
    return lines


def build(folder: str | Path, *, seed: int = 0) -> Path:
    """Write tokenizer, config, generation config and random weights to `folder`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TOKENIZER_SIZE,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(_corpus(seed), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        clean_up_tokenization_spaces=False,
    )
    assert [tokenizer.convert_tokens_to_ids(t) for t in SPECIALS] == [BOS, EOS, PAD]
    tokenizer.save_pretrained(folder)

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer) + PADDING,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,  # head size 64
        num_key_value_heads=1,
        max_position_embeddings=512,
        bos_token_id=BOS,
        eos_token_id=EOS,
        pad_token_id=PAD,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(folder)
    GenerationConfig(bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD).save_pretrained(folder)
    return folder
