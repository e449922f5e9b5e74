"""``irviz report``: the parallelism report of every model the target names."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..exits import fail
from ..workspace import Workspace
from .common import Console, model_output_to_stderr, start


@dataclass(frozen=True)
class ReportRequest:
    target: str
    output: str | None = None
    fmt: str = "md"
    mode: str = "script"
    inputs: str | None = None
    measure: bool = False
    #: time only the serial baseline per setting: the calibrated prediction, no measurement
    calibrate: bool = False
    trace_out: str | None = None
    engine: str = "auto"
    #: ``--mode export``: strict torch.export, and ``--dynamic-dims`` as dynamic_shapes
    strict: bool = False
    export_dims: tuple[str, ...] = ()
    quiet: bool = False
    debug: bool = False


def run(request: ReportRequest, workspace: Workspace) -> int:
    console = Console(request.quiet)
    try:
        start()
        from ..files import write_atomic
        from ..output import check_output_file
        from ..gc_pause import freeze_loaded_objects
        from ..report import parallelism as rep

        workspace.set_export_options(request.mode, request.strict, request.export_dims,
                                     console.say)
        check_output_file(request.output)
        check_output_file(request.trace_out, "--trace-out")
        if request.trace_out and not request.measure:
            raise UsageError("--trace-out needs --measure (the trace comes from a measured run)",
                             hint="add --measure, or leave out --trace-out")
        engine = request.engine
        if request.fmt == "html":
            from ..render import engines

            engine = engines.resolve_engine(engine)
        freeze_loaded_objects()   # torch's own objects, before the model is built
        with model_output_to_stderr():
            views = report_views(workspace, request.target, request.mode)
        measured, figures = {}, {}
        for view in views:
            for note in view.capture.notes:
                console.say(f"note: {view.title()}: {note}")
            if request.measure or request.calibrate:
                measured[view.name] = _measure(view, request, console)
            if request.measure:   # each op's measured time, beside its estimate
                _profile(workspace, view, console)
            if request.fmt == "html":
                figures[view.name] = _figures(view, measured.get(view.name), engine, rep)
        _write_trace(request, measured, console, write_atomic)
        data = build(workspace, views, request.mode, measured)
        text = {"md": rep.to_markdown, "json": rep.to_json}.get(request.fmt)
        body = text(data) if text else rep.to_html(data, figures)
        if request.output and request.output != "-":
            write_atomic(Path(request.output), body.encode("utf-8"))
            console.say(f"wrote {request.output}")
        else:
            sys.stdout.write(body)
    except Exception as exc:  # noqa: BLE001 - every error is reported, never a traceback
        return fail(exc, request.debug)
    return 0


def report_views(workspace: Workspace, spec: object, mode: str) -> list:
    """One analysed view per model ``spec`` names (a spec string or a model object); a
    spec naming none is a usage error. ``irviz report`` and :func:`irviz.report` start here."""
    views = [workspace.view(t, mode) for t in workspace.targets(spec)]
    if not views:
        raise UsageError(f"{spec} names no model")
    return views


def build(workspace: Workspace, views: list, mode: str, measured: dict | None = None) -> dict:
    """The report of ``views`` (:func:`irviz.report.parallelism.build_report`); an exported
    program is set beside the model scripted, which the workspace captures."""
    from ..report import parallelism as rep

    scripted = ({view.name: _scripted(workspace, view) for view in views}
                if mode == "export" else None)
    return rep.build_report(views, measured, scripted)


def _scripted(workspace: Workspace, view) -> tuple:
    """The model scripted (its analysed graph), to set its forks beside the exported
    program; ``(None, why)`` when it does not script."""
    from ..errors import CaptureError

    try:
        cap = workspace.capture(view.capture.target, "script")
        return workspace.graph(cap), None
    except CaptureError as exc:
        return None, exc.message


def _measure(view, request: ReportRequest, console: Console):
    from ..analyses.prediction import calibrate_measured
    from ..measure import measure

    if request.measure:
        console.say(f"measuring {view.title()} (child processes, a few seconds per setting)...")
        result = measure(view.capture.target.spec, view.capture.mode, request.inputs)
    else:
        console.say(f"calibrating {view.title()} (the serial baseline, a few calls per "
                    "setting)...")
        result = measure(view.capture.target.spec, view.capture.mode, request.inputs,
                         warmup=1, repeats=3, calibrate=True)
    calibrate_measured(view.graph, result)
    return result


def _profile(workspace: Workspace, view, console: Console) -> None:
    result = workspace.profile(view.capture.target, view.capture.mode, view.graph)
    if result.get("error"):
        console.say(f"note: {view.title()}: op times not profiled: {result['error']}")


def _figures(view, measured, engine: str, rep) -> list[tuple[str, str]]:
    figures = [("IR graph", rep.strip_xml_prolog(view.svg(engine).decode("utf-8")))]
    profile = measured.profile if measured is not None else None
    if profile is not None and profile.tasks:
        from ..render.timeline import timeline_svg

        figures.append(("Measured timeline", timeline_svg(
            [t.to_dict() for t in profile.tasks], f"{view.title()}: one forked call")))
    return figures


def _write_trace(request: ReportRequest, measured: dict, console: Console, write_atomic) -> None:
    """The raw profiler trace goes to its own file (``--trace-out``), not into the report."""
    traces = {}
    for name, m in measured.items():
        if m.profile is not None and m.profile.chrome_trace is not None:
            traces[name] = m.profile.chrome_trace  # build_report leaves it out
    if not request.trace_out:
        return
    if not traces:
        console.say("note: no profile was recorded, so no trace was written")
        return
    body = (next(iter(traces.values())) if len(traces) == 1
            else {"traceEvents": [e for t in traces.values() for e in t.get("traceEvents", [])]})
    write_atomic(Path(request.trace_out), json.dumps(body).encode("utf-8"))
    console.say(f"wrote {request.trace_out}")
