"""The analyses, in dependency order, and what each one needs first.

The one place the order lives: render, report and lint all read the same facts (through
:class:`irviz.workspace.Workspace`, which runs each step at most once per graph), and the
benchmarks time the same :data:`STEPS` one by one. A caller asks for the facts it reads
(``needs``); the steps those require run first, the others not at all.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import networkx as nx

from ..frontends.capture import Capture
from ..ir.build import build_graph
from ..gc_pause import gc_paused
from .validation import annotate_checks
from .compiled_shapes import annotate_compiled_shapes
from .cost import annotate_costs
from .fork_wait import annotate_fork_waits
from .memory import annotate_memory
from .parallelism import annotate_parallelism
from .shape_arithmetic import annotate_shape_arithmetic
from .traced_control_flow import annotate_frozen_control_flow
from .unrolled_loops import annotate_unrolled_loops


@dataclass(frozen=True)
class Step:
    """One analysis: ``run(G)``, or ``run(G, capture)`` when it needs the capture."""

    name: str
    run: Callable[..., object]
    #: the steps whose facts this one reads
    requires: tuple[str, ...] = ()
    needs_capture: bool = False


STEPS: tuple[Step, ...] = (
    Step("fork_waits", annotate_fork_waits),
    Step("frozen_control_flow", annotate_frozen_control_flow, needs_capture=True),
    Step("shape_arithmetic", annotate_shape_arithmetic),
    Step("checks", annotate_checks, requires=("shape_arithmetic",)),
    Step("unrolled_loops", annotate_unrolled_loops),
    Step("compiled_shapes", annotate_compiled_shapes, needs_capture=True),
    Step("costs", annotate_costs, requires=("compiled_shapes",)),
    Step("parallelism", annotate_parallelism, requires=("fork_waits", "costs")),
    Step("memory", annotate_memory, requires=("compiled_shapes",)),
)
STEP_NAMES = tuple(step.name for step in STEPS)
#: every step: what a picture or a report reads
ALL = frozenset(STEP_NAMES)
_BY_NAME = {step.name: step for step in STEPS}


def closure(needs: Iterable[str]) -> list[Step]:
    """The steps ``needs`` names plus what they require, in :data:`STEPS` order."""
    wanted: set[str] = set()
    todo = list(needs)
    while todo:
        name = todo.pop()
        if name not in _BY_NAME:
            raise ValueError(f"unknown analysis step {name!r}; known: {', '.join(STEP_NAMES)}")
        if name not in wanted:
            wanted.add(name)
            todo.extend(_BY_NAME[name].requires)
    return [step for step in STEPS if step.name in wanted]


def run_step(step: Step, G: nx.DiGraph, cap: Capture) -> None:
    args = (G, cap) if step.needs_capture else (G,)
    with gc_paused():
        step.run(*args)


def graph_of(cap: Capture) -> nx.DiGraph:
    """The bare IR graph (no analyses), built with the collector paused."""
    with gc_paused():
        return build_graph(cap)


def annotate(G: nx.DiGraph, cap: Capture, needs: Iterable[str] = ALL,
             done: set[str] | None = None) -> set[str]:
    """Run the steps ``needs`` asks for that are not in ``done`` yet; return ``done``."""
    done = set() if done is None else done
    for step in closure(needs):
        if step.name not in done:
            run_step(step, G, cap)
            done.add(step.name)
    return done


def analysed_graph(cap: Capture) -> nx.DiGraph:
    """The IR graph of ``cap`` with every analysis's facts annotated on it."""
    G = graph_of(cap)
    annotate(G, cap)
    return G
