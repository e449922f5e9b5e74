"""The weighing of evidence after every reporting layer: source findings the run contradicts
or (in library code) does not confirm are left out (:mod:`irviz.lint.evidence`), and every
TracerWarning no finding stands for is named in a note.
"""
from __future__ import annotations

from .. import evidence
from .context import (
    CONFIRM_ONLY, TRACER_RULES, LayerContext, LintOptions, TargetRun, Findings, first_line)


def run(ctx: LayerContext) -> None:
    """Weigh the findings so far (with ``--no-exec`` too: library code stays unconfirmed)."""
    _weigh_evidence(ctx.workspace, ctx.run, ctx.findings, ctx.options)


def _weigh_evidence(workspace, run: TargetRun, findings: Findings,
                    options: LintOptions) -> None:
    """Leave out the source findings the run contradicts or, in library code, does not
    confirm (:func:`irviz.lint.evidence.weigh`), and name in a note every TracerWarning
    no finding stands for."""
    failed = workspace.captured(run.target, "trace")
    warnings = list(run.trace.warnings if run.trace is not None
                    else getattr(failed, "warnings", None) or ())
    weighed = evidence.weigh(findings.found, run.target.obj, run.trace, warnings,
                             options.show_unconfirmed)
    run.notes.extend(weighed.notes(run.target.spec))
    for where, message in evidence.unreported_warnings(findings.found, warnings):
        if any(message.startswith(prefix) for prefix, rule in TRACER_RULES
               if rule in CONFIRM_ONLY):
            why = ("torch calls it safe for constant data, and the source shows no "
                   "input-derived data going in")
        else:
            why = first_line(message, 80)
        run.notes.append(f"{run.target.spec}: TracerWarning at {where} not reported as a "
                         f"finding: {why}")
