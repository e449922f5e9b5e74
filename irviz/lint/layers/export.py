"""``irviz lint --mode export``'s one layer: the TorchScript -> ``torch.export`` migration
rules (IRV5xx), which take the place of every other layer.

Facts come from the workspace's captures, never from a capture of their own:

* the export capture (``workspace.capture(target, "export")``), or the
  :class:`~irviz.errors.CaptureError` it raised, which names the user's line and quotes
  torch's reason (and its graph-break id under ``--strict``);
* the scripted capture and its graph (``prim::If``/``prim::Loop``/``prim::fork`` with
  their lines, loop trip counts, the parallelism facts of
  :mod:`irviz.analyses.parallelism`).

What export unrolled is found by comparing the two: a scripted ``prim::Loop`` whose trip
count is a size has no loop in the exported program, where each op of its body appears
once per step, with the body's line in its stack trace. A fork's task is found the same
way: the exported ops whose stack passes through the fork's line ran inline, serially.

``TS2EPConverter`` is not run: it rewrites the scripted module's graph in place
(``_jit_pass_onnx_function_substitution`` on ``forward.graph``) and freezes a copy; its
torch 2.13 conditions are read off the scripted graph instead (tests check them against
the real converter).
"""
from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any

import networkx as nx

from ...analyses import fork_wait as fw, parallelism as par
from ...errors import CaptureError, InputsError
from ...frontends.export import STATIC_NOTE
from ...ir.model import FORK_KINDS, LOOP_KIND
from ...location import stack_frames
from ..rules.export import (ExportDataDependentBranch, ExportDynamicDimStatic, ExportFailed,
                           ExportForkSerial, ExportUnrolledLoop,
                           TorchscriptConverterUnsupported)

from .context import LayerContext, forward_location, split_where

__all__ = ["run"]

#: what the scripted graph must carry for these checks: fork regions, parallelism facts
_SCRIPT_FACTS = ("shape_arithmetic", "fork_waits", "parallelism")
_FAILED = re.compile(r"^torch\.export failed on .*? at (?P<path>.+?):(?P<line>\d+): "
                     r"(?P<text>.*)$", re.DOTALL)
_GB = re.compile(r"\((GB\d{4})\)")


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(os.path.abspath(path)))


class _Export:
    """What ``torch.export`` made of the model: its program, or why it failed."""

    def __init__(self, program: Any = None, error: CaptureError | None = None):
        self.program = program
        self.error = error
        self.where: tuple[str, int] | None = None
        self.text = ""
        if error is not None:
            m = _FAILED.match(error.message)
            if m:
                self.where = (m.group("path"), int(m.group("line")))
                self.text = m.group("text")
            else:
                self.text = error.message.split(": ", 1)[-1]
        gb = _GB.search(self.text)
        self.graph_break = gb.group(1) if gb else None
        #: (real path of a user frame, line) -> the exported ops whose stack passes there
        self._by_frame: dict[tuple[str, int], list[tuple[str, str]]] | None = None

    def kind_of_failure(self) -> str | None:
        if self.error is None:
            return None
        low = self.text.lower()
        if "guardondatadependent" in low or "data-dependent" in low \
                or "data dependent" in low:
            return "data-dependent"
        if "constraints violated" in low:
            return "constraints"
        if self.graph_break == "GB0007" or "fork" in low and "should not be traced" in low:
            return "fork"
        return "other"

    def ops_through(self, path: str, lines: set[int]) -> list[tuple[str, str]]:
        """The exported ops (``(target, stack trace)``, one per op) whose stack trace
        passes through one of ``lines`` of ``path``."""
        if self.program is None:
            return []
        if self._by_frame is None:
            self._by_frame = {}
            for gm in _graph_modules(self.program.graph_module):
                for node in gm.graph.nodes:
                    if node.op != "call_function":
                        continue
                    stack = node.meta.get("stack_trace") or ""
                    op = (str(node.target), stack)
                    seen = set()
                    for path, line in stack_frames(stack):
                        key = (_real(path), line)
                        if key not in seen:
                            seen.add(key)
                            self._by_frame.setdefault(key, []).append(op)
        real = _real(path)
        found: list[tuple[str, str]] = []
        ids: set[int] = set()
        for line in sorted(lines):
            for op in self._by_frame.get((real, line), ()):
                if id(op) not in ids:
                    ids.add(id(op))
                    found.append(op)
        return found


def _graph_modules(gm) -> list:
    """``gm`` and the graph modules of its higher-order ops' bodies."""
    import torch

    out = [gm]
    for child in gm.children():
        if isinstance(child, torch.fx.GraphModule):
            out += _graph_modules(child)
    return out


