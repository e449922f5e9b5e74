"""The scripted and traced captures of the model (the workspace's, shared with the picture):
what every layer after the source facts reads, and why a capture failed.

A layer of its own so that :mod:`irviz.lint.runner` only walks the layers: the failures are
reported by :mod:`.scripting` (trace failed, not scriptable), not here.
"""
from __future__ import annotations

from ...errors import CaptureError
from ...frontends.capture import empty_input_notes
from .context import LayerContext

#: what the lint layers read of a graph: fork regions and waits (IR layer), hazards
_LINT_FACTS = ("fork_waits", "parallelism")


def run(ctx: LayerContext) -> None:
    """Script the model (``--mode both``/``script``) and trace it (``both``/``trace``, with
    example inputs, not an archive); a failure is kept in ``ctx``, with what torch warned
    before a trace failed."""
    workspace, target, options, run = ctx.workspace, ctx.target, ctx.options, ctx.run
    inputs = workspace.inputs_for(target)
    if options.mode in ("both", "script"):
        try:
            run.script = workspace.capture(target, "script")
            run.script_graph = workspace.graph(run.script, _LINT_FACTS)
        except CaptureError as exc:
            ctx.script_error = exc
    if options.mode in ("both", "trace") and target.kind != "archive":
        if inputs is None:
            run.notes.append(f"{target.spec}: no example inputs, so no trace: only source and "
                             "script checks ran (see README: Example inputs)")
        else:
            try:
                run.trace = workspace.capture(target, "trace")
                run.trace_graph = workspace.graph(run.trace, _LINT_FACTS)
                run.notes.extend(f"{target.spec}: {note}"
                                 for note in empty_input_notes(run.trace.inputs, target.obj))
            except CaptureError as exc:
                # what torch warned before the trace failed is reported like a trace's
                ctx.failed_trace_warnings = list(getattr(exc, "warnings", None) or ())
                ctx.trace_error = exc
