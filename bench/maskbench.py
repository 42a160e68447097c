"""MaskBench: pass rate and cold-path latency on real-world JSON Schemas, beside the peers.

    python bench/maskbench.py --mode pass                          # every schema of the dev sample
    python bench/maskbench.py --mode pass --sample 200 --jobs 2    # a seeded random sample, 2 workers
    python bench/maskbench.py --mode cold --schemas 40 --warmup 20 # Llama-3, grammarc + installed peers
    python bench/maskbench.py --mode cold --schemas 20 --peer none --profile bench/results/profile
    python bench/maskbench.py --mode compile --sample 200 --warmup 20 # first-contact compile, a warm process

The data is MaskBench's format (``../shared/data/maskbench-dev/README.md``): one JSON file
per schema with valid and invalid test instances.

* ``--mode pass`` (issue 11): each schema is compiled and every instance judged, written as
  compact ``json.dumps(separators=(",", ":"))`` and as ``indent=2`` text. A schema passes when
  it compiles and every valid instance is accepted and every invalid one rejected in both
  layouts. Refusals are grouped by error class and message prefix; false accepts (invalid
  instances accepted) and crashes (foreign exceptions, timeouts, dead workers) are listed.
* ``--mode cold`` (issue 12): MaskBench's protocol on schemas the engine has never seen,
  after warming up on *other* schemas: TTFM (schema -> grammar -> compiled -> index -> first
  mask) and TBM (advance + next mask, per token) while replaying a valid instance tokenized
  canonically, and the whole grammar cost of a response (TTFM + every TBM).
* ``--mode compile`` (issue 11): first-contact compile time as a server pays it: one process,
  warmed up on *other* schemas, compiles each schema of the sample once, in turn, on a fresh
  disk cache; wall and CPU time per schema (grammarc: schema -> compiled grammar; a peer: its
  compiled grammar and matcher, for the Llama-3 vocabulary).

In pass and cold modes every schema (and engine) runs in a forked worker with a time and
memory limit, so a hang or a crash is recorded, never a stuck benchmark (compile mode times
each schema with an alarm in one process). bench/README.md says what each figure means.
"""

from __future__ import annotations

import argparse
import ctypes
import cProfile
import contextlib
import csv
import gc
import itertools
import json
import os
import pickle
import pstats
import random
import re
import resource
import select
import signal
import sys
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mask_latency as ml  # noqa: E402  (bench/ is not a package)
import peers as pe  # noqa: E402

import grammarc  # noqa: E402
from grammarc import Engine, Grammar, Vocabulary  # noqa: E402
from grammarc.frontends.jsonschema.keywords import INERT  # noqa: E402  (annotations that change nothing)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "maskbench-dev"
ENGINES = ("grammarc", "xgrammar", "llguidance")


# ----------------------------------------------------------------------- data


@dataclass(frozen=True)
class Case:
    """One MaskBench file: a schema and its test instances."""

    name: str  # the file name
    schema: Any
    tests: tuple[dict, ...]  # {"data": instance, "valid": bool, ...}

    def valid_instance(self) -> Any | None:
        """The first valid instance (the one the cold protocol replays), or None."""
        return next((t["data"] for t in self.tests if t["valid"]), None)


def load_cases(directory: Path, names: Iterable[str] | None = None) -> list[Case]:
    """The cases of `directory` (every ``*.json`` but the README), sorted by file name."""
    paths = sorted(directory.glob("*.json")) if names is None else [directory / n for n in names]
    cases = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        cases.append(Case(path.name, data["schema"], tuple(data.get("tests", ()))))
    return cases


def select_cases(cases: list[Case], *, only: list[str] | None, limit: int | None, sample: int | None,
                 seed: int) -> list[Case]:
    """Filter by name substrings, then a seeded random sample (kept in name order), then a limit."""
    if only:
        cases = [c for c in cases if any(s in c.name for s in only)]
    if sample is not None and sample < len(cases):
        keep = set(random.Random(seed).sample(range(len(cases)), sample))
        cases = [c for i, c in enumerate(cases) if i in keep]
    return cases[:limit] if limit is not None else cases


# ------------------------------------------------------------------ isolation


@dataclass(frozen=True)
class Outcome:
    """How a forked task ended: ``ok`` (value), ``error`` (an exception escaped it; `error`
    is ``Type: message``, `trace` its last frames), ``timeout`` or ``died`` (a signal or exit)."""

    kind: str
    value: Any = None
    error: str = ""
    trace: str = ""
    seconds: float = 0.0


MADV_POPULATE_WRITE = 23  # Linux 5.14+: fault pages in writable, as a write to each would


def unshare_memory() -> int:
    """Copy now every page this forked child still shares with its parent (present in a
    private writable mapping, not yet its own), and return how many it copied.

    A fork shares the warm process's pages copy-on-write; CPython writes to every object it
    touches (reference counts), so a response in a fork pays a page fault and a 4 KB copy
    for each warm page it reads, which no server pays (~2,200 faults and a third of the CPU
    time of a median never-seen schema's response on this project's machines). Copied
    before the clock starts, the fork answers as the warm process itself would, and stays
    isolated. Pages found shared in /proc/self/pagemap (present, not exclusively mapped)
    are faulted in by madvise(MADV_POPULATE_WRITE), run by run; pages never touched are not
    made. 0 where the kernel lacks either (the responses then pay the faults)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        page = os.sysconf("SC_PAGE_SIZE")
        with open("/proc/self/maps") as maps:
            regions = maps.read().splitlines()
        copied = 0
        with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
            for line in regions:
                span, perms = line.split()[:2]
                if not perms.startswith("rw") or perms[3] != "p":
                    continue
                lo, hi = (int(x, 16) for x in span.split("-"))
                pagemap.seek(lo // page * 8)
                entries = np.frombuffer(pagemap.read((hi - lo) // page * 8), dtype=np.uint64)
                shared = (entries >> np.uint64(63)).astype(bool) & ~((entries >> np.uint64(56)) & np.uint64(1)).astype(bool)
                edges = np.flatnonzero(np.diff(np.concatenate(([0], shared.view(np.int8), [0]))))
                for a, b in zip(edges[::2].tolist(), edges[1::2].tolist()):
                    if libc.madvise(lo + a * page, (b - a) * page, MADV_POPULATE_WRITE) != 0:
                        return copied  # EINVAL: a kernel without it
                    copied += b - a
        return copied
    except OSError:  # no /proc, or no pagemap
        return 0


def _child(task: Callable[[], Any], write: int, memory_mb: int | None, unshare: bool = False) -> None:
    """Run `task` in this forked child, send its outcome through `write`, leave at once.
    The child's stderr goes to /dev/null (xgrammar logs a warning per approximated keyword).
    With `unshare`, the pages it shares with its parent are copied first (`unshare_memory`)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        if unshare:
            unshare_memory()
        if memory_mb:  # on top of what the worker inherits (a warm parent maps gigabytes)
            limit = _address_space() + (memory_mb << 20)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        payload = pickle.dumps(("ok", task(), "", ""))
    except BaseException as exc:  # noqa: BLE001 -- reported to the parent, never raised here
        frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4)
        payload = pickle.dumps(("error", None, f"{type(exc).__name__}: {_clip(str(exc))}", "".join(frames)[-3000:]))
    with os.fdopen(write, "wb") as f:
        f.write(payload)
    os._exit(0)  # no atexit hooks: the disk cache is never written from a worker


