"""Shapes for scripted graphs, from the capture's eager run of the model.

Scripted graphs carry no shapes. When example inputs exist, the capture runs the Python
model once eagerly (:mod:`irviz.frontends.eager_run`) under a dispatch mode that records, for every aten op, the
output shapes, the innermost Python source line that called it and the module
whose ``forward`` was running (its path, as ``named_modules`` names it). Scripting
compiles that same source, so a scripted node with the same op, the same module
scope and the same ``file:line`` gets those shapes - but only when every call
recorded for that key agrees (a line run with different shapes stays unknown).

The module path matters: library code shares its source lines across every caller
(``F.relu`` is one line for every ``nn.ReLU`` of a model), and a node in a branch
that did not run (``else: relu`` of an in-place ``nn.ReLU``) must get no shape at
all rather than the shape of another module's call of that line.
"""
from __future__ import annotations

import networkx as nx

from ..frontends.capture import Capture
from ..frontends.eager_run import CONFLICT
from .traced_control_flow import python_method


#: a scripted op -> the op the dispatcher runs for it, whose first output is the op's
#: result (``torch.batch_norm`` runs inside ``F.batch_norm``'s torch-function handler,
#: where the recorder only sees what it dispatches)
_DISPATCHED_AS = {"batch_norm": "native_batch_norm", "layer_norm": "native_layer_norm",
                  "group_norm": "native_group_norm"}


def annotate_runtime_shapes(G: nx.DiGraph, capture: Capture) -> None:
    """Fill unknown tensor shapes of a scripted graph from the capture's eager run."""
    if capture.mode != "script" or capture.eager is None or capture.eager.error:
        return
    seen = capture.eager.op_shapes
    nth = _call_numbers(G, capture.eager.module_calls)
    blocks = G.graph["blocks"]
    for node, data in G.nodes(data=True):
        if not data.get("source") or "::" not in data["kind"]:
            continue
        path, line, _ = data["source"].rsplit(":", 2)
        op = data["kind"].split("::")[-1]
        scope = data.get("scope") or ""
        call = _forward_call(blocks, data["block"], scope)
        scopes = ([f"{scope}#{nth[call]}"] if call in nth else []) + [
            _recorded_scope(scope, blocks.get(call), capture.eager)]
        shapes = None
        for where in ((s, path, int(line)) for s in scopes):
            shapes = seen.get((op, *where))
            if shapes is None and op in _DISPATCHED_AS:
                shapes = seen.get((_DISPATCHED_AS[op], *where))
                shapes = shapes[:1] if shapes is not None and shapes is not CONFLICT else shapes
            if shapes is not None and shapes is not CONFLICT:
                break
        if shapes is None or shapes is CONFLICT:
            continue
        tensors = [i for i, o in enumerate(data["outputs"]) if o["type"] == "Tensor"]
        if len(tensors) != len(shapes):
            continue
        _fill(data, tensors, shapes)
    _fill_module_results(G, capture.eager.module_shapes, nth)


def _recorded_scope(scope: str, call: dict | None, eager) -> str:
    """The module path the eager run recorded ``scope``'s ops under: its own, or, for a
    module whose ``forward`` was called directly (``self.cell.forward(x)``, as an
    interface-typed attribute is called), which no forward hook sees, the nearest
    enclosing module the hooks saw run - only when the call's line ran (a module in a
    branch not taken gets no shapes from its parent's ops)."""
    if not scope or eager.module_calls.get(scope) or call is None:
        return scope
    file, line, _ = (call.get("source") or "::").rsplit(":", 2)
    if not line.isdigit() or (file, int(line)) not in eager.executed_lines:
        return scope
    while scope and not eager.module_calls.get(scope):
        scope = scope.rpartition(".")[0]
    return scope


def _is_forward(info: dict) -> bool:
    """A call container of a module's ``forward``: the hooks' calls. An overload of it
    (``forward__0``: a scripted ``nn.LSTM`` called by its parent) is one too."""
    return info["kind"] == "method" and python_method(info.get("method"), False) == "forward"


def _forward_call(blocks: dict, block: str | None, scope: str) -> str | None:
    """The innermost ``forward`` call container of module ``scope`` around ``block``."""
    while block is not None:
        info = blocks[block]
        if _is_forward(info) and info.get("module") == scope:
            return block
        block = info["parent"]
    return None


def _call_numbers(G: nx.DiGraph, calls: dict[str, int]) -> dict[str, int]:
    """Forward call container -> which call of its module it is (0, 1, ...), where that is
    certain: the module's call sites, in program order, are as many as the calls the eager
    run made and none sits in a loop body or a branch (run once each, in that order). A
    ResNet block calls its one ``relu`` three times with different shapes."""
    blocks = G.graph["blocks"]
    sites: dict[str, list[str]] = {}
    for cid, info in blocks.items():  # containers are made in program order
        if _is_forward(info) and info.get("module"):
            sites.setdefault(info["module"], []).append(cid)
    numbered = {}
    for module, cids in sites.items():
        if len(cids) < 2 or calls.get(module) != len(cids):
            continue
        if any(_in_loop_or_branch(blocks, cid) for cid in cids):
            continue
        numbered.update({cid: k for k, cid in enumerate(cids)})
    return numbered


def _in_loop_or_branch(blocks: dict, cid: str) -> bool:
    block = blocks[cid]["parent"]
    while block is not None:
        if blocks[block]["kind"] in ("loop.body", "if.then", "if.else", "fork.task"):
            return True
        block = blocks[block]["parent"]
    return False


def _fill(data: dict, tensors: list[int], shapes) -> None:
    for index, (*dims, dtype) in zip(tensors, shapes):
        info = data["outputs"][index]
        if info["shape"] is None:
            info["shape"], info["dtype"] = list(dims), dtype.replace("torch.", "")


def _fill_module_results(G: nx.DiGraph, returned: dict, nth: dict[str, int]) -> None:
    """What a module's ``forward`` returned, from the forward hook, onto the one node that
    produces it: the ops a functional wrapper runs under another name
    (``F.adaptive_avg_pool2d``) are matched by no recorded op, but the module's result is."""
    for cid, info in G.graph["blocks"].items():
        if not _is_forward(info) or not info.get("returns"):
            continue
        shapes = returned.get(f"{info.get('module')}#{nth[cid]}") if cid in nth \
            else returned.get(info.get("module"))
        producers = info["returns"][0]
        if shapes is None or shapes is CONFLICT or len(producers) != 1 \
                or producers[0] not in G:
            continue
        data = G.nodes[producers[0]]
        if len(data["outputs"]) == 1 and data["outputs"][0]["type"] == "Tensor":
            _fill(data, [0], shapes)
