"""The hand-off probe: what a fork/wait pair between two busy threads costs here, now.

Why it exists: the calibrated prediction charged each task start the wake-up of an idle
pool thread, probed with a trivial task (0.04-0.13 ms). Between busy threads a hand-off
measured ten times that (``benchmarks/handoff.py``: 1-2 ms per fork/wait pair of ~3 ms
tasks, varying from run to run), and the seed's BiFork ensemble, four hand-offs per
call, measured up to 3 ms per call slower than the simulation said.

The probe is a chain of :data:`PAIRS` fork/wait pairs of busy loops (the caller runs
one, the pool the other), each side 1/(2 x PAIRS) of the model's serial call, next to the
same work run serially. It is sampled in the same rounds as the model
(:func:`irviz.measure.child.round_robin`), so it sees the machine as the model did; the
parent fits the simulation's per-start cost to it
(:func:`irviz.analyses.prediction.fit_wake_us`).
"""
from __future__ import annotations

import statistics
import time
from typing import Any

#: fork/wait pairs in the probe: BiFork's four per call
PAIRS = 4
#: the probe's tensor: small enough that one op stays on one intra-op thread
_SHAPE = (64, 256)
#: no probe for a model whose serial call is shorter: its tasks would be a few busy
#: steps, and the trivial wake-up probe (:func:`irviz.measure.child.wake_us`) stands in.
#: It was 2 ms; the seed LSTMEnsemble at C = 16 (0.8 ms calls) then got the trivial
#: probe's charge at every start and was predicted 0.81-0.94x where 1.26-1.40x was
#: measured with one intra-op thread; with the probe, 1.03-1.43x against 1.15-1.50x
#: (five `irviz report --measure` runs, 2026-12-02)
MIN_SERIAL_S = 0.0002


def probe_functions() -> tuple[Any, Any, Any]:
    """The scripted ``work(x, n)`` (n busy steps), ``forked(x, n, k)`` (k fork/wait pairs
    of it) and ``serial(x, n, k)`` (the same work inline); benchmarks/handoff.py uses
    them too."""
    import torch

    @torch.jit.script
    def work(x: torch.Tensor, n: int) -> torch.Tensor:
        for _ in range(n):
            x = torch.tanh(x * 1.0001)
        return x

    @torch.jit.script
    def forked(x: torch.Tensor, n: int, k: int) -> torch.Tensor:
        acc = x
        for _ in range(k):
            fut = torch.jit.fork(work, x, n)
            mine = work(x, n)
            acc = acc + torch.jit.wait(fut) + mine
        return acc

    @torch.jit.script
    def serial(x: torch.Tensor, n: int, k: int) -> torch.Tensor:
        acc = x
        for _ in range(k):
            acc = acc + work(x, n) + work(x, n)
        return acc

    return work, forked, serial


def make_probe(serial_call_s: float) -> tuple[dict[str, Any], dict | None]:
    """The probe's two variants for :func:`~irviz.measure.child.round_robin` (they ignore
    the model's inputs) and its shape: ``{"pairs", "steps"}``. Each busy loop lasts
    about ``serial_call_s / (2 * PAIRS)``. ``({}, None)`` below :data:`MIN_SERIAL_S`."""
    import torch

    if serial_call_s < MIN_SERIAL_S:
        return {}, None

    work, forked, serial = probe_functions()
    x = torch.rand(*_SHAPE)
    for _ in range(3):                     # the profiling executor settles
        forked(x, 8, 2)
        serial(x, 8, 2)
    per_step = statistics.median(_timed(lambda: work(x, 64)) for _ in range(7)) / 64
    task_s = serial_call_s / (2 * PAIRS)
    steps = max(1, round(task_s / per_step)) if per_step > 0 else 1
    fns = {"handoff_serial": lambda *_: serial(x, steps, PAIRS),
           "handoff_forked": lambda *_: forked(x, steps, PAIRS)}
    return fns, {"pairs": PAIRS, "steps": steps}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def probe_result(shape: dict | None, wall: dict[str, list[float]]) -> dict | None:
    """What the child reports: ``{"pairs", "steps", "serial_s", "forked_s"}`` (medians of
    the rounds' per-call means), or None when the probe was not timed."""
    if shape is None or not wall.get("handoff_serial") or not wall.get("handoff_forked"):
        return None
    return {**shape, "serial_s": round(statistics.median(wall["handoff_serial"]), 6),
            "forked_s": round(statistics.median(wall["handoff_forked"]), 6)}