def _address_space() -> int:
    """Bytes of address space this process maps now (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def run_isolated(tasks: Iterable[tuple[Any, Callable[[], Any]]], *, workers: int = 1, timeout: float = 60.0,
                 memory_mb: int | None = None, fork: bool = True,
                 unshare: bool = False) -> Iterator[tuple[Any, Outcome]]:
    """Run each ``(key, task)`` in a forked worker (at most `workers` at a time), yielding
    ``(key, Outcome)`` as they finish. A worker past `timeout` seconds is killed (``timeout``);
    one that dies without an answer (segfault, out of memory) is ``died``. With `unshare`,
    a worker copies the pages it shares with this process before its task
    (`unshare_memory`). Without `fork`, tasks run here one by one (no timeout): for
    profilers and debuggers."""
    if not fork or not hasattr(os, "fork"):
        for key, task in tasks:
            start = time.perf_counter()
            try:
                yield key, Outcome("ok", task(), seconds=time.perf_counter() - start)
            except Exception as exc:  # noqa: BLE001 -- the same report as a worker's
                yield key, Outcome("error", None, f"{type(exc).__name__}: {_clip(str(exc))}",
                                   traceback.format_exc(limit=-4)[-3000:], time.perf_counter() - start)
        return
    pending = list(tasks)[::-1]
    running: dict[int, list] = {}  # read fd -> [key, pid, start, chunks]
    sys.stdout.flush()
    sys.stderr.flush()
    while pending or running:
        while pending and len(running) < max(1, workers):
            key, task = pending.pop()
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                _child(task, write, memory_mb, unshare)
            os.close(write)
            running[read] = [key, pid, time.monotonic(), []]
        now = time.monotonic()
        wait = max(0.0, min(start + timeout for _, _, start, _ in running.values()) - now)
        ready, _, _ = select.select(list(running), [], [], wait)
        for fd in ready:
            data = os.read(fd, 1 << 20)
            if data:
                running[fd][3].append(data)
                continue
            key, pid, start, chunks = running.pop(fd)
            os.close(fd)
            _, status = os.waitpid(pid, 0)
            yield key, _decode(chunks, status, time.monotonic() - start)
        now = time.monotonic()
        for fd, (key, pid, start, _) in list(running.items()):
            if now - start > timeout:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(fd)
                del running[fd]
                yield key, Outcome("timeout", error=f"no answer after {timeout:g} s", seconds=now - start)


def _decode(chunks: list[bytes], status: int, seconds: float) -> Outcome:
    try:
        kind, value, error, trace = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 -- no (complete) answer: the worker died
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            return Outcome("died", error=f"killed by {name}", seconds=seconds)
        return Outcome("died", error=f"exit status {os.WEXITSTATUS(status)} without an answer", seconds=seconds)
    return Outcome(kind, value, error, trace, seconds)


# ---------------------------------------------------------------- the engines
#
# The peers are bench/peers.py's adapters. Two overrides keep the languages JSON Schema's:
# xgrammar in non-strict mode (its default closes every object: additionalProperties false),
# and llguidance compiled in its matcher's constructor only (the adapter's own `compile`
# validates and builds a matcher too, which would count its compile twice).


class XGrammar(pe.XGrammar):
    def _tokenizer(self, vocab: Vocabulary) -> Any:
        import xgrammar

        info = super()._tokenizer(vocab)
        # one thread, as MaskBench runs every engine (and grammarc is single-threaded)
        self.compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        return info

    def compile(self, workload: ml.Workload) -> Any:
        if workload.layout == "compact":
            layout = {"any_whitespace": False, "separators": (",", ":")}
        else:  # "flexible": any JSON whitespace
            layout = {"any_whitespace": True}
        return self.compiler.compile_json_schema(workload.schema, strict_mode=False, **layout)


class LLGuidance(pe.LLGuidance):
    def compile(self, workload: ml.Workload) -> Any:
        return self.grammar_text(workload)  # compact, or flexible whitespace otherwise

    def matcher(self, compiled: Any) -> Any:
        matcher = super().matcher(compiled)
        if matcher.is_error():
            raise pe.Unsupported(matcher.get_error())
        return matcher


PEERS: dict[str, Callable[[], pe.Peer]] = {"xgrammar": XGrammar, "llguidance": LLGuidance}

# grammarc's options per layout; the peers read `layout` from a peers.py workload
GRAMMARC_OPTIONS = {"flexible": {}, "compact": {"whitespace": "compact"}}
# the instance text replayed in cold mode: MaskBench's (json.dumps' default separators), or compact
COLD_TEXT = {"flexible": {}, "compact": {"separators": (",", ":")}}
# the layouts every instance is judged in, in pass mode (grammarc's default whitespace admits both)
PASS_LAYOUTS = {"compact": {"separators": (",", ":")}, "indent2": {"indent": 2}}


def workload(case: Case, layout: str) -> ml.Workload:
    """The case as a peers.py workload (the adapters read `schema` and `layout`)."""
    return ml.Workload(case.name, lambda: None, lambda n: [], schema=case.schema, layout=layout)


def prepare_peers(names: list[str], vocab: Vocabulary, encode: ml.Encoder) -> list[pe.Peer]:
    """The installed peers of `names`, their tokenizers built for `vocab` (a missing one is
    skipped with a message)."""
    return pe.prepare_peers(names, vocab, encode, PEERS)


def byte_vocab() -> tuple[Vocabulary, ml.Encoder]:
    """256 single-byte tokens and EOS: every text has exactly one tokenization, so a peer's
    verdict on a text does not depend on which tokenization it prefers."""
    vocab = Vocabulary.from_bytes([bytes([b]) for b in range(256)] + [b""], eos_token_ids=[256])
    return vocab, lambda text: list(text.encode("utf-8"))


# ------------------------------------------------------------------ pass mode


def layout_texts(instance: Any) -> dict[str, str]:
    return {name: json.dumps(instance, ensure_ascii=False, **kw) for name, kw in PASS_LAYOUTS.items()}


def _target(ref: Any, root: Any) -> Any:
    """The schema a local ``$ref`` ("#/a/b") names (None: not local or not found)."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    target: Any = root
    for part in ref[1:].strip("/").split("/") if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        target = target.get(part) if isinstance(target, dict) else None
    return target


def _resolve(schema: Any, root: Any, depth: int = 0) -> Any:
    """`schema` with a lone local ``$ref`` followed (a few levels); anything else as is."""
    while isinstance(schema, dict) and set(schema) - INERT == {"$ref"} and depth < 16:
        target = _target(schema["$ref"], root)
        if target is None:
            break
        schema, depth = target, depth + 1
    return schema


