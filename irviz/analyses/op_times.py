"""Measured op times beside the cost model's estimates: the calibration data per op kind.

Why it exists: the parallelism prediction plays the forks out with each op's *estimated*
time (:mod:`.cost`), and ``--calibrate`` only scales all of them by one factor. A profile
(:mod:`.profile_times`) measured every op: comparing the two per op kind says where the
model is wrong (an LSTM 3x slower than its FLOPs say, a small add 20x slower than its
bytes say: the per-op overhead), and feeding the measured times into the same schedule
says what the prediction would have been with the right op times.

Reads ``irviz.profile`` and ``irviz.cost``; writes nothing.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import networkx as nx

from .cost import cost_model, cost_of
from .profile_times import PROFILE

__all__ = ["OpTime", "KindError", "op_times", "kind_errors", "measured_prediction"]


@dataclass(frozen=True)
class OpTime:
    """One profiled node: measured and estimated µs per run."""

    node: str
    kind: str
    measured_us: float
    estimated_us: float | None   # None: the cost model counted ops, not time
    calls: int

    @property
    def ratio(self) -> float | None:
        """measured / estimated (2.0: the op took twice the estimate)."""
        if not self.estimated_us:
            return None
        return self.measured_us / self.estimated_us


@dataclass(frozen=True)
class KindError:
    """How far the estimate was from the measurement for one op kind."""

    kind: str
    nodes: int
    measured_us: float
    estimated_us: float
    #: measured / estimated over the kind's total
    ratio: float
    #: the median over its nodes of |log2(measured / estimated)|: 1.0 = off by 2x
    log2_error: float


def op_times(G: nx.DiGraph) -> list[OpTime]:
    """Every profiled node, slowest first."""
    model = cost_model(G)
    timed = model is not None and model.unit == "us"
    out = []
    for node, data in G.nodes(data=True):
        p = data.get(PROFILE)
        if not p:
            continue
        calls = max(int(p.get("calls", 1)), 1)
        estimate = cost_of(data) * calls if timed else None
        out.append(OpTime(node, data["kind"], p["total_us"], estimate, calls))
    return sorted(out, key=lambda t: -t.measured_us)


def kind_errors(G: nx.DiGraph) -> list[KindError]:
    """Per op kind (``aten::linear``), measured against estimated, by measured time."""
    by_kind: dict[str, list[OpTime]] = {}
    for t in op_times(G):
        if t.estimated_us and t.measured_us > 0:
            by_kind.setdefault(t.kind, []).append(t)
    out = []
    for kind, ts in by_kind.items():
        measured = sum(t.measured_us for t in ts)
        estimated = sum(t.estimated_us for t in ts)
        out.append(KindError(kind, len(ts), round(measured, 3), round(estimated, 3),
                             round(measured / estimated, 3),
                             round(statistics.median(abs(math.log2(t.ratio)) for t in ts), 3)))
    return sorted(out, key=lambda k: -k.measured_us)


def measured_prediction(G: nx.DiGraph, intra: int, inter: int, cpus: float):
    """The static prediction's schedule played with the measured op times (µs per
    execution: a run's time over its calls) instead of the estimates; None without a
    profile. Ops the profile did not see keep their estimate."""
    from .prediction import OpTimes, predict, static_times

    base = static_times(G, intra)
    us = dict(base.us)
    seen = False
    for node, data in G.nodes(data=True):
        p = data.get(PROFILE)
        if p:
            us[node] = p["total_us"] / max(int(p.get("calls", 1)), 1)
            seen = True
    if not seen:
        return None
    return predict(G, intra, inter, cpus, times=OpTimes(us, base.cores), basis="measured")
