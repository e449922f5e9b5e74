"""Loops a trace unrolled: the same ops from the same source lines, repeated back to back.

``torch.jit.trace`` (and ``torch.export``) record a Python ``for`` loop once per iteration.
torchvision's SSDlite post-processing loops over 90 classes, so its traced graph holds 90
copies of the same 14 lines: 1,937 top-level nodes that no budget could fold (they are not
module calls) and a layout that took minutes. Drawn in full, a reader sees a wall of
identical ops; what they want to see is "this ran 90 times".

This analysis finds such runs in each container of a traced or exported graph: the
sequence of its elements - its own drawn nodes, each keyed by its kind and source line, and
its child containers, each ONE element keyed by its kind, what it calls, its call line and
the keys of everything drawn inside (a forked task joins its ``prim::fork`` node's
element) - and maximal stretches where a period of that sequence repeats at least
:data:`MIN_ITERATIONS` times. So a loop that forks a task or calls a module per iteration
is found too; iterations of nothing but calls are left to the picture's rolling of
repeated calls (it names the modules, and keeps different types apart). It writes
``G.graph["irviz.unrolled"]``, one record per run, in program order::

    {"block": container, "iterations": [[first node, last node], ...], "lines": "ssd.py:433–446",
     "same_calls": True}

(each iteration's first and last node in program order, at any depth; ``lines``: the
source lines of one iteration, or its ops when the trace kept no line, as for
``aten::wait``; ``same_calls``: every iteration calls the same module objects, or none).
The picture rolls the middle iterations into one node when the graph is over its budget,
the way it rolls repeated module calls, and long loops of small iterations always
(:mod:`irviz.render.plan`). Scripted graphs keep their ``prim::Loop``: a repeated stretch
there is written out by hand, not unrolled, and is left alone.
"""
from __future__ import annotations

import bisect
import os
from dataclasses import dataclass

import networkx as nx

from ..ir.model import CALL_KINDS
from ..location import Location

UNROLLED = "irviz.unrolled"


def unroller(G) -> str:
    """Who unrolled the loops, for the picture's words: ``torch.export`` in an exported
    program's graph, else ``the trace``."""
    return "torch.export" if G.graph.get("mode") == "export" else "the trace"

#: fewest repeats of a stretch that count as an unrolled loop (the first and the last
#: iteration stay drawn when rolled, so at least one is rolled up)
MIN_ITERATIONS = 3
#: longest loop body looked for, in drawn nodes
MAX_PERIOD = 400
#: candidate periods tried per position (the next occurrences of its key)
_CANDIDATES = 8


def unrolled_runs(G: nx.DiGraph) -> list[dict]:
    """The runs :func:`annotate_unrolled_loops` found (empty before it ran)."""
    return G.graph.get(UNROLLED, [])


def _key(data: dict) -> tuple:
    return data["kind"], data.get("user_source") and data["user_source"].rsplit(":", 1)[0]


def _repeats(keys: list[tuple], i: int, p: int) -> int:
    """How many times ``keys[i:i+p]`` occurs back to back from ``i``."""
    n, k = len(keys), 1
    while i + (k + 1) * p <= n:
        base = i + k * p
        for j in range(p):
            if keys[base + j] != keys[i + j]:
                return k
        k += 1
    return k


def find_runs(keys: list[tuple]) -> list[tuple[int, int, int]]:
    """``(start, period, repeats)`` of every maximal repeated stretch of ``keys``, left to
    right: at each position the candidate period covering the most keys wins (ties: the
    shortest period)."""
    positions: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        positions.setdefault(key, []).append(i)
    runs, i, n = [], 0, len(keys)
    while i < n:
        where = positions[keys[i]]
        c = bisect.bisect_right(where, i)     # the next occurrences of this key
        best = None
        for j in where[c:c + _CANDIDATES]:
            p = j - i
            if p <= 0 or p > MAX_PERIOD or i + MIN_ITERATIONS * p > n:
                continue
            k = _repeats(keys, i, p)
            if k >= MIN_ITERATIONS and (best is None or k * p > best[2] * best[1]):
                best = (i, p, k)
        if best is None:
            i += 1
            continue
        runs.append(best)
        i += best[1] * best[2]
    return runs


def _lines(G: nx.DiGraph, first: str, last: str, program: list[str],
           order: dict[str, int]) -> str:
    """``ssd.py:433–446``: the source lines one iteration spans (file names only); the
    kinds of its ops when no node has a line (``aten::wait``: a trace keeps none)."""
    by_file: dict[str, list[int]] = {}
    kinds: list[str] = []
    for node in program[order[first]:order[last] + 1]:
        data = G.nodes[node]
        if data.get("hidden"):
            continue
        where = data.get("user_source")
        if where:
            path, line, _ = Location.parse(where)
            by_file.setdefault(os.path.basename(path), []).append(line)
        elif data["kind"] not in kinds:
            kinds.append(data["kind"])
    parts = []
    for name, lines in by_file.items():
        lo, hi = min(lines), max(lines)
        parts.append(f"{name}:{lo}" if lo == hi else f"{name}:{lo}–{hi}")
    return ", ".join(parts) or ", ".join(kinds[:3])


@dataclass(slots=True)
class _Element:
    """One element of a container's sequence: an own drawn node (``tag`` the node;
    ``owned``: the containers it owns, a fork's task, whose nodes extend it) or a child
    container (``tag`` the container, ``is_child`` True), keyed by what is drawn inside
    it at any depth; ``first``/``last``: its first and last node in program order."""

    key: tuple | None
    first: str
    last: str
    tag: str
    owned: list[str] | None = None   # made for the few elements that own a container
    is_child: bool = False


