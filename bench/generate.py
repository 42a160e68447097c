"""Generation throughput: constrained vs unconstrained tokens/s in grammarc's decode loop.

    python bench/generate.py                          # Tekken vocabulary, random Llama, CPU (minutes)
    python bench/generate.py --tiny                   # smoke run: tiny vocabulary and model, seconds
    python bench/generate.py --tokens 128 --runs 5 --workload rpg-compact

A randomly initialised LlamaForCausalLM (default: hidden size 256, 4 layers, Mistral's
Tekken vocabulary of 131,072 ids, one CPU thread) generates documents with
`grammarc.integrations.decode.decode` in four modes: unconstrained (no grammar), mask-first (a mask at
every step), opportunistic (mask only when the freely drawn token is rejected) and
opportunistic + jump-forward (forced text fed without per-token forward passes). Every
constrained document is checked to be complete and in its grammar. See bench/README.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import grammarc
from grammarc import Engine, Grammar, Vocabulary

HERE = Path(__file__).resolve().parent
PROMPT = "Return one JSON document.\n"
MODES = {  # name: (opportunistic, jump_forward); "unconstrained" has no grammar
    "mask-first": (False, False),
    "opportunistic": (True, False),
    "opp+jump": (True, True),
}


def _mask_latency() -> Any:
    """bench/mask_latency.py, read-only: its schemas and the tiny vocabulary (imported from
    this directory, as bench/peers.py does; bench/ is not a package)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import mask_latency

    return mask_latency


def _schema(name: str, layout: str) -> Callable[[], Grammar]:
    def build() -> Grammar:
        ml = _mask_latency()
        schema = {"rpg": ml.RPG_SCHEMA, "gsm8k": ml.GSM8K_SCHEMA}[name]
        return Grammar.from_json_schema(schema, **ml.LAYOUTS[layout][0])

    return build


WORKLOADS: dict[str, Callable[[], Grammar]] = {
    "json": lambda: grammarc.stdlib("json"),
    "rpg-compact": _schema("rpg", "compact"),
    "rpg-pretty": _schema("rpg", "pretty"),
    "gsm8k-compact": _schema("gsm8k", "compact"),
    "gsm8k-pretty": _schema("gsm8k", "pretty"),
}


@dataclass
class Setup:
    """The model, its vocabulary and how text is tokenized."""

    name: str
    model: Any
    vocab: Vocabulary
    encode: Callable[[str], list[int]]
    prompt: list[int]
    description: str


def tekken_setup(hidden: int, layers: int) -> Setup:
    from grammarc.integrations.demo import tekken_tokenizer, tiny_llama

    tokenizer, vocab = tekken_tokenizer()
    model = tiny_llama(vocab.size, seed=0, hidden=hidden, layers=layers)
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    return Setup("tekken", model, vocab, encode, [tokenizer.bos_token_id, *encode(PROMPT)],
                 f"random LlamaForCausalLM, hidden {hidden}, {layers} layers, Tekken vocabulary ({vocab.size:,} ids)")


def tiny_setup() -> Setup:
    from grammarc.integrations.demo import tiny_llama

    vocab, encode = _mask_latency().tiny_vocab()
    model = tiny_llama(vocab.size, seed=0, hidden=32, layers=1)
    return Setup("tiny", model, vocab, encode, encode(PROMPT),
                 f"random LlamaForCausalLM, hidden 32, 1 layer, tiny vocabulary ({vocab.size} ids)")


# ------------------------------------------------------------------ measuring


@dataclass
class Row:
    """One (workload, mode): sums over its runs."""

    workload: str
    mode: str
    runs: int = 0
    tokens: int = 0
    seconds: float = 0.0
    forward_passes: int = 0
    masks: int = 0
    checks: int = 0
    hits: int = 0
    jumped_tokens: int = 0
    grammar_s: float = 0.0
    valid: int = 0
    lengths: list[int] = field(default_factory=list)

    def add(self, result: Any, valid: bool) -> None:
        s = result.stats
        self.runs += 1
        self.tokens += s.tokens
        self.seconds += s.total_s
        self.forward_passes += s.forward_passes
        self.masks += s.masks
        self.checks += s.checks
        self.hits += s.hits
        self.jumped_tokens += s.jumped_tokens
        self.grammar_s += s.grammar_s
        self.valid += valid
        self.lengths.append(s.tokens)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


