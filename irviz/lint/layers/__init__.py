"""The detection layers of `irviz lint`, in run order, and what each one reads of the run.

The layers (each finding lists the ones that fired):

``ast``              the model's Python source (:mod:`irviz.lint.source`); the only
                     layer with ``--no-exec``.
``trace``            the warnings torch raised while tracing, attributed to the user's line.
``script-vs-trace``  control flow and dynamic values the scripted graph keeps but the trace
                     froze (:mod:`irviz.analyses.divergence`).
``retrace``          a second trace on inputs with other shapes (:mod:`irviz.frontends.retrace`).
``ir``               patterns in the IR graph: training-mode ops, random ops, outputs that
                     depend on no input, fork/wait hazards, traced modules inside scripts,
                     and the certainties of the trace (:mod:`.certainties`).
``verify``           the trace against the Python model on variant inputs: counterexamples,
                     and the verdict every finding carries to the gate (:mod:`.verify`).

Findings are created only through the rule classes' ``diagnostic()``; a model that cannot be
loaded is an *error* of the run (exit 2), never a finding.

The ``ast`` layer reads code the capture may never have run (``if self.training:`` in an
eval model, ``if cache is not None:`` without a cache): when the model's Python ran (the
trace's run, else the scripted capture's eager run), a tracing finding on code that did not
run is dropped (:func:`irviz.lint.layers.source.report`).

The one place the order lives, as :data:`irviz.analyses.pipeline.STEPS` for the analyses:
:func:`irviz.lint.runner.lint_target` walks :data:`STEPS` (``--mode export``:
:data:`EXPORT_STEPS`), each layer's ``run(ctx)`` reading and writing one
:class:`~.context.LayerContext`. The order is the findings' order, which de-duplication
relies on (the first layer to report a rule on a line makes the finding, later ones add
their name to its ``layers``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import (
    call_sites, capture, certainties, divergence, export, hazards, ir, remedy, retrace,
    scripting, source, tracer, verify, weigh)
from .context import LayerContext


@dataclass(frozen=True)
class Step:
    """One row of the run order: a detection layer's ``run(ctx)`` (a layer may be several
    steps: verify runs, then settles), when the run has what ``needs`` names. "Layer"
    means one thing: a way of detecting, a module here, and the tag a finding carries
    (:data:`irviz.lint.diagnostic.LAYERS`)."""

    name: str
    run: Callable[[LayerContext], None]
    #: what it reads of the run (:data:`~.context.NEEDS`, :meth:`LayerContext.has`); the
    #: layer is skipped when one is missing
    needs: tuple[str, ...] = ()
    #: it runs the user's model, so not with ``--no-exec``
    runs_model: bool = False


STEPS: tuple[Step, ...] = (
    Step("source facts", source.facts),
    Step("capture", capture.run, runs_model=True),
    Step("run error", scripting.run_error, needs=("capture_error",), runs_model=True),
    Step("trace failed", scripting.trace_failed, needs=("trace_error", "source facts")),
    Step("not scriptable", scripting.not_scriptable, needs=("script_error",)),
    Step("source", source.report, needs=("source facts",)),
    Step("tracer", tracer.run, needs=("trace warnings",)),
    Step("ir", ir.run, needs=("trace", "trace_graph")),
    Step("certain", certainties.run, needs=("trace", "trace_graph")),
    Step("divergence", divergence.run, needs=("trace", "trace_graph", "script_graph")),
    Step("retrace", retrace.run, needs=("trace", "trace_graph"), runs_model=True),
    Step("hazards", hazards.run, needs=("graph",)),
    Step("traced submodules", scripting.traced_submodules, needs=("script_graph",)),
    # every finding is made by now: the variants confirm some, the rest get their verdict,
    # and only then is the evidence weighed (a library finding a counterexample confirms
    # stays)
    Step("verify", verify.run, needs=("trace", "trace_graph", "findings"), runs_model=True),
    Step("settle", verify.settle, needs=("findings",)),
    Step("weigh", weigh.run, needs=("findings",)),
    Step("call sites", call_sites.run, needs=("trace", "findings")),
    # last: only the findings still reported are worth a fix
    Step("remedy", remedy.run, needs=("trace", "trace_graph", "findings"), runs_model=True),
)
#: ``--mode export``: the migration rules take the place of every other layer
EXPORT_STEPS: tuple[Step, ...] = (Step("export", export.run, runs_model=True),)
