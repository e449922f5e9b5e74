"""Measured op times drawn on the graph (``render --profile``): colour, the hottest labels,
the legend.

It reads only what :mod:`irviz.analyses.profile_times` annotated: ``irviz.profile`` per
node and the graph's coverage. Colours come from ColorBrewer's YlOrBr ramp (sequential and
colorblind-safe) on a log scale between the fastest and the slowest matched node, so a
40 ms LSTM and a 10 µs add are both readable; the legend gives the real range and how much
of the profiled aten time was matched.
"""
from __future__ import annotations

import math

import networkx as nx

from ..analyses.memory import memory_facts
from ..analyses.profile_times import (COVERAGE, MEASURED_SPAN, MEMORY, PROFILE, RUN_US, RUNS,
                                      UNMATCHED, task_time_of)

__all__ = ["ProfileOverlay", "RAMP", "fmt_us", "fmt_bytes"]

#: ColorBrewer YlOrBr, light to dark, without its darkest steps (the labels' dark text
#: must stay readable on every step)
RAMP = ("#ffffd4", "#fee391", "#fec44f", "#fe9929", "#ec7014")
#: how many of the slowest nodes get their time in the label
TOP_N = 5


def fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def fmt_us(us: float) -> str:
    if us >= 1000:
        return f"{us / 1000:.3g} ms"
    return f"{us:.3g} µs"


class ProfileOverlay:
    """What the picture shows of a profile; ``active`` is False without one."""

    def __init__(self, G: nx.DiGraph):
        self.G = G
        # without a profile's coverage nothing is shown: no pass over every node
        self.times = {n: d[PROFILE]["total_us"] for n, d in G.nodes(data=True)
                      if PROFILE in d and d[PROFILE]["total_us"] > 0
                      } if COVERAGE in G.graph else {}
        self.active = COVERAGE in G.graph and bool(self.times)
        if not self.active:
            return
        self.lo, self.hi = min(self.times.values()), max(self.times.values())
        self.total = sum(self.times.values())
        self.top = sorted(self.times, key=lambda n: -self.times[n])[:TOP_N]

    def _step(self, us: float) -> int:
        if self.hi <= self.lo:
            return len(RAMP) - 1
        x = (math.log(us) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        return min(int(x * len(RAMP)), len(RAMP) - 1)

    def fill(self, node: str) -> str | None:
        us = self.times.get(node) if self.active else None
        return RAMP[self._step(us)] if us else None

    def fill_of(self, nodes) -> tuple[str | None, float]:
        """A box's colour and time: the sum of the nodes it holds."""
        us = sum(self.times.get(n, 0.0) for n in nodes) if self.active else 0.0
        return (RAMP[self._step(max(us, self.lo))] if us else None), us

    def row(self, node: str) -> str | None:
        """``2.9 ms (41%)`` for the slowest nodes, else None."""
        if not self.active or node not in self.top:
            return None
        us = self.times[node]
        return f"{fmt_us(us)} ({us / self.total:.0%})"

    def tooltip(self, node: str) -> list[str]:
        data = self.G.nodes[node].get(PROFILE)
        if not data:
            return []
        return [f"measured: {fmt_us(data['total_us'])} with its children, "
                f"{fmt_us(data['self_us'])} self, {data['calls']} call(s) per run "
                f"(median of {self.G.graph.get(RUNS)} runs)"]

    def task_line(self, fork: str | None) -> str | None:
        """``3.1 ms of ops over 5.3 ms, 2.1 ms (66%) beside other work`` for a fork's task:
        what its ops took, from its first op's start to its last one's end, and how much
        of its ops' time other ops ran at the same moment (the measured overlap)."""
        if not self.active or fork is None or fork not in self.G:
            return None
        t = task_time_of(self.G.nodes[fork])
        if not t:
            return None
        share = t["overlap_us"] / t["busy_us"] if t["busy_us"] else 0.0
        return (f"{fmt_us(t['busy_us'])} of ops over {fmt_us(t['span_us'])}, "
                f"{fmt_us(t['overlap_us'])} ({share:.0%}) beside other work")

    def legend(self) -> tuple[list[tuple[str, str]], list[str]]:
        """The ramp's cells ``(colour, time)`` and its lines: the range and coverage (and
        what was not matched), the measured critical path, the activation memory."""
        cells = []
        for i, colour in enumerate(RAMP):
            if self.hi <= self.lo:
                us = self.hi
            else:
                us = math.exp(math.log(self.lo) + (math.log(self.hi) - math.log(self.lo))
                              * i / len(RAMP))
            cells.append((colour, f"≥ {fmt_us(us)}"))
        coverage = self.G.graph.get(COVERAGE)
        line = (f"measured time per node (log scale): {fmt_us(self.lo)} … {fmt_us(self.hi)}, "
                f"median of {self.G.graph.get(RUNS)} runs; "
                + (f"{coverage:.0%} of the profiled aten time matched to nodes"
                   if coverage is not None else "no aten time profiled"))
        unmatched = self.G.graph.get(UNMATCHED) or []
        if unmatched:
            line += "; not matched: " + ", ".join(
                f"{u['name']} {fmt_us(u['total_us'])}" for u in unmatched[:3])
        lines = [line]
        span = self.G.graph.get(MEASURED_SPAN)
        wall = self.G.graph.get(RUN_US)
        if span is not None:
            lines.append(f"bold border: the critical path by measured times, {fmt_us(span)}"
                         + (f" of a {fmt_us(wall)} run" if wall else ""))
        estimated, measured = memory_facts(self.G) or {}, self.G.graph.get(MEMORY) or {}
        if estimated.get("peak_bytes") or measured.get("peak_bytes"):
            lines.append("activations: estimated peak "
                         + (fmt_bytes(estimated["peak_bytes"]) if estimated.get("peak_bytes")
                            else "?") + " (from shapes, in program order), measured peak "
                         + (fmt_bytes(measured["peak_bytes"]) if measured.get("peak_bytes")
                            else "?"))
        return cells, lines
