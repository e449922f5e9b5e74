"""What the detection layers share: the run's options and results, the findings collector,
and the helpers that place a finding on the user's line.

The bottom of :mod:`irviz.lint.layers`: every layer module imports from here (and from
packages below ``irviz.lint``), never from another layer, so the layers import in any order
and :mod:`irviz.lint.runner` only walks them.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from ...analyses.cost import node_flops
from ...errors import CaptureError
from ...frontends.capture import Capture, CapturedWarning, forward_source
from ...frontends.records import Target
from ...location import Location, source_line
from ...paths import display_path
from ..diagnostic import Diagnostic
from ..registry import Rule
from ..rules.tracing import (
    LenOfTensor, ListOutput, NumpyInTrace, RandomOpInTrace, ResizeInTrace,
    TensorConstructorConstant, TensorIteration, TensorToPythonBool, TensorToPythonNumber)

#: TracerWarning message prefix -> the rule that reports it (torch 2.13, lint-catalog §1.1)
TRACER_RULES = [
    ("Converting a tensor to a Python boolean", TensorToPythonBool),
    ("Converting a tensor to a Python integer", TensorToPythonNumber),
    ("Converting a tensor to a Python float", TensorToPythonNumber),
    ("Converting a tensor to a Python complex", TensorToPythonNumber),
    ("Converting a tensor to a Python number", TensorToPythonNumber),
    ("Converting a tensor to a Python list", TensorToPythonNumber),
    ("Converting a tensor to a NumPy array", NumpyInTrace),
    ("torch.tensor results are registered as constants", TensorConstructorConstant),
    ("torch.as_tensor results are registered as constants", TensorConstructorConstant),
    ("torch.from_numpy results are registered as constants", TensorConstructorConstant),
    ("torch.Tensor results are registered as constants", TensorConstructorConstant),
    ("resize_ can't be represented", ResizeInTrace),
    ("Encountering a list at the output", ListOutput),
    ("Using len to get tensor shape", LenOfTensor),
    ("Iterating over a tensor", TensorIteration),
    ("Trace had nondeterministic nodes", RandomOpInTrace),
]
#: tracer messages that torch itself says are fine for constant data: reported only where
#: the source layer saw input-derived data going in
CONFIRM_ONLY = {TensorConstructorConstant}
RANDOM_OPS = ("aten::rand", "aten::randn", "aten::rand_like", "aten::randn_like",
              "aten::randint", "aten::randint_like", "aten::bernoulli", "aten::normal",
              "aten::multinomial", "aten::randperm", "aten::poisson")


def has_random_ops(G: nx.DiGraph) -> bool:
    """The trace draws random numbers (``aten::rand``, a dropout in training mode): its
    values are compared with the model's under one seed."""
    return any(d["kind"] in RANDOM_OPS or "dropout" in d["kind"] for _, d in G.nodes(data=True))


@dataclass
class LintOptions:
    """How to run the detection layers (selection is the gate's job, not theirs)."""

    mode: str = "both"
    dynamic_dims: list[str] = field(default_factory=list)
    no_exec: bool = False
    #: show the source findings in installed libraries no runtime layer confirms
    #: (:mod:`irviz.lint.evidence`); default: left out and counted in a note
    show_unconfirmed: bool = False
    #: at most this many variant inputs run through the trace and the Python model
    #: (:mod:`irviz.lint.layers.verify`); 0: none
    verify: int = 16


@dataclass
class TargetRun:
    """What one model's lint run produced: its findings before the gate, and the
    captures and graphs they came from (the workspace's, shared with the picture)."""

    target: Target
    found: list[Diagnostic] = field(default_factory=list)
    script: Capture | None = None
    script_graph: nx.DiGraph | None = None
    trace: Capture | None = None
    trace_graph: nx.DiGraph | None = None
    notes: list[str] = field(default_factory=list)
    #: what the variant inputs showed (:mod:`irviz.lint.layers.verify`); None when they
    #: did not run
    verification: Any = None
    #: the findings resting on a Python decision, as :func:`.verify.resting` read them
    resting: Any = None


