"""``irviz lint``: findings of every model the targets name, through the one gate."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

from ..exits import fail, out_of_memory
from .common import Console, model_output_to_stderr, start


@dataclass(frozen=True)
class LintRequest:
    targets: tuple[str, ...]
    select: list[str] | None = None
    ignore: list[str] | None = None
    extend_select: list[str] | None = None
    fmt: str = "text"
    output: str | None = None
    exit_zero: bool = False
    mode: str = "both"
    dynamic_dims: list[str] = field(default_factory=list)
    no_exec: bool = False
    show_unconfirmed: bool = False
    #: text output: show info findings too (JSON and SARIF always carry them)
    show_info: bool = False
    #: at most this many variant inputs in the verification (None: the default)
    verify: int | None = None
    verbose: bool = False
    #: ``--mode export``: strict torch.export (``dynamic_dims`` become its dynamic_shapes)
    strict: bool = False
    no_hints: bool = False
    quiet: bool = False
    debug: bool = False
    #: worker processes (1: lint here, one target after another)
    jobs: int = 1
    #: read and write ``.irviz_cache`` (``--no-cache``: False)
    cache: bool = True
    #: ``--shard K/N`` as (K, N)
    shard: tuple[int, int] | None = None
    #: per target in a ``--jobs`` worker: ``--timeout`` seconds, ``--memory-limit`` MB
    timeout: float = 300.0
    memory_limit: int = 4096
    #: files given by name obey ``exclude`` and may define no models (pre-commit)
    force_exclude: bool = False
    #: the targets are ``--format json`` outputs of earlier runs (``--shard``): merge them
    merge: bool = False
    #: ``--fix``: write the verified remedies that are edits of the user's source
    fix: bool = False
    #: ``--diff``: print those edits as a unified diff, write nothing
    diff: bool = False


def run(request: LintRequest, workspace) -> int:
    """Lint, print the findings (stdout or ``-o``) and the summary (stderr); the exit
    code comes from the :class:`~irviz.lint.run_report.RunReport`.

    ``workspace`` is a Workspace, or a callable that makes one (with its ``config``
    known before): then a run whose every result is in the cache never makes it, and
    never imports torch."""
    console = Console(request.quiet)
    if request.merge:
        return _merge(request, console)
    if request.fix or request.diff:
        from ..errors import UsageError

        refused = [f"--{n.replace('_', '-')}" for n in ("no_exec", "shard") if getattr(request, n)]
        if refused:
            return fail(UsageError(f"--fix/--diff cannot be combined with {', '.join(refused)}",
                                   hint="a fix is verified by running the model; lint the "
                                        "whole target"), request.debug)
    make_workspace = workspace if callable(workspace) else (lambda: workspace)
    made: list = []
    try:
        from ..lint.batch import BatchOptions, lint_batch
        from ..lint.gate import Gate
        from ..lint.session import settings_of
        from ..output import check_output_file

        check_output_file(request.output)
        config = workspace.config
        batch = BatchOptions(jobs=request.jobs, cache=request.cache,
                             shard=request.shard,
                             timeout=request.timeout, memory_mb=request.memory_limit,
                             force_exclude=request.force_exclude)
        gate = Gate.from_config(config, request.select, request.ignore,
                                request.extend_select)
        fields = {"mode": request.mode, "dynamic_dims": list(request.dynamic_dims),
                  "no_exec": request.no_exec, "show_unconfirmed": request.show_unconfirmed,
                  "verify": request.verify}
        export = {"strict": request.strict, "dynamic_dims": list(request.dynamic_dims)
                  if request.mode == "export" else []}
        if request.mode != "export" and request.strict:
            console.say("note: --strict only apply with --mode export")

        def session(ws):
            """The lint session on ``ws``, with the run's options."""
            from ..lint.layers.context import LintOptions
            from ..lint.session import LintSession

            ws.set_export_options(request.mode, request.strict,
                                  tuple(export["dynamic_dims"]))
            return LintSession(ws, LintOptions(**{k: v for k, v in fields.items()
                                                  if v is not None}))

        def prepare():
            """Torch, the workspace and the lint session: only when something is linted."""
            start()
            from ..gc_pause import freeze_loaded_objects

            ws = make_workspace()
            made.append(ws)
            if request.verbose:
                from ..progress import Stages

                ws.stages = Stages()
            freeze_loaded_objects()  # torch's own objects: the bulk of a full collection
            return session(ws)

        def relint(specs):
            """``--fix``: the edited copies linted through a fresh workspace and session."""
            from ..workspace import Workspace

            start()
            fresh = Workspace(inputs=getattr(workspace, "inputs", None), config=config)
            return session(fresh).run(specs, gate)

        with model_output_to_stderr():
            report, done = lint_batch(config, settings_of(config, getattr(
                workspace, "inputs", None), fields, export), list(request.targets), gate,
                batch, prepare)
            fixed = None
            if request.fix or request.diff:
                from ..lint.fix import fix

                fixed = fix(report.diagnostics, relint, write=not request.diff)
    except Exception as exc:  # noqa: BLE001
        return fail(exc, request.debug)
    for _, error in report.errors:
        Console.always((out_of_memory(error) or error).format())
    for note in report.notes:
        console.say(f"note: {note}")
    if request.no_exec:
        console.say("note: --no-exec: only the source (ast) checks ran; the model was not "
                    "executed")
    if request.verbose:
        for line in report.verified:
            Console.always(f"verify {line}")
        if made:
            Console.always(f"lint: {made[0].stages.summary()}")
        cache = done["cache"]
        Console.always(f"lint: {done['linted']} linted, {done['cached']} from the cache"
                       + ("" if cache is not None else " (cache off)")
                       + (f" ({request.jobs} jobs)" if request.jobs > 1 else ""))
    if done["cache"] is not None and done["cache"].write_failed:
        console.say(f"note: the lint cache was not written ({done['cache'].write_failed})")
    if fixed is not None:
        return _fixed(request, console, report, fixed)
    try:
        _write_findings(request, report.diagnostics)
    except Exception as exc:  # noqa: BLE001
        return fail(exc, request.debug)
    console.say(report.summary(info_shown=request.show_info or request.fmt != "text"))
    return report.exit_code(request.exit_zero)


