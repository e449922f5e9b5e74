"""`irviz lint`: run the detection layers (:mod:`irviz.lint.layers`) on each model and turn
facts into findings.

This module only orchestrates: :func:`lint_target` walks :data:`~irviz.lint.layers.LAYERS`
for one model, :func:`lint` every model the specs name through the gate. A model that
cannot be loaded is an *error* of the run (exit 2), never a finding.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

from ..config import Config
from ..errors import IrvizError, ModelLoadError
from ..frontends.records import Target
from .diagnostic import Diagnostic
from .gate import Gate
from .layers import EXPORT_LAYERS, LAYERS, Layer
from .layers.context import (  # noqa: F401 - re-exported: what other modules import from here
    CONFIRM_ONLY, RANDOM_OPS, TRACER_RULES, LayerContext, LintOptions, TargetRun, _Findings,
    _forward_location)
from .layers.certainties import TRAINING_OPS  # noqa: F401 - re-exported
from .run_report import RunReport

MODES = ("both", "script", "trace")


def lint_target(workspace, target: Target, options: LintOptions) -> TargetRun:
    """Every finding for one loaded model (before the gate), from ``workspace``'s
    captures and graphs."""
    ctx = LayerContext(workspace, target, options, TargetRun(target), _Findings(target))
    for layer in _layers(options):
        if all(ctx.has(need) for need in layer.needs):
            layer.run(ctx)
    ctx.run.found = list(ctx.findings.found.values())
    return ctx.run


def _layers(options: LintOptions) -> tuple[Layer, ...]:
    """The layers one run walks: ``--mode export`` its own (with ``--no-exec`` too);
    with ``--no-exec`` those that run no model."""
    if options.mode == "export":
        return EXPORT_LAYERS
    if options.no_exec:
        return tuple(layer for layer in LAYERS if not layer.runs_model)
    return LAYERS


def expand_specs(specs: list, config: Config | None) -> list[tuple[object, bool]]:
    """Specs with folders expanded to their ``.py`` files: (spec, came from a folder).
    A model object (not a string) stands for itself."""
    out = []
    exclude = config.exclude if config else []
    for spec in specs:
        if not isinstance(spec, str):   # a model object (the Python API): itself
            out.append((spec, False))
            continue
        path = Path(spec)
        if path.is_dir():
            for file in sorted(path.rglob("*.py")):
                parts = file.relative_to(path).parts
                if any(p.startswith(".") or p == "__pycache__" for p in parts):
                    continue
                rel = str(file.relative_to(path))
                if any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(file.name, g) for g in exclude):
                    continue
                out.append((str(file), True))
        else:
            out.append((spec, False))
    return out


def lint(workspace, specs: list, options: LintOptions, gate: Gate) -> RunReport:
    """Lint every model the specs name (folders: their ``.py`` files, minus the config's
    ``exclude``; from Python also model objects) and pass the findings through ``gate``."""
    report = RunReport()
    found: list[Diagnostic] = []
    for spec, from_folder in expand_specs(specs, workspace.config):
        try:
            if isinstance(spec, str):
                loaded = workspace.load(spec)
                targets = loaded.targets
                for name, reason in loaded.skipped:
                    report.notes.append(f"{spec}: skipped {name}: {reason}")
            else:
                targets = workspace.targets(spec)
        except ModelLoadError as exc:
            if from_folder and "defines no models" in exc.message:
                report.notes.append(f"{spec}: no models")
                continue
            report.errors.append((spec if isinstance(spec, str) else type(spec).__name__,
                                  exc))
            continue
        for target in targets:
            try:
                run = workspace.lint(target, options)
            except IrvizError as exc:
                report.errors.append((target.spec, exc))
                continue
            report.models += 1
            report.notes.extend(run.notes)
            if run.verification is not None:
                report.verified.append(f"{target.spec}: {run.verification.describe()}")
            found.extend(run.found)
    passed = gate.apply(found)
    report.diagnostics, report.suppressed = passed.kept, passed.suppressed
    return report
