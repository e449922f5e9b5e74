"""The ``ir`` layer's patterns in the traced graph: random ops, forks the trace inlined,
outputs that depend on no input (training-mode ops are a certainty: :mod:`.certainties`).
"""
from __future__ import annotations

import networkx as nx

from ...analyses import fork_wait as fw
from ...frontends.records import Target
from ..rules.fork_wait import ForkUnderTrace
from ..rules.tracing import OutputIndependentOfInput, RandomOpInTrace
from .context import RANDOM_OPS, LayerContext, Findings, forward_location, split_where


def run(ctx: LayerContext) -> None:
    """The patterns of the trace's graph."""
    _ir_layer(ctx.target, ctx.run.trace_graph, ctx.findings)


def _ir_layer(target: Target, G: nx.DiGraph, findings: Findings) -> None:
    """Patterns in the traced graph."""
    forward = forward_location(target)
    for node, data in G.nodes(data=True):
        where = split_where(data.get("user_source")) or forward
        kind = data["kind"]
        if where is None:
            continue
        if kind in RANDOM_OPS:
            findings.report(RandomOpInTrace, where, "ir", expr=kind)
        if kind == "prim::fork" and not _task_is_scripted(G, node):
            findings.report(ForkUnderTrace, where, "ir", callee=fw.region(data).callee)
    inputs = G.graph.get("inputs", [])
    if not inputs:
        return
    reachable = set(inputs)
    for node in inputs:
        reachable |= nx.descendants(G, node)
    outs = [p for ps in G.nodes["out"]["inputs"] for p in ps]
    if len(outs) == 1 and G.nodes[outs[0]]["kind"] == "prim::TupleConstruct":
        outs = [p for ps in G.nodes[outs[0]]["inputs"] for p in ps]
    for index, producer in enumerate(outs):
        if producer not in reachable:
            where = split_where(G.nodes[producer].get("user_source")) or forward
            if where:
                findings.report(OutputIndependentOfInput, where, "ir", index=index)


def _task_is_scripted(G: nx.DiGraph, fork: str) -> bool:
    """Scripted code carries exact columns; traced code only ``file:line``."""
    return any(G.nodes[n].get("source", "") and not G.nodes[n]["source"].endswith(":1")
               for n in fw.region(G.nodes[fork]).task_nodes)
