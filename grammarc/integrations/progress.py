"""Progress indication for steps that can take seconds (compiling a schema, building a token index).

Quiet by default, as libraries are: `enable` (or ``GRAMMARC_PROGRESS=1`` in the environment)
turns it on for the process, and calls that take ``progress=`` decide for themselves. The
``grammarc`` command line turns it on when standard error is a terminal.

A `stage` shows nothing for work that ends within `delay` seconds (1 s by default): only
slow steps get a line. With tqdm installed (transformers brings it) the line is a tqdm
counter of elapsed seconds; without it, one plain line on standard error when the stage
starts to be slow and one when it ends. Either way the work itself runs in the calling
thread; a daemon thread only draws.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import IO, Iterator

__all__ = ["enable", "enabled", "stage"]

_enabled = os.environ.get("GRAMMARC_PROGRESS", "").strip().lower() in ("1", "true", "yes", "on")


def enable(on: bool = True) -> None:
    """Show progress for slow steps in this process (``enable(False)``: quiet again)."""
    global _enabled
    _enabled = bool(on)


def enabled() -> bool:
    """Whether progress is shown when a call does not say (`enable`, ``GRAMMARC_PROGRESS``)."""
    return _enabled


@contextmanager
def stage(description: str, *, progress: bool | None = None, delay: float = 1.0,
          stream: IO[str] | None = None) -> Iterator[None]:
    """Run the body; if it takes longer than `delay` seconds and progress is on (`progress`,
    else the process setting), show `description` with the elapsed time until it ends."""
    if not (_enabled if progress is None else progress):
        yield
        return
    display = _Display(description, delay, stream if stream is not None else sys.stderr)
    try:
        yield
    finally:
        display.close()


class _Display:
    """Draws one stage from a daemon thread, starting after `delay` seconds."""

    def __init__(self, description: str, delay: float, stream: IO[str]):
        self.description, self.stream = description, stream
        self.began = time.perf_counter()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._draw, args=(delay,), daemon=True)
        self.thread.start()

    def _draw(self, delay: float) -> None:
        if self.done.wait(delay):
            return  # fast: nothing to show
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        if tqdm is None:
            print(f"{self.description} ...", file=self.stream, flush=True)
            self.done.wait()
            print(f"{self.description}: done in {time.perf_counter() - self.began:.1f} s", file=self.stream, flush=True)
            return
        bar = tqdm(desc=self.description, total=None, file=self.stream, unit="s",
                   bar_format="{desc}: {elapsed}", leave=True,
                   ncols=len(self.description) + 16)  # the line's own width, whatever the terminal reports
        while not self.done.wait(0.2):
            bar.refresh()
        bar.refresh()
        bar.close()

    def close(self) -> None:
        self.done.set()
        self.thread.join()
