"""Compare graphs of one model: script vs trace, and trace vs re-trace.

* :func:`script_trace_divergence` - on the pairing of
  :func:`~irviz.analyses.graph_match.match_graphs` (the matcher `irviz diff` uses): control flow (``prim::If``/``prim::Loop``
  deciding on tensor data, sizes, dtype, device or ``self.training``) and
  dynamic values (``aten::size``, ``aten::dim``, ``prim::device``,
  ``prim::dtype``) that the scripted graph keeps in the user's code but the
  trace replaced by constants.
* :func:`first_divergence` - the first node where two traces of the same model
  differ after canonicalisation (kinds, source lines and folded constants), as
  torch's own ``check_trace`` does.
"""
from __future__ import annotations

import networkx as nx

from ..location import Location
from .graph_match import GraphDiff, match_graphs

#: nodes that read something a trace turns into a constant
DYNAMIC_KINDS = ("aten::size", "aten::dim", "prim::device", "prim::dtype", "aten::numel",
                 "aten::Bool", "aten::Int", "aten::Float", "aten::item", "prim::is_cuda",
                 "aten::is_floating_point", "aten::len")
#: dynamic values that a trace records itself when they stay tensor-valued
TRACEABLE_VALUES = ("aten::size", "aten::dim", "prim::device", "prim::dtype", "aten::numel")
_SEARCH_DEPTH = 8


def _user_code(data: dict) -> bool:
    """In a file of the user's (not torch's, not TorchScript's own ``<string>`` helpers)."""
    source = data.get("source")
    return bool(source) and data.get("user_source") == source and not source.startswith("<")


def _decides_on_runtime_value(G: nx.DiGraph, node: str, inputs: list[int]) -> str | None:
    """The dynamic op (kind) the condition/trip count of ``node`` is computed from, if any."""
    data = G.nodes[node]
    frontier = [p for i in inputs if i < len(data["inputs"]) for p in data["inputs"][i]
                if p in G]
    seen = set(frontier)
    for _ in range(_SEARCH_DEPTH):
        nxt = []
        for p in frontier:
            pd = G.nodes[p]
            if pd["kind"] in DYNAMIC_KINDS and _on_tensor(G, p):
                return pd["kind"]
            if pd["kind"] == "prim::GetAttr" and pd["label"] == "training":
                return "self.training"
            if pd["kind"] == "prim::Param":
                continue
            for q in G.predecessors(p):
                if q not in seen:
                    seen.add(q)
                    nxt.append(q)
        frontier = nxt
    return None


def _on_tensor(G: nx.DiGraph, node: str) -> bool:
    """``aten::len`` counts a tensor's rows only when its argument is a tensor (not a list)."""
    if G.nodes[node]["kind"] != "aten::len":
        return True
    producers = G.nodes[node]["inputs"][0] if G.nodes[node]["inputs"] else []
    return any(G.has_edge(p, node) and G.edges[p, node].get("type") == "Tensor"
               for p in producers)


def _loc(data: dict) -> tuple[str, int] | None:
    if not data.get("user_source"):
        return None
    path, line, _ = Location.parse(data["user_source"])
    return path, line


def script_trace_divergence(script: nx.DiGraph, trace: nx.DiGraph,
                            match: GraphDiff | None = None) -> list[dict]:
    """What the script keeps (in user code) that the trace froze: ``{node, kind, why, source, code}``.

    A scripted node is kept when :func:`~irviz.analyses.graph_match.match_graphs` pairs it
    with a traced node of the same kind on the same line (``@torch.jit.script_if_tracing``
    keeps an ``if``); ``match`` is that pairing when the caller already has it."""
    match = match if match is not None else match_graphs(script, trace)

    def kept(node: str, kind: str) -> bool:
        partner = match.pairs.get(node)
        if partner is None:
            return False
        other = trace.nodes[partner]
        return other["kind"] == kind and _loc(other) == _loc(script.nodes[node])

    found = []
    for node, data in script.nodes(data=True):
        if not _user_code(data):
            continue
        kind = data["kind"]
        why = None
        if kind == "prim::If" and not kept(node, kind):
            why = _decides_on_runtime_value(script, node, [0])
        elif kind == "prim::Loop" and not kept(node, kind):
            why = _decides_on_runtime_value(script, node, [0, 1])
        elif kind in TRACEABLE_VALUES and not kept(node, kind):
            why = kind
        if why:
            found.append({"node": node, "kind": kind, "why": why, "source": data["source"],
                          "code": data.get("code")})
    return found


def canonical(G: nx.DiGraph) -> list[tuple]:
    """The drawn ops in order, each as (kind, user line, folded constant inputs)."""
    out = []
    for node, data in G.nodes(data=True):
        if data.get("hidden") or data["kind"] in ("prim::Param", "prim::Return"):
            continue
        consts = tuple(_const(G, p[0]) for p in data["inputs"]
                       if len(p) == 1 and p[0] in G and G.nodes[p[0]].get("hidden"))
        out.append((data["kind"], data.get("user_source"), consts, node))
    return out


def _const(G: nx.DiGraph, node: str) -> str:
    """A folded input as text: a constant, or a constant list like ``[3, -1]``."""
    data = G.nodes[node]
    if data["kind"] in ("prim::ListConstruct", "prim::TupleConstruct"):
        return "[" + ", ".join(_const(G, p[0]) for p in data["inputs"] if p) + "]"
    label = data["label"]
    try:  # a float is data (e.g. from .item()), not a shape: its value may differ freely
        float(label)
        return label if label.lstrip("-").isdigit() else "<float>"
    except ValueError:
        return label


def first_divergence(first: nx.DiGraph, second: nx.DiGraph) -> dict | None:
    """Where two traces part ways: ``{"index", "first", "second", "node", "source"}`` or None."""
    a, b = canonical(first), canonical(second)
    for i, (x, y) in enumerate(zip(a, b)):
        if x[:3] != y[:3]:
            return {"index": i, "first": _describe(x), "second": _describe(y), "node": x[3],
                    "source": x[1] or y[1]}
    if len(a) != len(b):
        longer, graph_first = (a, True) if len(a) > len(b) else (b, False)
        extra = longer[min(len(a), len(b))]
        return {"index": min(len(a), len(b)),
                "first": _describe(extra) if graph_first else f"end after {len(a)} ops",
                "second": _describe(extra) if not graph_first else f"end after {len(b)} ops",
                "node": extra[3], "source": extra[1],
                "counts": (len(a), len(b))}
    return None


def _describe(entry: tuple) -> str:
    kind, _, consts, _ = entry
    return kind + (f"({', '.join(consts)})" if consts else "")
