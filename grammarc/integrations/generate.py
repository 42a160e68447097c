"""`grammarc.generate`: constrained generation with a transformers model in one call.

What comes back depends on what the output must be:

* a grammar (a `Grammar`, a stdlib name, EBNF text, a path): the generated text;
* a JSON Schema given as a dict: the parsed JSON value;
* a Pydantic model, dataclass or typing type (``list[int]``), decorated with
  ``@grammarc.constrain`` or not, or a `Constraint`: a validated instance.

A list of prompts gives a list of results. Chat messages are only ever read from
``messages=``, never guessed from a prompt list. The work is done by
`grammarc.integrations.generation.run`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

from grammarc.errors import GrammarcError
from grammarc.grammar import Grammar
from grammarc.integrations.constrain import Constraint, constraint_of
from grammarc.integrations.generation import Target, run
from grammarc.integrations.progress import stage
from grammarc.integrations.transformers import resolve_grammar
from grammarc.lowering.compiler import CompiledGrammar
from grammarc.tokens.vocabulary import Vocabulary

__all__ = ["generate", "target_of"]


def generate(
    model: Any,
    tokenizer: Any,
    target: Any,
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
    """Generate a continuation of `prompt` that `target` accepts; return the text or the value.

    `target`: a grammar (`Grammar`, a stdlib name such as ``"json"``, EBNF text, a path)
    -> the text; a JSON Schema dict -> the parsed JSON; a Pydantic model, dataclass or
    typing type (``@grammarc.constrain``-decorated or not) or a `Constraint` -> a
    validated instance. `prompt`: text, or a list of texts -> a list of results (one
    padded batch). `messages`: chat messages (``[{"role": "user", "content": ...}]``) put
    through the tokenizer's chat template with the generation prompt, or a list of such
    conversations -> a list; give `prompt` or `messages`, not both.

    `finish_after`: after that many generated tokens, steer each sequence to a shortest
    completion (`grammarc.integrations.steering`), so the output is complete within
    `max_new_tokens` whenever that completion fits. `max_new_tokens` counts every
    generated token, jumped ones included. Sampling: ``do_sample``, ``temperature``,
    ``top_k``, ``top_p`` (defaults from ``model.generation_config``, as in
    ``model.generate``); for one prompt also ``generator`` (a ``torch.Generator``).

    One prompt is decoded in grammarc's own loop (`grammarc.integrations.decode.decode`)
    when every other keyword argument is one it takes (the sampling ones and
    ``pad_token_id``). That loop saves work in two ways, both on by default (``None``):

    * `opportunistic`: the token drawn from the unmasked logits is checked first and the
      mask computed only when the grammar rejects it. Exact (same distribution as masking
      first) for greedy search and plain temperature sampling; with top-k or top-p the
      loop masks first, since truncation on unmasked logits would change the result
      (transformers' default ``top_k=50`` applies when sampling: pass ``top_k=0``);
    * `jump_forward`: text the grammar forces is tokenized canonically and fed to the
      model in one forward pass with the sampled token, stopping before any token the
      model could still want to run across the end of the forced text.

    Any other keyword argument (``repetition_penalty``, ``logits_processor``, ...), a
    ``model.generation_config`` that sets something the loop does not reproduce, or a
    list of prompts sends the call to ``model.generate`` with a `GrammarLogitsProcessor`
    (no opportunistic masking, no jump-forward); asking for ``jump_forward=True`` or
    ``opportunistic=True`` there raises `GrammarcError`.

    `progress`: show slow steps (compiling the grammar and its token index) on standard
    error; None: as `grammarc.integrations.progress.enable` says (off by default).

    An output that is not complete when generation stops (at `max_new_tokens`): a text is
    returned with a RuntimeWarning; a value cannot be parsed, so `GrammarcError` is raised.
    """
    with stage("grammarc: translating the target to a grammar", progress=progress):
        goal = target_of(target)
    return run(
        model, tokenizer, goal, prompt, messages=messages, vocab=vocab, finish_after=finish_after,
        max_new_tokens=max_new_tokens, jump_forward=jump_forward, opportunistic=opportunistic,
        progress=progress, **kwargs,
    )


def target_of(spec: Any) -> Target:
    """The `Target` of a grammar spec, a JSON Schema dict, a `Constraint`, or a model class or type."""
    if isinstance(spec, (Grammar, CompiledGrammar, str, os.PathLike)):
        return Target(resolve_grammar(spec))
    if isinstance(spec, dict):
        return Target(Grammar.from_json_schema(spec), json.loads)
    if isinstance(spec, Constraint):
        return Target(spec.grammar, spec.parse)
    if spec is None or isinstance(spec, (bytes, int, float, list, tuple, set)):
        raise GrammarcError(
            "expected a grammar (Grammar, stdlib name, EBNF text, path), a JSON Schema dict, "
            f"or a model class or type, got {type(spec).__name__}"
        )
    constraint = constraint_of(spec)  # registered by @constrain (with its options), or built now
    return Target(constraint.grammar, constraint.parse)
