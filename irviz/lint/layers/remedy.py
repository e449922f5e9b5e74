"""The ``remedy`` layer: for each finding a counterexample proved, the fix irviz verified
(:mod:`irviz.frontends.remedies`): the finding's submodule scripted, its function made
``@torch.jit.script_if_tracing``, the model traced in eval mode or with the argument
passed. The remedy goes on the finding; when none verifies, the candidates tried and why
each failed do (a remedy that did not verify is never shown as one)."""
from __future__ import annotations

import os
from dataclasses import replace

from ...frontends.remedies import Finding, search
from .context import LayerContext, has_random_ops, light


def run(ctx: LayerContext) -> None:
    """Search a remedy for every finding whose evidence is a counterexample."""
    before = ctx.run.verification
    if before is None or not before.counterexamples:
        return
    kinds = {r.key: r.kind for r in ctx.run.resting or ()}
    random = has_random_ops(ctx.run.trace_graph)
    tried: dict = {}   # a candidate shared by findings on one counterexample runs once
    found = ctx.findings.found
    with ctx.workspace.stage("remedy"):
        for key, d in list(found.items()):
            if d.evidence is None or d.evidence.verdict != "counterexample" \
                    or d.evidence.variant is None:
                continue
            finding = Finding(os.path.abspath(d.path), d.line, kinds.get(key),
                              d.evidence.variant)
            remedy, failed = search(ctx.run.trace, finding, before, random, tried,
                                    ctx.workspace.captured(ctx.target, "script"),
                                    threads=1 if light(ctx.run.trace_graph) else None)
            found[key] = replace(d, remedy=remedy, remedy_tried=() if remedy else
                                 tuple(failed))
