"""Scripting and tracing as such: a trace that failed, a model that does not script, and
traced modules inside a scripted one (findings about the capture, not a line's pattern).
"""
from __future__ import annotations

import inspect
import warnings

import torch

from ...errors import CaptureError
from ...paths import is_installed_library_file
from ..diagnostic import Evidence
from ..rules.passthrough import TraceFailed
from ..rules.scripting import NotScriptable, TracedModuleInsideScript
from ..rules.tracing import DictOrNonTensorOutput
from .context import (
    LayerContext, TargetRun, called_from_in, Findings, first_line, forward_location,
    location_in, split_where)


def _raises_on_inputs(ctx: LayerContext) -> str | None:
    """What the model's own Python raised on its example inputs (None: it ran, or there is
    no Python to run). The scripted capture's eager run says it when there was one."""
    run = ctx.run
    if ctx.script_error is not None and ctx.script_error.raised_on_inputs:
        return ctx.script_error.message
    if run.script is not None and run.script.eager is not None:
        return run.script.eager.error or None
    inputs = ctx.workspace.inputs_for(ctx.target)
    obj = ctx.target.obj
    if inputs is None or not callable(obj) or isinstance(
            obj, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return None
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inputs.call(obj)
    except Exception as exc:  # noqa: BLE001 - the model's own error
        text = str(exc).strip()
        return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
    return None


def run_error(ctx: LayerContext) -> None:
    """A model whose own Python raises on its example inputs is not linted: the inputs (or
    the model) are wrong, and the capture's failure is not a finding. An error of the run
    (exit 2) that names the line, and says whether the model compiles."""
    raised = _raises_on_inputs(ctx)
    if raised is None:
        return
    script = ctx.script_error
    if script is not None and script.raised_on_inputs:
        raise CaptureError(script.message, hint=script.hint, detail=script.detail)
    trace = ctx.trace_error
    compiles = ""
    if ctx.run.script is not None:
        compiles = " (it compiles with torch.jit.script)"
    elif script is not None:
        compiles = " (and torch.jit.script cannot compile it)"
    where = location_in(trace) if trace is not None else None
    at = f" at {where.rsplit(':', 1)[0]}" if where else ""
    raise CaptureError(
        f"{ctx.target.spec} raises on its example inputs{at}{compiles}: {raised}",
        hint="check that --inputs / example_inputs match what forward() expects "
             "(shapes, dtypes, devices)")


def trace_failed(ctx: LayerContext) -> None:
    """The trace failed: where its error points, else the model's ``forward``; not when the
    source layer said why (a dict output)."""
    exc = ctx.trace_error
    findings = ctx.findings
    where = split_where(location_in(exc)) or forward_location(ctx.target)
    explained = any(f.rule is DictOrNonTensorOutput for f in ctx.facts)
    if where and not explained:  # a dict output: the source layer said why
        findings.report(TraceFailed, where, "trace",
                        text=first_line(exc.message.split(": ", 1)[-1]))
        findings.relate(TraceFailed.code, where, called_from_in(exc))


def not_scriptable(ctx: LayerContext) -> None:
    """torch.jit.script cannot compile the model: the user's ``torch.jit.script`` would
    fail, whatever the inputs (a certainty). When the code that does not compile is an
    installed library's and the trace ran, the library deploys by tracing: the finding is
    info, with the reason."""
    script_error = ctx.script_error
    if script_error.raised_on_inputs:
        return  # it compiles: a run error (:func:`run_error`)
    located = split_where(location_in(script_error))
    where = located or forward_location(ctx.target)
    if not where:
        return
    ctx.findings.report(NotScriptable, where, "script-vs-trace",
                        text=first_line(script_error.message.split(": ", 1)[-1]))
    in_library = is_installed_library_file(where[0]) if located else _holds_library(ctx)
    if ctx.run.trace is not None and in_library:
        key = (NotScriptable.code, ctx.findings.key_path(where[0]), int(where[1]))
        why = ("the installed library's code does not script, and the model traces: "
               "deploy it by tracing")
        ctx.findings.attach(key, Evidence("held", why, reason=why))


def _holds_library(ctx: LayerContext) -> bool:
    """The model is, or holds, a module of an installed library other than torch (a
    scripting failure torch places nowhere is most likely there)."""
    obj = ctx.target.obj
    if not isinstance(obj, torch.nn.Module):
        return False
    for module in obj.modules():
        cls = type(module)
        if cls.__module__.split(".")[0] == "torch":
            continue
        try:
            path = inspect.getsourcefile(cls)
        except (TypeError, OSError):
            continue
        if path and is_installed_library_file(path):
            return True
    return False


def traced_submodules(ctx: LayerContext) -> None:
    """Traced modules inside the scripted model (only the outermost of each)."""
    _traced_submodules(ctx.run, ctx.findings)


def _traced_submodules(run: TargetRun, findings: Findings) -> None:
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
        where = split_where(next((s for s in sites if s), None)) or forward_location(run.target)
        if where:
            findings.report(TracedModuleInsideScript, where, "ir", expr=f"self.{name}")
