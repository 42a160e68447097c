"""The parser runtime: a GLR recognizer over bytes with a hash-consed graph-structured stack.

`gss` is the stack and the parser core that builds it; `stepping` reads bytes into parser
configurations (the one stepping core, shared by the recognizer and the engine);
`recognizer` runs a `CompiledGrammar` over text without any vocabulary: whole-text
membership, next-byte sets, error positions. The stack, the parser core and the stepping
loop run in the compiled core `_gss` (_gss.c, _gss_core.c, _step.c); tests/gss_reference.py
is their Python oracle.
"""