class Findings:
    """Collects findings of one model; the same rule on the same line from several layers
    is one finding whose ``layers`` lists them all."""

    def __init__(self, target: Target):
        self.target = target
        self.found: dict[tuple[str, str, int], Diagnostic] = {}

    def report(self, rule: type[Rule], location: tuple, layer: str, **fields) -> None:
        """A finding of ``rule`` (the class, as pyflakes' ``report(messages.X, ...)``)."""
        path, line, col, end_line, end_col = (tuple(location) + (None, None, None))[:5]
        path = display_path(path)
        key = (rule.code, path, int(line))
        previous = self.found.get(key)
        if previous is not None:
            if layer not in previous.layers:
                self.found[key] = _with_layers(previous, previous.layers + (layer,))
            return
        fields.setdefault("expr", "")
        self.found[key] = rule.diagnostic(
            path=path, line=int(line), column=int(col or 1), end_line=end_line,
            end_column=end_col, target=self.target.name, layers=(layer,), **fields)

    @staticmethod
    def key_path(path: str) -> str:
        """A path as the findings' keys spell it."""
        return display_path(path)

    def attach(self, key: tuple[str, str, int], evidence) -> None:
        """Give the finding ``key`` (``(code, path, line)``) its evidence."""
        if key in self.found:
            self.found[key] = self.found[key].with_evidence(evidence)

    def relate(self, code: str, location: tuple, related: Iterable[tuple]) -> None:
        """Add ``related`` ``(path, line, message)`` places to the finding ``code`` has at
        ``location`` (the user's line that called into a library, say)."""
        related = tuple(related)
        key = (code, display_path(location[0]), int(location[1]))
        if related and key in self.found:
            self.found[key] = self.found[key].with_related(*related)


def _with_layers(d: Diagnostic, layers: tuple) -> Diagnostic:
    from dataclasses import replace

    return replace(d, layers=layers)


@dataclass
class LayerContext:
    """One model's lint run as the layers see it: each layer's ``run(ctx)`` reads what its
    ``needs`` names (:meth:`has`) and writes its findings, notes and the facts later layers
    read here."""

    workspace: Any
    target: Target
    options: LintOptions
    run: TargetRun
    findings: Findings
    #: the source layer's facts, reported once the captures say what ran
    facts: list = field(default_factory=list)
    #: why scripting the model failed
    script_error: CaptureError | None = None
    #: why tracing the model failed
    trace_error: CaptureError | None = None
    #: what torch warned before the trace failed: reported like a trace's
    failed_trace_warnings: list[CapturedWarning] = field(default_factory=list)

    @property
    def graph(self) -> nx.DiGraph | None:
        """The scripted graph, else the trace's."""
        run = self.run
        return run.script_graph if run.script_graph is not None else run.trace_graph

    def has(self, need: str) -> bool:
        """Whether the run has ``need`` (one of :data:`NEEDS`) for a layer to read."""
        if need == "trace warnings":  # a trace's, or a failed trace's
            return self.run.trace is not None or self.trace_error is not None
        if need == "capture_error":  # scripting or tracing failed
            return self.script_error is not None or self.trace_error is not None
        try:
            value = {"source facts": self.facts, "findings": self.findings,
                     "trace": self.run.trace, "trace_graph": self.run.trace_graph,
                     "script_graph": self.run.script_graph, "graph": self.graph,
                     "script_error": self.script_error,
                     "trace_error": self.trace_error}[need]
        except KeyError:
            raise ValueError(f"unknown layer need {need!r}; known: {', '.join(NEEDS)}") \
                from None
        return value is not None


#: what a layer may need of the run (:meth:`LayerContext.has`)
NEEDS = ("source facts", "findings", "trace", "trace warnings", "trace_graph", "script_graph",
         "graph", "script_error", "trace_error", "capture_error")


def split_where(location: str | None) -> Location | None:
    """A graph's ``file:line:col`` as a finding's ``where``; None for none."""
    return Location.parse(location) if location else None


def forward_location(target: Target) -> tuple | None:
    """``(file, line, column)`` of the model's ``forward``: where a finding with no line
    of its own goes (the capture puts warnings of that kind there too)."""
    found = forward_source(target)
    return (*found, 1) if found else None