def _fixed(request: LintRequest, console: Console, report, fixed) -> int:
    """``--fix``: the findings left (lines moved where edits moved them), and ``Fixed N
    findings (M remaining).``; the exit code counts those left. ``--diff``: the diff of
    the verified edits, ``Would fix ...``, exit 1 when there is one (ruff's)."""
    from ..lint.run_report import CLEAN, COULD_NOT_RUN, FINDINGS

    remaining = fixed.remaining(report.diagnostics)
    left = sum(d.severity != "info" for d in remaining)
    for skipped in fixed.skipped:
        console.say(skipped.line())
    try:
        if request.diff:
            _emit(request, "".join(f.diff() for f in fixed.files))
        else:
            _write_findings(request, remaining)
    except Exception as exc:  # noqa: BLE001
        return fail(exc, request.debug)
    count = len(fixed.fixed)
    console.say(f"{'Would fix' if request.diff else 'Fixed'} {count} finding"
                f"{'' if count == 1 else 's'} ({left} remaining).")
    if report.errors:
        return COULD_NOT_RUN
    changes = bool(fixed.files) if request.diff else left > 0
    return FINDINGS if changes and not request.exit_zero else CLEAN


def _merge(request: LintRequest, console: Console) -> int:
    """``--merge``: the findings of earlier ``--format json`` runs (the ``--shard`` runs of
    a CI matrix) as one run's - one per code and line, as the gate keeps them - written in
    ``--format``; the exit code is the merged findings'."""
    import json
    from pathlib import Path

    from ..errors import UsageError
    from ..lint.run_report import CLEAN, FINDINGS
    from ..lint.diagnostic import Diagnostic
    from ..lint.gate import one_per_line

    try:
        found = []
        for name in request.targets:
            path = Path(name)
            try:
                items = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(items, list):
                    raise ValueError("not a list of findings")
                found += [Diagnostic(**item) for item in items]
            except FileNotFoundError:
                raise UsageError(f"--merge: {name}: no such file",
                                 hint="give the JSON files that `irviz lint --format json "
                                      "-o FILE` wrote") from None
            except (ValueError, TypeError) as exc:
                raise UsageError(f"--merge: {name} is not irviz lint's JSON output ({exc})",
                                 hint="merge the files `irviz lint --format json` wrote") \
                    from None
        merged = one_per_line(found)
        _write_findings(request, merged)
    except Exception as exc:  # noqa: BLE001
        return fail(exc, request.debug)
    console.say(f"merged {len(found)} findings of {len(request.targets)} runs into "
                f"{len(merged)}")
    proven = any(d.severity != "info" for d in merged)
    return FINDINGS if proven and not request.exit_zero else CLEAN


def _write_findings(request: LintRequest, diagnostics: list) -> None:
    """The findings in ``--format`` to ``-o`` (atomically) or stdout; text shows info
    findings only with ``--show-info``."""
    from .. import __version__ as version
    from ..lint.registry import REGISTRY
    from ..report.formatters import FORMATTERS

    formatter = FORMATTERS[request.fmt]
    if request.fmt == "text":
        text = formatter([d for d in diagnostics if request.show_info or d.severity != "info"],
                         show_hints=not request.no_hints)
    else:
        used = sorted({d.code for d in diagnostics if d.code in REGISTRY})
        text = formatter(diagnostics, rules=[REGISTRY.get(c) for c in used],
                         tool_version=version)
    _emit(request, text)


def _emit(request: LintRequest, text: str) -> None:
    """``text`` to ``-o`` (atomically) or stdout."""
    from ..files import write_atomic

    if request.output and request.output != "-":
        write_atomic(request.output, text.encode("utf-8"))
    else:
        sys.stdout.write(text)
