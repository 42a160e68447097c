"""``grammarc demo``: constrained generation end to end, offline, in a few seconds.

Without ``--model`` it builds a tiny randomly initialised `LlamaForCausalLM` from a config
(no download) whose vocabulary is Mistral's Tekken tokenizer (131,072 ids), which the
``mistral-common`` package ships as a file; `tekken_tokenizer` turns that file into a
transformers fast tokenizer. Random weights choose random tokens; the grammar only lets
through tokens that keep the text a prefix of the language, and after `finish_after`
tokens each row is steered to a shortest completion — so every document is valid, if
meaningless. ``--model DIR`` uses a local model directory instead.

Needs the optional packages: ``pip install torch transformers tokenizers mistral-common``.
"""

from __future__ import annotations

import base64
import json
import statistics
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from grammarc.tokens.vocabulary import Vocabulary, gpt2_bytes_to_unicode

TEKKEN_FILE = "tekken_240911.json"
DEMO_GRAMMARS = ("json", "json", "json", "arithmetic")


def _tekken_path() -> Path:
    try:
        import mistral_common
    except ImportError:
        raise SystemExit("grammarc demo needs mistral-common for its tokenizer: pip install mistral-common") from None
    return Path(mistral_common.__file__).parent / "data" / TEKKEN_FILE


@lru_cache(maxsize=None)
def tekken_tokenizer() -> tuple[Any, Vocabulary]:
    """(transformers fast tokenizer, grammarc Vocabulary) for mistral-common's Tekken file.

    Tekken is byte-level BPE given as ranks (like tiktoken): ids 0..999 are special tokens
    (``<s>`` = 1, ``</s>`` = 2, ``<pad>`` = 11), rank r is id r + 1000. The BPE merges are
    derived from the ranks: a token of rank r merges from every split into two tokens, at
    priority r. Only the `tokenizers` library and `PreTrainedTokenizerFast` are used, whose
    APIs are stable across transformers versions.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    data = json.loads(_tekken_path().read_bytes())
    config = data["config"]
    n_special = int(config["default_num_special_tokens"])
    inner = int(config["default_vocab_size"]) - n_special
    tokens = [base64.b64decode(entry["token_bytes"]) for entry in data["vocab"][:inner]]
    specials = _tekken_specials(data, n_special)

    rank = {token: r for r, token in enumerate(tokens)}
    alphabet = gpt2_bytes_to_unicode()
    table = str.maketrans({i: alphabet[i] for i in range(256)})
    text = [token.decode("latin-1").translate(table) for token in tokens]
    merges = []
    for r, token in enumerate(tokens):
        for cut in range(1, len(token)):
            left, right = rank.get(token[:cut]), rank.get(token[cut:])
            if left is not None and right is not None:
                merges.append((r, left, right))
    merges.sort()
    ids = {name: i for i, name in enumerate(specials)}  # specials keep their ids 0..n_special-1
    ids.update((t, r + n_special) for r, t in enumerate(text))
    pairs = [(text[a], text[b]) for _, a, b in merges]
    try:  # tiktoken-style: a whole pre-token found in the vocabulary is one token
        model = models.BPE(ids, pairs, fuse_unk=False, ignore_merges=True)
    except TypeError:  # tokenizers < 0.19: merges alone (prompts may split differently)
        model = models.BPE(ids, pairs, fuse_unk=False)
    backend = Tokenizer(model)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(config["pattern"]), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens([AddedToken(name, special=True, normalized=False) for name in specials])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )
    vocab = Vocabulary.from_bytes([None] * n_special + tokens, eos_token_ids=[specials.index("</s>")])
    return tokenizer, vocab


def _tekken_specials(data: dict, n_special: int) -> list[str]:
    listed = data.get("special_tokens")
    if listed is None:
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        listed = Tekkenizer.DEPRECATED_SPECIAL_TOKENS
    names = [str(getattr(e["token_str"], "value", e["token_str"])) for e in sorted(listed, key=lambda e: e["rank"])]
    return names + [f"<SPECIAL_{i}>" for i in range(len(names), n_special)]


def tiny_llama(vocab_size: int, *, seed: int = 0, hidden: int = 64, layers: int = 2) -> Any:
    """A randomly initialised LlamaForCausalLM small enough to run anywhere (CPU, eval mode)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=11,
        tie_word_embeddings=False,  # tied random embeddings make the model echo its input
    )
    return LlamaForCausalLM(config).eval()


WHITESPACE_BIAS = -10.0


class LowerWhitespace:
    """Adds `WHITESPACE_BIAS` to whitespace-only tokens: a random model's documents would
    otherwise be mostly blank, since JSON allows whitespace almost everywhere and the
    vocabulary has hundreds of whitespace tokens. Validity never depends on it."""

    def __init__(self, vocab: Vocabulary):
        import torch

        ids = [i for i, t in enumerate(vocab.tokens) if t and not t.strip()]
        self.ids = torch.tensor(ids, dtype=torch.long)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        scores[:, self.ids] += WHITESPACE_BIAS
        return scores


