"""What ``property_order="any"`` costs next to the schema's order: schema -> grammar time,
compile time and grammar size, for objects of n properties.

    python bench/property_order.py                 # n = 5, 10, 12, 20
    python bench/property_order.py --sizes 4 8 --required half

Each object has n integer/string/boolean properties (``--required``: none, half or all of
them required) next to ``additionalProperties`` (``--closed`` makes it false). Any order is
exact, so it needs a grammar state per set of properties already written: 2**n sets, refused
above the front-end's limit (a row then says "refused"); ``maxProperties`` caps the sets.
Timings are cold (a fresh schema each time) and vary with the machine; the sizes do not.
"""

from __future__ import annotations

import argparse
import time

from grammarc import Grammar
from grammarc.errors import UnsupportedSchemaError


def schema(n: int, required: str, closed: bool, max_props: int | None) -> dict:
    kinds = [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}]
    props = {f"p{i}": kinds[i % 3] for i in range(n)}
    need = {"none": [], "half": list(props)[: n // 2], "all": list(props)}[required]
    out = {"type": "object", "properties": props, "required": need}
    if closed:
        out["additionalProperties"] = False
    if max_props is not None:
        out["maxProperties"] = max_props
    return out


def measure(s: dict, order: str) -> dict:
    t0 = time.perf_counter()
    try:
        g = Grammar.from_json_schema(s, property_order=order)
    except UnsupportedSchemaError as exc:
        return {"order": order, "refused": exc.message}
    t1 = time.perf_counter()
    compiled = g.compile()
    t2 = time.perf_counter()
    size = compiled.summary()
    return {"order": order, "build_s": t1 - t0, "compile_s": t2 - t1, "ebnf_chars": len(g.to_ebnf()),
            "rules": size["rules"], "productions": size["productions"], "lr_states": size["lr_states"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 12, 20])
    parser.add_argument("--required", choices=("none", "half", "all"), default="half")
    parser.add_argument("--closed", action="store_true")
    parser.add_argument("--max-properties", type=int, default=None)
    args = parser.parse_args()
    print(f"{'n':>3} {'order':>6} {'build s':>8} {'compile s':>9} {'ebnf chars':>10} {'rules':>6} {'prods':>6} {'LR states':>9}")
    for n in args.sizes:
        s = schema(n, args.required, args.closed, args.max_properties)
        for order in ("schema", "any"):
            r = measure(s, order)
            if "refused" in r:
                print(f"{n:>3} {order:>6}  refused: {r['refused']}")
                continue
            print(f"{n:>3} {order:>6} {r['build_s']:>8.3f} {r['compile_s']:>9.2f} {r['ebnf_chars']:>10} "
                  f"{r['rules']:>6} {r['productions']:>6} {r['lr_states']:>9}", flush=True)


if __name__ == "__main__":
    main()
