"""The ``irviz`` command line: options in, one call into :mod:`irviz.commands`, exit
code out.

``[tool.irviz]`` (the nearest pyproject.toml above the target, or ``--config``) fills
the defaults of every option it names, for every command, the way Black fills click's
``default_map``: ``mode``, ``engine``, ``depth``, ``format``, ``dynamic-dims``; a value
given on the command line wins. Status and errors go to stderr so stdout can carry
DOT/JSON/SVG; exit codes are in :mod:`irviz.exits`.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import click  # noqa: E402

from . import __version__  # noqa: E402
from .errors import IrvizError  # noqa: E402
from .exits import fail  # noqa: E402
from .output import RENDER_FORMATS as FORMATS  # noqa: E402
from .render.engines import ENGINES  # noqa: E402

#: [tool.irviz] key -> (option name, the commands it applies to, allowed values or None)
_CONFIG_DEFAULTS = {
    # lint compares script and trace (its --mode both) whatever the deployment mode is
    "mode": ("mode", {"render": None, "report": None}),
    "engine": ("engine", {"render": None, "report": None}),
    "depth": ("depth", {"render": None}),
    "format": ("fmt", {"lint": None}),
    "dynamic_dims": ("dynamic_dims", {"lint": None}),
    "show_unconfirmed": ("show_unconfirmed", {"lint": None}),
    "show_info": ("show_info", {"lint": None}),
    "verify": ("verify", {"lint": None}),
}


def _config_start(ctx: click.Context) -> Path:
    """Where the config search starts: the first target's directory, else the cwd."""
    from .config import config_start

    first_spec = ctx.params.get("target") or ctx.params.get("left")
    return config_start(list(ctx.params.get("targets") or ([first_spec] if first_spec else [])))


def _read_config(ctx: click.Context, _param, value: str | None):
    """Eager ``--config`` callback: load [tool.irviz] and make it the defaults of this
    command's options. A bad config is reported when the command runs (no traceback)."""
    from .config import Config, load_config

    try:
        config = load_config(path=Path(value)) if value else load_config(_config_start(ctx))
    except IrvizError as exc:
        ctx.meta["irviz.config_error"] = exc
        config = Config()
    ctx.meta["irviz.config"] = config
    command = ctx.command.name
    defaults = dict(ctx.default_map or {})
    for key, (option, commands) in _CONFIG_DEFAULTS.items():
        value = getattr(config, key)
        if command not in commands or value in (None, []):
            continue
        allowed = commands[command]
        if allowed is None or value in allowed:
            defaults[option] = value
    ctx.default_map = defaults
    return value


def _config_option(command):
    return click.option(
        "--config", "config_path", type=click.Path(dir_okay=False), default=None,
        is_eager=True, callback=_read_config,
        help="pyproject.toml to read [tool.irviz] from (default: found upwards from the "
             "target).")(command)


def _workspace(inputs=None):
    """The run's Workspace, with the [tool.irviz] the --config callback read."""
    from .workspace import Workspace

    ctx = click.get_current_context()
    error = ctx.meta.get("irviz.config_error")
    if error is not None:
        raise error
    return Workspace(inputs=inputs, config=ctx.meta.get("irviz.config"))


def _finish(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


class _LazyWorkspace:
    """The run's Workspace, made when the command first calls this (``config`` is there
    at once): a lint answered from the cache never imports torch."""

    def __init__(self, inputs):
        ctx = click.get_current_context()
        error = ctx.meta.get("irviz.config_error")
        if error is not None:
            raise error
        from .config import Config

        self.config = ctx.meta.get("irviz.config") or Config()
        self.inputs = inputs
        self._made = None

    def __call__(self):
        if self._made is None:
            from .workspace import Workspace

            self._made = Workspace(inputs=self.inputs, config=self.config)
        return self._made


def _run(module: str, request_type: str, debug: bool, model_inputs=None, lazy=False,
         **fields) -> None:
    """Build the request, make the workspace (``lazy``: when the command asks for it), run
    the command, exit with its code."""
    import importlib

    command = importlib.import_module(f".commands.{module}", __package__)
    request = getattr(command, request_type)(debug=debug, **fields)
    try:
        workspace = _LazyWorkspace(model_inputs) if lazy else _workspace(model_inputs)
    except Exception as exc:  # noqa: BLE001 - a bad config is a user error
        _finish(fail(exc, debug))
    _finish(command.run(request, workspace))


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


def _export_options(command):
    """``--strict`` and ``--dynamic-dims`` of ``--mode export`` (torch.export)."""
    command = click.option(
        "--dynamic-dims", "export_dims", multiple=True, metavar="NAME:DIM",
        help="--mode export: dimensions of forward() arguments that may vary, e.g. xs:0 "
             "(torch.export's dynamic_shapes, Dim.AUTO); a note says when export "
             "specialised one.")(command)
    return click.option(
        "--strict", is_flag=True,
        help="--mode export: torch.export.export(strict=True) (Dynamo); default non-strict.")(
        command)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="irviz")
