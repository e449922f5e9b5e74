"""Build a capture's IR graph and run every analysis on it, in dependency order.

The one place the order lives: render, report and lint all read the same facts, and the
benchmarks time the same :data:`STEPS` one by one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import networkx as nx

from ..frontends.capture import Capture
from ..ir.build import build_graph
from ..perf import gc_paused
from .cost import annotate_costs
from .fork_wait import annotate_fork_waits
from .parallelism import annotate_parallelism
from .runtime_shapes import annotate_runtime_shapes
from .shape_arithmetic import annotate_shape_arithmetic
from .traced_control_flow import annotate_frozen_control_flow


@dataclass(frozen=True)
class Step:
    """One analysis: ``run(G)``, or ``run(G, capture)`` when it needs the capture."""

    name: str
    run: Callable[..., object]
    needs_capture: bool = False
    #: it runs the user's model, which may rely on the garbage collector
    runs_model: bool = False


STEPS: tuple[Step, ...] = (
    Step("fork_waits", annotate_fork_waits),
    Step("frozen_control_flow", annotate_frozen_control_flow, needs_capture=True),
    Step("shape_arithmetic", annotate_shape_arithmetic),
    Step("runtime_shapes", annotate_runtime_shapes, needs_capture=True, runs_model=True),
    Step("costs", annotate_costs),          # after the runtime shapes, which it needs
    Step("parallelism", annotate_parallelism),   # after the costs
)


def run_step(step: Step, G: nx.DiGraph, cap: Capture) -> None:
    args = (G, cap) if step.needs_capture else (G,)
    if step.runs_model:
        step.run(*args)
        return
    with gc_paused():
        step.run(*args)


def graph_of(cap: Capture) -> nx.DiGraph:
    """The bare IR graph (no analyses), built with the collector paused."""
    with gc_paused():
        return build_graph(cap)


def analysed_graph(cap: Capture) -> nx.DiGraph:
    """The IR graph of ``cap`` with every analysis's facts annotated on it."""
    G = graph_of(cap)
    for step in STEPS:
        run_step(step, G, cap)
    return G
