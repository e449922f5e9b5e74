"""The ``irviz`` command line: a thin click layer over :mod:`irviz.api`.

Status and errors go to stderr so stdout can carry DOT/JSON/SVG. Exit codes:
0 success, 2 a user error (bad target, inputs, options, unwritable output, no
Graphviz engine), 3 an internal irviz error (reported with ``--debug``).
"""
from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import click  # noqa: E402

from . import __version__  # noqa: E402
from .errors import IrvizError, UsageError  # noqa: E402
from .progress import Stages  # noqa: E402

FORMATS = ("svg", "dot", "json", "html")
INTERNAL_ERROR = 3


#: How a failed allocation reads when it comes wrapped in another error (torch's CPU
#: allocator raises RuntimeError; the capture turns it into a CaptureError).
_OOM_TEXT = ("can't allocate memory", "Cannot allocate memory", "std::bad_alloc",
             "out of memory")


def _out_of_memory(exc: BaseException) -> IrvizError | None:
    """An allocation failure as one clear error, or None.

    In the child of ``--isolate`` (which sets ``IRVIZ_MEMORY_LIMIT_MB``) a failed
    allocation anywhere in ``exc``'s chain means the memory limit was hit. Elsewhere only
    a bare ``MemoryError`` (otherwise an "internal error") is turned into one; an
    IrvizError that already quotes torch's allocator message stays as it is.
    """
    limit = os.environ.get("IRVIZ_MEMORY_LIMIT_MB")  # set by irviz.isolate
    if not limit and (isinstance(exc, IrvizError) or not isinstance(exc, MemoryError)):
        return None
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if (isinstance(e, MemoryError) or (isinstance(e, OSError) and e.errno == errno.ENOMEM)
                or any(text in str(e) for text in _OOM_TEXT)):
            break
        todo += [e.__cause__, e.__context__]
    else:
        return None
    what = exc.message if isinstance(exc, IrvizError) else (
        f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    if isinstance(exc, IrvizError) and exc.detail:
        what += "\n" + exc.detail
    if limit:
        return IrvizError(f"ran out of memory (limit {limit} MB, --memory-limit)", detail=what,
                          hint="the model needs more memory than that: give it smaller "
                               "example inputs, or raise --memory-limit (0 = no limit)")
    return IrvizError("ran out of memory", detail=what,
                      hint="give the model smaller example inputs; `--isolate --memory-limit "
                           "MB` stops a runaway model early with this message")


def _fail(exc: BaseException, debug: bool) -> int:
    exc = _out_of_memory(exc) or exc
    if isinstance(exc, IrvizError):
        click.echo(exc.format(), err=True)
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        return exc.exit_code
    click.echo(f"internal error: {type(exc).__name__}: {exc}", err=True)
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    else:
        click.echo("this is a bug in irviz; run again with --debug for the traceback "
                   "and report it", err=True)
    return INTERNAL_ERROR


def _output_paths(output: str | None, names: list[str], stem: str, fmt: str) -> list:
    """Where each target's output goes: a Path, or None for stdout."""
    from .files import check_writable_dir

    def default_name(name: str) -> str:
        return f"{stem}.{fmt}" if name == stem else f"{stem}.{name}.{fmt}"

    if output == "-":
        if len(names) != 1:
            raise UsageError(f"-o - (stdout) takes one model, but the target names "
                             f"{len(names)}: {', '.join(names)}",
                             hint="pick one with FILE.py:NAME, or pass a directory to -o")
        return [None]
    if output is None:
        if fmt in ("dot", "json") and len(names) == 1:
            return [None]
        check_writable_dir(Path("."))
        return [Path(default_name(n)) for n in names]
    path = Path(output)
    if path.is_dir() or output.endswith(("/", "\\")):
        check_writable_dir(path)
        return [path / default_name(n) for n in names]
    if len(names) != 1:
        raise UsageError(f"-o {output} is one file, but the target names {len(names)} "
                         f"models: {', '.join(names)}",
                         hint="pass an existing directory to -o, or pick one model with "
                              "FILE.py:NAME")
    check_writable_dir(path.parent if str(path.parent) else Path("."))
    if path.suffix and path.suffix[1:] != fmt and path.suffix[1:] in FORMATS:
        raise UsageError(f"-o {output} ends in {path.suffix} but --format is {fmt}",
                         hint=f"use --format {path.suffix[1:]} or name the file *.{fmt}")
    return [path]


def _isolation_options(command):
    """``--isolate``, ``--timeout`` and ``--memory-limit`` (see irviz/isolate.py)."""
    command = click.option(
        "--memory-limit", type=click.IntRange(min=0), default=4096, show_default=True,
        metavar="MB", help="With --isolate: the model's memory limit in MB (Linux); 0 = no "
                           "limit.")(command)
    command = click.option(
        "--timeout", type=click.FloatRange(min=0, min_open=True), default=300.0,
        show_default=True, metavar="SECONDS",
        help="With --isolate: stop the model after this many seconds.")(command)
    return click.option(
        "--isolate", is_flag=True,
        help="Run the model in a child process: an endless loop, a crash in native code or "
             "runaway memory becomes a clear error (exit 2) instead of a hang.")(command)


def _run_isolated_if_asked(isolate: bool, timeout: float, memory_limit: int) -> None:
    """With --isolate (and not already in the isolated child): run this command there."""
    from .isolate import ISOLATION_PARAMS, argv_from_context, is_isolated, run_isolated

    ctx = click.get_current_context()
    if isolate and not is_isolated():
        sys.exit(run_isolated(argv_from_context(ctx), timeout, memory_limit))
    given = [f"--{p.replace('_', '-')}" for p in ISOLATION_PARAMS[1:]
             if ctx.get_parameter_source(p) != click.core.ParameterSource.DEFAULT]
    if given and not isolate:
        click.echo(f"note: {' and '.join(given)} only apply with --isolate", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="irviz")
def main() -> None:
    """irviz: see and check the TorchScript IR of your PyTorch models."""


@main.command()
@click.argument("target")
@click.option("-o", "--output", metavar="PATH",
              help="Output file, directory (one file per model) or - for stdout. "
                   "Default: NAME.svg files in the current directory; DOT/JSON of a single "
                   "model go to stdout.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="svg", show_default=True,
              help="svg picture, html (the SVG in a self-contained interactive viewer: zoom, "
                   "search, node details), dot source, or json (networkx node-link IR graph).")
@click.option("--mode", type=click.Choice(["script", "trace", "auto"]), default="script",
              show_default=True,
              help="script keeps control flow; trace records one run (needs inputs); auto "
                   "scripts and falls back to trace when scripting fails.")
@click.option("--inputs", metavar="EXPR",
              help='Example inputs, a Python expression with torch imported, e.g. '
                   '"torch.rand(3, 4), torch.rand(3, 4)". Default: the file\'s '
                   "example_inputs.")
@click.option("--depth", type=click.IntRange(min=0), default=None,
              help="Collapse module calls nested deeper than N into one box.  [default: "
                   "no limit]")
@click.option("--expand-library", is_flag=True,
              help="Also expand torch.nn modules (drawn as one box by default).")
@click.option("--max-nodes", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Drawn-node budget: larger graphs have their deepest module calls drawn as "
                   "boxes, and runs of 4 or more identical calls (a layer stack) rolled "
                   "into one node, until they fit (0: no budget; --depth overrides).")
@click.option("--focus", metavar="MODULE",
              help="Draw this module (path like encoder.layer.3) expanded and every other "
                   "module call as a box.")
@click.option("--max-pages", type=click.IntRange(min=0), default=40, show_default=True,
              help="--format html: besides the overview, a page (the module expanded) for "
                   "each collapsed call of a user module, calls of the same structure sharing "
                   "one; at most N distinct pages (0: the overview only).")
@click.option("-v", "--verbose", is_flag=True, help="Print how long each stage took.")
@click.option("--engine", type=click.Choice(["auto", "dot", "wasm"]), default="auto",
              show_default=True,
              help="Graphviz: the dot binary, or the embedded WebAssembly build.")
@click.option("--lint", "with_lint", is_flag=True,
              help="Also run `irviz lint` (default rules) and draw its findings on the graph.")
@click.option("-q", "--quiet", is_flag=True, help="Only print errors.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@_isolation_options
def render(target, output, fmt, mode, inputs, depth, expand_library, max_nodes, focus, max_pages,
           verbose, engine, with_lint, quiet, debug, isolate, timeout, memory_limit):
    """Render the TorchScript IR graph of the models in TARGET.

    TARGET is FILE.py (every model defined in it), FILE.py:NAME, FILE.py:factory(),
    package.module:NAME, or a saved TorchScript archive (.pt).
    """
    _run_isolated_if_asked(isolate, timeout, memory_limit)
    code = _render(target, output, fmt, mode, inputs, depth, expand_library, engine,
                   quiet, debug, with_lint, max_nodes=max_nodes, focus=focus, verbose=verbose,
                   max_pages=max_pages)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


def _linted_view(api, tgt, mode, inputs, options):
    """One capture serves both the lint run and the picture of its findings."""
    from dataclasses import replace

    from .lint import rules  # noqa: F401 - registers every rule
    from .lint.registry import REGISTRY
    from .lint.runner import LintOptions, drop_explained, lint_target
    from .lint.suppress import filter_suppressed

    found, run = lint_target(tgt, LintOptions(mode="both", inputs=inputs))
    found = drop_explained(found)
    selected = REGISTRY.selected()
    found, _ = filter_suppressed([d for d in found if d.code in selected])
    pairs = [(run.script, run.script_graph), (run.trace, run.trace_graph)]
    if mode == "trace":
        pairs.reverse()
    cap, graph = next(((c, g) for c, g in pairs if c is not None), (None, None))
    if cap is None:
        return api.visualize_target(tgt, mode, inputs, options), found
    opts = replace(options, findings=[d.to_dict() for d in found])
    return api.Visualization(cap, graph, opts), found


def _render(target, output, fmt, mode, inputs, depth, expand_library, engine, quiet, debug,
            with_lint=False, max_nodes=1000, focus=None, verbose=False, max_pages=40):
    def say(text: str) -> None:
        if not quiet:
            click.echo(text, err=True)

    try:
        from .compat import check_torch

        check_torch()
        from . import api
        from .files import write_atomic
        from .perf import freeze_loaded_objects
        from .render import engines
        from .render.dot import RenderOptions

        if fmt in ("svg", "html"):
            engine = engines.resolve_engine(engine)
        loaded = api.load(target)
        freeze_loaded_objects()   # measured: 10k-node model 7.5 -> 6.8 s, BERT 5.6 -> 4.8 s
        for name, reason in loaded.skipped:
            say(f"skipped {name}: {reason}")
        targets = loaded.targets
        stem = Path(target.split(":", 1)[0]).stem if ":" in target or target.endswith(
            (".py", ".pt")) else target.rsplit(".", 1)[-1]
        paths = _output_paths(output, [t.name for t in targets], stem, fmt)
    except Exception as exc:  # noqa: BLE001 - every error is reported, never a traceback
        return _fail(exc, debug)

    options = RenderOptions(depth=depth, expand_library=expand_library,
                            max_nodes=max_nodes or None, focus=focus)
    failed = 0
    for tgt, path in zip(targets, paths):
        started = time.perf_counter()
        try:
            stages = Stages()
            with contextlib.redirect_stdout(sys.stderr):  # the user's prints must not mix in
                if with_lint:
                    with stages.stage("capture, analyses and lint"):
                        view, found = _linted_view(api, tgt, mode, inputs, options)
                else:
                    with stages.stage("capture"):
                        cap = api.capture(tgt, mode, api.resolve_inputs(tgt, inputs))
                    with stages.stage("graph and analyses"):
                        view = api.Visualization(cap, api.build(cap), options)
            if with_lint:
                for d in found:
                    say(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}")
            for note in view.capture.notes:
                say(f"note: {tgt.spec}: {note}")
            for w in view.capture.warnings:
                inside = f" (raised inside torch/{w.origin})" if w.origin else ""
                say(f"{w.filename}:{w.lineno}: {w.category}{inside}: "
                    f"{w.message.splitlines()[0]}")
            if fmt == "json":
                with stages.stage("json"):
                    data = view.json().encode("utf-8")
            else:
                with stages.stage("dot"):
                    dot_text = view.dot()
                for note in view.render_notes:
                    say(f"note: {tgt.spec}: {note}")
                if fmt == "html":
                    from .render.html import module_pages, viewer_page

                    with stages.stage("module pages"):
                        pages = module_pages(view, engine=engine, findings=view.options.findings,
                                             max_pages=max_pages, overview=dot_text)
                    if pages.calls:
                        say(f"note: {tgt.spec}: {pages.summary()}")
                    with stages.stage(f"layout and viewer ({view.drawn_nodes} nodes, {engine})"):
                        data = viewer_page(view, findings=view.options.findings,
                                           engine=engine, pages=pages).encode("utf-8")
                elif fmt == "svg":
                    with stages.stage(f"layout ({view.drawn_nodes} nodes, {engine})"):
                        with warnings.catch_warnings(record=True) as caught:
                            warnings.simplefilter("always", RuntimeWarning)
                            from .render import engines as _engines

                            data = _engines.render(dot_text, "svg", engine)
                    for w in {str(c.message) for c in caught}:
                        say(f"note: {w.removeprefix('irviz: ')}")
                else:
                    data = dot_text.encode("utf-8")
            if path is None:
                sys.stdout.buffer.write(data)
            else:
                write_atomic(path, data)
                say(f"wrote {path} ({view.graph.number_of_nodes()} IR nodes, "
                    f"{view.capture.mode}, {time.perf_counter() - started:.2f} s)")
            if verbose:
                click.echo(f"{tgt.spec}: {stages.summary()}", err=True)
        except Exception as exc:  # noqa: BLE001
            failed += 1
            if _fail(exc, debug) == INTERNAL_ERROR:
                return INTERNAL_ERROR
    return 2 if failed else 0


def _codes(values: tuple[str, ...]) -> list[str] | None:
    """``--select IRV1,IRV201 --select IRV3`` -> ["IRV1", "IRV201", "IRV3"]."""
    out = [c.strip().upper() for v in values for c in v.split(",") if c.strip()]
    return out or None


@main.command()
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--select", multiple=True, metavar="CODES",
              help="Rule codes or prefixes to check (comma separated), e.g. IRV1,IRV201; ALL "
                   "for every rule. Default: the rules on by default.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Codes or prefixes to skip.")
@click.option("--extend-select", multiple=True, metavar="CODES",
              help="Add codes to the selection (e.g. the noisy IRV4).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]),
              default=None, help="Output format.  [default: text, or `format` in "
                                 "[tool.irviz]]")
@click.option("-o", "--output", metavar="FILE", help="Write findings here (default: stdout).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--mode", type=click.Choice(["both", "script", "trace"]), default="both",
              show_default=True, help="Which captures to compare: script, trace (needs "
                                      "inputs), or both.")
@click.option("--inputs", metavar="EXPR", help="Example inputs (see `irviz render`).")
@click.option("--dynamic-dims", multiple=True, metavar="NAME:DIM",
              help="Dimensions of forward() arguments that vary in deployment, e.g. xs:0; "
                   "the model is traced again with them changed. Default: dim 0 of every "
                   "tensor input.")
@click.option("--no-exec", is_flag=True,
              help="Do not run the model: only the source (AST) checks.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="pyproject.toml to read [tool.irviz] from (default: found upwards).")
@click.option("--no-hints", is_flag=True, help="Text format: leave out the hint lines.")
@click.option("-q", "--quiet", is_flag=True, help="Only print findings and errors.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@_isolation_options
def lint(targets, select, ignore, extend_select, fmt, output, exit_zero, mode, inputs,
         dynamic_dims, no_exec, config_path, no_hints, quiet, debug, isolate, timeout,
         memory_limit):
    """Find tracing and fork/wait pitfalls in the models of each TARGET.

    TARGET is a file, FILE.py:NAME, package.module:NAME, a .pt archive, or a folder
    (every .py file in it). Output is `path:line:col: CODE message` like ruff and flake8;
    suppress a finding with `# noqa: IRV101` on its line. Exit code: 0 clean, 1
    findings, 2 could not run.
    """
    _run_isolated_if_asked(isolate, timeout, memory_limit)
    code = _lint(targets, select, ignore, extend_select, fmt, output, exit_zero, mode,
                 inputs, dynamic_dims, no_exec, config_path, no_hints, quiet, debug)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


def _lint(targets, select, ignore, extend_select, fmt, output, exit_zero, mode, inputs,
          dynamic_dims, no_exec, config_path, no_hints, quiet, debug):
    def say(text: str) -> None:
        if not quiet:
            click.echo(text, err=True)

    try:
        from .compat import check_torch

        check_torch()
        from . import __version__ as version
        from .config import load_config
        from .files import check_writable_dir, write_atomic
        from .lint import rules  # noqa: F401 - registers every rule
        from .lint.registry import REGISTRY
        from .lint.runner import LintOptions, lint as run_lint
        from .report.formatters import FORMATTERS

        config = load_config(path=Path(config_path)) if config_path else load_config(
            Path(targets[0]).resolve().parent if Path(targets[0]).exists() else Path.cwd())
        fmt = fmt or config.format or "text"
        if fmt not in FORMATTERS:
            raise UsageError(f"format {fmt!r} in {config.source} is not one of "
                             f"{', '.join(FORMATTERS)}")
        if output and output != "-":
            out_path = Path(output)
            check_writable_dir(out_path.parent if str(out_path.parent) else Path("."))
        options = LintOptions(mode=mode, inputs=inputs,
                              dynamic_dims=list(dynamic_dims) or list(config.dynamic_dims),
                              no_exec=no_exec, select=_codes(select), ignore=_codes(ignore),
                              extend_select=_codes(extend_select), config=config)
        from .perf import freeze_loaded_objects
        freeze_loaded_objects()   # torch's own objects: the bulk of what a full collection scans
        with contextlib.redirect_stdout(sys.stderr):  # the user's prints must not mix in
            result = run_lint(list(targets), options)
    except Exception as exc:  # noqa: BLE001
        return _fail(exc, debug)
    for spec, error in result.errors:
        click.echo((_out_of_memory(error) or error).format(), err=True)
    for note in result.notes:
        say(f"note: {note}")
    if no_exec:
        say("note: --no-exec: only the source (ast) checks ran; the model was not executed")
    used = sorted({d.code for d in result.diagnostics})
    formatter = FORMATTERS[fmt]
    text = formatter(result.diagnostics, rules=[REGISTRY.get(c) for c in used],
                     tool_version=version) if fmt != "text" else formatter(
        result.diagnostics, show_hints=not no_hints)
    try:
        if output and output != "-":
            write_atomic(Path(output), text.encode("utf-8"))
        else:
            sys.stdout.write(text)
    except Exception as exc:  # noqa: BLE001
        return _fail(exc, debug)
    counts = {s: sum(d.severity == s for d in result.diagnostics)
              for s in ("error", "warning", "info")}
    models = len(result.runs)
    summary = (f"Found {len(result.diagnostics)} finding"
               f"{'s' if len(result.diagnostics) != 1 else ''} ("
               + ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
               + f") in {models} model{'s' if models != 1 else ''}"
               if result.diagnostics else
               f"All checks passed for {models} model{'s' if models != 1 else ''}")
    if result.suppressed:
        summary += f"; {result.suppressed} suppressed by noqa"
    say(summary + ".")
    if result.errors:
        return 2
    return 1 if result.diagnostics and not exit_zero else 0


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def rule_cmd(code, show_all, fmt):
    """Explain a lint rule: `irviz rule IRV101` (or list them with --all)."""
    import json as _json

    from .lint import rules  # noqa: F401
    from .lint.registry import REGISTRY, rule_json, rule_text

    try:
        if show_all or not code:
            chosen = REGISTRY.all()
            if fmt == "json":
                click.echo(_json.dumps([rule_json(r) for r in chosen], indent=2))
            else:
                for r in chosen:
                    state = "" if r.default else "  (off by default)"
                    click.echo(f"{r.code}  {r.name:34} {r.severity:8}{state}")
            sys.exit(0)
        chosen = REGISTRY.get(code)
        click.echo(_json.dumps(rule_json(chosen), indent=2) if fmt == "json"
                   else rule_text(chosen))
    except IrvizError as exc:
        sys.exit(_fail(exc, False))


@main.command()
@click.argument("target")
@click.option("-o", "--output", metavar="FILE", help="Write the report here (default: stdout).")
@click.option("--format", "fmt", type=click.Choice(["md", "json", "html"]), default="md",
              show_default=True, help="Markdown, JSON (versioned schema) or a self-contained "
                                      "HTML page with the graph and timeline.")
@click.option("--mode", type=click.Choice(["script", "trace", "auto"]), default="script",
              show_default=True, help="How to capture the model (see `irviz render`).")
@click.option("--inputs", metavar="EXPR",
              help="Example inputs (see `irviz render`); they turn op counts into time "
                   "estimates.")
@click.option("--measure", is_flag=True,
              help="Also run the model (forked and serial, several thread settings, each in "
                   "a child process) and report the measured speed-up.")
@click.option("--trace-out", metavar="FILE",
              help="With --measure: write the profiled call as a Chrome/Perfetto trace JSON "
                   "(open in ui.perfetto.dev or chrome://tracing).")
@click.option("--engine", type=click.Choice(["auto", "dot", "wasm"]), default="auto",
              show_default=True, help="Graphviz engine for the HTML page's graph.")
@click.option("-q", "--quiet", is_flag=True, help="Only print errors.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@_isolation_options
def report(target, output, fmt, mode, inputs, measure, trace_out, engine, quiet, debug,
           isolate, timeout, memory_limit):
    """Write the parallelism report of the models in TARGET.

    For each torch.jit.fork: its callee, fork and wait sites, how many tasks it starts,
    the work that overlaps with it; then work, span, critical path and the predicted
    speed-up, and with --measure the measured one.
    """
    _run_isolated_if_asked(isolate, timeout, memory_limit)
    code = _report(target, output, fmt, mode, inputs, measure, engine, quiet, debug, trace_out)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


def _report(target, output, fmt, mode, inputs, measure, engine, quiet, debug, trace_out=None):
    def say(text: str) -> None:
        if not quiet:
            click.echo(text, err=True)

    try:
        from .compat import check_torch

        check_torch()
        from . import api
        from .files import check_writable_dir, write_atomic
        from .report import parallelism as rep

        for path in (output, trace_out):
            if path and path != "-":
                check_writable_dir(Path(path).parent if str(Path(path).parent) else Path("."))
        if trace_out and not measure:
            raise UsageError("--trace-out needs --measure (the trace comes from a measured run)",
                             hint="add --measure, or leave out --trace-out")
        if fmt == "html":
            from .render import engines
            engine = engines.resolve_engine(engine)
        from .perf import freeze_loaded_objects
        freeze_loaded_objects()   # torch's own objects, before the model is built
        with contextlib.redirect_stdout(sys.stderr):  # the user's prints must not mix in
            views = api.visualize(target, mode, inputs)
        if not views:
            raise UsageError(f"{target} names no model")
        measured = {}
        figures: dict[str, list[tuple[str, str]]] = {}
        for view in views:
            for note in view.capture.notes:
                say(f"note: {view.title()}: {note}")
            if measure:
                from .frontends.measure import measure as run_measure

                say(f"measuring {view.title()} (child processes, a few seconds per setting)...")
                measured[view.name] = run_measure(view.capture.target.spec, view.capture.mode,
                                                  inputs)
            if fmt == "html":
                figures[view.name] = [("IR graph", rep.strip_xml_prolog(
                    view.svg(engine).decode("utf-8")))]
                profile = (measured.get(view.name) or {}).get("profile") or {}
                if profile.get("tasks"):
                    from .render.timeline import timeline_svg

                    figures[view.name].append(("Measured timeline", timeline_svg(
                        profile["tasks"], f"{view.title()}: one forked call")))
        traces = {}
        for name, m in measured.items():  # the raw trace goes to its own file, not the report
            profile = (m or {}).get("profile") or {}
            if profile.get("chrome_trace") is not None:
                traces[name] = profile.pop("chrome_trace")
        if trace_out:
            import json as _json

            if not traces:
                say("note: no profile was recorded, so no trace was written")
            else:
                body_trace = (next(iter(traces.values())) if len(traces) == 1
                              else {"traceEvents": [e for t in traces.values()
                                                    for e in t.get("traceEvents", [])]})
                write_atomic(Path(trace_out), _json.dumps(body_trace).encode("utf-8"))
                say(f"wrote {trace_out}")
        data = rep.build_report(views, measured)
        text = {"md": rep.to_markdown, "json": rep.to_json}.get(fmt)
        body = text(data) if text else rep.to_html(data, figures)
        if output and output != "-":
            write_atomic(Path(output), body.encode("utf-8"))
            say(f"wrote {output}")
        else:
            sys.stdout.write(body)
    except Exception as exc:  # noqa: BLE001 - every error is reported, never a traceback
        return _fail(exc, debug)
    return 0


if __name__ == "__main__":  # pragma: no cover
    main()
