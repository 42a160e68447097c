"""Lowering: an IR grammar -> terminal DFAs + ε-free BNF + LALR(1) tables (a `CompiledGrammar`).

`compiler` chooses the terminals (merging regular rules into one DFA where that stays small)
and desugars EBNF into BNF; `lr` builds LALR(1) tables that keep every conflict for the GLR
runtime. Depends on `grammarc.ir` and `grammarc.automata`, never on the runtime.
"""
