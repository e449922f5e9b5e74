"""``irviz render``: each model the target names -> SVG, HTML viewer, DOT or JSON."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import CaptureError, UsageError
from ..exits import INTERNAL_ERROR, fail
from ..output import RENDER_FORMATS, output_paths, output_stem
from ..progress import Stages
from ..workspace import Workspace
from .common import Console, model_output_to_stderr, start
from .warning_lines import WarningLines


#: pictures chosen by ``-o``'s extension: PNG from graphviz-pure or dot, PDF from dot only
PICTURE_FORMATS = ("png", "pdf")


@dataclass(frozen=True)
class RenderRequest:
    target: str
    output: str | None = None
    fmt: str = "svg"
    mode: str = "auto"
    depth: int | None = None
    expand_library: bool = False
    show_checks: bool = False
    max_nodes: int = 1000
    focus: str | None = None
    max_pages: int = 40
    engine: str = "auto"
    #: draw the lint findings (the same gate as ``irviz lint``)
    lint: bool = False
    #: run the model under torch.profiler and draw the measured op times
    profile: bool = False
    profile_runs: int = 5
    #: with ``profile``: the Chrome/Perfetto trace, its events tagged with their node
    trace_out: str | None = None
    #: ``--mode export``: strict torch.export, and ``--dynamic-dims`` as dynamic_shapes
    strict: bool = False
    export_dims: tuple[str, ...] = ()
    verbose: bool = False
    quiet: bool = False
    debug: bool = False


def run(request: RenderRequest, workspace: Workspace) -> int:
    """Render every model of ``request.target``; the exit code."""
    console = Console(request.quiet)
    try:
        start()
        from ..gc_pause import freeze_bulk_survivors, freeze_loaded_objects
        from ..render import engines
        from ..render.dot import RenderOptions

        request = _format_from_output(request)
        if request.trace_out and not request.profile:
            raise UsageError(f"--trace-out {request.trace_out}: the trace is the profiled "
                             "runs', so it needs --profile",
                             hint="add --profile (and example inputs)")
        workspace.set_export_options(request.mode, request.strict, request.export_dims,
                                     console.say)
        engine = request.engine
        if request.fmt in ("svg", "html") + PICTURE_FORMATS:
            engine = engines.resolve_engine(engine, "svg" if request.fmt == "html"
                                            else request.fmt)
        gate = None
        if request.lint:
            from ..lint.gate import Gate

            gate = Gate.from_config(workspace.config)
        loaded = workspace.load(request.target)
        freeze_loaded_objects()   # measured: 10k-node model 7.5 -> 6.8 s, BERT 5.6 -> 4.8 s
        for name, reason in loaded.skipped:
            console.say(f"skipped {name}: {reason}")
        targets = workspace.targets(request.target)
        if len(targets) == 1:
            freeze_bulk_survivors()
        paths = output_paths(request.output, [t.name for t in targets],
                             output_stem(request.target), request.fmt,
                             RENDER_FORMATS + PICTURE_FORMATS)
    except Exception as exc:  # noqa: BLE001 - every error is reported, never a traceback
        return fail(exc, request.debug)

    options = RenderOptions(depth=request.depth, expand_library=request.expand_library,
                            max_nodes=request.max_nodes or None, focus=request.focus,
                            show_checks=request.show_checks)
    failed = 0
    warned = WarningLines(console.say)
    with engines.notices_to(lambda text: console.say(f"note: {text}")):
        for target, path in zip(targets, paths):
            try:
                _render_one(request, workspace, console, target, path, options, engine, gate,
                            warned)
            except Exception as exc:  # noqa: BLE001
                failed += 1
                if fail(exc, request.debug) == INTERNAL_ERROR:
                    warned.flush()
                    return INTERNAL_ERROR
    warned.flush()
    return 2 if failed else 0


def _profile(request: RenderRequest, workspace: Workspace, console: Console, target,
             view) -> None:
    """Measured op times onto ``view``'s graph (the workspace runs the model in a child)."""
    from ..analyses.profile_times import COVERAGE
    from ..errors import InputsError

    if workspace.inputs_for(target) is None:
        raise InputsError(f"--profile runs {target.spec}, so it needs example inputs",
                          hint='pass them with --inputs "torch.rand(3, 4)" or define '
                               "`example_inputs` in the model file")
    trace_out = request.trace_out
    if trace_out and len(workspace.targets(request.target)) > 1:   # one trace per model
        stem, dot, ext = trace_out.rpartition(".")
        trace_out = f"{stem}.{target.name}.{ext}" if dot else f"{trace_out}.{target.name}"
    result = workspace.profile(target, request.mode, view.graph, runs=request.profile_runs,
                               trace_out=trace_out)
    if result.get("error"):
        console.say(f"note: {target.spec}: not profiled: {result['error']}")
        return
    coverage = view.graph.graph.get(COVERAGE)
    console.say(f"note: {target.spec}: profiled {result['runs']} runs; "
                + (f"{coverage:.0%} of the aten time matched to nodes" if coverage is not None
                   else "no aten op ran")
                + (f"; trace with node ids: {trace_out}" if trace_out else ""))


