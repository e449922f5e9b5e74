"""`irviz lint`: run the detection layers on each model and turn facts into findings.

The layers (each finding lists the ones that fired):

``ast``              the model's Python source (:mod:`irviz.lint.source`); the only
                     layer with ``--no-exec``.
``trace``            the warnings torch raised while tracing, attributed to the user's line.
``script-vs-trace``  control flow and dynamic values the scripted graph keeps but the trace
                     froze (:mod:`irviz.analyses.graph_diff`).
``retrace``          a second trace on inputs with other shapes (:mod:`irviz.frontends.retrace`).
``ir``               patterns in the IR graph: training-mode ops, random ops, outputs that
                     depend on no input, fork/wait hazards, traced modules inside scripts.

Findings are created only through the rule classes' ``diagnostic()``; a model that cannot be
loaded is an *error* of the run (exit 2), never a finding.

The ``ast`` layer reads code the capture may never have run (``if self.training:`` in an
eval model, ``if cache is not None:`` without a cache): when the model's Python ran (the
trace's run, else the scripted capture's eager run), a tracing finding on code that did not
run is dropped (:func:`_report_source`).
"""
from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import torch

from ..analyses import fork_wait as fw, parallelism as par
from ..analyses.graph_diff import first_divergence, script_trace_divergence
from ..config import Config
from ..paths import display_path
from ..errors import CaptureError, IrvizError, ModelLoadError
from ..frontends.capture import Capture, CapturedWarning, forward_source
from ..frontends.loader import Target
from ..frontends.retrace import parse_dynamic_dims, retrace
from . import evidence
from .diagnostic import Diagnostic
from .registry import REGISTRY, Rule
from .rules.fork_wait import (
    ForkUnderTrace)
from .rules.passthrough import (
    TraceFailed, UnclassifiedTracerWarning)
from .rules.scripting import (
    LibraryTracerWarning, NotScriptable, TracedModuleInsideScript)
from .rules.tracing import (
    DictOrNonTensorOutput, LenOfTensor, ListOutput, NumpyInTrace,
    OutputIndependentOfInput, RandomOpInTrace, ResizeInTrace, ShapeSpecializedTrace,
    TensorConstructorConstant, TensorIteration, TensorToPythonBool,
    TensorToPythonNumber, TraceScriptDivergence, TracedInTrainingMode)
from .gate import Gate
from .run_report import RunReport

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
TRAINING_OPS = {"aten::dropout": "train", "aten::feature_dropout": "train",
                "aten::alpha_dropout": "train", "aten::feature_alpha_dropout": "train",
                "aten::batch_norm": "training", "aten::instance_norm": "use_input_stats",
                "aten::rrelu": "training"}
RANDOM_OPS = ("aten::rand", "aten::randn", "aten::rand_like", "aten::randn_like",
              "aten::randint", "aten::randint_like", "aten::bernoulli", "aten::normal",
              "aten::multinomial", "aten::randperm", "aten::poisson")
MODES = ("both", "script", "trace")


@dataclass
class LintOptions:
    """How to run the detection layers (selection is the gate's job, not theirs)."""

    mode: str = "both"
    dynamic_dims: list[str] = field(default_factory=list)
    no_exec: bool = False
    #: show the source findings in installed libraries no runtime layer confirms
    #: (:mod:`irviz.lint.evidence`); default: left out and counted in a note
    show_unconfirmed: bool = False


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


class _Findings:
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


def _split(location: str | None) -> tuple | None:
    if not location:
        return None
    path, line, col = location.rsplit(":", 2)
    return path, int(line), int(col)


def _forward_location(target: Target) -> tuple | None:
    """``(file, line, column)`` of the model's ``forward``: where a finding with no line
    of its own goes (the capture puts warnings of that kind there too)."""
    found = forward_source(target)
    return (*found, 1) if found else None


def _code_at(location: tuple) -> str:
    """The source line, without a trailing comment."""
    import re

    from ..ir.source import source_line

    text = source_line(f"{location[0]}:{location[1]}:1") or ""
    return re.sub(r"\s+#.*$", "", text)