def main() -> None:
    """irviz: see and check the TorchScript IR of your PyTorch models."""


@main.command()
@click.argument("target", is_eager=True)
@click.option("-o", "--output", metavar="PATH",
              help="Output file, directory (one file per model) or - for stdout; a "
                   ".png or .pdf file is drawn in that format (needs Graphviz's dot). "
                   "Default: NAME.svg files in the current directory; DOT/JSON of a single "
                   "model go to stdout.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="svg", show_default=True,
              help="svg picture, html (the SVG in a self-contained interactive viewer: zoom, "
                   "search, node details), dot source, or json (networkx node-link IR graph).")
@click.option("--mode", type=click.Choice(["script", "trace", "auto", "export"]),
              default="auto", show_default=True,
              help="script keeps control flow; trace records one run (needs inputs); auto "
                   "scripts, and traces (saying so) when scripting fails and there are "
                   "inputs; export draws torch.export's graph (needs inputs; "
                   "cond/while_loop/scan/map bodies nested).")
@click.option("--inputs", metavar="EXPR",
              help='Example inputs, a Python expression with torch imported: positional '
                   '("torch.rand(3, 4), torch.rand(3, 4)"), keywords ("dict(input_ids=ids, '
                   'attention_mask=mask)") or both ("(x,), dict(mask=m)"). Default: the '
                   "file's example_inputs.")
@click.option("--depth", type=click.IntRange(min=0), default=None,
              help="Collapse module calls nested deeper than N into one box.  [default: "
                   "no limit]")
@click.option("--expand-library", is_flag=True,
              help="Also expand torch.nn modules and the leaf modules of installed "
                   "libraries (GPT-2's Conv1D, activations), drawn as one box by default.")
@click.option("--show-checks", is_flag=True,
              help="Draw validation code (branches that only raise, asserts, loops of them); "
                   "by default it is folded into a '✓ N checks' badge on the node it guards.")
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
@click.option("--engine", type=click.Choice(ENGINES), default="auto",
              show_default=True,
              help="Graphviz: pure (graphviz-pure, installed with irviz: the same bytes on "
                   "every platform), dot (your Graphviz's dot binary) or wasm (the WebAssembly "
                   "fallback: plain-text labels, no PNG); auto takes the first installed.")
@click.option("--lint", "with_lint", is_flag=True,
              help="Also run `irviz lint` (default rules) and draw its findings on the graph.")
@click.option("--profile", "profile", is_flag=True,
              help="Run the model under torch.profiler in a child process (warm-up, then "
                   "--profile-runs runs) and draw each node's measured time: colour on a log "
                   "scale, the slowest labelled, the share of aten time matched in the "
                   "legend. Needs example inputs.")
@click.option("--profile-runs", type=click.IntRange(min=1), default=5, show_default=True,
              help="With --profile: how many profiled runs (medians are drawn).")
@click.option("--trace-out", metavar="FILE",
              help="With --profile: write the profiled runs as a Chrome/Perfetto trace JSON; "
                   "each matched event carries its node's id (args 'irviz node', the id in "
                   "the SVG and the JSON). Several models: FILE gets .NAME before its "
                   "extension.")