def run_workload(setup: Setup, workload: str, tokens: int, runs: int, greedy: bool, warmup: int = 1) -> list[Row]:
    """Every constrained mode `runs` times (seeds 0..runs-1, modes interleaved) after
    `warmup` untimed documents per mode (other seeds: they build the token index states a
    first request pays for, see mask_latency.py); after each mask-first document, the
    unconstrained loop makes as many tokens."""
    import torch

    from grammarc.integrations.decode import Sampling, decode
    from grammarc.integrations.demo import LowerWhitespace

    grammar = WORKLOADS[workload]()
    engine = Engine(grammar, setup.vocab)
    sampling = Sampling(do_sample=not greedy)
    bias = [LowerWhitespace(setup.vocab)]
    rows = {mode: Row(workload, mode) for mode in ["unconstrained", *MODES]}

    def constrained(mode: str, seed: int) -> Any:
        opportunistic, jump = MODES[mode]
        return decode(setup.model, setup.prompt, engine, max_new_tokens=tokens + 512, finish_after=tokens * 3 // 4,
                      sampling=sampling, generator=torch.Generator().manual_seed(seed), opportunistic=opportunistic,
                      jump_forward=jump, encode=setup.encode, logits_processors=bias)

    def unconstrained(n: int, seed: int) -> Any:
        return decode(setup.model, setup.prompt, None, max_new_tokens=n, sampling=sampling,
                      generator=torch.Generator().manual_seed(seed), logits_processors=bias)

    for seed in range(warmup):
        for mode in MODES:
            constrained(mode, 10_000 + seed)
    unconstrained(8, 10_000)
    for seed in range(runs):  # interleaved, so that drifting machine load hits every mode alike
        for mode in MODES:
            result = constrained(mode, seed)
            valid = result.complete and grammar.accepts(result.text)
            if not valid:
                raise AssertionError(f"{workload}/{mode}/seed {seed}: not a complete document: {result.text[:200]!r}")
            rows[mode].add(result, valid)
            if mode == "mask-first":  # the baseline: as many tokens, same loop, no grammar
                rows["unconstrained"].add(unconstrained(len(result.ids), seed), True)
    return list(rows.values())


# --------------------------------------------------------------------- report

HEADERS = ["workload", "mode", "tokens/doc", "tok/s", "vs unconstrained", "passes/doc", "masks/doc",
           "opportunistic hits %", "jumped/doc", "grammar ms/token", "valid"]


def table(rows: list[Row]) -> list[list[str]]:
    base = {r.workload: r.tokens_per_s for r in rows if r.mode == "unconstrained"}
    out = []
    for r in rows:
        per_doc = lambda n: f"{n / r.runs:.1f}"  # noqa: E731
        ratio = r.tokens_per_s / base[r.workload] if base.get(r.workload) else 0.0
        constrained = r.mode != "unconstrained"
        out.append([
            r.workload, r.mode, per_doc(r.tokens), f"{r.tokens_per_s:.1f}", f"{ratio:.3f}x",
            per_doc(r.forward_passes), per_doc(r.masks) if constrained else "-",
            f"{100 * r.hits / r.checks:.0f}" if r.checks else "-",
            per_doc(r.jumped_tokens) if constrained else "-",
            f"{1e3 * r.grammar_s / r.tokens:.3f}" if constrained else "-",
            f"{r.valid}/{r.runs}" if constrained else "-",
        ])
    return out


def render(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def save(rows: list[Row], directory: Path, setup: Setup, meta: dict) -> None:
    """``generate-<vocab>.csv`` (the printed table) and ``generate-<vocab>.json`` (raw sums)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"generate-{setup.name}.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([HEADERS, *table(rows)])
    raw = [asdict(r) for r in rows]
    (directory / f"generate-{setup.name}.json").write_text(json.dumps({"meta": meta, "rows": raw}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=128,
                        help="target document length: steering to a shortest completion starts at 3/4 of it "
                             "(default 128)")
    parser.add_argument("--runs", type=int, default=3, help="timed documents per workload and mode (default 3)")
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="run only this workload (repeatable; default: all)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed documents per workload and mode first (default 3)")
    parser.add_argument("--tiny", action="store_true", help="smoke mode: tiny vocabulary and model")
    parser.add_argument("--hidden", type=int, default=256, help="model hidden size (default 256)")
    parser.add_argument("--layers", type=int, default=4, help="model layers (default 4)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--greedy", action="store_true", help="greedy search instead of sampling (temperature 1)")
    parser.add_argument("--save", type=Path, metavar="DIR",
                        help="also write DIR/generate-<vocab>.csv and DIR/generate-<vocab>.json")
    args = parser.parse_args(argv)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, args.threads))
    try:
        start = time.perf_counter()
        setup = tiny_setup() if args.tiny else tekken_setup(args.hidden, args.layers)
        took = time.perf_counter() - start
        print(f"{setup.description}; {args.threads} thread(s); set up in {took:.1f} s", flush=True)
        rows: list[Row] = []
        for name in args.workload or list(WORKLOADS):
            rows += run_workload(setup, name, max(4, args.tokens), max(1, args.runs), args.greedy, max(0, args.warmup))
            print(f"{name}: done", flush=True)
    finally:
        torch.set_num_threads(threads)
    print()
    print(f"{'greedy' if args.greedy else 'sampling (temperature 1)'}; {args.runs} document(s) per row after "
          f"{args.warmup} warm-up document(s); tok/s = generated tokens / wall time of the decode calls "
          "(prompt pass included)\n")
    print(render(HEADERS, table(rows)))
    if args.save is not None:
        command = "python bench/generate.py " + " ".join(argv if argv is not None else sys.argv[1:])
        meta = {"command": command.strip(), "model": setup.description, "threads": args.threads, "warmup": args.warmup,
                "sampling": "greedy" if args.greedy else "temperature 1", "python": sys.version.split()[0],
                "torch": torch.__version__,
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}"}
        save(rows, args.save, setup, meta)
    return rows


if __name__ == "__main__":
    main()
