"""A per-node cost estimate, for work/span and the predicted speed-up.

With shapes (traced graphs, or scripted graphs run once on example inputs)
each node gets FLOPs and bytes from its shapes for the heavy ops (linear,
matmul, convolution, LSTM/GRU/RNN, attention, reductions and element-wise
ops), turned into an estimated time::

    us = OP_OVERHEAD_US + flops / FLOPS_PER_US + bytes read / BYTES_PER_US
         + bytes written / WRITE_BYTES_PER_US

and a fork costs FORK_OVERHEAD_US (tens of microseconds per task on these
machines). Without shapes every op costs 1 and the unit is "ops": a clearly
labelled op-count fallback. The absolute numbers are rough; the ratios
(work / span) are what the report uses.

Annotates ``irviz.cost`` on every node (a :class:`Cost`) and
``G.graph["irviz.cost_model"]`` (a :class:`CostModel`); read them with :func:`cost_of`
and :func:`cost_model`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import networkx as nx

from ..ir.model import FORK_KINDS, constant_label

COST, COST_MODEL = "irviz.cost", "irviz.cost_model"


@dataclass(frozen=True)
class Cost:
    """One node's estimated cost."""

    #: estimated microseconds (unit "us") or 1 per op (unit "ops")
    cost: float
    #: floating-point operations and bytes moved (None: no shapes to count them)
    flops: int | None
    bytes: int | None


@dataclass(frozen=True)
class CostModel:
    """How the costs of one graph were estimated."""

    unit: str            # "us" or "ops"
    basis: str           # one sentence for the report
    shaped_ops: int      # tensor ops with known output shapes
    ops: int             # tensor ops in all


_FREE = Cost(0.0, 0, 0)
_ONE_OP = Cost(1.0, None, None)   # the op-count fallback


def cost_of(data: dict) -> float:
    """A node's estimated cost (0 before the analysis ran)."""
    return data.get(COST, _FREE).cost


def cost_model(G: nx.DiGraph) -> CostModel | None:
    return G.graph.get(COST_MODEL)

#: sustained rates of one CPU core. FLOPs: the LSTM ensemble's gemms on one thread ran at
#: 58-90 GFLOP/s on the 2-vCPU AMD EPYC test machines (C = 64...512; 2.8 ms per LSTM at
#: C = 64, torch.profiler); 20 GFLOP/s made the LSTMs 3x too heavy next to the copies
#: around them, and the predicted speed-ups too high (1.9x where 1.2-1.4x was measured)
FLOPS_PER_US = 6.0e4        # 60 GFLOP/s
BYTES_PER_US = 1.0e4        # 10 GB/s read
#: a large output lands on freshly mapped pages (the allocator returns big blocks to the
#: OS): stacking the ensemble's four 1.3 MB outputs (5 MB) took 2.5 ms, ~2 GB/s written
WRITE_BYTES_PER_US = 2.5e3  # 2.5 GB/s written
OP_OVERHEAD_US = 2.0        # interpreter + dispatch per op
FORK_OVERHEAD_US = 30.0     # launching a task on the inter-op pool and joining it
GLUE_US = 0.5               # list/tuple bookkeeping
RNN_STEP_US = 4.0           # fixed cost per time step, layer and direction of an RNN op