# -- layers ------------------------------------------------------------------------------

def _ast_layer(target: Target, run: TargetRun) -> list:
    """The source layer's facts (reported by :func:`_report_source` once the captures
    say what ran)."""
    try:
        from .source import source_findings
        return source_findings(target.obj)
    except (OSError, TypeError, SyntaxError) as exc:
        run.notes.append(f"{target.spec}: source not analysed ({exc})")
        return []


#: The evidence each source-layer rule family takes from a run of the model's Python:
#: tracing pitfalls (IRV1xx, :data:`irviz.lint.source.checks_tracing.RULES`) exist only in
#: code the trace runs, so code that did not run in the capture is not evidence of one (a
#: declaration, a parameter or ``global``, ran when its function did: the finding names its
#: function's lines). Fork/wait (IRV2xx) and scripting (IRV3xx) findings stand without it:
#: TorchScript compiles both branches of an ``if``, taken or not.
def _needs_run_evidence() -> frozenset:
    from .source import checks_tracing

    return frozenset(checks_tracing.RULES)


class _RanLines:
    """The lines of the model's code one capture's run of its Python executed (the trace's
    run, or the scripted capture's eager run), asked by file."""

    def __init__(self, executed: frozenset[tuple[str, int]]):
        self._by_file: dict[str, set[int]] = {}
        for filename, line in executed:
            self._by_file.setdefault(_real_path(filename), set()).add(line)
        self._paths: dict[str, str | None] = {}  # as asked -> real path, None: not watched

    @classmethod
    def of(cls, *captures: Capture | None) -> _RanLines | None:
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
            self._paths[path] = _real_path(path) if _watched(path) else None
        real = self._paths[path]
        if real is None:
            return None
        ran = self._by_file.get(real, ())
        return any(line in ran for line in lines)


def _watched(path: str) -> bool:
    """Whether the line recorder watches ``path``'s code (it leaves out torch's, irviz's and
    the standard library's): a file it does not watch gives no evidence either way."""
    from ..frontends.eager_run import LineRecorder

    return LineRecorder.watches(path)


def _real_path(path: str) -> str:
    """One spelling of a file for ``inspect``'s path and a code object's ``co_filename``
    (relative to the working directory, through symlinks)."""
    return os.path.normcase(os.path.realpath(os.path.abspath(path)))


