"""Build a capture's IR graph and run every analysis on it, in dependency order.

The one place the order lives: render, report and lint all read the same facts.
"""
from __future__ import annotations

import networkx as nx

from ..frontends.capture import Capture
from ..ir.build import build_graph
from ..perf import gc_paused
from .cost import annotate_costs
from .fork_wait import annotate_fork_waits
from .parallelism import annotate_parallelism
from .shape_arithmetic import annotate_shape_arithmetic
from .runtime_shapes import annotate_runtime_shapes
from .traced_control_flow import annotate_frozen_control_flow


def analysed_graph(cap: Capture) -> nx.DiGraph:
    """The IR graph of ``cap`` with every analysis's facts annotated on it."""
    with gc_paused():
        G = build_graph(cap)
        annotate_fork_waits(G)
        annotate_frozen_control_flow(G, cap)
        annotate_shape_arithmetic(G)
    annotate_runtime_shapes(G, cap)   # runs the user's model: the collector stays on
    with gc_paused():
        annotate_costs(G)   # after the shapes, which it needs
        annotate_parallelism(G)
    return G
