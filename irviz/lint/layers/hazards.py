"""The ``ir`` layer's fork/wait hazards (:mod:`irviz.analyses.parallelism`), on the scripted
graph, else the trace's: a layer of its own because it reads either graph.
"""
from __future__ import annotations

import networkx as nx

from ...analyses import fork_wait as fw, parallelism as par
from ..registry import REGISTRY
from .context import LayerContext, code_at, Findings, split_where


def run(ctx: LayerContext) -> None:
    """The hazards of the scripted graph, else the trace's."""
    _hazard_layer(ctx.graph, ctx.findings)


def _hazard_layer(G: nx.DiGraph, findings: Findings) -> None:
    """Fork/wait hazards of :mod:`irviz.analyses.parallelism`: each is named after the
    rule that reports it."""
    from ...analyses.cost import FORK_OVERHEAD_US

    for hazard in par.hazards(G):
        where = split_where(hazard.source)
        if hazard.code not in REGISTRY.names() or where is None:
            continue
        rule = REGISTRY.get(hazard.code)
        region = fw.region(G.nodes[hazard.node])
        findings.report(rule, where, "ir", callee=region.callee if region else "",
                        expr=code_at(where), cost=f"{hazard.task_cost or 0:.0f} us",
                        overhead=f"{FORK_OVERHEAD_US:.0f} us")
