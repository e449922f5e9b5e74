"""`irviz lint`: run the detection layers (:mod:`irviz.lint.layers`) on each model and turn
facts into findings.

:func:`lint_target` walks :data:`~irviz.lint.layers.STEPS` for one model; a run over many
specs is a :class:`~irviz.lint.session.LintSession`, which reads :func:`seeded` and
:func:`dependency_files` from here. A model that cannot be loaded is an *error* of the run
(exit 2), never a finding.
"""
from __future__ import annotations

import contextlib
import os
import sys
import types
from typing import Iterator

from ..frontends.records import Target
from .layers import EXPORT_STEPS, STEPS, Step
from .layers.context import Findings, LayerContext, LintOptions, TargetRun
from .targets import spec_location

def lint_target(workspace, target: Target, options: LintOptions) -> TargetRun:
    """Every finding for one loaded model (before the gate), from ``workspace``'s
    captures and graphs."""
    ctx = LayerContext(workspace, target, options, TargetRun(target), Findings(target))
    for step in _steps(options):
        if all(ctx.has(need) for need in step.needs):
            step.run(ctx)
    ctx.run.found = list(ctx.findings.found.values())
    return ctx.run


def _steps(options: LintOptions) -> tuple[Step, ...]:
    """The steps one run walks: ``--mode export`` its own (with ``--no-exec`` too);
    with ``--no-exec`` those that run no model."""
    if options.mode == "export":
        return EXPORT_STEPS
    if options.no_exec:
        return tuple(step for step in STEPS if not step.runs_model)
    return STEPS


@contextlib.contextmanager
def seeded() -> Iterator[None]:
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
    lines the captures ran. The data files it reads are added by
    :meth:`~irviz.lint.session.LintSession.spec` (:mod:`irviz.lint.opened_files`)."""
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
