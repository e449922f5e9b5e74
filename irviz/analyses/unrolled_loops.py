"""Loops a trace unrolled: the same ops from the same source lines, repeated back to back.

``torch.jit.trace`` (and ``torch.export``) record a Python ``for`` loop once per iteration.
torchvision's SSDlite post-processing loops over 90 classes, so its traced graph holds 90
copies of the same 14 lines: 1,937 top-level nodes that no budget could fold (they are not
module calls) and a layout that took minutes. Drawn in full, a reader sees a wall of
identical ops; what they want to see is "this ran 90 times".

This analysis finds such runs in each container of a traced or exported graph: the
sequence of its own drawn nodes, each keyed by its kind and source line, and maximal
stretches where a period of that sequence repeats at least :data:`MIN_ITERATIONS` times.
It writes ``G.graph["irviz.unrolled"]``, one record per run, in program order::

    {"block": container, "iterations": [[first node, last node], ...], "lines": "ssd.py:433–446"}

(each iteration's first and last node in program order). The picture rolls the middle
iterations into one node when the graph is over its budget, the way it rolls repeated
module calls (:mod:`irviz.render.plan`). Scripted graphs keep their ``prim::Loop``: a
repeated stretch there is written out by hand, not unrolled, and is left alone.
"""
from __future__ import annotations

import bisect
import os

import networkx as nx

UNROLLED = "irviz.unrolled"

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


def _lines(G: nx.DiGraph, nodes: list[str]) -> str:
    """``ssd.py:433–446``: the source lines one iteration spans (file names only)."""
    by_file: dict[str, list[int]] = {}
    for node in nodes:
        where = G.nodes[node].get("user_source")
        if where:
            path, line, _ = where.rsplit(":", 2)
            by_file.setdefault(os.path.basename(path), []).append(int(line))
    parts = []
    for name, lines in by_file.items():
        lo, hi = min(lines), max(lines)
        parts.append(f"{name}:{lo}" if lo == hi else f"{name}:{lo}–{hi}")
    return ", ".join(parts)


def annotate_unrolled_loops(G: nx.DiGraph) -> None:
    """Write ``G.graph["irviz.unrolled"]`` (see the module docstring)."""
    runs: list[dict] = []
    G.graph[UNROLLED] = runs
    if G.graph.get("mode") not in ("trace", "export"):
        return
    program = list(G)
    order = {n: i for i, n in enumerate(program)}
    own: dict[str, list[str]] = {}
    for node, data in G.nodes(data=True):
        if not data.get("hidden") and data["kind"] not in ("prim::Param", "prim::Return"):
            own.setdefault(data["block"], []).append(node)
    for block, nodes in own.items():
        # only stretches no other container interrupts: an iteration that calls a module
        # is a run of repeated calls, which the picture rolls on its own
        segments: list[list[str]] = [[]]
        for a, b in zip(nodes, nodes[1:] + [None]):
            segments[-1].append(a)
            if b is not None and any(G.nodes[m]["block"] != block
                                     and not G.nodes[m].get("hidden")
                                     for m in program[order[a] + 1:order[b]]):
                segments.append([])
        for seg in segments:
            keys = [_key(G.nodes[n]) for n in seg]
            for start, period, repeats in find_runs(keys):
                iterations = [[seg[start + r * period], seg[start + (r + 1) * period - 1]]
                              for r in range(repeats)]
                runs.append({"block": block, "iterations": iterations,
                             "lines": _lines(G, seg[start:start + period])})
    runs.sort(key=lambda run: order[run["iterations"][0][0]])
