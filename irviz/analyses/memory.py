"""Activation memory from shapes: bytes per value, and the static peak along program order.

Why it exists: "will this fit?" is asked before a model runs, and the picture already knows
every tensor's shape and dtype. Each op's tensor outputs are allocated when it runs and
freed after their last consumer in program order (TorchScript's interpreter drops a value
at its last use); an op whose schema returns an alias of its input (``view``, ``transpose``,
``relu_``, ``chunk``) allocates nothing and keeps its input alive as long as itself.
Graph inputs and parameters are not counted: they are allocated before a call, as a
profiled run's measured peak (``render --profile``) does not count them either.

What it cannot see: memory an op allocates inside itself (an LSTM's gates, a matmul's
workspace), a loop body's values counted once (not per iteration), and tasks that overlap
in time (the walk is in program order). Hence "estimated".

Annotates ``irviz.bytes`` on each node that allocates (the bytes of its outputs) and on
each edge whose producer has one tensor output, and ``G.graph["irviz.memory"]``:
``{"peak_bytes", "peak_at", "by_module", "unknown"}`` (``by_module``: the values live at
the peak by the top-level module that made them; ``unknown``: tensors of unknown size).
"""
from __future__ import annotations

from functools import lru_cache
from itertools import accumulate, chain
from operator import sub

import networkx as nx
import torch

from ..ir.model import CONSTANT_KINDS

__all__ = ["BYTES", "MEMORY", "annotate_memory", "memory_facts", "value_bytes"]

BYTES = "irviz.bytes"
MEMORY = "irviz.memory"

_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8,
             "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "complex64": 8,
             "complex128": 16}
#: ops whose result is a new tensor only when the dtype changes (``x.float()`` of a float)
_CONVERSIONS = ("aten::to", "aten::type_as", "aten::contiguous")


def memory_facts(G: nx.DiGraph) -> dict | None:
    return G.graph.get(MEMORY)


def value_bytes(info: dict) -> int | None:
    """Bytes of one value record (``{"shape", "dtype"}``), or None when not a tensor of
    known size."""
    shape, size = info.get("shape"), _ITEMSIZE.get(info.get("dtype"))
    if shape is None or size is None:
        return None
    for d in shape:
        if not isinstance(d, int):
            return None
        size *= d
    return size


@lru_cache(maxsize=None)
def _aliases(kind: str) -> bool:
    """The op returns a view or its (mutated) input: every non-``out`` overload that
    returns a Tensor marks its first return as an alias (``Tensor(a)``)."""
    if not kind.startswith("aten::"):
        return True   # prim:: glue (lists, tuples, attributes) allocates no tensor
    try:
        schemas = torch._C._jit_get_schemas_for_operator(kind)
    except RuntimeError:
        return False
    tensor = [s for s in schemas if s.overload_name != "out" and s.returns
              and str(s.returns[0].type).startswith("Tensor")]
    return bool(tensor) and all(s.returns[0].alias_info is not None for s in tensor)


def _allocates(G: nx.DiGraph, data: dict) -> bool:
    kind = data["kind"]
    if kind in CONSTANT_KINDS or kind in ("prim::Param", "prim::Return") or data.get("hidden"):
        return False
    if kind in _CONVERSIONS:
        first = (data.get("inputs") or [[]])[0]
        src = G.nodes[first[0]].get("outputs", [{}]) if first and first[0] in G else [{}]
        out = data.get("outputs") or [{}]
        return bool(src) and src[0].get("dtype") != out[0].get("dtype")
    return not _aliases(kind)


