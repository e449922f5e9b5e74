"""The ``script-vs-trace`` layer: control flow and dynamic values the scripted graph keeps
but the trace froze (:mod:`irviz.analyses.divergence`).
"""
from __future__ import annotations

from ...analyses.divergence import script_trace_divergence
from ..rules.tracing import TraceScriptDivergence
from .context import LayerContext, TargetRun, code_at, Findings, RanLines, split_where


def run(ctx: LayerContext) -> None:
    """Where the scripted and traced graphs of the model part."""
    _divergence_layer(ctx.run, ctx.findings)


def _divergence_layer(run: TargetRun, findings: Findings) -> None:
    ran = RanLines.of(run.trace)
    for item in script_trace_divergence(run.script_graph, run.trace_graph):
        where = split_where(item["source"])
        if ran is not None and where and ran.any_ran(where[0], (where[1],)) is False:
            continue  # the trace never ran this code (an untaken branch): it froze nothing here
        findings.report(TraceScriptDivergence, where, "script-vs-trace", kind=item["kind"],
                        expr=item["code"] or code_at(where))
