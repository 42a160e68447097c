"""Tokens: vocabularies and the vocabulary-aligned token index.

`vocabulary` decodes a tokenizer into the exact bytes of every token; `scan_cache` runs a
terminal DFA over the whole vocabulary (shared across grammars, cached on disk); `index`
builds per-(terminal, DFA state) token sets and the trees of tokens that cross terminal
boundaries. Depends on the lowering's `CompiledGrammar`, never on the engine.
"""
