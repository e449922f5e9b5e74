"""The one pipeline: load -> inputs -> capture -> graph -> analyses, each done once.

Every interface (``irviz render``/``report``/``lint``, ``render --lint``, the Sphinx
child and the Python API) asks a :class:`Workspace` for what it needs, the way every
Flask command asks one ``ScriptInfo`` for the app. The workspace caches what it made:
a model is imported once, captured once per mode (a failed capture is remembered and
raised again), its IR graph is built once per capture, and each analysis runs at most
once per graph, only when some caller needs its facts. A fix to any stage lands here,
once, for every command.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator

import networkx as nx

from .analyses import pipeline
from .config import Config
from .errors import CaptureError
from .frontends.capture import MODES, Capture, capture, traced_instead
from .frontends.inputs import ExampleInputs, resolve_inputs
from .frontends.loader import LoadResult, Target, load, target_of
from .frontends.overloads import overload_names
from .progress import Stages

__all__ = ["Workspace"]


@dataclass
class _Graph:
    graph: nx.DiGraph
    #: the analysis steps already run on it
    done: set[str] = field(default_factory=set)


class Workspace:
    """Loads targets and makes their captures and analysed graphs, once each.

    ``inputs`` is what the user gave for every target (an ``--inputs`` expression, or
    from Python a tensor, tuple or dict of tensors, or an ``ExampleInputs``); None means
    each model file's
    ``example_inputs``. ``config`` is the ``[tool.irviz]`` in force. ``stages`` times
    the work (``-v`` prints it; the benchmarks read it).
    """

    def __init__(self, inputs: object = None, config: Config | None = None,
                 stages: Stages | None = None):
        self.inputs = inputs
        self.config = config or Config()
        self.stages = stages or Stages(interactive=False)
        #: how ``--mode export`` calls torch.export (``--strict``, ``--dynamic-dims``);
        #: a command sets it before its first capture
        self.export_options = None
        self._loaded: dict[str, LoadResult] = {}
        self._inputs: dict[int, ExampleInputs | None] = {}
        self._captures: dict[tuple[int, str], Capture | CaptureError] = {}
        self._graphs: dict[int, _Graph] = {}
        #: objects whose id() keys the caches above, kept alive so ids stay unique
        self._keep: list[object] = []

    # -- load -------------------------------------------------------------------------

    def load(self, spec: str) -> LoadResult:
        """The targets ``spec`` names (see README: Targets), imported once."""
        if spec not in self._loaded:
            self._loaded[spec] = load(spec)
        return self._loaded[spec]

    def targets(self, what: object) -> list[Target]:
        """``what`` as targets: a spec string, a Target, or a model object."""
        if isinstance(what, Target):
            return [what]
        targets = list(self.load(what).targets) if isinstance(what, str) else [target_of(what)]
        return [one for target in targets for one in self._overloads(target)]

    def _overloads(self, target: Target) -> list[Target]:
        """An overloaded ``forward`` (a scripted ``nn.LSTM``) with no inputs to choose: one
        view per overload (``lstm.forward__1``). With inputs, the capture draws the one
        they select."""
        names = overload_names(target.obj) if target.entry is None else []
        if not names or self.inputs_for(target) is not None:
            return [target]
        return [replace(target, name=f"{target.name}.{name}", entry=name) for name in names]

    def inputs_for(self, target: Target) -> ExampleInputs | None:
        """The example inputs of ``target`` (evaluated once: random inputs stay the same
        for every capture of it)."""
        key = id(target)
        if key not in self._inputs:
            self._keep.append(target)
            self._inputs[key] = resolve_inputs(target, self.inputs)
        return self._inputs[key]

    def derived(self, source: Target, *targets: Target) -> None:
        """Targets made from ``source`` (its optimized copies) take its example inputs."""
        inputs = self.inputs_for(source)
        for target in targets:
            self._keep.append(target)
            self._inputs[id(target)] = inputs

    # -- capture ----------------------------------------------------------------------

    def capture(self, target: Target, mode: str = "script", lines: bool = True) -> Capture:
        """``target`` scripted, traced or as loaded; ``auto`` scripts and falls back to a
        trace (with a note) when scripting fails and inputs exist. Without ``lines`` a
        trace may skip recording the lines its run executed (a picture reads none); a
        trace cached without them is made again when they are asked for."""
        if mode not in MODES:
            raise CaptureError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        key = (id(target), mode)
        found = self._captures.get(key)
        if found is None or (lines and isinstance(found, Capture) and found.lines_skipped):
            self._keep.append(target)
            try:
                self._captures[key] = self._make_capture(target, mode, lines)
            except CaptureError as exc:
                self._captures[key] = exc
        found = self._captures[key]
        if isinstance(found, CaptureError):
            raise found
        return found

    def _make_capture(self, target: Target, mode: str, lines: bool) -> Capture:
        if mode != "auto" or target.kind in ("archive", "exported"):
            inputs = self.inputs_for(target)
            with self.stages.stage(f"capture ({mode})"):
                return capture(target, mode, inputs, self.export_options, lines)
        try:
            return self.capture(target, "script")
        except CaptureError as exc:
            # it scripted, and running it on the inputs raised: a trace runs them too
            if self.inputs_for(target) is None or exc.raised_on_inputs:
                raise
            traced = self.capture(target, "trace", lines)
            return replace(traced, notes=[traced_instead(exc, target), *traced.notes])

    def set_export_options(self, mode: str, strict: bool = False,
                           dynamic_dims: tuple[str, ...] = (), say=None) -> None:
        """``--strict`` / ``--dynamic-dims`` for ``--mode export`` (``say`` is told when
        they were given with another mode, where they do nothing)."""
        from .frontends.export import ExportOptions

        if mode != "export" and (strict or dynamic_dims) and say is not None:
            given = " and ".join(o for o, v in (("--strict", strict),
                                                ("--dynamic-dims", dynamic_dims)) if v)
            say(f"note: {given} only apply with --mode export")
        self.export_options = ExportOptions(strict=strict, dynamic_dims=tuple(dynamic_dims))

    def captured(self, target: Target, mode: str) -> Capture | CaptureError | None:
        """What an earlier ``capture(target, mode)`` gave, without capturing now."""
        return self._captures.get((id(target), mode))

    # -- graph and analyses -----------------------------------------------------------

    def graph(self, cap: Capture, needs: Iterable[str] = pipeline.ALL) -> nx.DiGraph:
        """The IR graph of ``cap`` with the facts ``needs`` names (and what they require)
        annotated; built once per capture, each analysis run once."""
        entry = self._graphs.get(id(cap))
        if entry is None:
            self._keep.append(cap)
            with self.stages.stage("graph"):
                entry = self._graphs[id(cap)] = _Graph(pipeline.graph_of(cap))
        missing = [s for s in pipeline.closure(needs) if s.name not in entry.done]
        if missing:
            with self.stages.stage("analyses"):
                pipeline.annotate(entry.graph, cap, [s.name for s in missing], entry.done)
        return entry.graph

    def view(self, target: Target, mode: str = "script", options=None, findings=None):
        """A :class:`~irviz.view.Visualization` of ``target`` captured in ``mode``, with
        every analysis; ``findings`` (lint diagnostics) are drawn on it."""
        from .render.dot import RenderOptions
        from .view import Visualization

        cap = self.capture(target, mode, lines=False)   # a picture reads no executed lines
        options = options or RenderOptions()
        if findings:
            options = replace(options, findings=[d.to_dict() for d in findings])
        return Visualization(cap, self.graph(cap), options)

    def profile(self, target: Target, mode: str, G: nx.DiGraph, runs: int = 5,
                trace_out: str | None = None) -> dict:
        """Measured op times onto ``G`` (the graph of ``target`` captured in ``mode``): the
        model runs ``runs`` times under torch.profiler in a child process; each event goes
        on its IR node (:func:`~irviz.analyses.profile_times.annotate_profile`). With
        ``trace_out``, the timed runs' Chrome trace is written there with each matched
        event's node id. Returns the child's result (``error`` set when the model could
        not be profiled); user mistakes raise :class:`~irviz.errors.IrvizError`."""
        import json
        import tempfile

        from .analyses.profile_times import annotate_profile
        from .errors import InputsError
        from .files import write_atomic
        from .measure.op_events import tag_trace
        from .measure.run import profile_ops

        if self.inputs_for(target) is None:
            raise InputsError(f"profiling runs {target.spec}, so it needs example inputs",
                              hint='pass them with --inputs "torch.rand(3, 4)" or define '
                                   "`example_inputs` in the model file")
        expression = self.inputs if isinstance(self.inputs, str) else None
        with tempfile.TemporaryDirectory(prefix="irviz-profile-") as tmp:
            raw = os.path.join(tmp, "trace.json") if trace_out else None
            with self.stages.stage("profile"):
                result = profile_ops(target.spec, mode, expression, runs=runs, trace_out=raw)
            if result.get("error"):
                return result
            nodes = annotate_profile(G, result["op_events"], result["runs"],
                                     result.get("memory"), result.get("run_us"))
            if raw is not None and os.path.exists(raw):
                with open(raw, encoding="utf-8") as fh:
                    trace = tag_trace(json.load(fh), nodes, target.spec)
                write_atomic(Path(trace_out), json.dumps(trace).encode("utf-8"))
        return result

    # -- lint -------------------------------------------------------------------------

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a caller's own stage beside the workspace's."""
        with self.stages.stage(name):
            yield
