"""An ECMA-262 oracle for tests: node's RegExp (``u`` flag), and patterns worth asking it about.

The tests that use it skip when node is not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess

from hypothesis import strategies as st

NODE = shutil.which("node")

# ECMA mode against a real ECMA-262 engine (node's RegExp with the u flag). Patterns are drawn
# from the constructs where the dialects differ or ECMA has its own sets; texts from an
# alphabet of the characters that tell those sets apart. (One leniency is not drawn: like
# Annex B, grammarc reads an escaped punctuation character such as ``\-`` outside a class as
# itself, where u mode calls it a syntax error; the meaning is never in doubt.)

ECMA_ATOMS = [
    "a", "B", "1", "_", ".", "[^]", "[]", r"\cA", r"\ca", r"\s", r"\S", r"\d", r"\D", r"\w", r"\W",
    r"\n", r"\r", r"\u2028", r"\u00a0", r"\ufeff", r"\u{1F600}", r"\ud83d\ude00", r"\ud800", "😀",
    "[a-z]", "[^a]", r"[\s\d]", r"[^\n]", r"[^\s]", r"[\ud800-\udfff]", r"[^\ud800-\udfff]",
    r"[\cA-\cZ]", r"\x01", "[😀a]", r"\u{a0}", "(?:)", r"[\-]", r"\.",
]
ECMA_TEXT = ["a", "B", "1", "_", " ", "\n", "\r", "\u2028", "\u00a0", "\ufeff", "\x01", "😀", "\x85"]


def ecma_patterns():
    base = st.sampled_from(ECMA_ATOMS)

    def extend(children):
        quant = st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,}", "*?", "{1,2}?"])
        return st.one_of(
            st.tuples(children, children).map("".join),
            st.tuples(children, children).map("|".join),
            st.tuples(children, quant).map(lambda x: f"(?:{x[0]}){x[1]}"),
            st.tuples(children).map(lambda x: f"({x[0]})"),
            st.tuples(st.sampled_from(["^", ""]), children, st.sampled_from(["$", ""])).map("".join),
        )

    return st.recursive(base, extend, max_leaves=5)


def ecma_texts() -> list[str]:
    short = [""] + ECMA_TEXT + [a + b for a in ECMA_TEXT for b in ECMA_TEXT]
    return short + ["a1_", "aaa", "\n\na", "😀😀😀", "B\u2028B"]


def node_results(cases: list[tuple[str, str, list[str]]]):
    """[[bool per text] or "SyntaxError"] for (regex source, flags, texts), via node."""
    script = (
        "let d='';process.stdin.on('data',c=>d+=c).on('end',()=>{"
        "const out=JSON.parse(d).map(([p,f,ts])=>{let r;try{r=new RegExp(p,f)}catch(e){return 'SyntaxError'}"
        "return ts.map(t=>r.test(t))});process.stdout.write(JSON.stringify(out))})"
    )
    run = subprocess.run([NODE, "-e", script], input=json.dumps(cases), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