_DTYPE_BYTES = {"float64": 8, "int64": 8, "complex64": 8, "complex128": 16, "float16": 2,
                "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
_RNN_GATES = {"aten::lstm": 4, "aten::gru": 3, "aten::rnn_tanh": 1, "aten::rnn_relu": 1}
_HEAVY_EXTRA = ("aten::linear", "aten::scaled_dot_product_attention")
_MATMULS = ("aten::matmul", "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm",
            "aten::einsum")
_CONVS = ("aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::_convolution",
          "aten::convolution", "aten::conv_transpose2d")


_HEAVY = _HEAVY_EXTRA + _MATMULS + _CONVS + tuple(_RNN_GATES)


def _numel(shape) -> int:
    return math.prod([d for d in shape if isinstance(d, int)]) if shape is not None else 0


def _dim(size) -> int:
    """One dimension's size; a symbolic one (``"s0"``: torch.export's dynamic dims) counts
    as 1, as in :func:`_numel`."""
    return size if isinstance(size, int) else 1


def _input_shape(G: nx.DiGraph, node: str, index: int):
    """Shape of input ``index``: from the edge, else from a producer that knows it (an
    ``If`` output has one producer per branch; only the branch that ran has a shape)."""
    # networkx's own node and adjacency dicts: its views cost a call per lookup
    data = G._node[node]
    return _input_shapes(G._node, G._pred[node], data)[index] \
        if index < len(data["inputs"]) else None


def _input_shapes(nodes: dict, into: dict, data: dict) -> list:
    """:func:`_input_shape` of every input of a node, in one call (``data``: its data,
    ``into``: its in-edges by producer, ``nodes``: every node's data): the cost pass reads
    them all, for every op."""
    shapes = []
    captured = data.get("captured")
    for index, producers in enumerate(data["inputs"]):
        if len(producers) == 1:   # most inputs: one producer, its edge knows the shape
            edge = into.get(producers[0])
            if edge is not None and edge.get("shape") is not None:
                shapes.append(edge["shape"])
                continue
        shape = None
        for producer in producers:
            if producer not in nodes:
                continue
            edge = into.get(producer)
            if edge is not None:
                shape = edge.get("shape")
                if shape is not None:
                    break
            if captured:   # a task input
                for origin in captured.get(str(index), ()):
                    outs = nodes[origin]["outputs"] if origin in nodes else []
                    if len(outs) == 1 and outs[0].get("shape") is not None:
                        shape = outs[0]["shape"]
                        break
                if shape is not None:
                    break
            outs = nodes[producer]["outputs"]
            if len(outs) == 1:
                shape = outs[0].get("shape")
                if shape is not None:
                    break
        shapes.append(shape)
    return shapes


def _constant(G: nx.DiGraph, node: str, index: int) -> str | None:
    producers = G.nodes[node]["inputs"]
    return constant_label(G, producers[index]) if index < len(producers) else None


@lru_cache(maxsize=None)
def op_name(kind: str) -> str:
    """The op without its overload: ``aten::lstm.input`` (an exported graph's kind) ->
    ``aten::lstm``, the name TorchScript graphs use."""
    namespace, sep, name = kind.partition("::")
    return f"{namespace}{sep}{name.split('.', 1)[0]}" if sep else kind


def node_flops(G: nx.DiGraph, node: str) -> int | None:
    """FLOPs of one execution of ``node``, or None when its shapes are unknown."""
    data = G._node[node]
    return _flops(G, node, data, op_name(data["kind"]),
                  _input_shapes(G._node, G._pred[node], data), _numel)


def _flops(G: nx.DiGraph, node: str, data: dict, kind: str, shapes: list,
           numel: Callable) -> int | None:
    """:func:`node_flops` from the op's name, its input shapes and a :func:`_numel`."""
    out = data["outputs"][0]["shape"] if data["outputs"] else None
    if out is None:
        return None
    if kind == "aten::linear":
        weight = shapes[1] if len(shapes) > 1 else None
        return 2 * numel(out) * _dim(weight[-1]) if weight else None
    if kind in _MATMULS:
        index = 1 if kind in ("aten::addmm", "aten::baddbmm") else 0
        a = shapes[index] if index < len(shapes) else None
        return 2 * numel(out) * _dim(a[-1]) if a else None
    if kind in _CONVS:
        weight = shapes[1] if len(shapes) > 1 else None
        return 2 * numel(out) * _numel(weight[1:]) if weight else None
    if kind in _RNN_GATES:
        x = shapes[0] if shapes else None
        if not x or len(x) < 3:
            return None
        bidirectional = _constant(G, node, 7) == "True"
        layers = _constant(G, node, 4)
        dirs = 2 if bidirectional else 1
        hidden = _dim(out[-1]) // dirs
        steps = _numel(x[:-1])
        per_step = 2 * _RNN_GATES[kind] * hidden * (_dim(x[-1]) + hidden)
        return steps * per_step * dirs * (int(layers) if layers and layers.isdigit() else 1)
    if kind == "aten::scaled_dot_product_attention":
        q = shapes[0] if shapes else None
        k = shapes[1] if len(shapes) > 1 else None
        return 4 * _numel(q) * _dim(k[-2]) if q and k and len(k) >= 2 else None
    return numel(out)  # element-wise ops and reductions: about one FLOP per element


#: ops that read a tensor's metadata, never its data (the checks scripted library code
#: runs before every op: an LSTM's input validation is 250 of them)
_METADATA = frozenset({"aten::size", "aten::dim", "aten::len", "aten::numel", "aten::stride",
                       "aten::is_contiguous", "aten::is_floating_point", "aten::is_complex",
                       "aten::__is__", "aten::__isnot__", "aten::format", "prim::device",
                       "prim::dtype", "prim::layout", "prim::is_cuda", "prim::shape"})


def node_bytes(G: nx.DiGraph, node: str) -> tuple[int, int]:
    """(bytes read, bytes written) by one execution of ``node``."""
    data = G._node[node]
    return _bytes(data, op_name(data["kind"]), _input_shapes(G._node, G._pred[node], data),
                  _numel)


def _bytes(data: dict, kind: str, shapes: list, numel: Callable) -> tuple[int, int]:
    """:func:`node_bytes` from the op's name, its input shapes and a :func:`_numel`."""
    if kind in _METADATA:
        return 0, 0
    written = 0
    for out in data["outputs"]:
        written += numel(out["shape"]) * _DTYPE_BYTES.get(out.get("dtype") or "", 4)
    read = 0
    for shape in shapes:
        if shape:
            read += numel(shape) * 4
    return read, written


def _numel_memo() -> Callable:
    """:func:`_numel` remembering each shape's count: most values share a few shapes."""
    memo: dict[tuple, int] = {}

    def numel(shape) -> int:
        if shape is None:
            return 0
        key = tuple(shape)
        found = memo.get(key)
        if found is None:
            found = memo[key] = _numel(shape)
        return found
    return numel


def annotate_costs(G: nx.DiGraph) -> None:
    """Write ``irviz.cost`` on every node and the model's unit on the graph."""
    ops = shaped = 0   # tensor ops, and those with known output shapes
    estimate = True   # every heavy op has its shapes (and some op has: at the end)
    costed: list[dict] = []   # the ops' data: each counts one op if the unit is ops
    made: dict[tuple, Cost] = {}   # most ops repeat a few costs: one record each
    numel = _numel_memo()
    nodes, pred = G._node, G._pred   # networkx's own dicts: its views cost a call per lookup
    names: dict[str, str] = {}   # kind -> op_name(kind): a call a node costs more
    # one pass: each op costed when it is read (most graphs have the shapes: an op that
    # turns out to be costed for nothing is rare and cheap)
    for node, data in nodes.items():
        if data.get("hidden") or data["kind"] in ("prim::Param", "prim::Return"):
            data[COST] = _FREE
            continue
        costed.append(data)
        kind = names.get(data["kind"])
        if kind is None:
            kind = names[data["kind"]] = op_name(data["kind"])
        ran = True   # shapes come from a run (or a trace): a tensor op without them did not
        if kind.startswith("aten::"):
            # its tensor outputs have shapes (most ops: one output, read without a loop)
            outs = data["outputs"]
            if len(outs) == 1:
                tensors = outs[0]["type"] == "Tensor"
                known = tensors and outs[0].get("shape") is not None
            else:
                tensors = [o for o in outs if o["type"] == "Tensor"]
                known = all(o.get("shape") is not None for o in tensors)
            if tensors:
                ops += 1
                if known:
                    shaped += 1
                else:
                    ran = False
                    if kind in _HEAVY:
                        estimate = False
        if not estimate:
            continue   # the unit is ops (below)
        if kind in FORK_KINDS:
            cost, flops, nbytes = FORK_OVERHEAD_US, 0, 0
        elif not kind.startswith("aten::") or kind in ("aten::append", "aten::__getitem__",
                                                        "aten::len", "aten::wait"):
            cost, flops, nbytes = GLUE_US, 0, 0
        elif not ran:
            cost, flops, nbytes = 0.0, 0, 0
        else:
            shapes = _input_shapes(nodes, pred[node], data)
            flops = _flops(G, node, data, kind, shapes, numel) or 0
            read, written = _bytes(data, kind, shapes, numel)
            nbytes = read + written
            cost = (OP_OVERHEAD_US + flops / FLOPS_PER_US + read / BYTES_PER_US
                    + written / WRITE_BYTES_PER_US)
            if kind in _RNN_GATES:
                x = shapes[0] if shapes else None
                cost += RNN_STEP_US * (_dim(x[0]) if x else 1)
        key = (round(cost, 3), flops, nbytes)
        found = made.get(key)
        if found is None:
            found = made[key] = Cost(*key)
        data[COST] = found
    estimate = estimate and shaped > 0
    if not estimate:
        for data in costed:
            data[COST] = _ONE_OP
    G.graph[COST_MODEL] = CostModel(
        unit="us" if estimate else "ops",
        basis=("FLOPs and bytes from shapes (estimated microseconds)" if estimate
               else "op count: no shapes (pass example inputs for a time estimate)"),
        shaped_ops=shaped, ops=ops)
