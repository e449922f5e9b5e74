"""The ``ast`` layer: the model's Python source, read without running it
(:mod:`irviz.lint.source`); the only layer with ``--no-exec``.

Two steps, because the source layer reads code the capture may never have run: :func:`facts`
before the captures, :func:`report` after them, when they say which lines ran.
"""
from __future__ import annotations

from .. import evidence
from .context import LayerContext, TargetRun, Findings, RanLines


def facts(ctx: LayerContext) -> None:
    """The source layer's facts of a model or function (already-scripted code is not
    traced), for :func:`report`."""
    if ctx.target.kind in ("module", "function"):
        ctx.facts = _ast_layer(ctx.target, ctx.run)


def report(ctx: LayerContext) -> None:
    """Report :func:`facts` against the lines the trace's run, else the scripted capture's
    eager run, executed (none with ``--no-exec``)."""
    run = ctx.run
    _report_source(ctx.facts, RanLines.of(run.trace, run.script), ctx.findings, run)


def _ast_layer(target, run: TargetRun) -> list:
    """The source layer's facts (reported by :func:`_report_source` once the captures
    say what ran)."""
    try:
        from ..source import source_findings
        return source_findings(target.obj)
    except (OSError, TypeError, SyntaxError) as exc:
        run.notes.append(f"{target.spec}: source not analysed ({exc})")
        return []


#: The evidence each source-layer rule family takes from a run of the model's Python:
#: tracing pitfalls (IRV1xx, :data:`irviz.lint.source.detect_tracing.RULES`) exist only in
#: code the trace runs, so code that did not run in the capture is not evidence of one (a
#: declaration, a parameter or ``global``, ran when its function did: the finding names its
#: function's lines). Fork/wait (IRV2xx) and scripting (IRV3xx) findings stand without it:
#: TorchScript compiles both branches of an ``if``, taken or not.
def _needs_run_evidence() -> frozenset:
    from ..source import detect_tracing

    return frozenset(detect_tracing.RULES)


def _report_source(facts: list, ran: RanLines | None, findings: Findings,
                   run: TargetRun) -> None:
    """Report the source layer's facts; with ``ran``, a tracing one only when a line of its
    code ran (:func:`_needs_run_evidence`). Without it (no inputs, ``--no-exec``) they are
    all kept, unconfirmed: ``ast`` is then the only layer that names them."""
    needs = _needs_run_evidence()
    dropped = 0
    inputs = next((c.inputs for c in (run.trace, run.script)
                   if c is not None and c.inputs is not None), None)
    for fact in evidence.signature_facts(facts, inputs, run.target.obj):
        if ran is not None and fact.rule in needs \
                and ran.any_ran(fact.path, fact.evidence_lines()) is False:
            dropped += 1
            continue
        findings.report(fact.rule, (fact.path, fact.line, fact.column, fact.end_line,
                                    fact.end_column), "ast", expr=fact.detail,
                        callee=fact.detail, **dict(getattr(fact, "fields", ())))
    if dropped:
        run.notes.append(f"{run.target.spec}: {dropped} source finding(s) on code the "
                         "example inputs never ran left out")