def _report_source(facts: list, ran: _RanLines | None, findings: _Findings,
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


def _tracer_layer(target: Target, warnings: Iterable[CapturedWarning],
                  findings: _Findings) -> None:
    """A finding for every TracerWarning torch raised while tracing ``target`` (a failed
    trace's warnings too: :attr:`CaptureError.warnings`), at the line it is attributed to.
    One raised in another file than the model's (a library the model calls into) also
    names the line of the model's file that called it (``related``: "called from")."""
    forward = _forward_location(target)
    for w in warnings:
        if w.category != "TracerWarning":
            continue
        text = w.message.splitlines()[0]
        related = _called_from(w)
        if w.origin is not None:
            findings.report(LibraryTracerWarning, (w.filename, w.lineno), "trace",
                            origin=w.origin, text=text)
            findings.relate(LibraryTracerWarning.code, (w.filename, w.lineno), related)
            continue
        rule = next((r for prefix, r in TRACER_RULES if w.message.startswith(prefix)),
                    UnclassifiedTracerWarning)
        location = (w.filename, w.lineno) if w.in_user_code else forward
        if location is None:
            continue
        if location != (w.filename, w.lineno):
            related = ()  # the forward of the model's own file: called from nowhere else
        path = display_path(location[0])
        if rule in CONFIRM_ONLY and (rule.code, path, location[1]) not in findings.found:
            continue
        seen_here = {c for (c, p, line) in findings.found if (p, line) == (path, location[1])
                     and c.startswith("IRV1")}
        if seen_here and rule.code not in seen_here:  # the source layer named the cause
            for code in seen_here:  # and the call that led there is the warning's
                findings.relate(code, location, related)
            continue
        findings.report(rule, location, "trace", expr=_code_at(location), text=text)
        findings.relate(rule.code, location, related)


def _called_from(w: CapturedWarning) -> tuple[tuple[str, int, str], ...]:
    """The warning's ``called_from`` as a related location, or none."""
    site = getattr(w, "called_from", None)
    return ((display_path(site[0]), int(site[1]), "called from"),) if site else ()


class _CallSites:
    """Which line of the model's file led into each line of other files a trace ran, read
    from the Python stack torch keeps on every traced node (innermost first): the
    innermost frame in the model's file is the call, the frames inside it the lines it
    led to."""

    def __init__(self, cap: Capture, user_file: str):
        self._user = _real_path(user_file)
        self._lines: dict[str, dict[int, dict[tuple[str, int], None]]] = {}
        try:  # a trace drawn without its TracedModule: its graph is already inlined
            graph = (cap.trace_graph.graph if cap.trace_graph is not None
                     else cap.scripted.inlined_graph)
        except (AttributeError, RuntimeError):
            return
        from ..ir.source import traced_stack

        known: dict[str, tuple[str, bool]] = {}  # path -> (real path, watched)
        for text in {_range(node) for node in _all_nodes(graph)} - {""}:
            frames = traced_stack(text)
            for path, _ in frames:
                if path not in known:
                    known[path] = (_real_path(path), _watched(path))
            user = next((i for i, (path, _) in enumerate(frames)
                         if known[path][0] == self._user), None)
            if not user:  # no frame of the model's file, or the node is its own line
                continue
            site = frames[user]
            for path, line in frames[:user]:
                real, watched = known[path]
                if watched:  # not torch's, irviz's or the standard library's
                    self._lines.setdefault(real, {}).setdefault(line, {})[site] = None

    def of(self, path: str, line: int) -> list[tuple[str, int]]:
        """The calls in the model's file that led into the function around ``path:line``
        (its own line when it is in no function); ``[]`` when the trace shows none."""
        real = _real_path(path)
        lines = self._lines.get(real)
        if not lines or real == self._user:
            return []
        first, last = _function_around(path, line)
        sites: dict[tuple[str, int], None] = {}
        for number in sorted(n for n in lines if first <= n <= last):
            sites.update(lines[number])
        return sorted(sites, key=lambda s: (s[0], s[1]))


def _range(node) -> str:
    try:
        return node.sourceRange()
    except RuntimeError:
        return ""


def _all_nodes(graph):
    for node in graph.nodes():
        yield node
        for block in node.blocks():
            yield from _all_nodes(block)


def _function_around(path: str, line: int) -> tuple[int, int]:
    """``(first, last)`` line of the innermost function of ``path`` holding ``line``;
    ``(line, line)`` at module level or when the file cannot be read."""
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return line, line
    around = [(first, last) for first, last in _functions(path, stamp)
              if first <= line <= last]
    return max(around) if around else (line, line)


@functools.lru_cache(maxsize=64)
def _functions(path: str, stamp: int) -> tuple[tuple[int, int], ...]:
    """``(first, last)`` line of every function defined in ``path`` (as of ``stamp``, its
    modification time)."""
    import ast

    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple((node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _add_call_sites(run: TargetRun, findings: _Findings) -> None:
    """Findings in other files than the model's own (a library it wraps) that no layer
    related yet get the model's lines whose calls led there, when the trace shows them."""
    user_file = run.target.source_file
    if run.trace is None or user_file is None or run.target.kind not in ("module",
                                                                         "function"):
        return
    user = _real_path(str(user_file))
    outside = [key for key, d in findings.found.items()
               if not d.related and _real_path(d.path) != user]
    if not outside:
        return
    sites = _CallSites(run.trace, str(user_file))
    for code, path, line in outside:
        related = [(display_path(p), n, "called from") for p, n in sites.of(path, line)]
        findings.relate(code, (path, line), related)


#: modules whose behaviour differs between train() and eval()
_TRAIN_DEPENDENT = (torch.nn.modules.dropout._DropoutNd, torch.nn.modules.batchnorm._BatchNorm,
                    torch.nn.modules.instancenorm._InstanceNorm, torch.nn.RReLU)


def _training_modules(obj) -> set[str]:
    """Paths of the dropout/norm submodules left in training mode when tracing."""
    if not isinstance(obj, torch.nn.Module):
        return set()
    return {name for name, m in obj.named_modules()
            if isinstance(m, _TRAIN_DEPENDENT) and m.training}


def _ir_layer(target: Target, G: nx.DiGraph, findings: _Findings) -> None:
    """Patterns in the traced graph."""
    forward = _forward_location(target)
    training = _training_modules(target.obj)
    for node, data in G.nodes(data=True):
        where = _split(data.get("user_source")) or forward
        kind = data["kind"]
        if where is None:
            continue
        if data.get("scope") in training and kind in TRAINING_OPS:
            names = data.get("arg_names") or []
            arg = TRAINING_OPS[kind]
            if arg in names:
                i = names.index(arg)
                producers = data["inputs"][i] if i < len(data["inputs"]) else []
                if len(producers) == 1 and G.nodes[producers[0]]["label"] in ("True", "1"):
                    findings.report(TracedInTrainingMode, where, "ir", expr=kind)
        if kind in RANDOM_OPS:
            findings.report(RandomOpInTrace, where, "ir", expr=kind)
        if kind == "prim::fork" and not _task_is_scripted(G, node):
            findings.report(ForkUnderTrace, where, "ir", callee=fw.region(data).callee)
    inputs = G.graph.get("inputs", [])
    if not inputs:
        return
    reachable = set(inputs)
    for node in inputs:
        reachable |= nx.descendants(G, node)
    outs = [p for ps in G.nodes["out"]["inputs"] for p in ps]
    if len(outs) == 1 and G.nodes[outs[0]]["kind"] == "prim::TupleConstruct":
        outs = [p for ps in G.nodes[outs[0]]["inputs"] for p in ps]
    for index, producer in enumerate(outs):
        if producer not in reachable:
            where = _split(G.nodes[producer].get("user_source")) or forward
            if where:
                findings.report(OutputIndependentOfInput, where, "ir", index=index)


def _task_is_scripted(G: nx.DiGraph, fork: str) -> bool:
    """Scripted code carries exact columns; traced code only ``file:line``."""
    return any(G.nodes[n].get("source", "") and not G.nodes[n]["source"].endswith(":1")
               for n in fw.region(G.nodes[fork]).task_nodes)


def _hazard_layer(G: nx.DiGraph, findings: _Findings) -> None:
    """Fork/wait hazards of :mod:`irviz.analyses.parallelism`: each is named after the
    rule that reports it."""
    from ..analyses.cost import FORK_OVERHEAD_US

    for hazard in par.hazards(G):
        where = _split(hazard.source)
        if hazard.code not in REGISTRY.names() or where is None:
            continue
        rule = REGISTRY.get(hazard.code)
        region = fw.region(G.nodes[hazard.node])
        findings.report(rule, where, "ir", callee=region.callee if region else "",
                        expr=_code_at(where), cost=f"{hazard.task_cost or 0:.0f} us",
                        overhead=f"{FORK_OVERHEAD_US:.0f} us")


def _traced_submodules(run: TargetRun, findings: _Findings) -> None:
    obj = run.target.obj
    if not isinstance(obj, torch.nn.Module) or run.script_graph is None:
        return
    traced = torch.jit._trace.TracedModule
    modules = dict(obj.named_modules())
    for name, module in modules.items():
        if not name or not isinstance(module, traced):
            continue
        parent = modules.get(name.rpartition(".")[0], obj)
        if isinstance(parent, traced):  # only the outermost traced module is reported
            continue
        sites = [info.get("user_source") for info in run.script_graph.graph["blocks"].values()
                 if info["kind"] == "method" and info.get("module") == name]
        where = _split(next((s for s in sites if s), None)) or _forward_location(run.target)
        if where:
            findings.report(TracedModuleInsideScript, where, "ir", expr=f"self.{name}")


def _divergence_layer(run: TargetRun, findings: _Findings) -> None:
    ran = _RanLines.of(run.trace)
    for item in script_trace_divergence(run.script_graph, run.trace_graph):
        where = _split(item["source"])
        if ran is not None and where and ran.any_ran(where[0], (where[1],)) is False:
            continue  # the trace never ran this code (an untaken branch): it froze nothing here
        findings.report(TraceScriptDivergence, where, "script-vs-trace", kind=item["kind"],
                        expr=item["code"] or _code_at(where))


def _retrace_layer(workspace, run: TargetRun, dynamic: dict, findings: _Findings) -> None:
    again = retrace(run.trace, dynamic)
    if again is None:
        return
    if again.error:
        run.notes.append(f"{run.target.spec}: re-trace skipped: {again.error}")
    forward = _forward_location(run.target)
    if again.capture is not None:
        diff = first_divergence(run.trace_graph, workspace.graph(again.capture, needs=()))
        if diff is not None:
            where = _split(diff["source"]) or forward
            detail = (f"with {again.change} the trace has {diff['second']} where the first "
                      f"had {diff['first']}")
            if where:
                findings.report(ShapeSpecializedTrace, where, "retrace", detail=detail)
            return
    random = any(d["kind"] in RANDOM_OPS or "dropout" in d["kind"]
                 for _, d in run.trace_graph.nodes(data=True))
    if again.outputs_differ and forward and not random:  # random ops differ run to run
        findings.report(ShapeSpecializedTrace, forward, "retrace",
                        detail=f"with {again.change} the first trace's outputs differ from "
                               "the Python model's")


# -- one model, many models ------------------------------------------------------------------

#: what the lint layers read of a graph: fork regions and waits (IR layer), hazards
_LINT_FACTS = ("fork_waits", "parallelism")


def lint_target(workspace, target: Target, options: LintOptions) -> TargetRun:
    """Every finding for one loaded model (before the gate), from ``workspace``'s
    captures and graphs."""
    findings = _Findings(target)
    run = TargetRun(target)
    if options.mode == "export":
        return _export_run(workspace, target, run)
    facts = []
    if target.kind in ("module", "function"):  # already-scripted code is not traced
        facts = _ast_layer(target, run)
    if options.no_exec:
        _report_source(facts, None, findings, run)
        _weigh_evidence(workspace, run, findings, options)  # library code: unconfirmed
        run.found = list(findings.found.values())
        return run
    inputs = workspace.inputs_for(target)
    script_error: CaptureError | None = None
    failed_trace_warnings: list[CapturedWarning] = []
    if options.mode in ("both", "script"):
        try:
            run.script = workspace.capture(target, "script")
            run.script_graph = workspace.graph(run.script, _LINT_FACTS)
        except CaptureError as exc:
            script_error = exc
    if options.mode in ("both", "trace") and target.kind != "archive":
        if inputs is None:
            run.notes.append(f"{target.spec}: no example inputs, so no trace: only source and "
                             "script checks ran (see README: Example inputs)")
        else:
            try:
                run.trace = workspace.capture(target, "trace")
                run.trace_graph = workspace.graph(run.trace, _LINT_FACTS)
            except CaptureError as exc:
                # what torch warned before the trace failed is reported like a trace's
                failed_trace_warnings = list(getattr(exc, "warnings", None) or ())
                where = _split(_location_in(exc)) or _forward_location(target)
                explained = any(f.rule is DictOrNonTensorOutput for f in facts)
                if where and not explained:  # a dict output: the source layer said why
                    findings.report(TraceFailed, where, "trace",
                                    text=_first_line(exc.message.split(": ", 1)[-1]))
                    findings.relate(TraceFailed.code, where, _called_from_in(exc))
    if script_error is not None and run.trace is None:
        # a model deployed by tracing need not script; report it when scripting is the way
        where = _split(_location_in(script_error)) or _forward_location(target)
        if where:
            findings.report(NotScriptable, where, "script-vs-trace",
                            text=_first_line(script_error.message.split(": ", 1)[-1]))
    _report_source(facts, _RanLines.of(run.trace, run.script), findings, run)
    if run.trace is None:
        _tracer_layer(target, failed_trace_warnings, findings)
    else:
        _tracer_layer(target, run.trace.warnings, findings)
        _ir_layer(target, run.trace_graph, findings)
        if run.script_graph is not None:
            _divergence_layer(run, findings)
        _retrace_layer(workspace, run, parse_dynamic_dims(options.dynamic_dims), findings)
    if run.script_graph is not None or run.trace_graph is not None:
        _hazard_layer(run.script_graph if run.script_graph is not None else run.trace_graph,
                      findings)
        _traced_submodules(run, findings)
    _weigh_evidence(workspace, run, findings, options)
    _add_call_sites(run, findings)
    run.found = list(findings.found.values())
    return run


def _export_run(workspace, target: Target, run: TargetRun) -> TargetRun:
    """``--mode export``: the migration rules (IRV5xx) on the export capture (or its
    failure) and the scripted capture (:mod:`irviz.lint.export_checks`)."""
    from .export_checks import export_findings

    findings = _Findings(target)
    export_findings(workspace, target, run, findings)
    run.found = list(findings.found.values())
    return run


def _weigh_evidence(workspace, run: TargetRun, findings: _Findings,
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
            why = _first_line(message, 80)
        run.notes.append(f"{run.target.spec}: TracerWarning at {where} not reported as a "
                         f"finding: {why}")


def _first_line(text: str, width: int = 120) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def _location_in(exc: CaptureError) -> str | None:
    """``path:line:1`` from a capture error's " at path:line" (the user's frame)."""
    m = _AT.search(exc.message)
    return f"{m.group(1)}:{m.group(2)}:1" if m else None


#: " at lib.py:12" or " at lib.py:12 (called from model.py:31)", then ":" or the end
_AT = re.compile(r" at (.+?):(\d+)(?: \(called from (.+?):(\d+)\))?(?::|$)")


def _called_from_in(exc: CaptureError) -> tuple[tuple[str, int, str], ...]:
    """The user's call site a capture error names (" (called from model.py:31)")."""
    m = _AT.search(exc.message)
    if m and m.group(3):
        return ((m.group(3), int(m.group(4)), "called from"),)
    return ()


def expand_specs(specs: list[str], config: Config | None) -> list[tuple[str, bool]]:
    """Specs with folders expanded to their ``.py`` files: (spec, came from a folder)."""
    out = []
    exclude = config.exclude if config else []
    for spec in specs:
        path = Path(spec)
        if path.is_dir():
            for file in sorted(path.rglob("*.py")):
                parts = file.relative_to(path).parts
                if any(p.startswith(".") or p == "__pycache__" for p in parts):
                    continue
                rel = str(file.relative_to(path))
                if any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(file.name, g) for g in exclude):
                    continue
                out.append((str(file), True))
        else:
            out.append((spec, False))
    return out


def lint(workspace, specs: list[str], options: LintOptions, gate: Gate) -> RunReport:
    """Lint every model the specs name (folders: their ``.py`` files, minus the config's
    ``exclude``) and pass the findings through ``gate``."""
    report = RunReport()
    found: list[Diagnostic] = []
    for spec, from_folder in expand_specs(specs, workspace.config):
        try:
            loaded = workspace.load(spec)
        except ModelLoadError as exc:
            if from_folder and "defines no models" in exc.message:
                report.notes.append(f"{spec}: no models")
                continue
            report.errors.append((spec, exc))
            continue
        for name, reason in loaded.skipped:
            report.notes.append(f"{spec}: skipped {name}: {reason}")
        for target in loaded.targets:
            try:
                run = workspace.lint(target, options)
            except IrvizError as exc:
                report.errors.append((target.spec, exc))
                continue
            report.models += 1
            report.notes.extend(run.notes)
            found.extend(run.found)
    passed = gate.apply(found)
    report.diagnostics, report.suppressed = passed.kept, passed.suppressed
    return report