def _property_schemas(schema: Any, root: Any, value: Any = None, depth: int = 0) -> dict[str, Any]:
    """Property name -> subschema, in grammarc's layout order: the schema's own properties,
    then those of its conjuncts ($ref, allOf) in the order it lists them; of an anyOf/oneOf,
    the branch that names most of `value`'s keys."""
    schema = _resolve(schema, root)
    found: dict[str, Any] = {}
    if not isinstance(schema, dict) or depth > 8:
        return found
    if isinstance(schema.get("properties"), dict):
        found.update(schema["properties"])
    for word, sub in schema.items():
        parts: list[dict[str, Any]] = []
        if word == "$ref":
            parts = [_property_schemas(_target(sub, root), root, value, depth + 1)]
        elif word == "allOf" and isinstance(sub, list):
            parts = [_property_schemas(branch, root, value, depth + 1) for branch in sub]
        elif word in ("anyOf", "oneOf") and isinstance(sub, list) and sub:
            keys = set(value) if isinstance(value, dict) else set()
            named = [_property_schemas(branch, root, value, depth + 1) for branch in sub]
            parts = [max(named, key=lambda props: len(keys & set(props)))]
        for props in parts:
            for name, inner in props.items():
                found.setdefault(name, inner)
    return found


def _pattern_schema(key: str, schema: Any) -> Any:
    """The first patternProperties schema whose pattern finds `key` (None: none does)."""
    patterns = schema.get("patternProperties") if isinstance(schema, dict) else None
    for pattern, sub in (patterns.items() if isinstance(patterns, dict) else ()):
        try:
            if re.search(pattern, key):
                return sub
        except re.error:
            continue
    return None


def in_schema_order(value: Any, schema: Any, root: Any) -> Any:
    """The instance with every object's keys in the order its schema lists them (others after,
    as they were): a diagnostic for valid instances rejected only because grammarc lays
    properties out in an order of its own (the documented narrowing)."""
    schema = _resolve(schema, root)
    if isinstance(value, dict):
        named = _property_schemas(schema, root, value)
        other = schema.get("additionalProperties", {}) if isinstance(schema, dict) else {}
        keys = [k for k in named if k in value] + [k for k in value if k not in named]
        return {k: in_schema_order(value[k], named[k] if k in named else _pattern_schema(k, schema) or other, root)
                for k in keys}
    if isinstance(value, list) and isinstance(schema, dict):
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
        items = schema.get("items", {})
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems", {})
        return [in_schema_order(v, prefix[i] if i < len(prefix) else items, root) for i, v in enumerate(value)]
    return value


def key_orders(instance: Any, schema: Any, limit: int = 720) -> Iterator[Any]:
    """The instance in schema order, then (for a top-level object of at most 6 keys) with
    its top-level keys in every order, nested objects in schema order. grammarc's own order
    is not always the listing order (allOf branches, dependencies expand into their own)."""
    ordered = in_schema_order(instance, schema, schema)
    yield ordered
    if isinstance(ordered, dict) and 1 < len(ordered) <= 6:
        for keys in itertools.islice(itertools.permutations(ordered), 1, limit):
            yield {k: ordered[k] for k in keys}


def judge_grammarc(case: Case, property_order: str = "schema") -> dict:
    """Compile with the default options (or another `property_order`) and judge every
    instance in every layout."""
    clock = time.perf_counter
    start = clock()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            grammar = Grammar.from_json_schema(case.schema, property_order=property_order)
            schema_s = clock() - start
            grammar.compile()
        except grammarc.GrammarcError as exc:
            return {"refused": f"{type(exc).__name__}: {_clip(str(exc).splitlines()[0])}"}
    compile_s = clock() - start - schema_s
    verdicts = [{name: grammar.accepts(text) for name, text in layout_texts(t["data"]).items()} for t in case.tests]
    reordered = {}  # valid instances rejected: accepted with their keys in another order?
    for i, (test, verdict) in enumerate(zip(case.tests, verdicts)):
        if test["valid"] and not all(verdict.values()):
            reordered[i] = any(all(grammar.accepts(text) for text in layout_texts(v).values())
                               for v in key_orders(test["data"], case.schema))
    return {"schema_ms": schema_s * 1e3, "compile_ms": compile_s * 1e3, "verdicts": verdicts, "reordered": reordered,
            "judge_ms": (clock() - start) * 1e3 - (schema_s + compile_s) * 1e3}


def judge_peer(peer: pe.Peer, case: Case, eos: int) -> dict:
    """The same with a peer (flexible whitespace, so both layouts are in its language), on the
    byte vocabulary: a text is accepted when every byte and then EOS are."""
    start = time.perf_counter()
    try:
        compiled = peer.compile(workload(case, "flexible"))
        peer.matcher(compiled)  # llguidance reports its compile errors here
    except Exception as exc:  # noqa: BLE001 -- a peer's refusal, whatever its class
        return {"refused": f"{type(exc).__name__}: {_clip((str(exc).splitlines() or [''])[0])}"}
    compile_s = time.perf_counter() - start
    verdicts = []
    for test in case.tests:
        verdict = {}
        for name, text in layout_texts(test["data"]).items():
            matcher = peer.matcher(compiled)
            verdict[name] = all(peer.advance(matcher, b) for b in text.encode("utf-8")) and peer.advance(matcher, eos)
        verdicts.append(verdict)
    return {"compile_ms": compile_s * 1e3, "verdicts": verdicts,
            "judge_ms": (time.perf_counter() - start - compile_s) * 1e3}


def reason(error: str) -> str:
    """A refusal's group: its class and first message line with the JSON pointer, quoted
    values (patterns, format names) and numbers abstracted; keyword names are kept
    (``UnsupportedSchemaError: keyword 'oneOf' is not supported: its branches are not
    provably disjoint, and the negation of 'pattern' is not supported``)."""
    kind, _, message = error.partition(": ")
    message = (message.strip().splitlines() or [""])[0]
    message = re.sub(r"^#\S*: ", "", message)  # "#/properties/a/pattern: ..."
    message = re.sub(r"'.*'(?= needs more| is too large)", "'...'", message)  # a whole regex
    message = re.sub(r"\s*\(at offset .*$", "", message)
    message = re.sub(r"(nknown format)\b.*$", r"\1", message)

    def quoted(match: re.Match) -> str:
        keyword = re.fullmatch(r"'\$?[A-Za-z]+'", match[0]) and re.search(r"(keyword|of) $", message[: match.start()])
        return match[0] if keyword else "'...'"

    message = re.sub(r"'(?:[^'\\]|\\.)*'", quoted, message)
    message = re.sub(r"\d+", "N", message)
    return f"{kind}: {message[:140]}"


def _clip(text: str, keep: int = 400) -> str:
    """Long messages (a refused regex can be 80k characters) keep their head and tail."""
    return text if len(text) <= 2 * keep else f"{text[:keep]} [...] {text[-keep:]}"