def run(
    model_dir: str | None = None,
    *,
    grammars: tuple[str, ...] = DEMO_GRAMMARS,
    max_new_tokens: int = 64,
    finish_after: int | None = 24,
    seed: int = 0,
    prompt: str = "",
    out=sys.stdout,
) -> list[bytes]:
    """Generate one document per grammar in a single batch and print them; return them."""
    import torch

    from grammarc.integrations.progress import stage
    from grammarc.stdlib_grammars import load as stdlib
    from grammarc.integrations.transformers import GrammarLogitsProcessor, vocabulary_for

    began = time.perf_counter()
    threads = torch.get_num_threads()
    if model_dir is None:
        torch.set_num_threads(1)  # a tiny model is fastest on one thread (no sync overhead)
        with stage("grammarc demo: building the Tekken tokenizer"):
            tokenizer, vocab = tekken_tokenizer()
        model = tiny_llama(vocab.size, seed=seed)
        name = f"a randomly initialised LlamaForCausalLM (2 layers, hidden size 64, {vocab.size:,}-token vocabulary)"
        source = "Mistral's Tekken tokenizer (shipped by mistral-common)"
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
        vocab = vocabulary_for(tokenizer, model)
        name, source = f"the model in {model_dir}", "its own tokenizer"
        prompt = prompt or "Here is a JSON document:\n"
    parsed = {g: stdlib(g) for g in grammars}
    with stage("grammarc demo: compiling the grammars and their token indexes"):
        processor = GrammarLogitsProcessor.from_grammars(
            [parsed[g] for g in grammars], vocab=vocab, model=model, finish_after=finish_after
        )
    processors = [processor] if model_dir is not None else [LowerWhitespace(vocab), processor]
    ids = tokenizer(prompt)["input_ids"] if prompt else []
    input_ids = torch.tensor([ids or [tokenizer.bos_token_id]] * len(grammars), dtype=torch.long)
    setup = time.perf_counter() - began

    print(f"grammarc demo: {name},", file=out)
    print(f"with {source}; no downloads.", file=out)
    if model_dir is None:
        print("Random weights give random text; the grammar makes every document valid anyway.", file=out)
        print(f"(Whitespace-only tokens get {WHITESPACE_BIAS:+.0f} on their logits, so the documents are not mostly blank.)", file=out)
    if finish_after is not None:
        print(f"After {finish_after} tokens a row is steered to its shortest completion.", file=out)
    torch.manual_seed(seed)
    began = time.perf_counter()
    with torch.no_grad():
        output = model.generate(
            input_ids,
            attention_mask=torch.ones_like(input_ids),
            logits_processor=processors,
            max_new_tokens=max_new_tokens,
            do_sample=True,
            top_k=0,
            pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
        )
    elapsed = time.perf_counter() - began
    torch.set_num_threads(threads)
    processor.update(output)
    print(f"setup {setup:.1f} s; generation {elapsed:.1f} s for {len(grammars)} documents in one batch\n", file=out)
    documents = []
    for row, grammar in enumerate(grammars):
        text = processor.generated_bytes(row)
        tokens = [t for t in processor.generated_ids(row) if t not in vocab.eos_token_ids]
        times = processor.mask_times(row)
        valid = processor.is_complete(row) and parsed[grammar].accepts(text)
        documents.append(text)
        mean = statistics.fmean(times) * 1e3 if times else 0.0
        p_max = max(times) * 1e3 if times else 0.0
        print(
            f"[{row}] {grammar}: {len(tokens)} tokens, mask {mean:.2f} ms/token (max {p_max:.1f} ms), "
            f"{'valid' if valid else 'NOT VALID'}",
            file=out,
        )
        print("    " + text.decode("utf-8", errors="replace").replace("\n", "\n    "), file=out)
    return documents


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``grammarc demo`` (see `add_arguments`)."""
    import argparse

    parser = argparse.ArgumentParser(prog="grammarc demo", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return command(parser.parse_args(argv))


def add_arguments(parser: Any) -> None:
    parser.add_argument("--model", metavar="DIR", help="a local transformers model directory (default: a random tiny Llama)")
    parser.add_argument("--grammar", action="append", help="stdlib grammar per row (repeatable; default: json x3, arithmetic)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--finish-after", type=int, default=24, help="steer to a shortest completion after N tokens (-1: never)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompt", default="")


def command(args: Any) -> int:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        print("grammarc demo needs torch and transformers: pip install 'grammarc[torch,transformers]'", file=sys.stderr)
        return 2
    documents = run(
        args.model,
        grammars=tuple(args.grammar or DEMO_GRAMMARS),
        max_new_tokens=args.max_new_tokens,
        finish_after=None if args.finish_after < 0 else args.finish_after,
        seed=args.seed,
        prompt=args.prompt,
    )
    return 0 if documents else 1
