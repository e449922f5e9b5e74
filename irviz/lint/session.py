"""A lint run built once, from settings: the command, the ``--jobs`` worker, the API,
Sphinx and ``render --lint`` all lint through :class:`LintSession`. The settings that
change a spec's findings (the cache key's, :func:`settings_of`) are what a worker is made
from. Importing this imports no torch: a run answered from the cache reads only those."""
from __future__ import annotations

import contextlib
import dataclasses
import sys
from typing import TYPE_CHECKING

from ..errors import IrvizError, ModelLoadError
from .spec_result import SpecResult, merge
from .targets import expand_specs

if TYPE_CHECKING:  # pragma: no cover
    from .gate import Gate
    from .layers.context import LintOptions, TargetRun
    from .run_report import RunReport

__all__ = ["LintSession", "settings_of"]


def settings_of(config, inputs, options: dict, export: dict | None) -> dict:
    """Everything besides files that changes a spec's findings, JSON-able and made
    without torch: the cache key's settings. ``options`` are the LintOptions' fields."""
    return {"inputs": inputs, "options": options, "export": export,
            "config": {k: v for k, v in dataclasses.asdict(config).items() if k != "source"}}


class LintSession:
    """One lint run over ``workspace`` with ``options`` (by default what ``[tool.irviz]``
    asks for, in ``mode``). Each target is linted once; its captures and graphs are the
    workspace's, so a picture drawn afterwards costs no second capture."""

    def __init__(self, workspace, options: LintOptions | None = None, mode: str = "both"):
        from .layers.context import LintOptions

        self.workspace = workspace
        self.options = options or LintOptions(
            mode=mode, dynamic_dims=list(workspace.config.dynamic_dims),
            show_unconfirmed=bool(workspace.config.show_unconfirmed))
        self._runs: dict[int, tuple[object, TargetRun]] = {}

    @classmethod
    def from_settings(cls, header: dict) -> LintSession:
        """A worker's session from the parent's :meth:`settings`."""
        from ..compat import check_torch
        from ..config import Config, load_config
        from ..gc_pause import freeze_loaded_objects
        from ..workspace import Workspace
        from .layers.context import LintOptions

        check_torch()
        source = header["config_source"]
        workspace = Workspace(inputs=header["inputs"],
                              config=load_config(path=source) if source else Config())
        export = header["export"]
        if export is not None:
            workspace.set_export_options(header["options"]["mode"], export["strict"],
                                         tuple(export["dynamic_dims"]))
        freeze_loaded_objects()
        return cls(workspace, LintOptions(**header["options"]))

    def settings(self) -> dict:
        """What a ``--jobs`` worker needs to lint the way this session does."""
        ws, export = self.workspace, self.workspace.export_options
        header = settings_of(ws.config, ws.inputs, dataclasses.asdict(self.options), None
                             if export is None else {"strict": export.strict,
                                                     "dynamic_dims": list(export.dynamic_dims)})
        header["config_source"] = None if ws.config.source is None else str(ws.config.source)
        return header

    def target(self, target) -> TargetRun:
        """Every finding for ``target`` before the gate (selection, per-file ignores,
        noqa), and the run's notes."""
        from .runner import lint_target

        if id(target) not in self._runs:
            self._runs[id(target)] = target, lint_target(self.workspace, target, self.options)
        return self._runs[id(target)][1]

    def spec(self, spec, from_folder: bool) -> SpecResult:
        """Every finding (before the gate) of the models one expanded spec names (a
        string, or from Python a model object), and the files they depend on
        (:func:`~irviz.lint.runner.dependency_files` and the files opened while loading
        and capturing; none for a model object, which is never cached)."""
        from .opened_files import read_by, recording
        from .runner import seeded

        named = isinstance(spec, str)
        result = SpecResult(spec if named else type(spec).__name__)
        with seeded() if named else contextlib.nullcontext(), recording() as opened:
            self._spec(spec, named, from_folder, result)
        if named:   # the data files it read (a JSON config) key the cache too
            result.files = sorted(set(result.files) | set(opened) | set(read_by(result.files)))
        return result

    def _spec(self, spec, named: bool, from_folder: bool, result: SpecResult) -> None:
        from .runner import dependency_files

        before = set(sys.modules)
        try:
            loaded = self.workspace.load(spec) if named else None
            targets = loaded.targets if named else self.workspace.targets(spec)
            for name, reason in loaded.skipped if named else ():
                result.notes.append(f"{spec}: skipped {name}: {reason}")
        except ModelLoadError as exc:
            if from_folder and "defines no models" in exc.message:
                result.notes.append(f"{spec}: no models")
                result.files = dependency_files(spec, before, [])
            else:
                result.errors.append((result.spec, exc))
            return
        runs = []
        for target in targets:
            try:
                run = self.target(target)
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

    def run(self, specs: list, gate: Gate) -> RunReport:
        """Lint every model the specs name (folders: their ``.py`` files, minus the
        config's ``exclude``; from Python also model objects), through ``gate``."""
        return merge([self.spec(spec, from_folder)
                      for spec, from_folder in expand_specs(specs, self.workspace.config)],
                     gate)
