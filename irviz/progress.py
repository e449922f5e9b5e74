"""Progress feedback for long stages, and the timing summary of ``--verbose``.

A stage that runs longer than a second announces itself on stderr when stderr is a
terminal (a docs build or CI log stays quiet); every stage's wall time is kept for the
summary.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

#: seconds a stage may run before it is announced
ANNOUNCE_AFTER = 1.0


class Stages:
    """Times named stages; announces the slow ones on an interactive stderr."""

    def __init__(self, interactive: bool | None = None):
        self.interactive = sys.stderr.isatty() if interactive is None else interactive
        self.times: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        timer = None
        if self.interactive:
            timer = threading.Timer(ANNOUNCE_AFTER,
                                    lambda: print(f"irviz: {name}...", file=sys.stderr,
                                                  flush=True))
            timer.daemon = True
            timer.start()
        started = time.perf_counter()
        try:
            yield
        finally:
            if timer is not None:
                timer.cancel()
            self.times.append((name, time.perf_counter() - started))

    def summary(self) -> str:
        total = sum(t for _, t in self.times)
        parts = ", ".join(f"{name} {t:.2f} s" for name, t in self.times)
        return f"timing: {parts}; total {total:.2f} s"
