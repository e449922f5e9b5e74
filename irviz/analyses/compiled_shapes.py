"""Shapes of script mode, from the capture's recorded run of the compiled code.

Every scripted capture given example inputs (a Python model irviz scripted, a ScriptModule, a
ScriptFunction, an archive) ran an instrumented copy of its compiled code
(:mod:`irviz.frontends.compiled_run`) whose records are keyed by the builder's own node ids:
what the picture draws is what ran, one record, no mapping from the Python (an eager run
mapped by op, module and line went blank wherever the compiled code differs from the Python:
``boolean_dispatch``, overloads, ``_VF`` calls, several ops on one line). This step puts the
records where every shape goes: the node's ``outputs`` and, for a node with one tensor
output, its edges (a library call drawn as one box shows the shape on its out-edge); and on
each ``if`` block and loop body, how many times it ran (``runs``).

A value inside a loop took one shape per iteration: ``runs`` counts them (drawn ``3×4 ×10``),
and when they differed, ``shape`` keeps the dimensions they agree on (``?×4``) and
``shapes_seen`` lists each distinct one with its count. A value in a branch that did not
run gets nothing. Shapes a graph already carries (a traced archive's inputs, parameters)
are not overwritten.
"""
from __future__ import annotations

import networkx as nx

from ..frontends.capture import Capture

#: the distinct shapes of one value kept on the graph (a loop that grows a tensor takes
#: one per iteration; the picture shows the first and the last)
MAX_SHAPES_SEEN = 16


def annotate_compiled_shapes(G: nx.DiGraph, capture: Capture) -> None:
    """Fill tensor shapes from the capture's recorded run of its compiled code."""
    recorded = capture.compiled_run
    if recorded is None or recorded.error:
        return
    filled: set[str] = set()
    blocks = G.graph["blocks"]
    for cid, runs in recorded.blocks.items():
        if cid in blocks:
            blocks[cid]["runs"] = runs
    for (node, index), seen in recorded.values.items():
        if node not in G or not seen.shapes:   # an Optional[Tensor] that was None
            continue
        outputs = G.nodes[node]["outputs"]
        if index >= len(outputs):
            continue
        info = outputs[index]
        if info.get("shape") is not None and info.get("dtype") is not None \
                and seen.runs == 1:
            continue
        shapes = [list(shape) for shape, _, _ in seen.shapes]
        dtypes = {dtype for _, dtype, _ in seen.shapes}
        info["shape"] = _common_dims(shapes)
        info["dtype"] = dtypes.pop() if len(dtypes) == 1 else None
        if seen.runs > 1:
            info["runs"] = seen.runs
        if len(seen.shapes) > 1:
            kept = seen.shapes if len(seen.shapes) <= MAX_SHAPES_SEEN \
                else seen.shapes[:MAX_SHAPES_SEEN - 1] + seen.shapes[-1:]
            info["shapes_seen"] = [[list(shape), dtype, count] for shape, dtype, count in kept]
        filled.add(node)
    for node in filled:
        outputs = G.nodes[node]["outputs"]
        tensors = [o for o in outputs if o.get("shape") is not None]
        if len(outputs) != 1 or not tensors:
            continue
        for _, _, edge in G.out_edges(node, data=True):
            if edge.get("shape") is None:
                edge["shape"], edge["dtype"] = tensors[0]["shape"], tensors[0]["dtype"]
    _through_ifs(G)


def _through_ifs(G: nx.DiGraph) -> None:
    """A value an ``if`` returns is drawn as fed by each branch's producer (the builder
    merges them: ``x if pre_logits else self.fc(x)``, an early ``return`` in a library
    call). The run recorded the ``if``'s own output, the value its readers got: their
    edges from those producers take its shape (the untaken branch's producer has none, or,
    when it ran before the ``if``, a shape of its own), and a call that returns it says so
    (``returned``, which :func:`irviz.ir.model.returned_shape` reads)."""
    merged_at: dict[tuple[str, ...], dict] = {}
    for _, data in G.nodes(data=True):
        if data["kind"] != "prim::If":
            continue
        for i, info in enumerate(data["outputs"]):
            if info.get("shape") is None:
                continue
            merged: list[str] = []
            for branch in data.get("branch_yields", ()):
                merged += [p for p in (branch[i] if i < len(branch) else ()) if p not in merged]
            if len(merged) > 1:
                merged_at[tuple(merged)] = info
    for producers, info in merged_at.items():
        readers = set(G.successors(producers[0])).intersection(
            *(G.successors(p) for p in producers[1:]))
        for reader in readers:
            refs = G.nodes[reader].get("inputs") or []
            if list(producers) not in refs or any(
                    len(r) == 1 and r[0] in producers for r in refs):
                continue   # reads one of the producers directly too: its edge is both
            for p in producers:
                edge = G.edges[p, reader]
                edge["shape"], edge["dtype"] = info["shape"], info["dtype"]
    for block in G.graph["blocks"].values():
        returns = block.get("returns")
        if returns and tuple(returns[0]) in merged_at:
            block["returned"] = merged_at[tuple(returns[0])]


def _common_dims(shapes: list[list[int]]) -> list[int | None] | None:
    """The dimensions every recorded shape agrees on (None where they differ); None when
    even the rank differs."""
    first = shapes[0]
    if any(len(s) != len(first) for s in shapes):
        return None
    return [d if all(s[i] == d for s in shapes) else None for i, d in enumerate(first)]
