"""`irviz lint`: run the detection layers (:mod:`irviz.lint.layers`) on each model and turn
facts into findings.

This module only orchestrates: :func:`lint_target` walks :data:`~irviz.lint.layers.LAYERS`
for one model, :func:`lint` every model the specs name through the gate. A model that
cannot be loaded is an *error* of the run (exit 2), never a finding.
"""
from __future__ import annotations

import contextlib
import os
import sys
import types
from typing import Iterator

from ..errors import IrvizError, ModelLoadError
from ..frontends.records import Target
from .gate import Gate
from .opened_files import read_by, recording
from .layers import EXPORT_LAYERS, LAYERS, Layer
from .layers.context import Findings, LayerContext, LintOptions, TargetRun
from .run_report import RunReport
from .spec_result import SpecResult, merge
from .targets import expand_specs, spec_location

MODES = ("both", "script", "trace")


def lint_target(workspace, target: Target, options: LintOptions) -> TargetRun:
    """Every finding for one loaded model (before the gate), from ``workspace``'s
    captures and graphs."""
    ctx = LayerContext(workspace, target, options, TargetRun(target), Findings(target))
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


def lint_spec(workspace, spec, from_folder: bool, options: LintOptions) -> SpecResult:
    """Every finding (before the gate) of the models one expanded spec names (a string,
    or from Python a model object), and the Python files they depend on (see
    :func:`dependency_files` and the files opened while loading and capturing; none for
    a model object, which is never cached)."""
    named = isinstance(spec, str)
    result = SpecResult(spec if named else type(spec).__name__)
    with _seeded() if named else contextlib.nullcontext(), recording() as opened:
        _lint_spec(workspace, spec, named, from_folder, options, result)
    if named:   # the data files it read (a JSON config) key the cache too
        result.files = sorted(set(result.files) | set(opened) | set(read_by(result.files)))
    return result


def _lint_spec(workspace, spec, named: bool, from_folder: bool, options: LintOptions,
               result: SpecResult) -> SpecResult:
    before = set(sys.modules)
    try:
        if named:
            loaded = workspace.load(spec)
            targets = loaded.targets
            for name, reason in loaded.skipped:
                result.notes.append(f"{spec}: skipped {name}: {reason}")
        else:
            targets = workspace.targets(spec)
    except ModelLoadError as exc:
        if from_folder and "defines no models" in exc.message:
            result.notes.append(f"{spec}: no models")
            result.files = dependency_files(spec, before, [])
            return result
        result.errors.append((result.spec, exc))
        return result
    runs = []
    for target in targets:
        try:
            run = workspace.lint(target, options)
        except IrvizError as exc:
            result.errors.append((target.spec, exc))
            continue
        runs.append(run)
        result.models += 1
        result.notes.extend(run.notes)
        if run.verification is not None:
            result.verified.append(f"{target.spec}: {run.verification.describe()}")
        result.found.extend(run.found)
    if named:
        result.files = dependency_files(spec, before, runs, targets)
    return result


@contextlib.contextmanager
def _seeded() -> Iterator[None]:
    """The same random state for every spec: random weights and example inputs
    (``torch.rand``) then do not depend on which specs ran before in this process, so a
    ``--jobs`` worker, a cached result and a serial run agree on every number. The
    caller's own random state (a notebook's) is put back afterwards."""
    import random

    import torch

    numpy = sys.modules.get("numpy")
    saved = random.getstate(), numpy.random.get_state() if numpy is not None else None
    with torch.random.fork_rng(devices=[]):
        random.seed(0)
        torch.manual_seed(0)
        if numpy is not None:
            numpy.random.seed(0)
        try:
            yield
        finally:
            random.setstate(saved[0])
            if numpy is not None and saved[1] is not None:
                numpy.random.set_state(saved[1])


def dependency_files(spec: str, modules_before: set[str], runs: list[TargetRun],
                     targets=()) -> list[str]:
    """The Python files a spec's findings depend on: its own file; the project files
    (not torch's, the standard library's or an installed library's) imported while it
    loaded or named by its module's globals; every file (installed libraries too) whose
    lines the captures ran. The data files it reads are added by :func:`lint_spec`
    (:mod:`irviz.lint.opened_files`)."""
    from ..frontends.eager_run import LineRecorder
    from ..paths import is_installed_library_file

    def project_file(path) -> bool:
        return bool(path) and str(path).endswith(".py") and LineRecorder.watches(str(path)) \
            and not is_installed_library_file(path)

    files = {os.path.abspath(spec_location(spec))}
    for name in set(sys.modules) - modules_before:
        path = getattr(sys.modules.get(name), "__file__", None)
        if project_file(path):
            files.add(os.path.abspath(path))
    for target in targets:
        module = getattr(target, "user_module", None)
        for value in vars(module).values() if module is not None else ():
            owner = value if isinstance(value, types.ModuleType) else \
                sys.modules.get(getattr(value, "__module__", None) or "")
            path = getattr(owner, "__file__", None)
            if project_file(path):
                files.add(os.path.abspath(path))
    for run in runs:
        for cap in (run.script, run.trace):
            for filename, _line in (cap.executed_lines if cap is not None else None) or ():
                if filename.endswith(".py"):
                    files.add(os.path.abspath(filename))
    return sorted(files)


def lint(workspace, specs: list, options: LintOptions, gate: Gate) -> RunReport:
    """Lint every model the specs name (folders: their ``.py`` files, minus the config's
    ``exclude``; from Python also model objects) and pass the findings through ``gate``."""
    return merge([lint_spec(workspace, spec, from_folder, options)
                  for spec, from_folder in expand_specs(specs, workspace.config)], gate)
