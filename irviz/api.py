"""The Python API: draw, lint, report and diff any model from a notebook or a script.

>>> import irviz
>>> view = irviz.visualize(model, inputs=x)[0]       # doctest: +SKIP
>>> view = irviz.visualize("samples/decision_gate.py:MyCell")[0]      # doctest: +SKIP
>>> view = irviz.visualize(MyCell(), mode="trace",
...                        inputs=(torch.rand(3, 4), torch.rand(3, 4)))[0]  # doctest: +SKIP
>>> view.svg()          # bytes; in Jupyter the object shows itself as the interactive viewer
>>> for d in irviz.lint("samples/"): print(d.path, d.line, d.code, d.message)  # doctest: +SKIP
>>> print(irviz.report("samples/fork_basics.py:example").markdown())   # doctest: +SKIP
>>> irviz.diff("samples/decision_gate.py:MyCell", right_mode="trace").equal  # doctest: +SKIP
>>> archive = irviz.trace(MyCell(), (x, h), "cell.pt").module        # doctest: +SKIP

``import irviz`` stays cheap: these names are loaded on first use (``irviz/__init__.py``).
Everything here goes through :class:`irviz.workspace.Workspace`, the same pipeline the
CLI and the Sphinx extension use; ``lint``, ``report``, ``diff`` and ``trace`` call the
functions their commands call.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from .commands.trace import TraceResult
from .frontends.capture import Capture, capture
from .frontends.loader import load
from .render.dot import RenderOptions
from .view import Visualization
from .workspace import Workspace

__all__ = ["Visualization", "Workspace", "load", "capture", "build", "visualize",
           "RenderOptions", "lint", "report", "diff", "trace", "LintResult", "Report",
           "TraceResult"]


def build(cap: Capture) -> nx.DiGraph:
    """The IR graph of a capture, with every analysis's facts annotated on it."""
    return Workspace().graph(cap)


def visualize(model: object, mode: str = "script", inputs: object = None,
              options: RenderOptions | None = None, *, lint: bool = False,
              workspace: Workspace | None = None) -> list[Visualization]:
    """Capture ``model`` and build its annotated graph; one Visualization per model.

    ``model`` is a spec string (``"model.py"``, ``"model.py:MyCell"``, ``"pkg.mod:NAME"``,
    ``"archive.pt"``; see README: Targets) or a model object you built: an ``nn.Module``,
    a ScriptModule, or a scripted or plain function. ``inputs`` is an expression string
    (as ``--inputs``), a tensor, a tuple of tensors, or a dict of ``forward``'s
    arguments by name; without it the model file's ``example_inputs`` are used.
    ``lint=True`` draws the lint findings (the ``[tool.irviz]`` gate applies when the
    workspace has a config).
    """
    ws = workspace or Workspace(inputs=inputs)
    views = []
    for target in ws.targets(model):
        findings = None
        if lint:
            from .lint.gate import Gate
            from .lint.session import LintSession

            findings = Gate.from_config(ws.config).apply(LintSession(ws).target(target).found).kept
        views.append(ws.view(target, mode, options, findings=findings))
    return views


# -- lint -------------------------------------------------------------------------------

#: what ``irviz lint --mode`` takes: both compares script with trace
LINT_MODES = ("both", "script", "trace", "export")

@dataclass(frozen=True)
class LintResult:
    """The gated findings of every model linted: iterate it for the
    :class:`~irviz.lint.diagnostic.Diagnostic` records (``path``, ``line``, ``column``,
    ``code``, ``severity``, ``message``, ``evidence``, ``hint``), as ``irviz lint`` prints them.
    A finding a counterexample proves carries the fix irviz verified for it, ``remedy``
    (a :class:`~irviz.frontends.records.Remedy`: ``kind``, ``code`` to paste,
    ``verified_on``), or, when none verified, ``remedy_tried``: each candidate and why it
    failed. :func:`trace` applies the remedies."""

    findings: tuple = ()
    #: what the run remarked (a model skipped, a folder with no models)
    notes: tuple[str, ...] = ()
    #: findings a ``# noqa`` comment held back
    suppressed: int = 0
    models: int = 0
    summary: str = ""

    def __iter__(self):
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __getitem__(self, index):
        return self.findings[index]

    def codes(self) -> list[str]:
        """The rule codes found, in report order (``["IRV101", "IRV201"]``)."""
        return [d.code for d in self.findings]

    def __repr__(self) -> str:
        return f"<LintResult {self.summary}>"


def lint(*targets: object, select: list[str] | None = None,
         ignore: list[str] | None = None, extend_select: list[str] | None = None,
         mode: str = "both", inputs: object = None, no_exec: bool = False,
         show_unconfirmed: bool = False, config: str | None = None,
         workspace: Workspace | None = None) -> LintResult:
    """Lint every model ``targets`` name (spec strings, folders, or model objects) as
    ``irviz lint`` does, through the same gate: ``select``/``ignore``/``extend_select``
    over the ``[tool.irviz]`` of the nearest pyproject.toml above the first target (or
    of ``config``, a pyproject.toml path, as ``--config``). A target that cannot be
    linted raises its error (an :class:`~irviz.errors.IrvizError` naming the file),
    where the CLI exits 2."""
    from .lint.gate import Gate
    from .lint.layers.context import LintOptions
    from .lint.session import LintSession

    if not targets:
        raise TypeError("lint() needs at least one target")
    if mode not in LINT_MODES:
        raise ValueError(f"unknown lint mode {mode!r}; choose one of {', '.join(LINT_MODES)}")
    if workspace is None:
        from .config import config_start, load_config

        workspace = Workspace(inputs=inputs, config=load_config(
            config_start(list(targets)), path=config))
    ws = workspace
    gate = Gate.from_config(ws.config, select, ignore, extend_select)
    options = LintOptions(mode=mode, no_exec=no_exec, show_unconfirmed=show_unconfirmed,
                          dynamic_dims=list(ws.config.dynamic_dims))
    report = LintSession(ws, options).run(list(targets), gate)
    if report.errors:
        raise report.errors[0][1]
    return LintResult(tuple(report.diagnostics), tuple(report.notes), report.suppressed,
                      report.models, report.summary())


