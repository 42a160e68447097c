"""The parser runtime: a GLR recognizer over bytes with a hash-consed graph-structured stack.

It runs a `CompiledGrammar` over text without any vocabulary: whole-text membership,
next-byte sets, error positions. The engine builds on the same stack for token masks.
"""