def code_at(location: tuple) -> str:
    """The source line, without a trailing comment."""
    import re

    text = source_line(f"{location[0]}:{location[1]}:1") or ""
    return re.sub(r"\s+#.*$", "", text)


#: `` at 0x7f25331dda80`` in a Python repr torch quotes (``<function f at 0x...>``)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def first_line(text: str, width: int = 120) -> str:
    """The first line of an error for a finding's message, without memory addresses: they
    change from one process to the next, and a finding must read the same in every run
    (``--jobs`` workers, the cache)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = _ADDRESS.sub("", line)
    return line if len(line) <= width else line[: width - 1] + "…"


def location_in(exc: CaptureError) -> str | None:
    """``path:line:1`` from a capture error's " at path:line" (the user's frame)."""
    m = _AT.search(exc.message)
    return f"{m.group(1)}:{m.group(2)}:1" if m else None


#: " at lib.py:12" or " at lib.py:12 (called from model.py:31)", then ":" or the end
_AT = re.compile(r" at (.+?):(\d+)(?: \(called from (.+?):(\d+)\))?(?::|$)")


def called_from_in(exc: CaptureError) -> tuple[tuple[str, int, str], ...]:
    """The user's call site a capture error names (" (called from model.py:31)")."""
    m = _AT.search(exc.message)
    if m and m.group(3):
        return ((m.group(3), int(m.group(4)), "called from"),)
    return ()


class RanLines:
    """The lines of the model's code one capture's run of its Python executed (the trace's
    run, or the scripted capture's eager run), asked by file."""

    def __init__(self, executed: frozenset[tuple[str, int]]):
        self._by_file: dict[str, set[int]] = {}
        for filename, line in executed:
            self._by_file.setdefault(real_path(filename), set()).add(line)
        self._paths: dict[str, str | None] = {}  # as asked -> real path, None: not watched

    @classmethod
    def of(cls, *captures: Capture | None) -> RanLines | None:
        """The first of ``captures`` whose run of the model's Python went through; None when
        there is none (no inputs, an archive, an eager run that raised part-way)."""
        for cap in captures:
            if cap is not None and cap.eager is not None and not cap.eager.error:
                return cls(cap.executed_lines)
        return None

    def any_ran(self, path: str, lines: Iterable[int]) -> bool | None:
        """Whether one of ``lines`` of ``path`` ran; None when the recorder does not watch
        the file (torch's, the standard library's): no evidence either way."""
        if path not in self._paths:
            self._paths[path] = real_path(path) if watched_file(path) else None
        real = self._paths[path]
        if real is None:
            return None
        ran = self._by_file.get(real, ())
        return any(line in ran for line in lines)


def watched_file(path: str) -> bool:
    """Whether the line recorder watches ``path``'s code (it leaves out torch's, irviz's and
    the standard library's): a file it does not watch gives no evidence either way."""
    from ...frontends.eager_run import LineRecorder

    return LineRecorder.watches(path)


def real_path(path: str) -> str:
    """One spelling of a file for ``inspect``'s path and a code object's ``co_filename``
    (relative to the working directory, through symlinks)."""
    return os.path.normcase(os.path.realpath(os.path.abspath(path)))


#: a trace estimated under this many FLOPs on its example runs the verify and retrace
#: layers' forwards on one intra-op thread: a forward so small gains little from torch's
#: threads, which spin while they wait; on a shared machine the spinning cost more CPU
#: than the forwards (the transformers corpus, 1-12 MFLOP a model: its verification took
#: 17.3 s CPU on torch's 2 threads, 2.9 s on one, with the same outcomes, at load ~6)
LIGHT_FLOPS = 1e9


def light(G) -> bool:
    """The trace's estimated FLOPs (:func:`~irviz.analyses.cost.node_flops`) are under
    :data:`LIGHT_FLOPS`."""
    total = 0
    for node in G:
        total += node_flops(G, node) or 0
        if total >= LIGHT_FLOPS:
            return False
    return True