def pass_record(case: Case, engine: str, outcome: Outcome) -> dict:
    """One row of pass mode: status pass / fail / refused / crash, with the evidence."""
    record: dict[str, Any] = {"schema": case.name, "engine": engine, "tests": len(case.tests),
                              "seconds": round(outcome.seconds, 3)}
    if outcome.kind != "ok":
        what = outcome.error if outcome.kind == "error" else f"{outcome.kind}: {outcome.error}"
        record.update(status="crash", error=what, trace=outcome.trace)
        return record
    value = outcome.value
    if "refused" in value:
        error = value["refused"]
        # grammarc must refuse with its own error classes; a peer's refusals are all refusals
        record.update(status="refused", error=error, reason=reason(error))
        return record
    wrong = []
    for i, (test, verdict) in enumerate(zip(case.tests, value["verdicts"])):
        for layout, accepted in verdict.items():
            if accepted != test["valid"]:
                wrong.append({"test": i, "valid": test["valid"], "layout": layout})
                if i in value.get("reordered", {}):
                    wrong[-1]["order"] = value["reordered"][i]
    record.update(
        status="fail" if wrong else "pass", wrong=wrong, compile_ms=round(value["compile_ms"], 3),
        schema_ms=round(value.get("schema_ms", 0.0), 3), judge_ms=round(value["judge_ms"], 3),
        layouts_ok={layout: not any(w["layout"] == layout for w in wrong) for layout in PASS_LAYOUTS},
    )
    return record


def run_pass(cases: list[Case], engines: list[str], args: argparse.Namespace) -> list[dict]:
    """Judge every case with every engine, each in its own worker."""
    _warm_grammarc()
    peers = {p.name: p for p in prepare_peers([e for e in engines if e != "grammarc"], *byte_vocab())}
    engines = [e for e in engines if e == "grammarc" or e in peers]
    eos = 256

    def task(case: Case, engine: str) -> Callable[[], dict]:
        if engine == "grammarc":
            return lambda: judge_grammarc(case, args.property_order)
        return lambda: judge_peer(peers[engine], case, eos)

    tasks = [((i, engine), task(case, engine)) for i, case in enumerate(cases) for engine in engines]
    records: list[dict] = []
    done, started = 0, time.monotonic()
    for (i, engine), outcome in run_isolated(tasks, workers=args.jobs, timeout=args.timeout,
                                              memory_mb=args.memory_mb, fork=not args.no_fork):
        records.append(pass_record(cases[i], engine, outcome))
        done += 1
        if args.progress and done % args.progress == 0:
            print(f"  {done}/{len(tasks)} judged in {time.monotonic() - started:.0f} s", flush=True)
    order = {(c.name, e): n for n, (c, e) in enumerate((c, e) for c in cases for e in engines)}
    return sorted(records, key=lambda r: order[r["schema"], r["engine"]])


def _warm_grammarc() -> None:
    """Imports and the regex caches every schema uses (strings, numbers, whitespace), as in a
    process that has compiled other schemas before: per-schema compile times then measure
    the schema, not the first import."""
    Grammar.from_json_schema({"type": "object", "properties": {
        "s": {"type": "string"}, "n": {"type": "number"}, "i": {"type": "integer"}, "b": {"type": "boolean"},
        "a": {"type": "array", "items": {"type": ["string", "null"]}}}}).compile()


def pass_summary(records: list[dict], engines: list[str]) -> list[dict]:
    """Per engine: pass rate, per-layout pass rates, failure kinds and compile time."""
    rows = []
    for engine in engines:
        mine = [r for r in records if r["engine"] == engine]
        if not mine:
            continue
        compiled = [r for r in mine if r["status"] in ("pass", "fail")]
        times = [r["compile_ms"] + r["schema_ms"] for r in compiled]
        with_tests = [r for r in mine if r["tests"]]
        rows.append({
            "engine": engine, "schemas": len(mine),
            "pass": sum(r["status"] == "pass" for r in mine),
            "pass %": 100 * sum(r["status"] == "pass" for r in mine) / len(mine),
            "pass % (with tests)": 100 * sum(r["status"] == "pass" for r in with_tests) / max(1, len(with_tests)),
            "compact pass %": 100 * sum(r.get("layouts_ok", {}).get("compact", False) for r in mine) / len(mine),
            "indent2 pass %": 100 * sum(r.get("layouts_ok", {}).get("indent2", False) for r in mine) / len(mine),
            "refused": sum(r["status"] == "refused" for r in mine),
            "valid rejected": sum(any(w["valid"] for w in r.get("wrong", ())) for r in mine),
            "of which order only": sum(_order_only(r) for r in mine),
            "false accepts": sum(sum(not w["valid"] for w in r.get("wrong", ())) for r in mine),
            "false-accept schemas": sum(any(not w["valid"] for w in r.get("wrong", ())) for r in mine),
            "crashes": sum(r["status"] == "crash" for r in mine),
            "compile p50 ms": ml.percentile(times, 50) if times else float("nan"),
            "compile p99 ms": ml.percentile(times, 99) if times else float("nan"),
        })
    return rows


def _order_only(record: dict) -> bool:
    """Fails only on valid instances that grammarc accepts with their keys in another order."""
    wrong = record.get("wrong", ())
    return bool(wrong) and all(w["valid"] and w.get("order") for w in wrong)


