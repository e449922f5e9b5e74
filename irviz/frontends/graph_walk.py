"""How irviz walks a TorchScript graph: the node order, the calls it follows, the cheap way
to read torch's pybind lists.

Two walkers share it and must agree node for node: :mod:`irviz.ir.build` names each node by
its place in this walk (``n2/call/n3``), and :mod:`irviz.frontends.compiled_run` instruments a
copy of the graph in the same walk, so a recorded runtime shape lands on the node it belongs
to. It imports torch only, and sits in ``frontends/`` (the bottom layer) so that both can
import it in the layers' direction.
"""
from __future__ import annotations

import functools

import torch

#: call nesting deeper than this is not a real model (TorchScript forbids recursion): such
#: a call is drawn as one node
MAX_CALL_DEPTH = 200


def nodes_of(return_node: torch._C.Node) -> list:
    """The nodes of a graph or block, in order, walked back from its return node (3 us
    for a small body against 9 us for iterating ``graph.nodes()``, measured; see
    :func:`ins`)."""
    nodes = []
    node = return_node.prev()
    while node.kind() != "prim::Param":
        nodes.append(node)
        node = node.prev()
    nodes.reverse()
    return nodes


def blocks(node: torch._C.Node, count: int) -> list:
    """The first ``count`` blocks of a node, without running its block iterator to the end
    (which, as for :func:`ins`, ends in a C++ exception: ~10 us)."""
    found, out = node.blocks(), []
    while len(out) < count and (block := next(found, None)) is not None:
        out.append(block)
    return out


def ins(node: torch._C.Node) -> list:
    """A node's inputs. Indexing, not ``node.inputs()``: iterating torch's pybind lists ends
    in a C++ ``stop_iteration`` exception, ~10 us per call (measured on BERT's IR)."""
    return [node.inputsAt(i) for i in range(node.inputsSize())]


def outs(node: torch._C.Node) -> list:
    """A node's outputs (see :func:`ins`)."""
    return [node.outputsAt(i) for i in range(node.outputsSize())]


def method_graph(module, name: str):
    """The graph of ``module.name`` for scripted, traced and loaded modules alike."""
    try:
        return module._c._get_method(name).graph
    except (AttributeError, RuntimeError):
        return getattr(getattr(module, name, None), "graph", None)


def find_function(unit, qualname: str):
    """The compiled function ``qualname`` of a compilation unit, or None."""
    if unit is None:
        return None
    try:
        return unit.find_function(qualname)
    except RuntimeError:
        return None


def function_units(archive_unit) -> tuple:
    """Where a ``prim::CallFunction``'s callee is looked up: an archive's own compilation
    unit first (its ``F.relu`` lives there and nowhere else), then the one Python scripting
    fills."""
    return (archive_unit, getattr(torch.jit._state, "_python_cu", None))


def child(module, name: str):
    """A submodule or attribute of a (scripted) module, or None."""
    modules = getattr(module, "_modules", None)
    if modules is not None and name in modules:
        return modules[name]
    try:
        return getattr(module, name)
    except Exception:
        return None


@functools.lru_cache(maxsize=4096)
def schema_arg_names(schema: str) -> list[str] | None:
    try:
        return [a.name for a in torch._C.parse_schema(schema).arguments]
    except RuntimeError:
        return None
