"""Run hostile compile-time inputs in a child process, under a memory cap and a time limit.

Each snippet runs in ``python -`` under ``resource.setrlimit(RLIMIT_AS)`` and a timeout. A
hostile grammar must end in grammarc's own error (a `grammarc.GrammarcError` subclass that
names the construct and where it is), quickly: never a MemoryError, a RecursionError, an
OverflowError or a hang. Running it in a child keeps a failure from taking the test run
down with it, and lets the test see *which* exception came out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import grammarc

# The child runs where the grammarc under test lives: `python -` puts its working directory
# first on sys.path, and another checkout there would be imported instead.
_ROOT = Path(grammarc.__file__).resolve().parents[1]
MEMORY_LIMIT = 2 << 30  # bytes of address space for the child
TIME_LIMIT = 60.0  # seconds; generous on a loaded machine, far below "never ends"

_PRELUDE = """
import json, resource, sys, time, traceback
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
_t0 = time.perf_counter()
def _report(kind, message, mro, where):
    print("@@HOSTILE@@" + json.dumps({{"kind": kind, "message": message[:4000], "mro": mro,
                                       "seconds": time.perf_counter() - _t0, "where": where}}))
try:
    exec(compile({code!r}, "<hostile>", "exec"), {{"__name__": "__hostile__"}})
except BaseException as exc:
    frames = traceback.extract_tb(exc.__traceback__)
    where = []
    for f in frames:
        name = f.filename.rsplit("/", 1)[-1] + ":" + f.name
        if name not in where:
            where.append(name)
    _report(type(exc).__name__, str(exc), [c.__module__ + "." + c.__qualname__ for c in type(exc).__mro__], where)
else:
    _report("", "", [], [])
"""


@dataclass(frozen=True)
class Outcome:
    """What the child did: `kind` is the exception's class name ("" when none was raised)."""

    kind: str
    message: str
    classes: tuple[str, ...]  # the exception class and its bases, qualified
    seconds: float
    timed_out: bool = False
    crashed: str = ""
    output: str = ""  # what the code printed
    where: tuple[str, ...] = ()  # file:function of the traceback, outermost first, once each

    @property
    def is_grammarc_error(self) -> bool:
        return "grammarc.errors.GrammarcError" in self.classes

    def __str__(self) -> str:
        if self.timed_out:
            return "timed out"
        if self.crashed:
            return f"crashed: {self.crashed}"
        said = f" [{self.output[-300:]}]" if self.output else ""
        return f"{self.kind or 'no error'} after {self.seconds:.1f}s: {self.message[:300]}{said}"


def run_hostile(code: str, *, timeout: float = TIME_LIMIT, memory: int = MEMORY_LIMIT) -> Outcome:
    """Run `code` (Python source, read from stdin) in a fresh interpreter; return how it ended."""
    source = _PRELUDE.format(limit=memory, code=textwrap.dedent(code))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    try:
        done = subprocess.run([sys.executable, "-"], input=source, capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=_ROOT)
    except subprocess.TimeoutExpired:
        return Outcome("", "", (), timeout, timed_out=True)
    lines = done.stdout.splitlines()
    for line in lines:
        if line.startswith("@@HOSTILE@@"):
            data = json.loads(line[len("@@HOSTILE@@"):])
            printed = "\n".join(x for x in lines if not x.startswith("@@HOSTILE@@"))
            return Outcome(data["kind"], data["message"], tuple(data["mro"]), data["seconds"], output=printed,
                           where=tuple(data["where"]))
    return Outcome("", "", (), 0.0, crashed=f"exit {done.returncode}: {done.stderr[-2000:]}")


def assert_grammarc_error(outcome: Outcome, kind: str, *fragments: str) -> None:
    """The child raised grammarc's `kind` error, and its message holds every fragment."""
    assert outcome.is_grammarc_error and outcome.kind == kind, str(outcome)
    for fragment in fragments:
        assert fragment in outcome.message, (fragment, str(outcome))