def run(ctx: LayerContext) -> None:
    """``--mode export``: the IRV5xx findings of the target into ``ctx.findings``, from the
    export capture (or its failure) and the scripted capture; notes into ``ctx.run``."""
    workspace, target, run, findings = ctx.workspace, ctx.target, ctx.run, ctx.findings
    forward = forward_location(target)
    export = None
    if target.kind in ("module", "function"):   # TorchScript has no Python to export
        try:
            cap = workspace.capture(target, "export")
        except CaptureError as exc:
            export = _Export(error=exc)
        except InputsError as exc:   # no example inputs: the TorchScript checks still run
            run.notes.append(f"{target.spec}: {exc.message}; only TS2EPConverter was checked")
        else:
            export = _Export(program=cap.exported)
            _static_dims(cap.notes, forward, findings, run)
    elif target.kind == "exported":
        run.notes.append(f"{target.spec}: an exported program (.pt2): nothing to migrate")
        return
    dims = list(getattr(workspace.export_options, "dynamic_dims", None) or ())
    G = None
    try:
        run.script = workspace.capture(target, "script")
        G = run.script_graph = workspace.graph(run.script, _SCRIPT_FACTS)
    except CaptureError as exc:
        run.notes.append(f"{target.spec}: not scriptable, so no TorchScript facts (forks, "
                         f"loops, TS2EPConverter) were compared: {exc.message}")
    explained = False
    if G is not None:
        _converter(G, findings)
        if export is not None:
            explained |= _loops(G, export, run, findings)
            explained |= _forks(G, export, findings)
    if export is not None and export.error is not None:
        _failure(export, run, forward, findings, explained, dims)


def _static_dims(notes: list[str], forward, findings, run) -> None:
    """The frontend's notes on ``--dynamic-dims`` that came out static, as findings at
    ``forward`` (export does not say which line specialised them)."""
    for note in notes:
        m = STATIC_NOTE.search(note)
        if m is None:
            run.notes.append(f"{run.target.spec}: {note}")
            continue
        if forward is not None:
            findings.report(ExportDynamicDimStatic, forward, "export",
                            dim=f"{m.group('name')}:{m.group('dim')}",
                            detail=f"Dim.AUTO came out static, specialised to "
                                   f"{m.group('size')}")


def _failure(export: _Export, run, forward, findings, explained: bool,
             dims: list[str]) -> None:
    """The export's failure as the rule that explains it (or as IRV500)."""
    where = export.where or forward
    if where is None:
        run.notes.append(f"{run.target.spec}: {export.error.message}")
        return
    kind = export.kind_of_failure()
    text = export.text
    if kind == "data-dependent":
        findings.report(ExportDataDependentBranch, where, "export", text=text)
    elif kind == "constraints":
        findings.report(ExportDynamicDimStatic, where, "export",
                        dim=", ".join(dims) or "a --dynamic-dims dimension",
                        detail=_first(text))
    elif kind == "fork" and explained:
        return   # each fork line has its IRV504 with the graph-break id
    else:
        hint = export.error.hint or ""
        if hint.startswith("the model holds TorchScript"):
            text = text.rstrip(".") + "; " + hint.split(", which", 1)[0]
        findings.report(ExportFailed, where, "export", text=text)


