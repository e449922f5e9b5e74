"""Thread settings and the machine a measurement runs on.

Why it exists: a measured speed-up means little without the thread counts it ran
with and how busy the machine was. This module holds those facts and nothing that
needs a model: which (intra-op, inter-op) settings to try (:func:`default_settings`),
the CPUs and load (:func:`machine_facts`), and :class:`OtherLoad`, which the
measuring child and the benchmarks use to say how much CPU other processes took
while they timed. torch is imported only by :func:`machine_facts`, so the load meter
stays cheap to import.
"""
from __future__ import annotations

import os
import time
from typing import Any

from ..errors import UsageError

__all__ = ["Setting", "usable_cpus", "machine_facts", "OtherLoad", "default_settings",
           "check_setting", "MIN_SAMPLE_S", "PHASE_PREFIX"]

#: a timed sample is this many seconds of back-to-back calls at least (timeit's autorange):
#: single 50 ms calls on a shared 2-CPU VM varied by up to 60 % within one process, and a
#: sample that long absorbs one scheduler hiccup instead of reporting it as the model's time
MIN_SAMPLE_S = 0.2
#: the child writes ``irviz-measure: phase=NAME`` lines to stderr; timeouts name the phase
PHASE_PREFIX = "irviz-measure: phase="

#: ``(intra_op | None, inter_op | None)``; None = torch's default
Setting = tuple


def usable_cpus() -> int:
    """CPUs this process may run on (the affinity mask, else os.cpu_count())."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_facts() -> dict:
    """``{"cpu_count", "load_avg": [1, 5, 15 min] | None, "torch_version"}`` of this process."""
    import torch

    try:
        load = [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {"cpu_count": usable_cpus(), "load_avg": load, "torch_version": torch.__version__}


def _host_ticks() -> tuple[int, int] | None:
    """(busy, total) clock ticks of all CPUs since boot, from /proc/stat (Linux), else None."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 5:
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])       # without guest time (already counted in user)
    return total - idle, total


class OtherLoad:
    """How many CPUs *other* processes kept busy while a block ran (Linux; else None).

    ``(host busy CPU time - this process's CPU time) / wall time``: on a shared
    machine, 1.0 on a 2-CPU box means only one CPU was left for the measurement.
    """

    def __init__(self, include_children: bool = False):
        #: count this process's finished children as its own (a benchmark's tool runs)
        self.include_children = include_children

    def _own_cpu(self) -> float:
        own = time.process_time()
        if self.include_children:
            import resource
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            own += kids.ru_utime + kids.ru_stime
        return own

    def __enter__(self) -> "OtherLoad":
        self.value: float | None = None
        self._ticks = _host_ticks()
        self._cpu = self._own_cpu()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        end = _host_ticks()
        wall = time.perf_counter() - self._wall
        own = self._own_cpu() - self._cpu
        if self._ticks is None or end is None or wall <= 0:
            return
        try:
            hz = os.sysconf("SC_CLK_TCK")
        except (AttributeError, ValueError, OSError):
            hz = 100
        busy = (end[0] - self._ticks[0]) / hz
        self.value = round(max(busy - own, 0.0) / wall, 2)


def default_settings(cpu_count: int | None = None) -> list[Setting]:
    """``[(default, default), (1, P), (1, 2P)]`` with P = usable CPUs.

    ``(default, default)`` - what the user's process gets (intra-op = cores,
    inter-op = cores); ``(1, P)`` - intra-op parallelism off, so forked tasks are
    what fills the cores (on 2 cores the LSTM ensemble went from 1.0-1.2x with
    the default to 1.5-1.9x here); ``(1, 2P)`` - more inter-op threads than cores,
    because a waiting task's continuation and nested forks need pool threads too
    (``(1, 4)`` was the best setting measured on 2 cores).
    """
    p = cpu_count or usable_cpus()
    out: list[Setting] = []
    for s in [(None, None), (1, p), (1, 2 * p)]:
        if s not in out:
            out.append(s)
    return out


def check_setting(s: Any) -> Setting:
    """``s`` as an ``(intra_op, inter_op)`` tuple; UsageError when it is not one."""
    if not (isinstance(s, (tuple, list)) and len(s) == 2):
        raise UsageError(f"a thread setting must be a pair (intra_op, inter_op), got {s!r}",
                         hint="e.g. settings=[(None, None), (1, 2)]; None means torch's default")
    for v in s:
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise UsageError(f"thread counts must be positive integers or None, got {s!r}")
    return (s[0], s[1])
