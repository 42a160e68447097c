"""Integrations of grammarc with serving engines.

``grammar_spec`` (per-request grammars as JSON data) needs nothing beyond grammarc;
``vllm`` imports vLLM, so nothing here is imported by ``import grammarc``.
"""