@click.option("-q", "--quiet", is_flag=True, help="Only print errors.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@_export_options
@_config_option
@_isolation_options
def render(target, output, fmt, mode, inputs, depth, expand_library, show_checks, max_nodes,
           focus, max_pages, verbose, engine, with_lint, profile, profile_runs, trace_out,
           quiet, debug, strict, export_dims, config_path, isolate, timeout, memory_limit):
    """Render the TorchScript IR graph of the models in TARGET.

    TARGET is FILE.py (every model defined in it), FILE.py:NAME, FILE.py:factory(),
    package.module:NAME, a saved TorchScript archive (.pt), or a torch.export program
    (.pt2).
    """
    _run_isolated_if_asked(isolate, timeout, memory_limit)
    _run("render", "RenderRequest", debug, inputs, target=target, output=output, fmt=fmt,
         mode=mode, depth=depth, expand_library=expand_library, show_checks=show_checks,
         max_nodes=max_nodes, focus=focus, max_pages=max_pages, engine=engine,
         lint=with_lint, profile=profile, profile_runs=profile_runs, trace_out=trace_out,
         verbose=verbose,
         quiet=quiet, strict=strict, export_dims=tuple(export_dims))


def _codes(values: tuple[str, ...]) -> list[str] | None:
    """``--select IRV1,IRV201 --select IRV3`` -> ["IRV1", "IRV201", "IRV3"]."""
    out = [c.strip().upper() for v in values for c in v.split(",") if c.strip()]
    return out or None


@main.command()
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...", is_eager=True)
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
@click.option("--mode", type=click.Choice(["both", "script", "trace", "export"]),
              default="both", show_default=True,
              help="Which captures to compare: script, trace (needs inputs), or both; "
                   "export: the migration rules IRV5xx (torch.export against the scripted "
                   "model; `irviz migrate` converts and checks outputs).")
@click.option("--strict", is_flag=True,
              help="--mode export: torch.export.export(strict=True) (Dynamo).")
@click.option("--inputs", metavar="EXPR", help="Example inputs (see `irviz render`).")
@click.option("--dynamic-dims", multiple=True, metavar="NAME:DIM",
              help="Dimensions of forward() arguments that vary in deployment, e.g. xs:0; "
                   "the model is traced again with them changed. Default: dim 0 of every "
                   "tensor input.")
@click.option("--no-exec", is_flag=True,
              help="Do not run the model: only the source (AST) checks.")
@click.option("--show-unconfirmed", is_flag=True, default=None,
              help="Also show source findings in installed libraries that no run confirms "
                   "(metadata and self.training branches, side effects). [default: left "
                   "out and counted in a note, or `show-unconfirmed` in [tool.irviz]]")
@click.option("--show-info", is_flag=True, default=None,
              help="Text format: also show info findings (those no counterexample or "
                   "certainty proves; JSON and SARIF always carry them). [default: "
                   "`show-info` in [tool.irviz], else off]")
@click.option("--verify", type=click.IntRange(min=0), default=None, metavar="N",
              help="Run the trace against the Python model on at most N generic variant "
                   "inputs, and on those aimed at each finding's decision, to find "
                   "counterexamples (0: none, every finding stays undecided and info). "
                   "[default: `verify` in [tool.irviz], else 16]")
@click.option("--no-hints", is_flag=True, help="Text format: leave out the hint lines.")
@click.option("-j", "--jobs", default="1", show_default=True, metavar="N",
              callback=lambda _c, _p, v: _jobs(v),
              help="Lint targets in N worker processes (0 or auto: one per CPU); the "
                   "output is the same as with one. --timeout and --memory-limit apply to "
                   "each target in a worker.")
@click.option("--no-cache", is_flag=True, envvar="IRVIZ_NO_CACHE",
              help="Neither read nor write the result cache (.irviz_cache in the project "
                   "root; `irviz clean` removes it). Also: IRVIZ_NO_CACHE=1.")
@click.option("--shard", metavar="K/N", callback=lambda _c, _p, v: _shard(v),
              help="Lint only part K of N (1-based) of the targets, split by their paths "
                   "relative to the project root; the N parts add up to the whole run "
                   "(CI matrices).")
@click.option("--force-exclude", is_flag=True,
              help="Treat files named on the command line like files found in a folder: "
                   "`exclude` in [tool.irviz] applies to them, and one that defines no "
                   "models is a note, not an error (for pre-commit, which passes every "
                   "staged .py file).")
@click.option("--merge", is_flag=True,
              help="The TARGETs are `--format json` outputs of earlier runs (e.g. the "
                   "--shard runs of a CI matrix): merge their findings as one run's (one "
                   "per code and line) and write them in --format.")
@click.option("--fix", is_flag=True,
              help="Apply the verified remedies that are edits of your own source "
                   "(@torch.jit.script_if_tracing, .eval() in the factory), each written "
                   "only after the edited file, linted again, shows the counterexample "
                   "gone; remedies for the deployment code are printed, not applied.")
@click.option("--diff", is_flag=True,
              help="Print the --fix edits as a unified diff and write nothing; exit 1 "
                   "when there are any.")
@click.option("-v", "--verbose", is_flag=True,
              help="Print how long each stage took (the verification included).")
@click.option("-q", "--quiet", is_flag=True, help="Only print findings and errors.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@_config_option
@_isolation_options
def lint(targets, select, ignore, extend_select, fmt, output, exit_zero, mode, strict, inputs,
         dynamic_dims, no_exec, show_unconfirmed, show_info, verify, no_hints, jobs, no_cache,
         shard, force_exclude, merge, fix, diff, verbose, quiet, debug, config_path, isolate,
         timeout, memory_limit):
    """Find tracing and fork/wait pitfalls in the models of each TARGET.

    TARGET is a file, FILE.py:NAME, package.module:NAME, a .pt archive, or a folder
    (every .py file in it). Output is `path:line:col: CODE message` like ruff and flake8;
    suppress a finding with `# noqa: IRV101` on its line. A finding is an error or a
    warning only with proof: a counterexample input on which the trace and the Python
    model differ, or a certainty no input changes; the rest is info (shown with
    --show-info). Exit code: 0 clean (info findings never count), 1 errors or warnings,
    2 could not run. Results are cached in .irviz_cache (see --no-cache).
    """
    if jobs == 1:   # with --jobs N every target runs in an isolated worker already
        _run_isolated_if_asked(isolate, timeout, memory_limit)
    _run("lint", "LintRequest", debug, inputs, lazy=True, targets=tuple(targets),
         select=_codes(select),
         ignore=_codes(ignore), extend_select=_codes(extend_select), fmt=fmt or "text",
         output=output, exit_zero=exit_zero, mode=mode, dynamic_dims=list(dynamic_dims),
         no_exec=no_exec, show_unconfirmed=bool(show_unconfirmed),
         show_info=bool(show_info), verify=verify, no_hints=no_hints, verbose=verbose,
         quiet=quiet, strict=strict, jobs=jobs, cache=not no_cache, shard=_parsed_shard(shard),
         timeout=timeout, memory_limit=memory_limit, force_exclude=force_exclude,
         merge=merge, fix=fix, diff=diff)


def _parsed_shard(value: str | None):
    from .lint.shard import parse_shard

    return parse_shard(value)


def _jobs(value: str) -> int:
    """``--jobs``: a count, 0 or ``auto`` for one per CPU."""
    text = str(value).strip().lower()
    if text == "auto" or text == "0":
        from .lint.batch import cpu_count

        return cpu_count()
    if not text.isdigit():
        raise click.BadParameter(f"{value!r} is not a number of processes (N >= 0, or auto)",
                                 param_hint="'--jobs'")
    return int(text)


def _shard(value: str | None) -> str | None:
    """``--shard K/N``, checked before anything is imported."""
    from .lint.shard import parse_shard

    try:
        parse_shard(value)
        return value
    except IrvizError as exc:
        raise click.BadParameter(f"{exc.message}; {exc.hint}", param_hint="'--shard'")


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="pyproject.toml whose directory holds the cache (default: found upwards "
                   "from the current directory).")
def clean(config_path):
    """Remove the lint result cache (.irviz_cache in the project root)."""
    from .config import load_config
    from .lint.cache import CACHE_DIR, clean as remove, project_root

    try:
        config = load_config(path=Path(config_path)) if config_path else load_config(Path.cwd())
        root = project_root(config)
        removed = remove(root)
    except (IrvizError, OSError) as exc:
        _finish(fail(exc, False))
    shown = root / CACHE_DIR
    click.echo(f"removed {shown}" if removed else f"no cache at {shown}", err=True)


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True,
              help="text to read (the rule's documentation), json for tools.")
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
        sys.exit(fail(exc, False))


