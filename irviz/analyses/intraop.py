"""How many intra-op threads one op can really use, from its size (the static model).

Why it exists: ``torch.set_num_threads(2)`` does not make every op use two threads.
ATen splits an op over its intra-op threads only when there is enough work:
``at::parallel_for`` hands each thread at least ``at::internal::GRAIN_SIZE`` = 32768
elements, so an element-wise op, a reduction, ``cat`` or ``flip`` on fewer elements runs
on one thread. An RNN op (``aten::lstm``...) runs time step after time step; what a
step can split is its gate computation, ``batch x gates x hidden`` elements (the matrix
product of the step goes to MKL/oneDNN, whose own threading follows the same sizes
closely enough on the probes below). Matrix products and convolutions: the output's
elements against the same grain.

How an op speeds up with its threads, and what it costs the machine, was measured on
the seed LSTM ensemble (``benchmarks/tutorial_parallelism.py``, 2 cores): with two
intra-op threads the serial model ran 1.5-1.6x faster than with one (C = 256, 512),
while its process used 1.75-1.95 CPUs - OpenMP's threads spin while they wait for
work, so an op on ``t`` threads keeps about ``t`` cores busy but goes only
``1 + (t - 1) * PARALLEL_EFFICIENCY`` times as fast.
"""
from __future__ import annotations

import math

import networkx as nx

from .cost import _RNN_GATES, _input_shape, _numel

__all__ = ["GRAIN_SIZE", "PARALLEL_EFFICIENCY", "usable_threads", "op_speed"]

#: at::internal::GRAIN_SIZE: the fewest elements ATen gives one intra-op thread
GRAIN_SIZE = 32768
#: a second intra-op thread's share of a thread's speed (measured: 1.5-1.6x on 2 threads)
PARALLEL_EFFICIENCY = 0.55

_NOT_SPLIT = ("prim::", "aten::append", "aten::__getitem__", "aten::len", "aten::wait",
              "aten::size", "aten::dim", "aten::Int", "aten::Bool")


def parallel_elements(G: nx.DiGraph, node: str) -> int:
    """The elements one parallel region of ``node`` splits (0: the op is never split)."""
    data = G.nodes[node]
    kind = data["kind"]
    if kind.startswith(_NOT_SPLIT) or not data["outputs"]:
        return 0
    out = data["outputs"][0].get("shape")
    if out is None:
        return 0
    if kind in _RNN_GATES:
        x = _input_shape(G, node, 0)
        if not x or len(x) < 3 or not out:
            return 0
        # one time step: batch x gates x hidden (x: T, B, C; out: T, B, hidden * dirs)
        return _numel(out[1:-1]) * _RNN_GATES[kind] * out[-1]
    return _numel(out)


def usable_threads(G: nx.DiGraph, node: str, intra: int) -> int:
    """How many of ``intra`` threads ``node`` can use: ceil(elements / GRAIN_SIZE), 1..intra."""
    if intra <= 1:
        return 1
    elements = parallel_elements(G, node)
    if elements <= GRAIN_SIZE:
        return 1
    return max(1, min(intra, math.ceil(elements / GRAIN_SIZE)))


def op_speed(threads: int) -> float:
    """How much faster an op runs on ``threads`` intra-op threads than on one."""
    return 1.0 + (max(threads, 1) - 1) * PARALLEL_EFFICIENCY