def annotate_memory(G: nx.DiGraph) -> dict:
    """Annotate each value's bytes and the static peak (see the module doc)."""
    # networkx's own node and adjacency dicts: its views cost a call per lookup
    nodes, succ = G._node, G._succ
    at = _Positions(nodes)
    allocated: dict[str, int] = {}   # the nodes that allocate (most do not) -> bytes
    allocates: set[str] = set()
    by_kind: dict[str, bool] = {}   # whether a kind allocates (a conversion: asked a node)
    unknown = 0
    for i, (node, data) in enumerate(nodes.items()):
        outs = data.get("outputs", [])
        one = None   # the bytes of its one value (a constant's or a list's: no call)
        if len(outs) == 1 and outs[0].get("shape") is not None:
            one = value_bytes(outs[0])
            if one:
                for edata in succ[node].values():   # on each edge
                    edata[BYTES] = one
        if data.get("hidden"):
            continue   # most nodes (constants, attributes, lists): not even numbered
        at[node] = i
        kind = data["kind"]
        allocates_here = by_kind.get(kind)
        if allocates_here is None:
            allocates_here = _allocates(G, data)
            if kind not in _CONVERSIONS:
                by_kind[kind] = allocates_here
        if not allocates_here:
            continue
        allocates.add(node)
        if len(outs) == 1:   # most ops: their one value's bytes are known from above
            if not str(outs[0].get("type", "")).startswith("Tensor"):
                continue
            unknown += one is None
            total = one
        else:
            sizes = [value_bytes(o) for o in outs if str(o.get("type", "")).startswith("Tensor")]
            unknown += sizes.count(None)
            total = sum(b for b in sizes if b)
        if total:
            allocated[node] = total
            data[BYTES] = total
    last = _last_uses(allocated, allocates, succ, at)
    peak, peak_at = _peak(allocated, last, at, len(nodes))
    by_module: dict[str, int] = {}
    for node, size in _live_at(allocated, last, at, peak_at).items():
        top = (nodes[node].get("scope") or "").split(".")[0] or "<root>"
        by_module[top] = by_module.get(top, 0) + size
    facts = {"peak_bytes": peak, "peak_at": peak_at,
             "by_module": dict(sorted(by_module.items(), key=lambda kv: -kv[1])),
             "unknown": unknown}
    G.graph[MEMORY] = facts
    return facts


class _Positions(dict):
    """Node -> program position (the builder adds nodes in program order), written for
    the drawn nodes as the walk passes them: the values and their users are drawn nodes,
    but for a hidden user (a list of tensors), whose position is asked for first, when
    every node is numbered (numbering them all costs as much as the rest of the walk)."""

    def __init__(self, nodes: dict):
        super().__init__()
        self.nodes = nodes

    def __missing__(self, node: str) -> int:
        self.update((n, i) for i, n in enumerate(self.nodes))
        if node not in self:
            raise KeyError(node)
        return self.get(node)


def _last_uses(allocated: dict, allocates: set, succ: dict, at: dict) -> dict[str, int]:
    """Each allocated value's last use: the position of its latest consumer, or of the
    latest use of a later consumer that does not allocate (a view keeps it alive), or
    its own when nothing reads it. Only the allocated values and the views they reach
    are visited (most nodes are constants and attributes)."""
    last: dict[str, int] = {}   # of the allocated nodes and the views they reach
    for root in allocated:
        todo = [root]
        while todo:   # depth first: a node once every later view of it is known
            node = todo[-1]
            if node in last:
                todo.pop()
                continue
            here, latest, pending = at[node], -1, False
            for user in succ[node]:
                where = at[user]
                if user not in allocates and where > here:
                    alive = last.get(user)
                    if alive is None:
                        todo.append(user)
                        pending = True
                    elif alive > where:
                        where = alive
                if where > latest:
                    latest = where
            if not pending:
                todo.pop()
                last[node] = here if latest < 0 else latest
    return last


def _peak(allocated: dict, last: dict, at: dict, n: int) -> tuple[int, str | None]:
    """Walk program order allocating each value at its position and freeing it after its
    last use (after what is allocated there): ``(peak bytes, node allocated at the
    peak)``, the first position it is reached, or ``(0, None)``. The running sums are
    taken over two position lists in C, not replayed a position at a time in Python."""
    grow, shrink = [0] * n, [0] * n
    for node, size in allocated.items():
        grow[at[node]] = size   # one node a position
        shrink[last[node]] += size
    # live after each position's allocation: allocated up to it, less what was freed
    # before it
    live = list(map(sub, accumulate(grow), accumulate(chain((0,), shrink))))
    peak = max(live, default=0)
    if peak <= 0:
        return 0, None
    where = live.index(peak)
    return peak, next(node for node in allocated if at[node] == where)


def _live_at(allocated: dict, last: dict, at: dict, node: str | None) -> dict[str, int]:
    """The values live just after ``node`` allocated (none for None), in program order."""
    if node is None:
        return {}
    here, live = at[node], {}
    for value, size in allocated.items():   # in program order
        where = at[value]
        if where > here:
            break
        if last[value] >= here:
            live[value] = size
    return live