@main.command()
@click.argument("target", is_eager=True)
@click.option("-o", "--output", metavar="FILE", help="Write the report here (default: stdout).")
@click.option("--format", "fmt", type=click.Choice(["md", "json", "html"]), default="md",
              show_default=True, help="Markdown, JSON (versioned schema) or a self-contained "
                                      "HTML page with the graph and timeline.")
@click.option("--mode", type=click.Choice(["script", "trace", "auto", "export"]),
              default="script", show_default=True,
              help="How to capture the model (see `irviz render`).")
@click.option("--inputs", metavar="EXPR",
              help="Example inputs (see `irviz render`); they turn op counts into time "
                   "estimates.")
@click.option("--measure", is_flag=True,
              help="Also run the model (forked and serial, several thread settings, each in "
                   "a child process) and report the measured speed-up beside the "
                   "calibrated prediction.")
@click.option("--calibrate", is_flag=True,
              help="Cheaper than --measure: time only the serial baseline a few times per "
                   "thread setting and report the calibrated predicted speed-ups.")
@click.option("--trace-out", metavar="FILE",
              help="With --measure: write the profiled call as a Chrome/Perfetto trace JSON "
                   "(open in ui.perfetto.dev or chrome://tracing).")
@click.option("--engine", type=click.Choice(ENGINES), default="auto",
              show_default=True, help="Graphviz engine for the HTML page's graph.")