def refusal_groups(records: list[dict], engine: str) -> list[tuple[str, int, str]]:
    """(reason, count, an example schema) for the engine's refusals, most frequent first."""
    counts: Counter[str] = Counter()
    example: dict[str, str] = {}
    for r in records:
        if r["engine"] == engine and r["status"] == "refused":
            counts[r["reason"]] += 1
            example.setdefault(r["reason"], r["schema"])
    return [(why, n, example[why]) for why, n in counts.most_common()]


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain-text table: numeric columns right-aligned, text columns left-aligned."""
    def numeric(cell: str) -> bool:
        return bool(re.fullmatch(r"-?[\d.]+%?|n/a|", cell))

    rows = [headers, *rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(headers))]
    right = [all(numeric(row[i]) for row in rows[1:]) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right)).rstrip()
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "n/a" if value != value else f"{value:.1f}"
    return str(value)


def pass_report(records: list[dict], engines: list[str], *, show: int = 25) -> str:
    summary = pass_summary(records, engines)
    parts = [table(list(summary[0]), [[_fmt(v) for v in row.values()] for row in summary])] if summary else []
    for engine in engines:
        groups = refusal_groups(records, engine)
        if groups:
            rows = [[str(n), why, example] for why, n, example in groups[:show]]
            more = f"\n({len(groups) - show} more reasons)" if len(groups) > show else ""
            parts.append(f"{engine}: refusals by reason\n" + table(["count", "reason", "example"], rows) + more)
    wrong = [(r, w) for r in records for w in r.get("wrong", ()) if not w["valid"]]
    if wrong:
        rows = [[r["engine"], r["schema"], str(w["test"]), w["layout"]] for r, w in wrong[: 4 * show]]
        parts.append("false accepts (invalid instances accepted)\n" + table(["engine", "schema", "test", "layout"], rows))
    crashes = [r for r in records if r["status"] == "crash"]
    if crashes:
        rows = [[r["engine"], r["schema"], r["error"][:110]] for r in crashes]
        parts.append("crashes\n" + table(["engine", "schema", "error"], rows))
    rejected = [r for r in records if r["engine"] == "grammarc" and any(w["valid"] for w in r.get("wrong", ()))]
    if rejected:
        rows = [[r["schema"], ", ".join(sorted({f"{w['test']}/{w['layout']}" for w in r["wrong"] if w["valid"]})),
                 "yes" if _order_only(r) else "no"] for r in rejected[:show]]
        more = f"\n({len(rejected) - show} more)" if len(rejected) > show else ""
        parts.append("grammarc: valid instances rejected (test/layout; order only: accepted with the keys in "
                     "another order, see key_orders)\n" + table(["schema", "tests", "order only"], rows) + more)
    return "\n\n".join(parts) + "\n"


# ------------------------------------------------------------------ cold mode


@dataclass
class Response:
    """One engine answering one never-seen schema: compile to first mask, then the replay."""

    engine: str
    schema: str
    status: str = "ok"  # ok | refused (compile error) | rejected (a replayed token) | crash
    detail: str = ""
    tokens: int = 0  # tokens of the replayed instance
    ttfm_us: float = 0.0
    parts_us: dict | None = None  # where TTFM went
    tbm_us: list | None = None  # advance + next mask, per token replayed
    mask_us: list | None = None
    advance_us: list | None = None

    def whole_us(self) -> float:
        return self.ttfm_us + sum(self.tbm_us or ())


def _allowed(words: np.ndarray, token_id: int) -> bool:
    return bool((int(words[token_id >> 5]) >> (token_id & 31)) & 1)


def _replay(response: Response, ids: list[int], words: np.ndarray, step: Callable[[int], None], eos: int) -> None:
    """Feed the tokens: each must be in the mask in `words`; `step(token)` advances and fills
    the next mask, timed as one TBM. EOS must be allowed at the end."""
    clock = time.perf_counter_ns
    response.tbm_us, response.mask_us, response.advance_us = [], [], []
    for number, token_id in enumerate(ids):
        if not _allowed(words, token_id):
            response.status, response.detail = "rejected", f"token {number} of {len(ids)} ({token_id}) not allowed"
            return
        start = clock()
        step(token_id)
        response.tbm_us.append((clock() - start) / 1e3)
    if not _allowed(words, eos):
        response.status, response.detail = "rejected", "EOS not allowed after the instance"


def respond_grammarc(case: Case, ids: list[int], vocab: Vocabulary, layout: str,
                     profile: dict | None = None, ended: Callable[[str], None] | None = None) -> Response:
    """The whole path for a schema never seen: schema -> IR -> compiled -> engine (index) ->
    first mask, then advance + mask per token. With `profile`, cProfile runs over TTFM and
    over the replay separately; their stats go into `profile["ttfm"]` / `profile["tbm"]`.
    `ended` is called as each part ends, with its name (`PHASES`), for bench/instructions.py
    to count each apart (untimed runs only: the clock runs through it)."""
    ended = ended or _nothing
    response = Response("grammarc", case.name)
    words = np.zeros(-(-vocab.size // 32), dtype=np.int32)
    clock = time.perf_counter_ns
    profiler = cProfile.Profile() if profile is not None else None
    if profiler:
        profiler.enable()
    t0 = clock()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grammar = Grammar.from_json_schema(case.schema, **GRAMMARC_OPTIONS[layout])
            t1 = clock()
            ended(PHASES[0])
            compiled = grammar.compile()
        t2 = clock()
        ended(PHASES[1])
        engine = Engine(compiled, vocab)
        t3 = clock()
        engine.fill_bitmask(words)
        t4 = clock()
        ended(PHASES[2])
    except grammarc.GrammarcError as exc:
        response.status, response.detail = "refused", f"{type(exc).__name__}: {_clip(str(exc).splitlines()[0], 150)}"
        return response
    finally:
        if profiler:
            profiler.disable()
            profile["ttfm"] = _stats_of(profiler)
    response.ttfm_us = (t4 - t0) / 1e3
    response.parts_us = {"schema": (t1 - t0) / 1e3, "compile": (t2 - t1) / 1e3, "engine": (t3 - t2) / 1e3,
                         "first mask": (t4 - t3) / 1e3}
    response.tokens = len(ids)

    def step(token_id: int) -> None:
        start = clock()
        engine.advance(token_id)
        middle = clock()
        engine.fill_bitmask(words)
        response.advance_us.append((middle - start) / 1e3)
        response.mask_us.append((clock() - middle) / 1e3)

    if profiler:
        profiler = cProfile.Profile()
        profiler.enable()
    try:
        _replay(response, ids, words, step, min(vocab.eos_token_ids))
    finally:
        if profiler:
            profiler.disable()
            profile["tbm"] = _stats_of(profiler)
    ended(PHASES[3])
    return response


# The parts of a response `respond_grammarc` names as they end: the schema's grammar, its
# compile, the engine with its first mask (time to first mask, with the two before), and
# the replay's advances and masks.
PHASES = ("schema", "compile", "engine + first mask", "masks")


def _nothing(_: str) -> None:
    pass


def respond_peer(peer: pe.Peer, case: Case, ids: list[int], vocab: Vocabulary, layout: str) -> Response:
    """The same path through a peer's own compile, matcher and mask."""
    response = Response(peer.name, case.name)
    words = np.zeros(-(-vocab.size // 32), dtype=np.int32)
    clock = time.perf_counter_ns
    t0 = clock()
    try:
        compiled = peer.compile(workload(case, layout))
        t1 = clock()
        matcher = peer.matcher(compiled)
        t2 = clock()
        peer.fill(matcher, words)
        t3 = clock()
    except Exception as exc:  # noqa: BLE001 -- the peer refuses the schema
        response.status, response.detail = "refused", f"{type(exc).__name__}: {_clip((str(exc).splitlines() or [''])[0], 150)}"
        return response
    response.ttfm_us = (t3 - t0) / 1e3
    response.parts_us = {"compile": (t1 - t0) / 1e3, "matcher": (t2 - t1) / 1e3, "first mask": (t3 - t2) / 1e3}
    response.tokens = len(ids)

    def step(token_id: int) -> None:
        start = clock()
        ok = peer.advance(matcher, token_id)
        middle = clock()
        if not ok:
            raise pe.Unsupported("refused a token its mask allowed")
        peer.fill(matcher, words)
        response.advance_us.append((middle - start) / 1e3)
        response.mask_us.append((clock() - middle) / 1e3)

    try:
        _replay(response, ids, words, step, min(vocab.eos_token_ids))
    except pe.Unsupported as exc:
        response.status, response.detail = "rejected", str(exc)
    return response


def _stats_of(profiler: cProfile.Profile) -> dict:
    profiler.create_stats()
    return profiler.stats


class _Stats:
    """What pstats.Stats.add reads from a profiler: `create_stats()` and `stats`."""

    def __init__(self, stats: dict):
        self.stats = stats

    def create_stats(self) -> None:
        pass


def cold_split(cases: list[Case], n: int, warmup: int, seed: int) -> tuple[list[Case], list[Case]]:
    """(measured, warm-up): disjoint seeded samples of the cases that have a valid instance,
    no two with the same schema, so a measured schema is never one the engine has seen."""
    seen: set[str] = set()
    usable = []
    for case in cases:
        key = json.dumps(case.schema, sort_keys=True)
        if case.valid_instance() is not None and key not in seen:
            seen.add(key)
            usable.append(case)
    random.Random(seed).shuffle(usable)
    return usable[:n], usable[n: n + warmup]


def run_cold(cases: list[Case], engines: list[str], args: argparse.Namespace) -> tuple[list[Response], dict]:
    """Warm every engine up on other schemas in this process (a server's state), then answer
    each measured schema in a fork of it: every response meets the same warm state and
    never another measured schema's work."""
    measured, warm = cold_split(cases, args.schemas, args.warmup, args.seed)
    vocab, encode = ml.VOCABS[args.vocab]()
    peers = prepare_peers([e for e in engines if e != "grammarc"], vocab, encode)
    engines = [e for e in engines if e == "grammarc" or e in {p.name for p in peers}]
    text_kw = COLD_TEXT[args.layout]

    def responders(case: Case) -> dict[str, Callable[..., Response]]:
        ids = encode(json.dumps(case.valid_instance(), ensure_ascii=False, **text_kw))
        out = {"grammarc": lambda profile=None: respond_grammarc(case, ids, vocab, args.layout, profile)}
        for peer in peers:
            out[peer.name] = lambda p=peer: respond_peer(p, case, ids, vocab, args.layout)
        return out

    start = time.perf_counter()
    for case in warm:  # in this process: what the forks inherit
        for engine, respond in responders(case).items():
            try:
                respond()
            except Exception as exc:  # noqa: BLE001 -- a warm-up schema may crash an engine
                print(f"  warm-up {case.name} / {engine}: {type(exc).__name__}", flush=True)
    from grammarc.tokens import scan_cache

    scan_cache.save_all()  # the disk cache holds the warm-up schemas' scans
    print(f"warmed up on {len(warm)} other schemas in {time.perf_counter() - start:.1f} s", flush=True)
    gc.collect()
    gc.freeze()  # the warm state is shared, not scanned (nor copied) by each fork's collector

    profiles: dict[str, list] = {"ttfm": [], "tbm": []}

    def task(case: Case, engine: str) -> Callable[[], tuple[Response, dict | None]]:
        def run() -> tuple[Response, dict | None]:
            respond = responders(case)[engine]
            if engine == "grammarc" and args.profile is not None:
                profile: dict = {}
                return respond(profile), profile
            return respond(), None
        return run

    # round by round, so that a slow spell of the machine falls on one run of many schemas
    # rather than on every run of one
    tasks = [((i, engine), task(case, engine))
             for _ in range(args.repeat) for i, case in enumerate(measured) for engine in engines]
    runs: dict[tuple[int, str], list[Response]] = {}
    for (i, engine), outcome in run_isolated(tasks, workers=1, timeout=args.timeout, memory_mb=args.memory_mb,
                                              fork=not args.no_fork, unshare=not args.cow):
        if outcome.kind == "ok":
            response, profile = outcome.value
            for key, stats in (profile or {}).items():
                profiles[key].append(stats)
        else:
            response = Response(engine, measured[i].name, "crash", f"{outcome.kind}: {outcome.error}")
        runs.setdefault((i, engine), []).append(response)
    responses = [best_run(runs[(i, engine)]) for i in range(len(measured)) for engine in engines]
    gc.unfreeze()
    meta = {"vocabulary": args.vocab, "vocab_size": vocab.size, "layout": args.layout, "measured": len(measured),
            "repeat": args.repeat, "warmup": [c.name for c in warm], "engines": engines,
            "versions": {p.name: p.version() for p in peers}}
    if args.profile is not None:
        meta["profile"] = save_profiles(profiles, args.profile)
    return responses, meta


def best_run(runs: list[Response]) -> Response:
    """The run of one response kept (`--repeat`): the fastest whole response among those that
    ended as most did. Each run is a fresh fork of the same warm state, so the runs do the
    same work and differ by what else the machine did meanwhile; the fastest is the least
    disturbed. (An outcome seen in a minority of runs, such as a timeout on a loaded
    machine, is not kept over the usual one; between outcomes seen as often, "ok" is.)"""
    usual = max(sorted({r.status for r in runs}),
                key=lambda status: (sum(r.status == status for r in runs), status == "ok"))
    return min((r for r in runs if r.status == usual), key=Response.whole_us)


# ------------------------------------------------------------ cold statistics


def cold_summary(responses: list[Response], engines: list[str], *, common: bool = False) -> list[dict]:
    """Per engine: outcomes, TTFM p50/p99 (ms), TBM mean/p50/p99 (µs), whole response p50/p90
    (ms). With `common`, only the schemas every engine answered in full (same work for all)."""
    ok = {e: {r.schema for r in responses if r.engine == e and r.status == "ok"} for e in engines}
    shared = set.intersection(*ok.values()) if ok else set()
    p = ml.percentile
    rows = []
    for engine in engines:
        mine = [r for r in responses if r.engine == engine and (not common or r.schema in shared)]
        done = [r for r in mine if r.status == "ok"]
        ttfm = [r.ttfm_us / 1e3 for r in mine if r.status in ("ok", "rejected")]
        tbm = [t for r in mine if r.status in ("ok", "rejected") for t in r.tbm_us or ()]
        whole = [r.whole_us() / 1e3 for r in done]
        counts = Counter(r.status for r in mine)
        rows.append({
            "engine": engine, "schemas": len(mine), "ok": counts["ok"], "refused": counts["refused"],
            "rejected": counts["rejected"], "crash": counts["crash"], "tokens": sum(len(r.tbm_us or ()) for r in mine),
            "TTFM p50 ms": p(ttfm, 50) if ttfm else float("nan"), "TTFM p99 ms": p(ttfm, 99) if ttfm else float("nan"),
            "TBM mean us": sum(tbm) / len(tbm) if tbm else float("nan"),
            "TBM p50 us": p(tbm, 50) if tbm else float("nan"), "TBM p99 us": p(tbm, 99) if tbm else float("nan"),
            "whole p50 ms": p(whole, 50) if whole else float("nan"),
            "whole p90 ms": p(whole, 90) if whole else float("nan"),
        })
    return rows


def ttfm_parts(responses: list[Response], engine: str = "grammarc") -> list[list[str]]:
    """Where an engine's TTFM goes: p50, p90 and share of the total, per part."""
    done = [r for r in responses if r.engine == engine and r.parts_us and r.status in ("ok", "rejected")]
    if not done:
        return []
    total = sum(r.ttfm_us for r in done)
    rows = []
    for part in done[0].parts_us:
        values = [r.parts_us[part] / 1e3 for r in done]
        rows.append([part, f"{ml.percentile(values, 50):.2f}", f"{ml.percentile(values, 90):.2f}",
                     f"{max(values):.1f}", f"{100 * sum(values) * 1e3 / total:.0f}%"])
    return rows


def cold_report(responses: list[Response], meta: dict) -> str:
    engines = meta["engines"]
    parts = []
    for title, common in (("all measured schemas", False), ("schemas every engine answered in full", True)):
        rows = cold_summary(responses, engines, common=common)
        parts.append(f"{title}\n" + table(list(rows[0]), [[_fmt(v) for v in row.values()] for row in rows]))
    for engine in engines:
        rows = ttfm_parts(responses, engine)
        if rows:
            parts.append(f"{engine}: where TTFM goes (ms)\n" + table(["part", "p50", "p90", "max", "share"], rows))
    odd = [r for r in responses if r.status != "ok"]
    if odd:
        rows = [[r.engine, r.schema, r.status, r.detail[:110]] for r in odd]
        parts.append("not answered in full\n" + table(["engine", "schema", "status", "detail"], rows))
    return "\n\n".join(parts) + "\n"


def save_profiles(profiles: dict[str, list], directory: Path, top: int = 30) -> dict:
    """Merge the per-schema cProfile stats; write ``cold-<part>.prof`` (pstats format) and
    ``cold-<part>-top.txt`` (top entries by cumulative and by own time)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for part, collected in profiles.items():
        if not collected:
            continue
        stats = pstats.Stats(_Stats(collected[0]))
        for more in collected[1:]:
            stats.add(_Stats(more))
        stats.dump_stats(directory / f"cold-{part}.prof")
        with open(directory / f"cold-{part}-top.txt", "w", encoding="utf-8") as f:
            stats.stream = f
            f.write(f"# {part}: cProfile over {len(collected)} schemas, merged\n\n## by cumulative time\n")
            stats.sort_stats("cumulative").print_stats(top)
            f.write("\n## by own time\n")
            stats.sort_stats("tottime").print_stats(top)
        written[part] = str(directory / f"cold-{part}.prof")
    return written


# ---------------------------------------------------------------- main & save


def _write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in row.items()} for row in rows])


def _machine() -> dict:
    import platform

    return {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}",
            "python": sys.version.split()[0], "grammarc": grammarc.__version__}


# --------------------------------------------------------------- compile mode


class _Alarm(Exception):
    """A compile past --timeout (raised by SIGALRM between bytecodes)."""


def _on_alarm(signum, frame):  # noqa: ARG001 -- the signal handler's signature
    raise _Alarm


def run_compile(cases: list[Case], engines: list[str], args: argparse.Namespace) -> list[dict]:
    """Warm every engine up on other schemas in this process, then compile each case once
    per engine, in turn: a server's first contact with each schema. Wall and CPU times."""
    names = {case.name for case in cases}
    others = [case for case in load_cases(args.data) if case.name not in names]
    random.Random(args.seed).shuffle(others)
    vocab, encode = ml.VOCABS[args.vocab]()
    peers = {p.name: p for p in prepare_peers([e for e in engines if e != "grammarc"], vocab, encode)}
    engines = [e for e in engines if e == "grammarc" or e in peers]

    def compile_once(case: Case, engine: str) -> None:
        if engine == "grammarc":
            Grammar.from_json_schema(case.schema).compile()
        else:
            peers[engine].matcher(peers[engine].compile(workload(case, "flexible")))

    warnings.simplefilter("ignore")
    for case in others[: args.warmup]:
        for engine in engines:
            with contextlib.suppress(Exception):
                compile_once(case, engine)
    gc.collect()
    gc.freeze()  # the warm state is old: collections scan what the measured schemas make
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    records = []
    try:
        for case in cases:
            for engine in engines:
                record = {"schema": case.name, "engine": engine, "status": "ok", "detail": ""}
                wall, cpu = time.perf_counter(), time.process_time()
                signal.setitimer(signal.ITIMER_REAL, args.timeout)
                try:
                    compile_once(case, engine)
                except _Alarm:
                    record.update(status="timeout", detail=f"no answer after {args.timeout:g} s")
                except grammarc.GrammarcError as exc:
                    record.update(status="refused", detail=_clip(str(exc).splitlines()[0], 200))
                except Exception as exc:  # noqa: BLE001 -- a peer's refusal, whatever its class
                    kind = "refused" if engine != "grammarc" else "crash"
                    record.update(status=kind, detail=f"{type(exc).__name__}: {_clip(str(exc), 200)}")
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                record.update(wall_ms=(time.perf_counter() - wall) * 1e3, cpu_ms=(time.process_time() - cpu) * 1e3)
                records.append(record)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return records


def compile_summary(records: list[dict], engines: list[str]) -> list[dict]:
    """Per engine: how many compiled, and the time of those that did (p50/p90/p99/max)."""
    rows = []
    for engine in engines:
        mine = [r for r in records if r["engine"] == engine]
        ok = [r for r in mine if r["status"] == "ok"]
        wall, cpu = [r["wall_ms"] for r in ok], [r["cpu_ms"] for r in ok]
        pct = lambda xs, q: ml.percentile(xs, q) if xs else float("nan")  # noqa: E731
        rows.append({"engine": engine, "schemas": len(mine), "compiled": len(ok),
                     "refused": sum(r["status"] == "refused" for r in mine),
                     "timeout": sum(r["status"] == "timeout" for r in mine),
                     "crash": sum(r["status"] == "crash" for r in mine),
                     "p50 ms": pct(wall, 50), "p90 ms": pct(wall, 90), "p99 ms": pct(wall, 99),
                     "max ms": max(wall) if wall else float("nan"),
                     "cpu p50 ms": pct(cpu, 50), "cpu p99 ms": pct(cpu, 99)})
    return rows


def compile_report(records: list[dict], engines: list[str], show: int = 10) -> str:
    summary = compile_summary(records, engines)
    lines = [table(list(summary[0]), [[_fmt(v) for v in row.values()] for row in summary])] if summary else []
    for engine in engines:
        slow = sorted((r for r in records if r["engine"] == engine and r["status"] == "ok"), key=lambda r: -r["wall_ms"])
        if slow:
            lines += ["", f"{engine}: slowest", table(["schema", "wall ms", "cpu ms"],
                                                       [[r["schema"], _fmt(r["wall_ms"]), _fmt(r["cpu_ms"])]
                                                        for r in slow[:show]])]
    return "\n".join(lines)


def save_compile(records: list[dict], engines: list[str], directory: Path, command: str, vocab: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    _write_csv(directory / "maskbench-compile.csv", compile_summary(records, engines))
    _write_csv(directory / "maskbench-compile-schemas.csv", records)
    payload = {"meta": {"command": command, "vocabulary": vocab, **_machine()},
               "summary": compile_summary(records, engines), "records": records}
    (directory / "maskbench-compile.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


def save_pass(records: list[dict], engines: list[str], directory: Path, command: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    summary = pass_summary(records, engines)
    _write_csv(directory / "maskbench-pass.csv", summary)
    _write_csv(directory / "maskbench-pass-schemas.csv", [
        {"schema": r["schema"], "engine": r["engine"], "status": r["status"], "tests": r["tests"],
         "compile_ms": r.get("compile_ms", ""), "schema_ms": r.get("schema_ms", ""), "reason": r.get("reason", ""),
         "wrong": " ".join(f"{w['test']}/{w['layout']}/{'valid' if w['valid'] else 'invalid'}"
                           f"{'/order' if w.get('order') else ''}" for w in r.get("wrong", ())),
         "error": r.get("error", "")[:300]} for r in records])
    groups = {e: [{"reason": why, "count": n, "example": ex} for why, n, ex in refusal_groups(records, e)]
              for e in engines}
    payload = {"meta": {"command": command, **_machine()}, "summary": summary, "refusals": groups, "records": records}
    (directory / "maskbench-pass.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


def save_cold(responses: list[Response], meta: dict, directory: Path, command: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    engines, vocab = meta["engines"], meta["vocabulary"]
    _write_csv(directory / f"maskbench-cold-{vocab}.csv", cold_summary(responses, engines))
    _write_csv(directory / f"maskbench-cold-{vocab}-common.csv", cold_summary(responses, engines, common=True))
    _write_csv(directory / f"maskbench-cold-{vocab}-responses.csv", [
        {"schema": r.schema, "engine": r.engine, "status": r.status, "tokens": r.tokens, "ttfm_ms": r.ttfm_us / 1e3,
         "ttfm_parts_ms": " ".join(f"{k}={v / 1e3:.2f}" for k, v in (r.parts_us or {}).items()),
         "tbm_mean_us": sum(r.tbm_us) / len(r.tbm_us) if r.tbm_us else "",
         "tbm_max_us": max(r.tbm_us) if r.tbm_us else "", "whole_ms": r.whole_us() / 1e3, "detail": r.detail}
        for r in responses])
    records = [{"schema": r.schema, "engine": r.engine, "status": r.status, "detail": r.detail, "tokens": r.tokens,
                "ttfm_us": r.ttfm_us, "parts_us": r.parts_us, "tbm_us": r.tbm_us, "mask_us": r.mask_us,
                "advance_us": r.advance_us} for r in responses]
    payload = {"meta": {"command": command, **meta, **_machine()},
               "summary": cold_summary(responses, engines),
               "summary_common": cold_summary(responses, engines, common=True), "responses": records}
    (directory / f"maskbench-cold-{vocab}.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("pass", "cold", "compile"), required=True)
    parser.add_argument("--data", type=Path, default=DATA, help=f"MaskBench files (default {DATA})")
    parser.add_argument("--peer", action="append", choices=[*PEERS, "none"],
                        help="peers to run beside grammarc (repeatable; default: every installed one; none: grammarc only)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every sample (default 0)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per schema and engine (default 60)")
    parser.add_argument("--memory-mb", type=int, default=6144,
                        help="address space a worker may add to what it inherits (default 6144)")
    parser.add_argument("--no-fork", action="store_true", help="run in this process (no timeout): for profilers")
    parser.add_argument("--cow", action="store_true",
                        help="cold mode: leave each fork's pages shared with the warm process, so that every "
                             "response pays copy-on-write faults for the warm pages it touches (before 2026-12-06)")
    parser.add_argument("--save", type=Path, metavar="DIR", help="write maskbench-<mode>*.json/.csv under DIR")
    parser.add_argument("--cache-dir", type=Path,
                        help="grammarc's disk cache for this run (default: a fresh temporary one, removed after)")
    group = parser.add_argument_group("pass and compile modes")
    group.add_argument("--only", action="append", help="schemas whose file name contains this (repeatable)")
    group.add_argument("--sample", type=int, help="a seeded random sample of this many schemas")
    group.add_argument("--limit", type=int, help="at most this many schemas (after --sample)")
    group.add_argument("--jobs", type=int, default=1, help="workers at a time (default 1)")
    group.add_argument("--progress", type=int, default=0, help="print progress every N tasks")
    group.add_argument("--property-order", choices=("schema", "any"), default="schema",
                       help="grammarc's property_order: schema (the default, for generation) or any (for validation)")
    group = parser.add_argument_group("cold and compile modes")
    group.add_argument("--schemas", type=int, default=50, help="never-seen schemas measured in cold mode (default 50)")
    group.add_argument("--warmup", type=int, default=20, help="other schemas warmed up on first (default 20)")
    group.add_argument("--repeat", type=int, default=1,
                       help="cold mode: answer each schema this many times, each in a fresh fork, and keep each "
                            "response's fastest run (default 1; a noisy machine needs 3)")
    group.add_argument("--vocab", choices=sorted(ml.VOCABS), default="llama3")
    group.add_argument("--layout", choices=sorted(GRAMMARC_OPTIONS), default="flexible",
                       help="flexible: json.dumps' default separators, every engine's JSON whitespace (MaskBench's); "
                            "compact: no whitespace")
    group.add_argument("--profile", type=Path, metavar="DIR",
                       help="cProfile grammarc's TTFM and replay per schema; write DIR/cold-{ttfm,tbm}.prof and top lists")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    return args


def main(argv: list[str] | None = None) -> tuple[list, dict]:
    args = parse_args(argv)
    engines = ["grammarc"] + ([] if args.peer == ["none"] else [p for p in PEERS if args.peer is None or p in args.peer])
    command = "python bench/maskbench.py " + " ".join(argv if argv is not None else sys.argv[1:])
    cases = load_cases(args.data)
    if not cases:
        sys.exit(f"no MaskBench files in {args.data}")
    with ml.disk_cache(args.cache_dir, "maskbench"):
        if args.mode in ("pass", "compile"):
            cases = select_cases(cases, only=args.only, limit=args.limit, sample=args.sample, seed=args.seed)
            print(f"{len(cases)} schemas from {args.data}; engines: {', '.join(engines)}", flush=True)
            if args.mode == "compile":
                records = run_compile(cases, engines, args)
                engines = [e for e in engines if any(r["engine"] == e for r in records)]
                print(f"\nin one process, after {args.warmup} other schemas; peers for the {args.vocab} vocabulary")
                print(compile_report(records, engines))
                if args.save is not None:
                    save_compile(records, engines, args.save, command.strip(), args.vocab)
                return records, {"engines": engines}
            records = run_pass(cases, engines, args)
        else:
            responses, meta = run_cold(cases, engines, args)
    if args.mode == "pass":
        engines = [e for e in engines if any(r["engine"] == e for r in records)]
        print()
        print(pass_report(records, engines))
        if args.save is not None:
            save_pass(records, engines, args.save, command.strip())
        return records, {"engines": engines}
    print()
    repeats = f", each response the fastest of {meta['repeat']} runs" if meta["repeat"] > 1 else ""
    print(f"vocabulary {meta['vocabulary']} ({meta['vocab_size']} ids), layout {meta['layout']}, "
          f"{meta['measured']} never-seen schemas after {len(meta['warmup'])} warm-up ones{repeats}; "
          f"peers: {meta['versions'] or 'none'}")
    print(cold_report(responses, meta))
    if args.save is not None:
        save_cold(responses, meta, args.save, command.strip())
    return responses, meta


if __name__ == "__main__":
    main()