def _render_one(request: RenderRequest, workspace: Workspace, console: Console, target,
                path, options, engine: str, gate, warned: WarningLines) -> None:
    from ..files import write_atomic

    started = time.perf_counter()
    stages = workspace.stages = Stages()
    findings = None
    with model_output_to_stderr():
        if gate is not None:  # an export picture shows the migration findings (IRV5xx)
            from ..lint.session import LintSession

            session = LintSession(workspace, mode="export" if request.mode == "export" else "both")
            findings = gate.apply(session.target(target).found).kept
        try:
            view = workspace.view(target, request.mode, options, findings=findings)
        except CaptureError as exc:  # what torch warned before it failed, then the error
            _say_findings(console, findings)
            warned.found(findings)
            warned.add(getattr(exc, "warnings", None) or ())
            raise
    _say_findings(console, findings)
    warned.found(findings)
    if request.profile:
        _profile(request, workspace, console, target, view)
    for note in view.capture.notes:
        console.say(f"note: {target.spec}: {note}")
    warned.add(view.capture.warnings, view.graph)
    if request.fmt == "json":
        with stages.stage("json"):
            data = view.json().encode("utf-8")
    else:
        with stages.stage("dot"):
            dot_text = view.dot()
        for note in view.render_notes:
            console.say(f"note: {target.spec}: {note}")
        if request.fmt == "html":
            data = _html(request, view, dot_text, engine, stages, console, target)
        elif request.fmt in ("svg",) + PICTURE_FORMATS:
            data = _svg(view, dot_text, engine, stages, console, request.fmt)
        else:
            data = dot_text.encode("utf-8")
    if path is None:
        sys.stdout.buffer.write(data)
    else:
        write_atomic(path, data)
        console.say(f"wrote {path} ({view.graph.number_of_nodes()} IR nodes, "
                    f"{view.capture.mode}, {time.perf_counter() - started:.2f} s)")
    if request.verbose:
        Console.always(f"{target.spec}: {stages.summary()}")


def _say_findings(console: Console, findings) -> None:
    for d in findings or ():
        console.say(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}")
        for path, line, message in d.related:
            console.say(f"    {message} {path}:{line}")


def _html(request, view, dot_text, engine, stages, console, target) -> bytes:
    from ..render.html import module_pages, viewer_page

    with stages.stage("module pages"):
        pages = module_pages(view, engine=engine, findings=view.options.findings,
                             max_pages=request.max_pages, overview=view.plan)
    if pages.calls:
        console.say(f"note: {target.spec}: {pages.summary()}")
    with stages.stage(f"layout and viewer ({view.drawn_nodes} nodes, {engine})"):
        return viewer_page(view, findings=view.options.findings, engine=engine,
                           pages=pages).encode("utf-8")


def _format_from_output(request: RenderRequest) -> RenderRequest:
    """``-o graph.png`` / ``.pdf`` draws that format (through Graphviz); an extension irviz
    does not write is refused before any work (it used to get SVG bytes)."""
    from dataclasses import replace

    out = request.output
    if not out or out == "-" or out.endswith(("/", "\\")) or Path(out).is_dir():
        return request
    suffix = Path(out).suffix.lower()[1:]
    if suffix in PICTURE_FORMATS:
        if request.fmt != "svg":
            raise UsageError(f"-o {out} ends in .{suffix} but --format is {request.fmt}",
                             hint=f"drop --format to write a .{suffix}")
        return replace(request, fmt=suffix)
    if suffix and suffix not in RENDER_FORMATS:
        raise UsageError(f"-o {out}: irviz does not write .{suffix} files",
                         hint="name the file .svg, .html, .dot, .json, .png or .pdf, or "
                              "pass a directory ending in /")
    return request


def _svg(view, dot_text, engine, stages, console, fmt: str = "svg") -> bytes:
    from ..render import engines

    with stages.stage(f"layout ({view.drawn_nodes} nodes, {engine})"):
        return engines.render(dot_text, fmt, engine)
