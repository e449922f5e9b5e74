"""The ``retrace`` layer: a second trace on inputs with other shapes
(:mod:`irviz.frontends.retrace`) shows what the first trace specialised to its inputs.
"""
from __future__ import annotations

from ...analyses.divergence import first_divergence
from ...frontends.inputs import parse_dynamic_dims
from ...frontends.retrace import retrace
from ..rules.tracing import ShapeSpecializedTrace
from .context import (RANDOM_OPS, LayerContext, TargetRun, Findings, forward_location, light,
                      split_where)


def run(ctx: LayerContext) -> None:
    """Trace again with the ``--dynamic-dims`` changed and compare."""
    _retrace_layer(ctx.workspace, ctx.run, parse_dynamic_dims(ctx.options.dynamic_dims),
                   ctx.findings)


def _retrace_layer(workspace, run: TargetRun, dynamic: dict, findings: Findings) -> None:
    again = retrace(run.trace, dynamic, threads=1 if light(run.trace_graph) else None)
    if again is None:
        return
    if again.error:
        run.notes.append(f"{run.target.spec}: re-trace skipped: {again.error}")
    forward = forward_location(run.target)
    if again.capture is not None:
        diff = first_divergence(run.trace_graph, workspace.graph(again.capture, needs=()))
        if diff is not None:
            where = split_where(diff["source"]) or forward
            detail = f"traced again with {again.change}, {_in_words(diff)}"
            if where:
                findings.report(ShapeSpecializedTrace, where, "retrace", detail=detail)
            return
    random = any(d["kind"] in RANDOM_OPS or "dropout" in d["kind"]
                 for _, d in run.trace_graph.nodes(data=True))
    if again.outputs_differ and forward and not random:  # random ops differ run to run
        findings.report(ShapeSpecializedTrace, forward, "retrace",
                        detail=f"with {again.change}, the first trace's outputs differ from "
                               "the Python model's")


def _op(text: str) -> str:
    """An op of the diff in words: the return is "returns", an op is quoted."""
    if text.startswith(("prim::TupleConstruct", "prim::Return")):
        return "returns"
    return f"has `{text}`"


def _in_words(diff: dict) -> str:
    """Where two traces part, as a sentence: "a second trace has `aten::select(0, 10)` here
    where the first returns"."""
    first, second = diff["first"], diff["second"]
    if first.startswith("end after"):
        return f"a second trace {_op(second)} here where the first has ended"
    if second.startswith("end after"):
        return f"the first trace {_op(first)} here where a second one has ended"
    return f"a second trace {_op(second)} here where the first {_op(first)}"
