"""Shapes for scripted graphs, from the capture's eager run of the model.

Scripted graphs carry no shapes. When example inputs exist, the capture runs the Python
model once eagerly (:mod:`irviz.frontends.eager_run`) under a dispatch mode that records, for every aten op, the
output shapes, the innermost Python source line that called it and the module
whose ``forward`` was running (its path, as ``named_modules`` names it). Scripting
compiles that same source, so a scripted node with the same op, the same module
scope and the same ``file:line`` gets those shapes - but only when every call
recorded for that key agrees (a line run with different shapes stays unknown).

The module path matters: library code shares its source lines across every caller
(``F.relu`` is one line for every ``nn.ReLU`` of a model), and a node in a branch
that did not run (``else: relu`` of an in-place ``nn.ReLU``) must get no shape at
all rather than the shape of another module's call of that line.
"""
from __future__ import annotations

import networkx as nx

from ..frontends.capture import Capture
from ..frontends.eager_run import CONFLICT

def annotate_runtime_shapes(G: nx.DiGraph, capture: Capture) -> None:
    """Fill unknown tensor shapes of a scripted graph from the capture's eager run."""
    if capture.mode != "script" or capture.eager is None or capture.eager.error:
        return
    seen = capture.eager.op_shapes
    for node, data in G.nodes(data=True):
        if not data.get("source") or "::" not in data["kind"]:
            continue
        path, line, _ = data["source"].rsplit(":", 2)
        op = data["kind"].split("::")[-1]
        shapes = seen.get((op, data.get("scope") or "", path, int(line)))
        if shapes is None or shapes is CONFLICT:
            continue
        tensors = [i for i, o in enumerate(data["outputs"]) if o["type"] == "Tensor"]
        if len(tensors) != len(shapes):
            continue
        for index, (*dims, dtype) in zip(tensors, shapes):
            info = data["outputs"][index]
            if info["shape"] is None:
                info["shape"], info["dtype"] = list(dims), dtype.replace("torch.", "")
