"""Which side of each ``if`` on tensor data ran, when compiled code runs on an input.

``irviz migrate`` checks the converted program against the original on several inputs. A
``torch.cond`` made from a scripted ``if`` is only checked on the branches those inputs
took: the outputs of a branch no input reached were never compared, and the report must say
so rather than claim the program matches. Whether a branch ran is not in the outputs, and
irviz's recorded run (:mod:`irviz.frontends.compiled_run`) cannot tell it either: it records
tensor values, and the seed gate's then-branch (``return x``) makes none.

So an *inlined copy* of the graph gets a recording op ``irviz_branch::taken(id)`` at the
start of both blocks of every ``if`` whose condition comes from tensor data (``aten::Bool``
of a comparison, ``.item()``: the ifs the converter makes a ``torch.cond`` that stays a cond
once exported; an ``if`` on a size or a setting is decided while exporting). The op is a
``torch.library`` op with conservative alias analysis, so TorchScript keeps it where it is.
The copy runs as a new function with the user's module as ``self``; the user's graphs are
never edited. Ifs inside a fork's task are not looked at (forks do not convert).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["BranchRecorder", "data_ifs"]

_OP = "irviz_branch::taken"
_LIBRARY = None
_SINK: set | None = None
_LOCK = threading.Lock()
#: nodes that turn a tensor's data into a Python scalar (what makes an if data dependent)
_FROM_DATA = {"aten::Bool", "aten::is_nonzero", "aten::item", "aten::Float", "aten::Int",
              "aten::equal", "aten::allclose", "aten::any", "aten::all"}
#: how far up a condition's producers are followed
_MAX_DEPTH = 24


def _taken(id: int) -> None:  # noqa: A002 - the schema's argument name
    sink = _SINK
    if sink is not None:
        sink.add(id)


def _define_op() -> None:
    global _LIBRARY
    if _LIBRARY is not None:
        return
    library = torch.library.Library("irviz_branch", "DEF")
    library.define("taken(int id) -> ()", alias_analysis="CONSERVATIVE")
    # no tensor argument: nothing to dispatch on, so the kernel is registered for CPU and
    # as the fallback of every backend
    library.impl("taken", _taken, "CompositeExplicitAutograd")
    _LIBRARY = library


def _on_data(value, depth: int = 0) -> bool:
    """Whether ``value`` (an if's condition) is computed from a tensor's data."""
    node = value.node()
    kind = node.kind()
    if kind in _FROM_DATA:
        return any(i.type().kind() == "TensorType" for i in node.inputs())
    if depth >= _MAX_DEPTH or kind in ("prim::Param", "prim::Constant", "prim::GetAttr"):
        return False
    return any(_on_data(i, depth + 1) for i in node.inputs())


def data_ifs(graph) -> list:
    """The ifs of ``graph`` (blocks included, fork tasks not) whose condition comes from
    tensor data, in graph order."""
    return [node for node in graph.findAllNodes("prim::If", True)
            if _on_data(node.inputsAt(0))]


@dataclass
class BranchRecorder:
    """An instrumented copy of a compiled model: :meth:`run` tells which side of each data
    if ran. ``ifs[k]`` is the copy's ``k``-th data if (its source range is the original's)."""

    compiled: Any
    ifs: list = field(default_factory=list)
    function: Any = None

    @classmethod
    def of(cls, compiled: Any) -> "BranchRecorder":
        _define_op()
        graph = compiled.inlined_graph.copy()
        ifs = data_ifs(graph)
        for k, node in enumerate(ifs):
            for side, block in enumerate(node.blocks()):
                const = graph.create("prim::Constant")
                const.i_("value", 2 * k + side)
                const.output().setType(torch._C.IntType.get())
                mark = graph.create(_OP, [const.output()], 0)
                first = next(iter(block.nodes()), None) or block.returnNode()
                const.insertBefore(first)
                mark.insertAfter(const)
        function = (torch._C._create_function_from_graph("irviz_branch_forward", graph)
                    if ifs else None)
        return cls(compiled, ifs, function)

    def run(self, args: list) -> set[tuple[int, int]]:
        """``{(if index, side)}`` that ran on ``args`` (side 0: then, 1: else)."""
        global _SINK
        if self.function is None:
            return set()
        sink: set = set()
        with _LOCK:
            _SINK = sink
            try:
                with torch.no_grad():
                    if isinstance(self.compiled, torch.jit.ScriptModule):
                        self.function(self.compiled._c, *args)
                    else:
                        self.function(*args)
            finally:
                _SINK = None
        return {(mark // 2, mark % 2) for mark in sink}
