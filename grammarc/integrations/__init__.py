"""Integrations: where grammarc meets models and users.

`transformers` (a batch-aware `LogitsProcessor` and steering), `decode` (grammarc's own
decode loop with opportunistic masking and jump-forward), `generate` (the one-call entry
point), `constrain` (`@grammarc.constrain` for Pydantic models and dataclasses), `demo`
(the README's offline demo), and `vllm` (a vLLM V1 logits processor). They sit on top of
the engine and the public `grammarc.grammar.Grammar`; nothing below imports them.
"""
