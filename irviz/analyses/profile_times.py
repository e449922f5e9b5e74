"""Measured op times on the IR graph: each profiled aten event matched to its node.

``render --profile`` runs the model under torch.profiler in a child process
(:func:`irviz.measure.run.profile_ops`); each top-level aten event comes back with the op,
its innermost TorchScript frame (``linear.py:134``) and the module it ran in (``l1``). An
IR node is keyed the same way: its kind, the file and line of its ``source`` and its
``scope``. Op plus line is not enough when calls share a line (``self.l2(self.l1(x))``):
the module path tells them apart. What is left ambiguous - one key, several nodes: a
module called three times at one line - is resolved by order: within one run, the n-th
event of a key belongs to the n-th node of that key in program order (several nodes in a
loop body: round robin). Events that no node takes are named, never dropped:
``irviz.profile_unmatched``. An event in a fork's task names its module relative to the
forked module (``cell_b`` for ``models.2.cell_b``): it fits every node whose module path
ends so, and identical members share their events in time order.

Each matched node gets ``irviz.profile``: ``{"self_us", "total_us", "calls"}``, the median
over the runs of its per-run sums; the graph gets ``irviz.profile_coverage`` (the fraction
of top-level aten time matched) and ``irviz.profile_runs``. Renderers read only these.
"""
from __future__ import annotations

import os
import statistics

import networkx as nx

__all__ = ["PROFILE", "COVERAGE", "UNMATCHED", "annotate_profile", "profile_of"]

PROFILE = "irviz.profile"
COVERAGE = "irviz.profile_coverage"
UNMATCHED = "irviz.profile_unmatched"
RUNS = "irviz.profile_runs"

#: a TorchScript op whose time the dispatcher records under another name
_EVENT_NAME = {"aten::Bool": "aten::item", "aten::Int": "aten::item",
               "aten::Float": "aten::item", "aten::ScalarImplicit": "aten::item"}


def profile_of(data: dict) -> dict | None:
    return data.get(PROFILE)


def _op_line(data: dict) -> tuple | None:
    """(event name, file basename, line) of a node, or None."""
    source = data.get("source")
    if not source or source.count(":") < 2:
        return None
    path, line, _ = source.rsplit(":", 2)
    try:
        line_no = int(line)
    except ValueError:
        return None
    return _EVENT_NAME.get(data["kind"], data["kind"]), os.path.basename(path), line_no


def _fork_site_of(G: nx.DiGraph, data: dict) -> str | None:
    """``model.py:37``: where the innermost fork around a node was forked, or None."""
    fork = data.get("subgraph_of")
    if fork is None or fork not in G:
        return None
    source = G.nodes[fork].get("source")
    if not source or source.count(":") < 2:
        return None
    path, line, _ = source.rsplit(":", 2)
    return f"{os.path.basename(path)}:{line}"


def _fits(scope: str, module: str, forked: bool) -> bool:
    """A node in module ``scope`` can be the event's. The profiler names only the modules
    that were *called*: a ``ModuleList``'s items appear without the list (``encoder.0``
    for ``encoder.layer.0``, ``0.attention`` for ``layers.0.attention``), so the scope may
    have extra components, each one just before a list index; both paths end in the same
    module, and a node whose path is the event's exactly is preferred. A fork's task names
    its path relative to the forked module: what lies above it is skipped."""
    want = module.split(".") if module else []
    have = scope.split(".") if scope else []
    if not want:
        return forked or not have
    if not have or have[-1] != want[-1]:
        return False
    if forked and len(have) > len(want):   # relative to the forked module: its end
        have = have[len(have) - len(want):] if have[len(have) - len(want):] == want else have
    i = j = 0
    while i < len(have) and j < len(want):
        if have[i] == want[j]:
            i, j = i + 1, j + 1
        elif i + 1 < len(have) and have[i + 1].isdigit():   # a list the profiler left out
            i += 1
        elif forked and j == 0:   # the path above the forked module
            i += 1
        else:
            return False
    return i == len(have) and j == len(want)


def annotate_profile(G: nx.DiGraph, events: list[dict], runs: int) -> None:
    """Put the profiled ``events`` (:class:`irviz.measure.op_events.OpEvent` dicts) on the
    nodes of ``G``."""
    by_line: dict[tuple, list[tuple[str, str, str | None]]] = {}
    for node, data in G.nodes(data=True):   # the builder adds nodes in program order
        if "::" not in data["kind"] or data["kind"].startswith("prim::"):
            continue
        key = _op_line(data)
        if key is not None:
            by_line.setdefault(key, []).append(
                (node, data.get("scope") or "", _fork_site_of(G, data)))
    grouped: dict[tuple, dict[int, list[dict]]] = {}
    for e in sorted(events, key=lambda e: (e["run"], e["order"])):
        key = (e["name"], e["file"], e["line"], e["module"], e.get("forked", False),
               e.get("fork_site"))
        grouped.setdefault(key, {}).setdefault(e["run"], []).append(e)
    per_node: dict[str, dict[int, list[float]]] = {}
    unmatched: dict[str, float] = {}
    total = matched = 0.0
    for key, per_run in grouped.items():
        here = [(n, scope) for n, scope, site in by_line.get(key[:3], [])
                if key[5] is None or site == key[5]]
        nodes = [n for n, scope in here if scope == key[3]] or \
            [n for n, scope in here if _fits(scope, key[3], key[4])]
        for run, evs in per_run.items():
            time_us = sum(e["total_us"] for e in evs)
            total += time_us
            if not nodes or (len(nodes) > 1 and len(evs) % len(nodes)):
                unmatched[key[0]] = unmatched.get(key[0], 0.0) + time_us
                continue
            matched += time_us
            for i, e in enumerate(evs):
                sums = per_node.setdefault(nodes[i % len(nodes)], {}).setdefault(
                    run, [0.0, 0.0, 0])
                sums[0] += e["self_us"]
                sums[1] += e["total_us"]
                sums[2] += 1
    for node, per_run in per_node.items():
        values = [per_run.get(r, [0.0, 0.0, 0]) for r in range(runs)]
        G.nodes[node][PROFILE] = {
            "self_us": round(statistics.median(v[0] for v in values), 3),
            "total_us": round(statistics.median(v[1] for v in values), 3),
            "calls": int(statistics.median(v[2] for v in values))}
    G.graph[COVERAGE] = round(matched / total, 4) if total else None
    G.graph[RUNS] = runs
    G.graph[UNMATCHED] = [{"name": name, "total_us": round(t / max(runs, 1), 3)}
                          for name, t in sorted(unmatched.items(), key=lambda kv: -kv[1])]
