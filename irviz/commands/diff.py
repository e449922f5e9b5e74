"""``irviz diff``: what changed between two graphs (script vs trace, before vs after).

Both sides go through the one :class:`~irviz.workspace.Workspace` (a RIGHT that names the
same target as LEFT is loaded once, and each mode captured once); the matching is
:mod:`irviz.analyses.graph_match`; text and JSON come from :mod:`irviz.report.diff`, the
picture from the ordinary renderer reading the union graph's diff statuses.
Exit code: 0 equal, 1 different, 2 a user error (3 an irviz bug).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..exits import fail
from ..workspace import Workspace
from .common import Console, model_output_to_stderr, start
from .warning_lines import WarningLines

#: what `irviz diff --format` writes
DIFF_FORMATS = ("text", "json", "svg", "html")
#: the analyses a diff reads: shapes (compiled code's from its recorded run); a picture
#: reads every analysis, as `irviz render` does
_TEXT_FACTS = ("compiled_shapes",)

EQUAL, DIFFERENT = 0, 1


@dataclass(frozen=True)
class DiffRequest:
    left: str
    right: str | None = None
    left_mode: str = "script"
    right_mode: str = "script"
    #: compare LEFT with its copy optimized for deployment: freeze, inference or mobile
    right_optimize: str | None = None
    fmt: str = "text"
    output: str | None = None
    engine: str = "auto"
    verbose: bool = False
    quiet: bool = False
    debug: bool = False


def _one_target(workspace: Workspace, spec: str, side: str):
    targets = workspace.targets(spec)
    if len(targets) == 1:
        return targets[0]
    if not targets:
        skipped = "; ".join(f"{n}: {why}" for n, why in workspace.load(spec).skipped)
        raise UsageError(f"{side} {spec} names no model" + (f" ({skipped})" if skipped else ""),
                         hint="name a model class, instance, factory or .pt archive")
    names = ", ".join(t.name for t in targets)
    if all(t.entry for t in targets):   # one module with an overloaded forward (nn.LSTM)
        hint = "forward is overloaded: give --inputs, and the overload they select is compared"
    else:
        hint = f"pick one with FILE.py:NAME, e.g. {targets[0].spec}"
    raise UsageError(f"{side} {spec} names {len(targets)} models ({names}); diff compares one "
                     "model with one model", hint=hint)


def _default_path(request: DiffRequest, name: str) -> Path:
    from ..output import output_stem

    stem = output_stem(request.left)
    base = stem if name == stem else f"{stem}.{name}"
    return Path(f"{base}.diff.{request.fmt}")


def run(request: DiffRequest, workspace: Workspace) -> int:
    console = Console(request.quiet)
    try:
        start()
        from ..analyses.graph_match import union_graph
        from ..files import write_atomic
        from ..output import check_output_file
        from ..gc_pause import freeze_loaded_objects
        from ..report.diff import to_json, to_text

        check_output_file(request.output)
        if request.output and request.output != "-" and request.fmt == "text":
            from dataclasses import replace

            suffix = Path(request.output).suffix[1:].lower()
            if suffix in DIFF_FORMATS:   # -o diff.svg draws the picture (it wrote text)
                request = replace(request, fmt=suffix)
        if request.output and request.output != "-" and request.fmt in ("svg", "html"):
            suffix = Path(request.output).suffix[1:]
            if suffix in DIFF_FORMATS and suffix != request.fmt:
                raise UsageError(f"-o {request.output} ends in .{suffix} but --format is "
                                 f"{request.fmt}", hint=f"use --format {suffix}")
        engine = request.engine
        if request.fmt in ("svg", "html"):
            from ..render import engines

            engine = engines.resolve_engine(engine)
        needs = _TEXT_FACTS if request.fmt in ("text", "json") else None
        freeze_loaded_objects()
        with model_output_to_stderr():
            compared = compare(workspace, request.left, request.right, request.left_mode,
                               request.right_mode, request.right_optimize, needs, console)
        diff, explained, lside, rside = (compared.diff, compared.explained, compared.left,
                                         compared.right)
        lcap, L, R = compared.left_capture, diff.left, diff.right
        matched = compared.match_seconds
        if request.fmt == "text" and explained is not None:
            data = explained.to_text(lside.model, rside.model).encode("utf-8")
        elif request.fmt == "text":
            data = to_text(diff, lside, rside).encode("utf-8")
        elif request.fmt == "json":
            data = to_json(diff, lside, rside, explained).encode("utf-8")
        else:
            data = _picture(request, diff, lcap, lside, rside, engine, union_graph)
        path = None
        if request.output and request.output != "-":
            path = Path(request.output)
        elif request.output is None and request.fmt in ("svg", "html"):
            path = _default_path(request, lside.model)
        if path is None:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            write_atomic(path, data)
            console.say(f"wrote {path}")
        counts = diff.counts()
        if request.fmt != "text" or path is not None:
            console.say("no difference" if diff.equal else
                        f"{counts['removed']} removed, {counts['added']} added, "
                        f"{counts['changed']} changed, {counts['same']} same")
        if request.verbose:
            Console.always(f"match: {matched * 1000:.1f} ms ({L.number_of_nodes()} + "
                           f"{R.number_of_nodes()} IR nodes); {workspace.stages.summary()}")
    except Exception as exc:  # noqa: BLE001 - every error is reported, never a traceback
        return fail(exc, request.debug)
    return EQUAL if diff.equal else DIFFERENT


@dataclass(frozen=True)
class Comparison:
    """Two captured graphs matched: what ``irviz diff`` and :func:`irviz.diff` print."""

    diff: object            # irviz.analyses.graph_match.GraphDiff
    left: object            # irviz.report.diff.Side
    right: object
    left_capture: object    # the left Capture (it names the model in the picture)
    #: ``--right-optimize``: what the optimization did, per change; else None
    explained: object = None
    match_seconds: float = 0.0


def compare(workspace: Workspace, left_spec: object, right_spec: object = None,
            left_mode: str = "script", right_mode: str = "script",
            right_optimize: str | None = None, needs=_TEXT_FACTS,
            console: Console | None = None) -> Comparison:
    """Capture LEFT and RIGHT (RIGHT defaults to LEFT, or to its copy optimized with
    ``right_optimize``) through ``workspace`` and match their graphs. ``needs`` are the
    analyses the output reads (None: all, for a picture); ``console`` hears each
    capture's notes and warnings."""
    from ..analyses.graph_match import match_graphs
    from ..report.diff import Side

    left = _one_target(workspace, left_spec, "LEFT")
    modes = (left_mode, right_mode)
    if right_optimize:
        if right_spec is not None:
            raise UsageError("--right-optimize compares LEFT with its optimized copy; "
                             f"drop RIGHT ({right_spec})")
        other = [f"--{side}-mode {mode}" for side, mode in
                 (("left", left_mode), ("right", right_mode)) if mode != "script"]
        if other:   # the optimizations start from the scripted model: never ignored
            raise UsageError(f"--right-optimize compares the scripted model with its "
                             f"optimized copy; drop {' '.join(other)}")
        from ..frontends.optimize import optimized_pair

        source = left
        left, right = optimized_pair(source, right_optimize)
        workspace.derived(source, left, right)
        modes = ("script", "script")
    else:
        right = _one_target(workspace, left_spec if right_spec is None else right_spec,
                            "RIGHT")
    sides = []
    warned = WarningLines(console.say) if console is not None else None
    for target, mode in zip((left, right), modes):
        cap = workspace.capture(target, mode)
        G = workspace.graph(cap, needs=needs) if needs is not None else workspace.graph(cap)
        if warned is not None:
            for note in cap.notes:
                console.say(f"note: {target.spec} ({mode}): {note}")
            warned.add(cap.warnings, G)
        sides.append((cap, G, Side(target.spec, target.name, cap.mode, G.number_of_nodes())))
    if warned is not None:
        warned.flush()
    (lcap, L, lside), (_, R, rside) = sides
    started = time.perf_counter()
    with workspace.stage("match"):
        diff = match_graphs(L, R)
    matched = time.perf_counter() - started
    explained = None
    if right_optimize:
        from ..analyses.optimization_diff import explain

        explained = explain(diff, right_optimize)
    return Comparison(diff, lside, rside, lcap, explained, matched)


def _picture(request: DiffRequest, diff, lcap, lside, rside, engine: str,
             union_graph) -> bytes:
    """The union graph drawn by the ordinary renderer (one SVG, or the viewer page)."""
    from dataclasses import replace

    from ..render import engines
    from ..render.dot import RenderOptions
    from ..view import Visualization

    def short(side) -> str:  # no directories: the picture must not depend on them
        return f"{Path(side.target.split(':', 1)[0]).name}:{side.model}" \
            if ":" in side.target else Path(side.target).name

    title = (short(lside) if short(lside) == short(rside)
             else f"{short(lside)} → {short(rside)}")

    class DiffView(Visualization):
        def title(self) -> str:
            return title

    # the left capture names the model; its notes and warnings belong to one side only
    view = DiffView(replace(lcap, notes=[], warnings=[]), union_graph(diff, title=title),
                    RenderOptions(title=title))
    if request.fmt == "svg":
        return engines.render(view.dot(), "svg", engine)
    from ..render.html import viewer_page

    return viewer_page(view, engine=engine, max_pages=0, diff=True).encode("utf-8")
