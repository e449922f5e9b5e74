"""Shape arithmetic: the ``size`` -> ``NumToTensor`` -> ``Int`` -> ``ListConstruct`` chains.

A traced ``x.view(b, s, 12, 64)`` with ``b, s = x.size()[:2]`` records four or more nodes
per dimension before the ``view``; in BERT-base they are 324 of the 644 ops the picture
would draw (measured), in GPT-2 434 of 799. They compute integers, not tensors, so the
picture shows them the way it shows constants: folded into the op that uses them, as
an expression (``size=[x.size(0), x.size(1), 12, 64]``).

This analysis finds them and writes ``irviz.shape_expr`` (the expression) on each; the
renderers fold nodes that carry it. The IR itself is unchanged: lint and the reports
still see every node.
"""
from __future__ import annotations

import networkx as nx

from ..ir.model import constant_label

#: ops that read a tensor's geometry: (kind -> expression template)
_READERS = {"aten::size": "size", "aten::dim": "dim", "aten::numel": "numel"}
#: ops that only convert an integer between tensor and Python forms
_TRANSPARENT = {"prim::NumToTensor", "aten::Int", "aten::ScalarImplicit", "aten::Float",
                "prim::shape"}
#: integer arithmetic on sizes (traced: on 0-dim tensors; scripted: on ints)
_ARITHMETIC = {"aten::add": "+", "aten::sub": "-", "aten::mul": "*", "aten::floordiv": "//",
               "aten::floor_divide": "//", "aten::div": "/", "aten::remainder": "%",
               "aten::__and__": "&"}
_LISTS = {"prim::ListConstruct": "[]", "prim::TupleConstruct": "()"}
_KINDS = frozenset({*_READERS, *_TRANSPARENT, *_ARITHMETIC, *_LISTS})
#: expressions longer than this are cut (the tooltip has room, the label has not)
MAX_EXPR = 120


def _value_name(G: nx.DiGraph, producer: str) -> str:
    """What the picture calls the tensor: an input's name, else the op that made it (traced
    value names are the tracer's guesses and often name another variable)."""
    return G.nodes[producer]["label"]


def _cut(text: str) -> str:
    return text if len(text) <= MAX_EXPR else text[:MAX_EXPR - 1] + "…"


def annotate_shape_arithmetic(G: nx.DiGraph) -> None:
    """Write ``irviz.shape_expr`` on every node that only computes tensor sizes."""
    expr: dict[str, str] = {}

    def operand(producers: list[str]) -> str | None:
        if len(producers) == 1 and producers[0] in expr:
            return expr[producers[0]]
        return constant_label(G, producers)

    # networkx's own node dict, in program order (producers come first): its view costs
    # a call per node, and most nodes are none of these kinds
    for node, data in G._node.items():
        kind = data["kind"]
        if kind not in _KINDS:
            continue
        inputs = data["inputs"]
        text = None
        if kind in _READERS and inputs and len(inputs[0]) == 1 and inputs[0][0] in G:
            owner = _value_name(G, inputs[0][0])
            dims = [operand(p) for p in inputs[1:]]
            if None not in dims:
                text = f"{owner}.{_READERS[kind]}({', '.join(dims)})"
        elif kind in _TRANSPARENT and len(inputs) >= 1:
            text = operand(inputs[0]) if len(inputs[0]) == 1 and inputs[0][0] in expr else None
        # arithmetic and lists on no size (most: a residual add, a list of constants) are
        # left before their operands' labels are made
        elif kind in _ARITHMETIC and len(inputs) >= 2 \
                and (inputs[0][0] in expr or inputs[1][0] in expr) and not _is_tensor_math(data):
            a, b = operand(inputs[0]), operand(inputs[1])
            if a is not None and b is not None:
                text = f"({a} {_ARITHMETIC[kind]} {b})"
        elif kind in _LISTS and any(len(p) == 1 and p[0] in expr for p in inputs):
            items = [operand(p) for p in inputs]
            if None not in items:
                brackets = _LISTS[kind]
                text = brackets[0] + ", ".join(items) + brackets[1]
        if text is not None:
            expr[node] = _cut(text)
    for node, text in expr.items():
        G._node[node]["irviz.shape_expr"] = text


def _is_tensor_math(data: dict) -> bool:
    """Arithmetic whose result is a real tensor (not a 0-dim integer or a Python int)."""
    for out in data.get("outputs") or []:
        if out.get("type") in ("int", "float", "number", "Scalar"):
            continue
        if out.get("shape") == [] and out.get("dtype") in ("int64", "int32", None):
            continue
        return True
    return False
