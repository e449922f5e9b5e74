"""The detection layers of `irviz lint`, in run order, and what each one reads of the run.

The layers (each finding lists the ones that fired):

``ast``              the model's Python source (:mod:`irviz.lint.source`); the only
                     layer with ``--no-exec``.
``trace``            the warnings torch raised while tracing, attributed to the user's line.
``script-vs-trace``  control flow and dynamic values the scripted graph keeps but the trace
                     froze (:mod:`irviz.analyses.graph_diff`).
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
:func:`irviz.lint.runner.lint_target` walks :data:`LAYERS` (``--mode export``:
:data:`EXPORT_LAYERS`), each layer's ``run(ctx)`` reading and writing one
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
class Layer:
    """One detection step: ``run(ctx)``, when the run has what ``needs`` names."""

    name: str
    run: Callable[[LayerContext], None]
    #: what it reads of the run (:data:`~.context.NEEDS`, :meth:`LayerContext.has`); the
    #: layer is skipped when one is missing
    needs: tuple[str, ...] = ()
    #: it runs the user's model, so not with ``--no-exec``
    runs_model: bool = False


LAYERS: tuple[Layer, ...] = (
    Layer("source facts", source.facts),
    Layer("capture", capture.run, runs_model=True),
    Layer("run error", scripting.run_error, needs=("capture_error",), runs_model=True),
    Layer("trace failed", scripting.trace_failed, needs=("trace_error", "source facts")),
    Layer("not scriptable", scripting.not_scriptable, needs=("script_error",)),
    Layer("source", source.report, needs=("source facts",)),
    Layer("tracer", tracer.run, needs=("trace warnings",)),
    Layer("ir", ir.run, needs=("trace", "trace_graph")),
    Layer("certain", certainties.run, needs=("trace", "trace_graph")),
    Layer("divergence", divergence.run, needs=("trace", "trace_graph", "script_graph")),
    Layer("retrace", retrace.run, needs=("trace", "trace_graph"), runs_model=True),
    Layer("hazards", hazards.run, needs=("graph",)),
    Layer("traced submodules", scripting.traced_submodules, needs=("script_graph",)),
    # every finding is made by now: the variants confirm some, the rest get their verdict,
    # and only then is the evidence weighed (a library finding a counterexample confirms
    # stays)
    Layer("verify", verify.run, needs=("trace", "trace_graph", "findings"), runs_model=True),
    Layer("settle", verify.settle, needs=("findings",)),
    Layer("weigh", weigh.run, needs=("findings",)),
    Layer("call sites", call_sites.run, needs=("trace", "findings")),
    # last: only the findings still reported are worth a fix
    Layer("remedy", remedy.run, needs=("trace", "trace_graph", "findings"), runs_model=True),
)
#: ``--mode export``: the migration rules take the place of every other layer
EXPORT_LAYERS: tuple[Layer, ...] = (Layer("export", export.run, runs_model=True),)
LAYER_NAMES = tuple(layer.name for layer in LAYERS)