@click.option("-q", "--quiet", is_flag=True, help="Only print errors.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@_export_options
@_config_option
@_isolation_options
def report(target, output, fmt, mode, inputs, measure, calibrate, trace_out, engine, quiet,
           debug, strict, export_dims, config_path, isolate, timeout, memory_limit):
    """Write the parallelism report of the models in TARGET.

    For each torch.jit.fork: its callee, fork and wait sites, how many tasks it starts,
    the work that overlaps with it; then work, span, critical path and the predicted
    speed-up per thread setting, and with --measure the measured one (--calibrate: the
    calibrated prediction from a few serial runs).
    """
    _run_isolated_if_asked(isolate, timeout, memory_limit)
    _run("report", "ReportRequest", debug, inputs, target=target, output=output, fmt=fmt,
         mode=mode, inputs=inputs, measure=measure, calibrate=calibrate,
         trace_out=trace_out, engine=engine,
         quiet=quiet, strict=strict, export_dims=tuple(export_dims))


@main.command()
@click.argument("left", is_eager=True)
@click.argument("right", required=False)
@click.option("--left-mode", type=click.Choice(["script", "trace", "auto"]), default="script",
              show_default=True, help="How to capture LEFT (see `irviz render --mode`).")
@click.option("--right-mode", type=click.Choice(["script", "trace", "auto"]),
              default="script", show_default=True, help="How to capture RIGHT.")
@click.option("--right-optimize", type=click.Choice(["freeze", "inference", "mobile"]),
              default=None,
              help="Compare LEFT (scripted, eval mode) with its copy made by torch.jit.freeze, "
                   "torch.jit.optimize_for_inference or optimize_for_mobile: folded batch "
                   "norms, rewritten ops, layout conversions.")
@click.option("--inputs", metavar="EXPR",
              help="Example inputs for both sides (see `irviz render`). Default: each "
                   "file's example_inputs.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "svg", "html"]),
              default="text", show_default=True,
              help="text (a unified-diff-like summary per module), json, or one picture of "
                   "both graphs (svg, or html with a left / right / both toggle).")
@click.option("-o", "--output", metavar="PATH",
              help="Write here (- for stdout); a .svg, .html or .json PATH chooses that "
                   "format when --format is left at text. Default: text and JSON to stdout, "
                   "pictures to STEM.NAME.diff.svg|html in the current directory.")
@click.option("--engine", type=click.Choice(ENGINES), default="auto",
              show_default=True, help="Graphviz engine for svg/html.")
@click.option("-v", "--verbose", is_flag=True, help="Print how long each stage took.")
@click.option("-q", "--quiet", is_flag=True, help="Only print the diff and errors.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@_config_option
def diff(left, right, left_mode, right_mode, right_optimize, inputs, fmt, output, engine,
         verbose, quiet, debug, config_path):
    """Show what changed between two graphs: LEFT and RIGHT (default: LEFT again).

    Each side is any target irviz loads (FILE.py:NAME, FILE.py:factory(), a .pt archive)
    naming one model. `irviz diff m.py:MyCell --left-mode script --right-mode trace` shows
    what the trace lost. Nodes are matched on module, kind and source line, not on
    TorchScript's %names. Exit code: 0 equal, 1 different, 2 could not run.
    """
    _run("diff", "DiffRequest", debug, inputs, left=left, right=right, left_mode=left_mode,
         right_mode=right_mode, right_optimize=right_optimize, fmt=fmt, output=output,
         engine=engine, verbose=verbose,
         quiet=quiet)


@main.command()
@click.argument("target", is_eager=True)
@click.option("--inputs", metavar="EXPR",
              help="Example inputs (see `irviz render`); migrating runs the model, so they are "
                   "needed. Default: the model file's example_inputs.")
@click.option("-o", "--output", metavar="PATH.pt2",
              help="Where to save the exported program (atomically; pictures go beside it). "
                   "Default: NAME.pt2 in the current directory.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True, help="How the checklist is printed.")
@click.option("--inline-forks", is_flag=True,
              help="Convert a serial copy: each torch.jit.fork's task inlined where it was "
                   "forked (TS2EPConverter has no rule for forks). The parallelism is lost.")
@click.option("--no-pictures", is_flag=True,
              help="Do not write the pictures of the converted program and the original.")
@click.option("--engine", type=click.Choice(ENGINES), default="auto",
              show_default=True, help="Graphviz engine for the pictures.")
@click.option("-q", "--quiet", is_flag=True, help="Only print the checklist and errors.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@_config_option
@_isolation_options
def migrate(target, inputs, output, fmt, inline_forks, no_pictures, engine, quiet, debug,
            config_path, isolate, timeout, memory_limit):
    """Migrate TARGET from TorchScript to torch.export, checked on outputs.

    A .pt archive (or a ScriptModule in a file) goes through torch's TS2EPConverter, a
    Python model through torch.export (strict=False). The checklist: does it run, does it
    convert (else each blocking node at its line, with the rewrite to make), are the outputs
    the same on the example and on variant inputs (other sizes, other values), is the .pt2
    saved and loaded back. Exit code: 0 migrated, 1 not (did not convert, or outputs
    differ), 2 could not run.
    """
    _run_isolated_if_asked(isolate, timeout, memory_limit)
    _run("migrate", "MigrateRequest", debug, inputs, target=target, output=output, fmt=fmt,
         inline_forks=inline_forks, pictures=not no_pictures, engine=engine, quiet=quiet)


@main.command()
@click.argument("target", is_eager=True)
@click.option("--inputs", metavar="EXPR",
              help="Example inputs (see `irviz render`); tracing runs the model, so they are "
                   "needed. Default: the model file's example_inputs.")
@click.option("-o", "--output", metavar="PATH.pt",
              help="Where to save the archive (atomically, and only when every check before "
                   "passed; the picture goes beside it as PATH.svg). Default: NAME.pt in the "
                   "current directory.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True, help="How the checklist is printed.")
@click.option("--no-picture", is_flag=True, help="Do not draw the archive beside it.")
@click.option("--engine", type=click.Choice(ENGINES), default="auto",
              show_default=True, help="Graphviz engine for the picture.")
@click.option("-q", "--quiet", is_flag=True, help="Only print the checklist and errors.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@_config_option
@_isolation_options
def trace(target, inputs, output, fmt, no_picture, engine, quiet, debug, config_path,
          isolate, timeout, memory_limit):
    """Trace TARGET into the TorchScript archive to deploy, with irviz's verified remedies.

    The model is linted once; every error finding a counterexample proves gets the remedy
    irviz verified (the smallest submodule scripted in place, a function made
    @torch.jit.script_if_tracing, .eval(), the argument passed, or the whole model
    scripted), and all of them are applied to one trace. The checklist: does the model
    run, does every error finding have a verified remedy (else each one, with the
    candidates that failed and why), does it trace, are the outputs the same as the Python
    model's on the example and on every variant input of the lint's verification, is the
    .pt saved, loaded back with torch.jit.load and the same again. Exit code: 0 every check
    passed, 1 one failed (nothing is written), 2 could not run.
    """
    _run_isolated_if_asked(isolate, timeout, memory_limit)
    _run("trace", "TraceRequest", debug, inputs, target=target, output=output, fmt=fmt,
         picture=not no_picture, engine=engine, quiet=quiet)


if __name__ == "__main__":  # pragma: no cover
    main()