def _may_repeat(seq: list[_Element]) -> bool:
    """Whether a run with an own node in it could be found in ``seq``: one of its own
    nodes' (kind, line) keys occurs :data:`MIN_ITERATIONS` times (a run of calls only is
    left to the picture). Most containers hold a call's few ops, or calls only."""
    if len(seq) < MIN_ITERATIONS:
        return False
    seen: dict[tuple, int] = {}
    for element in seq:
        if not element.is_child:
            count = seen[element.key] = seen.get(element.key, 0) + 1
            if count >= MIN_ITERATIONS:
                return True
    return False


def _drawn_keys(G: nx.DiGraph):
    """``(node, data, key)`` of each drawn node in program order (not hidden, not a graph
    input or output), its :func:`_key` made once per (kind, line): most nodes repeat one.
    Read from networkx's own node dict: its view costs a call per node."""
    keys: dict[tuple, tuple] = {}
    for node, data in G._node.items():
        if data.get("hidden") or data["kind"] in ("prim::Param", "prim::Return"):
            continue
        where = data["kind"], data.get("user_source")
        key = keys.get(where)
        if key is None:
            key = keys[where] = _key(data)
        yield node, data, key


def _any_may_repeat(G: nx.DiGraph) -> bool:
    """Whether :func:`_may_repeat` may hold of some container: one of its own nodes' keys
    occurs :data:`MIN_ITERATIONS` times. One light pass over the drawn nodes, so that a
    graph with no such container (a module tree's trace: a call's few ops) builds no
    elements."""
    seen: dict[tuple, int] = {}   # (container, key) -> how often
    for _, data, key in _drawn_keys(G):
        place = data["block"], key
        count = seen[place] = seen.get(place, 0) + 1
        if count >= MIN_ITERATIONS:
            return True
    return False


def _elements(G: nx.DiGraph) -> dict[str, list[_Element]]:
    """Container -> its elements (:class:`_Element`) in program order, of the containers
    where a loop may be found (:func:`_may_repeat`); only their elements are keyed."""
    blocks = G.graph["blocks"]
    elements: dict[str, list[_Element]] = {}
    #: container -> the keys drawn in it, any depth (of the containers with a parent: a
    #: top-level one is never an element, so its keys are never compared)
    inside: dict[str, list[tuple]] = {}
    for node, data, key in _drawn_keys(G):
        child = data["block"]
        elements.setdefault(child, []).append(_Element(key, node, node, node))
        parent = blocks[child]["parent"]
        if parent is not None:
            inside.setdefault(child, []).append(key)
        while parent is not None:
            above = blocks[parent]["parent"]
            if above is not None:
                inside.setdefault(parent, []).append(key)
            seq = elements.setdefault(parent, [])
            last = seq[-1] if seq else None
            if last is not None and last.tag == child:
                last.last = node
            elif last is not None and last.tag == blocks[child].get("owner"):
                last.last = node
                if last.owned is None:
                    last.owned = [child]
                elif child not in last.owned:
                    last.owned.append(child)
            else:
                seq.append(_Element(None, node, node, child, is_child=True))
            child, parent = parent, above
    content: dict[tuple, int] = {}   # the keys drawn in a container, as a small number

    def signature(cid: str) -> tuple:
        info = blocks[cid]
        where = info.get("user_source")
        # a trace names a module's second call of forward "forward1", its third "forward2"
        method = (info.get("method") or "").rstrip("0123456789")
        return (info["kind"], info.get("qualified_type") or info["label"], method,
                where and where.rsplit(":", 1)[0],
                content.setdefault(tuple(inside.get(cid, ())), len(content)))

    candidates = {block: seq for block, seq in elements.items() if _may_repeat(seq)}
    for seq in candidates.values():
        for element in seq:
            if element.is_child:
                element.key = signature(element.tag)
            elif element.owned:
                element.key = (element.key, *(signature(c) for c in element.owned))
    return candidates


def annotate_unrolled_loops(G: nx.DiGraph) -> None:
    """Write ``G.graph["irviz.unrolled"]`` (see the module docstring)."""
    runs: list[dict] = []
    G.graph[UNROLLED] = runs
    if G.graph.get("mode") not in ("trace", "export"):
        return
    if not _any_may_repeat(G):
        return
    blocks = G.graph["blocks"]
    program: list[str] = []
    order: dict[str, int] = {}   # numbered when a run is found (most graphs have none)
    for block, seq in _elements(G).items():
        for start, period, repeats in find_runs([element.key for element in seq]):
            body = seq[start:start + period]
            if all(element.is_child for element in body):
                continue   # calls only: a run of calls, the picture rolls those itself
            iterations = [[seq[start + r * period].first,
                           seq[start + (r + 1) * period - 1].last] for r in range(repeats)]
            calls = [[blocks[e.tag].get("module") or e.tag
                      for e in seq[start + r * period:start + (r + 1) * period]
                      if e.is_child and blocks[e.tag]["kind"] in CALL_KINDS]
                     for r in range(repeats)]
            if not order:
                program = list(G)
                order.update((n, i) for i, n in enumerate(program))
            runs.append({"block": block, "iterations": iterations,
                         "lines": _lines(G, *iterations[0], program, order),
                         "same_calls": all(c == calls[0] for c in calls)})
    runs.sort(key=lambda run: order[run["iterations"][0][0]])
