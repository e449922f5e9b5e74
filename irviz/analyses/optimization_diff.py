"""What a deployment optimization did to a model, in its own terms.

``irviz diff model.py:Net --right-optimize freeze`` matches the model scripted in eval mode
with its frozen (or ``optimize_for_inference``, ``optimize_for_mobile``) copy
(:mod:`irviz.analyses.graph_match`). Read op by op, that diff is noise: freezing inlines
every call, a folded batch norm is a removed module *and* a changed convolution, and
``optimize_for_inference`` replaces every convolution and adds layout conversions. This
module reads the same :class:`~irviz.analyses.graph_match.GraphDiff` and names the
transformations instead, one step each:

* a batch norm folded into the convolution before it (``stem + bn -> conv2d``);
* a convolution or linear layer rewritten (``conv (mkldnn)``, ``matmul + add`` with the
  weight transposed ahead of time, a prepacked XNNPACK op);
* layout conversions added (``to mkldnn layout`` before the first convolution, ``to dense
  layout`` where a dense op reads the result) and ops made in place (``relu -> relu_``);
* ops that read only a module's settings, computed ahead of time (one step per class);
* module calls inlined;
* what is left, entry by entry, so nothing the optimization did goes unsaid.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import networkx as nx

from ..location import Location
from .graph_match import Change, Entry, GraphDiff

__all__ = ["Step", "OptimizationReport", "explain"]

_BATCH_NORM = re.compile(r": BatchNorm[123]d$")
_CONV_MODULE = re.compile(r": (Conv[123]d|ConvTranspose[123]d)$")
_LINEAR_MODULE = re.compile(r": Linear$")
_CONV_OPS = ("aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::_convolution",
             "aten::convolution", "prim::mkldnn_convolution", "aten::mkldnn_convolution",
             "prepacked::conv2d_clamp_run", "prepacked::conv2d_transpose_clamp_run")
_LINEAR_OPS = ("aten::matmul", "aten::linear", "aten::addmm", "prepacked::linear_clamp_run",
               "aten::mm")
#: ops that read a tensor's metadata only: a layout conversion for them copies for nothing
_SIZE_OPS = {"aten::size", "aten::dim", "aten::numel", "prim::shape", "aten::len"}
_LAYOUT_OPS = ("aten::to_mkldnn", "aten::to_dense", "prim::BroadcastMKLDNNTensors")

#: step kinds, in the order a report lists them
KINDS = ("batch norm folded", "rewritten", "layout", "in place", "ahead of time", "inlined",
         "other")


@dataclass(frozen=True)
class Step:
    """One transformation: ``kind`` (one of :data:`KINDS`), a sentence, and the left and
    right node or container ids it accounts for."""

    kind: str
    text: str
    left: tuple[str, ...] = ()
    right: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"kind": self.kind, "text": self.text, "left": list(self.left),
                "right": list(self.right)}


@dataclass
class OptimizationReport:
    how: str
    steps: list[Step] = field(default_factory=list)

    @property
    def folded_batch_norms(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "batch norm folded"]

    def to_dict(self) -> dict:
        return {"optimization": self.how, "steps": [s.to_dict() for s in self.steps]}

    def to_text(self, left: str, right: str) -> str:
        if not self.steps:
            return (f"{self.how}: {left} -> {right}: nothing changed (no batch norm to fold, "
                    "no op rewritten)\n")
        lines = [f"{self.how}: {left} -> {right}"]
        for kind in KINDS:
            steps = [s for s in self.steps if s.kind == kind]
            if not steps:
                continue
            lines.append(f"{kind} ({len(steps)}):")
            lines += [f"  {s.text}" for s in steps]
        return "\n".join(lines) + "\n"


def _where(G: nx.DiGraph, node: str) -> str:
    data = G.nodes[node]
    loc = data.get("user_source") or data.get("source")
    place = ""
    if loc:
        path, line = loc.rsplit(":", 2)[:2] if loc.count(":") >= 2 else (loc, "")
        place = f" at {path.rsplit('/', 1)[-1]}:{line}" if line else ""
    scope = data.get("scope")
    return f"{data['label']}" + (f" in {scope}" if scope else "") + place


class _Explainer:
    def __init__(self, diff: GraphDiff, how: str):
        self.d = diff
        self.L, self.R = diff.left, diff.right
        self.lblocks = self.L.graph["blocks"]
        self.removed = {e.left: e for e in diff.removed}
        self.added = {e.right: e for e in diff.added}
        self.changed = {c.left: c for c in diff.changed}
        self.rpairs = {b: a for a, b in diff.pairs.items()}
        self._lpos = {n: i for i, n in enumerate(self.L)}
        self.report = OptimizationReport(how)
        #: right node -> the left module it stands for (an inlined convolution has no scope)
        self.names: dict[str, str] = {}

    def step(self, kind: str, text: str, left=(), right=()) -> None:
        self.report.steps.append(Step(kind, text, tuple(left), tuple(right)))
        for key in left:
            self.removed.pop(key, None)
            self.changed.pop(key, None)
        for key in right:
            self.added.pop(key, None)

    # -- helpers ------------------------------------------------------------------------
    def _where(self, node: str) -> str:
        if node in self.names:
            return f"{self.names[node]} ({self.R.nodes[node]['label']})"
        left = self.rpairs.get(node)
        scope = self.L.nodes[left].get("scope") if left is not None else None
        if scope:   # an op the optimization inlined: named by the module it ran in
            return f"{scope} ({self.R.nodes[node]['label']})"
        return _where(self.R, node)

    def _members(self, cid: str) -> set[str]:
        """The left nodes inside container ``cid`` (nested ones too)."""
        inside = {cid}
        for block, info in self.lblocks.items():   # blocks are listed parents first
            if info["parent"] in inside:
                inside.add(block)
        return {n for n, d in self.L.nodes(data=True) if d["block"] in inside}

    def _input_conv(self, members: set[str]) -> str | None:
        for node in sorted(members):
            for pred in self.L.predecessors(node):
                if pred not in members and self.L.nodes[pred]["kind"] in _CONV_OPS:
                    return pred
        return None

    def _call_of(self, node: str) -> str | None:
        """The removed library call entry around a left node."""
        block = self.L.nodes[node]["block"]
        while block is not None:
            if block in self.removed:
                return block
            block = self.lblocks[block]["parent"]
        return None

    def _next_added(self, kinds: tuple[str, ...]) -> str | None:
        return next((r for r, e in self.added.items() if e.kind in kinds), None)

    # -- the steps ------------------------------------------------------------------------
    def batch_norms(self) -> None:
        for cid, entry in list(self.removed.items()):
            if not (entry.folded and _BATCH_NORM.search(entry.label)):
                continue
            bn = entry.label.split(":")[0]
            conv = self._input_conv(self._members(cid))
            if conv is None:
                continue
            conv_module = self.L.nodes[conv].get("scope") or "the convolution"
            left, right = [cid], []
            if conv in self.d.pairs:
                rconv = self.d.pairs[conv]
                left.append(conv)
            else:
                call = self._call_of(conv)
                left += [call] if call else [conv]
                rconv = self._next_added(_CONV_OPS)
                if rconv is None:
                    continue
                right.append(rconv)
            self.names[rconv] = conv_module
            self.step("batch norm folded",
                      f"{conv_module} + {bn} -> one {self.R.nodes[rconv]['label']}"
                      f"{_at(self.R, rconv, self.L, conv)}: the batch norm's scale and shift "
                      f"are now {conv_module}'s weight and bias", left, right)

    def rewrites(self) -> None:
        for cid, entry in list(self.removed.items()):
            if not entry.folded:
                continue
            name = entry.label.split(":")[0]
            if _CONV_MODULE.search(entry.label):
                new = self._next_added(_CONV_OPS)
                if new is not None:
                    self.names[new] = name
                    self.step("rewritten", f"{name}: {entry.label.split(': ')[1]} -> "
                                           f"{self.R.nodes[new]['label']}", [cid], [new])
            elif _LINEAR_MODULE.search(entry.label):
                new = [r for r, e in self.added.items() if e.kind in _LINEAR_OPS][:1]
                if new and self.R.nodes[new[0]]["kind"] == "aten::matmul":
                    adds = [s for s in self.R.successors(new[0])
                            if s in self.added and self.R.nodes[s]["kind"] == "aten::add"]
                    self.step("rewritten", f"{name}: linear -> matmul + add (the weight "
                                           "transposed once, ahead of time)", [cid],
                              new + adds[:1])
                elif new:
                    self.step("rewritten", f"{name}: linear -> {self.R.nodes[new[0]]['label']}",
                              [cid], new)

    def layouts(self) -> None:
        same: dict[str, list[str]] = {}   # one step per sentence: ``(×4)`` for a repeated block
        for node, entry in list(self.added.items()):
            if entry.kind not in _LAYOUT_OPS:
                continue
            label = self.R.nodes[node]["label"]
            if entry.kind == "aten::to_dense":
                before = [p for p in self.R.predecessors(node)
                          if not self.R.nodes[p].get("hidden")]
                text = f"+ {label} after " + (self._where(before[0]) if before else "the input")
                readers = {self.R.nodes[s]["kind"] for s in self.R.successors(node)}
                if readers and readers <= _SIZE_OPS:
                    text += " (only its size is read)"
            else:
                after = sorted(self.R.successors(node))
                text = f"+ {label} before " + (self._where(after[0]) if after else "the end")
            same.setdefault(text, []).append(node)
        for text, nodes in same.items():
            self.step("layout", text + (f" (×{len(nodes)})" if len(nodes) > 1 else ""), (), nodes)

    def in_place(self) -> None:
        by_place: dict[tuple, list[str]] = {}
        for node, entry in self.removed.items():
            if entry.ops is None:
                by_place.setdefault((entry.kind + "_", entry.source), []).append(node)
        made: dict[str, list[tuple[str, str]]] = {}
        for node, entry in list(self.added.items()):
            left = by_place.get((entry.kind, entry.source))
            if left:
                made.setdefault(entry.kind, []).append((left.pop(0), node))
        for kind, pairs in made.items():
            op = kind.split("::")[-1]
            self.step("in place", f"{len(pairs)}× {op[:-1]} -> {op} (computed in place)",
                      [a for a, _ in pairs], [b for _, b in pairs])

    def ahead_of_time(self) -> None:
        """torch.nn calls that lost ops which read only the module's settings (ReLU's ``if
        self.inplace``, MaxPool2d's ``stride is None``): freezing made the settings
        constants and computed those ops. One step per module class, not per call."""
        by_class: dict[str, list[tuple[str, Entry]]] = {}
        for cid, entry in self.removed.items():
            if entry.folded and ": " in entry.label:
                by_class.setdefault(entry.label.split(": ", 1)[1], []).append((cid, entry))
        for cls, calls in by_class.items():
            ops: list[str] = []
            for node in sorted(self._members(calls[0][0]), key=self._lpos.__getitem__):
                data = self.L.nodes[node]
                if node not in self.d.pairs and not data.get("hidden") and \
                        data["kind"] != "prim::Return":
                    ops.append(data["label"])
            names = list(dict.fromkeys(e.label.split(": ", 1)[0] for _, e in calls))
            count = f" ×{len(calls)}" if len(calls) > 1 else ""
            self.step("ahead of time",
                      f"{cls}{count} ({', '.join(names)}): {', '.join(ops)} gone - decided by "
                      "the module's settings, which freezing made constants",
                      [cid for cid, _ in calls])

    def inlined(self) -> None:
        calls = [(cid, e) for cid, e in self.removed.items() if e.ops is not None
                 and not e.folded and not any(
                     x.inside == cid for x in list(self.removed.values()) if x is not e)]
        if calls:
            self.step("inlined", "module calls inlined: " + ", ".join(
                e.label for _, e in calls), [cid for cid, _ in calls])

    def rest(self) -> None:
        for entry in list(self.removed.values()):
            if entry.folded:   # a torch.nn call whose other ops are still there
                text = f"{entry.label}: {entry.ops} of its ops gone (computed ahead of time)"
            else:
                ops = f" ({entry.ops} ops inside)" if entry.ops else ""
                text = f"- {entry.label}{ops}" + _src(entry)
            self.step("other", text, [entry.left])
        for entry in list(self.added.values()):
            self.step("other", f"+ {entry.label}" + _src(entry), (), [entry.right])
        for change in list(self.changed.values()):
            self.step("other", f"~ {change.label}: {'; '.join(change.what)}",
                      [change.left], [change.right])


def _src(item: Entry | Change) -> str:
    return f" ({item.scope})" if item.scope else ""


def _at(R: nx.DiGraph, right: str, L: nx.DiGraph, left: str) -> str:
    loc = L.nodes[left].get("user_source") or R.nodes[right].get("user_source")
    if not loc or loc.count(":") < 2:
        return ""
    path, line, _ = Location.parse(loc)
    return f" ({path.rsplit('/', 1)[-1]}:{line})"


def explain(diff: GraphDiff, how: str) -> OptimizationReport:
    """The transformations ``how`` (freeze, inference, mobile) made, read off ``diff``."""
    e = _Explainer(diff, how)
    e.batch_norms()
    e.rewrites()
    e.layouts()
    e.in_place()
    e.ahead_of_time()
    # a call the optimization inlined is explained once its contents are
    e.inlined()
    e.rest()
    return e.report
