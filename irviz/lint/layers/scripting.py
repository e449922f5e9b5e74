"""Scripting and tracing as such: a trace that failed, a model that does not script, and
traced modules inside a scripted one (findings about the capture, not a line's pattern).
"""
from __future__ import annotations

import torch

from ..rules.passthrough import TraceFailed
from ..rules.scripting import NotScriptable, TracedModuleInsideScript
from ..rules.tracing import DictOrNonTensorOutput
from .context import (
    LayerContext, TargetRun, _called_from_in, _Findings, _first_line, _forward_location,
    _location_in, _split)


def trace_failed(ctx: LayerContext) -> None:
    """The trace failed: where its error points, else the model's ``forward``; not when the
    source layer said why (a dict output)."""
    exc = ctx.trace_error
    findings = ctx.findings
    where = _split(_location_in(exc)) or _forward_location(ctx.target)
    explained = any(f.rule is DictOrNonTensorOutput for f in ctx.facts)
    if where and not explained:  # a dict output: the source layer said why
        findings.report(TraceFailed, where, "trace",
                        text=_first_line(exc.message.split(": ", 1)[-1]))
        findings.relate(TraceFailed.code, where, _called_from_in(exc))


def not_scriptable(ctx: LayerContext) -> None:
    """Scripting failed and no trace stands in for it."""
    script_error = ctx.script_error
    if ctx.run.trace is not None:
        return
    # a model deployed by tracing need not script; report it when scripting is the way
    where = _split(_location_in(script_error)) or _forward_location(ctx.target)
    if where:
        ctx.findings.report(NotScriptable, where, "script-vs-trace",
                            text=_first_line(script_error.message.split(": ", 1)[-1]))


def traced_submodules(ctx: LayerContext) -> None:
    """Traced modules inside the scripted model (only the outermost of each)."""
    _traced_submodules(ctx.run, ctx.findings)


def _traced_submodules(run: TargetRun, findings: _Findings) -> None:
    obj = run.target.obj
    if not isinstance(obj, torch.nn.Module) or run.script_graph is None:
        return
    traced = torch.jit._trace.TracedModule
    modules = dict(obj.named_modules())
    for name, module in modules.items():
        if not name or not isinstance(module, traced):
            continue
        parent = modules.get(name.rpartition(".")[0], obj)
        if isinstance(parent, traced):  # only the outermost traced module is reported
            continue
        sites = [info.get("user_source") for info in run.script_graph.graph["blocks"].values()
                 if info["kind"] == "method" and info.get("module") == name]
        where = _split(next((s for s in sites if s), None)) or _forward_location(run.target)
        if where:
            findings.report(TracedModuleInsideScript, where, "ir", expr=f"self.{name}")