# -- report -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Report:
    """The parallelism report of the models a target names, as ``irviz report`` builds it:
    ``data`` is its JSON form (``irviz report --format json``); in Jupyter it shows as
    Markdown."""

    data: dict = field(repr=False)

    @property
    def targets(self) -> list[dict]:
        """One entry per model: its forks, waits, schedule and prediction."""
        return self.data["targets"]

    def markdown(self) -> str:
        from .report import parallelism as rep

        return rep.to_markdown(self.data)

    def json(self) -> str:
        from .report import parallelism as rep

        return rep.to_json(self.data)

    def _repr_markdown_(self) -> str:  # Jupyter
        return self.markdown()

    def __str__(self) -> str:
        return self.markdown()

    def __repr__(self) -> str:
        names = ", ".join(t["title"] for t in self.targets)
        return f"<Report {names}>"


def report(model: object, mode: str = "script", inputs: object = None, *,
           workspace: Workspace | None = None) -> Report:
    """The parallelism report (forks, waits, predicted speed-up) of every model ``model``
    names: a spec string or a model object, as :func:`visualize` takes."""
    from .commands.report import build, report_views

    ws = workspace or Workspace(inputs=inputs)
    return Report(build(ws, report_views(ws, model, mode), mode))


# -- diff -------------------------------------------------------------------------------

@dataclass(frozen=True)
class DiffResult:
    """What changed between two graphs, as ``irviz diff`` finds it: ``graph_diff`` is the
    :class:`~irviz.analyses.graph_match.GraphDiff` (``added``, ``removed``, ``changed``)."""

    compared: object = field(repr=False)

    @property
    def graph_diff(self):
        return self.compared.diff

    @property
    def equal(self) -> bool:
        return self.compared.diff.equal

    def counts(self) -> dict[str, int]:
        """``{"added", "removed", "changed", "same"}``, as the CLI's summary line."""
        return self.compared.diff.counts()

    def text(self) -> str:
        """The unified-diff-like text ``irviz diff`` prints."""
        from .report.diff import to_text

        c = self.compared
        if c.explained is not None:
            return c.explained.to_text(c.left.model, c.right.model)
        return to_text(c.diff, c.left, c.right)

    def json(self) -> str:
        from .report.diff import to_json

        c = self.compared
        return to_json(c.diff, c.left, c.right, c.explained)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        c, n = self.compared, self.counts()
        what = "no difference" if self.equal else (
            f"{n['removed']} removed, {n['added']} added, {n['changed']} changed")
        return f"<DiffResult {c.left.title()} → {c.right.title()}: {what}>"


def diff(left: object, right: object = None, *, left_mode: str = "script",
         right_mode: str = "script", right_optimize: str | None = None,
         inputs: object = None, workspace: Workspace | None = None) -> DiffResult:
    """Compare two models' graphs as ``irviz diff`` does: LEFT and RIGHT are spec strings
    or model objects naming one model each (RIGHT defaults to LEFT, so
    ``diff(m, right_mode="trace")`` compares script with trace); ``right_optimize``
    (freeze, inference, mobile) compares LEFT with its optimized copy."""
    from .commands.diff import compare

    ws = workspace or Workspace(inputs=inputs)
    return DiffResult(compare(ws, left, right, left_mode, right_mode, right_optimize))


# -- trace ------------------------------------------------------------------------------

def trace(model: object, inputs: object = None, output: object = None, *,
          picture: bool = False, engine: str = "auto",
          workspace: Workspace | None = None) -> TraceResult:
    """The TorchScript archive to deploy, as ``irviz trace`` makes it: ``model`` (a spec
    string or a model object naming one model) linted, every verified remedy applied to
    one trace, and checked (runs, remedies, traces, same outputs on the lint's variant
    inputs, saved and loaded back). ``output`` (a ``.pt`` path) is where the archive is
    written, only when every check before passed; None keeps it in memory (it is still
    saved to a buffer and loaded back). ``picture`` draws it beside ``output``.

    The :class:`TraceResult` has ``ok``, ``checks``, ``remedies`` (the
    :class:`~irviz.frontends.records.Remedy` records applied), ``findings`` and
    ``blocking`` (the error findings no remedy fixes), and ``module``: the verified
    ScriptModule, as loaded back (None when a check failed). A model that cannot be
    loaded, traced inputs it cannot take or a bad ``output`` raise their
    :class:`~irviz.errors.IrvizError`, where the CLI exits 2."""
    from .commands.trace import trace_model

    return trace_model(workspace or Workspace(inputs=inputs), model, output,
                       picture=picture, engine=engine)
