"""The ``ir`` layer's patterns in the traced graph: training-mode ops, random ops, forks the
trace inlined, outputs that depend on no input.
"""
from __future__ import annotations

import networkx as nx
import torch

from ...analyses import fork_wait as fw
from ...frontends.loader import Target
from ..rules.fork_wait import ForkUnderTrace
from ..rules.tracing import OutputIndependentOfInput, RandomOpInTrace, TracedInTrainingMode
from .context import RANDOM_OPS, LayerContext, _Findings, _forward_location, _split

TRAINING_OPS = {"aten::dropout": "train", "aten::feature_dropout": "train",
                "aten::alpha_dropout": "train", "aten::feature_alpha_dropout": "train",
                "aten::batch_norm": "training", "aten::instance_norm": "use_input_stats",
                "aten::rrelu": "training"}

#: modules whose behaviour differs between train() and eval()
_TRAIN_DEPENDENT = (torch.nn.modules.dropout._DropoutNd, torch.nn.modules.batchnorm._BatchNorm,
                    torch.nn.modules.instancenorm._InstanceNorm, torch.nn.RReLU)


def run(ctx: LayerContext) -> None:
    """The patterns of the trace's graph."""
    _ir_layer(ctx.target, ctx.run.trace_graph, ctx.findings)


def _training_modules(obj) -> set[str]:
    """Paths of the dropout/norm submodules left in training mode when tracing."""
    if not isinstance(obj, torch.nn.Module):
        return set()
    return {name for name, m in obj.named_modules()
            if isinstance(m, _TRAIN_DEPENDENT) and m.training}


def _ir_layer(target: Target, G: nx.DiGraph, findings: _Findings) -> None:
    """Patterns in the traced graph."""
    forward = _forward_location(target)
    training = _training_modules(target.obj)
    for node, data in G.nodes(data=True):
        where = _split(data.get("user_source")) or forward
        kind = data["kind"]
        if where is None:
            continue
        if data.get("scope") in training and kind in TRAINING_OPS:
            names = data.get("arg_names") or []
            arg = TRAINING_OPS[kind]
            if arg in names:
                i = names.index(arg)
                producers = data["inputs"][i] if i < len(data["inputs"]) else []
                if len(producers) == 1 and G.nodes[producers[0]]["label"] in ("True", "1"):
                    findings.report(TracedInTrainingMode, where, "ir", expr=kind)
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
            where = _split(G.nodes[producer].get("user_source")) or forward
            if where:
                findings.report(OutputIndependentOfInput, where, "ir", index=index)


def _task_is_scripted(G: nx.DiGraph, fork: str) -> bool:
    """Scripted code carries exact columns; traced code only ``file:line``."""
    return any(G.nodes[n].get("source", "") and not G.nodes[n]["source"].endswith(":1")
               for n in fw.region(G.nodes[fork]).task_nodes)