def _first(text: str, width: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


# -- loops ----------------------------------------------------------------------------------

def _body_lines(G: nx.DiGraph, loop: str, path: str) -> set[int]:
    """The lines of ``path`` the scripted loop's body (and what it calls) runs."""
    body = f"{loop}/b0"
    real = _real(path)
    lines = set()
    for _, data in G.nodes(data=True):
        block = data.get("block") or ""
        if block != body and not block.startswith(body + "/"):
            continue
        where = split_where(data.get("user_source"))
        if where and _real(where[0]) == real:
            lines.add(where[1])
    return lines


def _trip_value(G: nx.DiGraph, expr: str, inputs) -> int | None:
    """The value of a trip-count size expression (``xs.size(0)``) on the example inputs."""
    if inputs is None:
        return None
    names = [G.nodes[n].get("label") for n in G.graph.get("inputs", [])]
    values = list(inputs.args) + list(inputs.kwargs.values())
    if "self" in names[:1] and len(names) == len(values) + 1:
        names = names[1:]
    scope = {name: value for name, value in zip(names, values) if isinstance(name, str)}
    scope.update(inputs.kwargs)
    if not re.fullmatch(r"[\w.\[\]() ,\-]+", expr) or "__" in expr:
        return None
    try:
        value = eval(expr, {"__builtins__": {}}, scope)  # noqa: S307 (irviz's own text)
        return int(value)
    except Exception:  # noqa: BLE001
        return None


def _loops(G: nx.DiGraph, export: _Export, run, findings) -> bool:
    """IRV502 for every scripted ``for`` over a size; True when a failure is explained."""
    explained = False
    inputs = run.script.inputs if run.script is not None else None
    for node, data in G.nodes(data=True):
        if data["kind"] != LOOP_KIND or isinstance(data.get("trip_count"), int) \
                or data.get("trip_count") == "while":
            continue
        producers = data["inputs"][0] if data["inputs"] else []
        if len(producers) != 1:
            continue
        expr = G.nodes[producers[0]].get("irviz.shape_expr")
        where = split_where(data.get("user_source"))
        if not expr or where is None:
            continue
        trip = _trip_value(G, expr, inputs)
        baked = f" == {trip}" if trip is not None else ""
        if export.program is not None:
            ops = export.ops_through(where[0], _body_lines(G, node, where[0]) - {where[1]})
            counts = Counter(ops).values()
            copies = Counter(counts).most_common(1)[0][0] if counts else 0
            if copies:
                detail = (f"the exported program has {copies} copies of its body and no "
                          f"loop: it only takes {expr}{baked}")
            else:
                detail = f"the exported program has no loop and only takes {expr}{baked}"
        elif export.kind_of_failure() == "constraints":
            detail = (f"Python loops are traced step by step, so {expr} cannot be a "
                      "dynamic dimension (the export failed: Constraints violated)")
        else:
            detail = (f"Python loops are traced step by step: the program would only "
                      f"take {expr}{baked} (the export itself failed)")
        findings.report(ExportUnrolledLoop, where, "export-vs-script", expr=expr,
                        detail=detail)
        explained |= export.kind_of_failure() == "constraints"
    return explained


# -- forks ----------------------------------------------------------------------------------

def _speedup(G: nx.DiGraph) -> str:
    facts = par.facts(G)
    if facts is None:
        return ""
    one = facts.predicted_speedup_intraop1
    also = (f", {one:.2f}x with one intra-op thread"
            if abs(one - facts.predicted_speedup) >= 0.05 else "")
    return (f"; lost: the TorchScript model's predicted speed-up from its forks, "
            f"{facts.predicted_speedup:.2f}x here{also} (work/span {facts.parallelism:.1f}; "
            f"irviz report)")


def _forks(G: nx.DiGraph, export: _Export, findings) -> bool:
    """IRV504 at every fork line; True when the export's failure is the forks' (GB0007)."""
    forks = [(n, d) for n, d in G.nodes(data=True) if d["kind"] in FORK_KINDS]
    if not forks:
        return False
    refused = export.kind_of_failure() == "fork"
    speedup = _speedup(G)
    for node, data in forks:
        where = split_where(data.get("user_source"))
        if where is None:
            continue
        found = fw.region(data)
        callee = found.callee if found is not None else "..."
        if refused:
            detail = f"strict export refuses it: {_first(export.text)}"
        elif export.program is not None:
            ops = export.ops_through(where[0], {where[1]})
            detail = (f"the {len(ops)} ops its task runs from here are inlined one after "
                      "another in the exported program, which has no fork" if ops else
                      "the exported program has no fork")
        else:
            detail = "eager torch.jit.fork calls the function at once on the caller's thread"
        findings.report(ExportForkSerial, where, "export-vs-script", callee=callee,
                        detail=detail + speedup)
    return refused


# -- TS2EPConverter -------------------------------------------------------------------------

def _converter(G: nx.DiGraph, findings) -> None:
    """IRV505: the scripted graph's constructs torch 2.13's TS2EPConverter rejects."""
    for node, data in G.nodes(data=True):
        where = split_where(data.get("user_source") or data.get("source"))
        if where is None:
            continue
        kind = data["kind"]
        if kind in FORK_KINDS:
            reason = ("it has no conversion for a fork (\"got empty schema\"); "
                      "torch.export would run it serially anyway")
        elif kind == LOOP_KIND:
            trip = data.get("trip_count")
            if trip == "while":
                reason = ("the loop's condition is computed in its body (prim::Loop "
                          "currently cannot run with dynamic value of condition)")
            elif isinstance(trip, int):
                continue   # a constant trip count converts, unrolled
            else:
                producers = data["inputs"][0] if data["inputs"] else []
                expr = G.nodes[producers[0]].get("irviz.shape_expr") \
                    if len(producers) == 1 else None
                if not expr:   # a list's length, say: the converter may know it
                    continue
                reason = (f"its trip count `{expr}` is not a constant (prim::Loop "
                          "currently cannot run with dynamic value of number of iterations)")
        else:
            continue
        findings.report(TorchscriptConverterUnsupported, where, "ir", construct=kind,
                        reason=reason)
