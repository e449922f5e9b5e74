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

from ..location import Location
from .parallelism import measured_critical_path

__all__ = ["PROFILE", "COVERAGE", "UNMATCHED", "TASK_TIME", "MEASURED_CRITICAL",
           "MEASURED_SPAN", "MEMORY", "RUN_US", "annotate_profile", "profile_of", "task_time_of",
           "is_measured_critical", "measured_critical_nodes"]

PROFILE = "irviz.profile"
COVERAGE = "irviz.profile_coverage"
UNMATCHED = "irviz.profile_unmatched"
RUNS = "irviz.profile_runs"
#: on a fork: its task's measured time on its own thread and the overlap beside it
TASK_TIME = "irviz.profile_task"
#: on the nodes of the critical path by measured times (only with forks)
MEASURED_CRITICAL = "irviz.measured_critical"
#: the graph's measured critical path: µs per run
MEASURED_SPAN = "irviz.measured_span_us"
#: the graph's measured allocations of one run (``memory_peak``)
MEMORY = "irviz.profile_memory"
#: the graph's median wall time of one profiled run, µs
RUN_US = "irviz.profile_run_us"

#: a TorchScript op whose time the dispatcher records under another name
_EVENT_NAME = {"aten::Bool": "aten::item", "aten::Int": "aten::item",
               "aten::Float": "aten::item", "aten::ScalarImplicit": "aten::item"}


#: ops TorchScript's optimizer runs as two (its DecomposeOps pass: ``addmm`` -> ``mm`` +
#: ``add``, compiled from a string, so their only frame is ``<string>(3)`` and their
#: module the root): the piece that starts it, and the one that ends it
_DECOMPOSED = {"aten::mm": "aten::addmm", "aten::add": "aten::addmm"}
_FIRST_PIECE = "aten::mm"


def profile_of(data: dict) -> dict | None:
    return data.get(PROFILE)


def task_time_of(data: dict) -> dict | None:
    return data.get(TASK_TIME)


def is_measured_critical(data: dict) -> bool:
    return bool(data.get(MEASURED_CRITICAL))


def measured_critical_nodes(G: nx.DiGraph) -> list[str]:
    """The nodes :func:`is_measured_critical` marks, in program order (one pass, as
    :func:`~irviz.analyses.parallelism.critical_nodes`)."""
    return [node for node, data in G._node.items() if data.get(MEASURED_CRITICAL)]


def _op_line(data: dict) -> tuple | None:
    """(event name, file basename, line) of a node, or None. A loaded archive's node is
    keyed by its place in the archive's serialized code, which is what the profiler names."""
    if data.get("serialized_source"):
        path, line = data["serialized_source"].rsplit(":", 1)
    else:
        source = data.get("source")
        if not source or source.count(":") < 2:
            return None
        path, line, _ = source.rsplit(":", 2)
        path = os.path.basename(path)
    try:
        line_no = int(line)
    except ValueError:
        return None
    return _EVENT_NAME.get(data["kind"], data["kind"]), path, line_no


def _fork_site_of(G: nx.DiGraph, data: dict) -> str | None:
    """``model.py:37``: where the innermost fork around a node was forked, or None (an
    archive's: its place in the serialized code, as the profiler names it)."""
    fork = data.get("subgraph_of")
    if fork is None or fork not in G:
        return None
    if G.nodes[fork].get("serialized_source"):
        return G.nodes[fork]["serialized_source"]
    source = G.nodes[fork].get("source")
    if not source or source.count(":") < 2:
        return None
    path, line, _ = Location.parse(source)
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


def annotate_profile(G: nx.DiGraph, events: list[dict], runs: int,
                     memory: dict | None = None, run_us: float | None = None) -> dict[int, str]:
    """Put the profiled ``events`` (:class:`irviz.measure.op_events.OpEvent` dicts) on the
    nodes of ``G``, then what follows from them: each fork's measured task time and
    overlap, the measured critical path, and ``memory`` (one run's allocations). Returns
    the node of each matched event by its trace index (``--trace-out`` writes it there)."""
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
    assigned: list[tuple[dict, str]] = []
    unmatched: dict[str, float] = {}
    total = matched = 0.0
    pending: list[dict] = []   # pieces of a decomposed op: placed by order below
    for key, per_run in grouped.items():
        if key[1] == "<string>" and key[0] in _DECOMPOSED:
            pending += [e for evs in per_run.values() for e in evs]
            continue
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
                assigned.append((e, nodes[i % len(nodes)]))
                sums = per_node.setdefault(nodes[i % len(nodes)], {}).setdefault(
                    run, [0.0, 0.0, 0])
                sums[0] += e["self_us"]
                sums[1] += e["total_us"]
                sums[2] += 1
    placed = _place_decomposed(G, pending, assigned)
    for e, node in placed:
        sums = per_node.setdefault(node, {}).setdefault(e["run"], [0.0, 0.0, 0])
        sums[0] += e["self_us"]
        sums[1] += e["total_us"]
        sums[2] += 1 if e["name"] == _FIRST_PIECE else 0
        matched += e["total_us"]
    assigned += placed
    done = {id(e) for e, _ in placed}
    for e in pending:
        total += e["total_us"]
        if id(e) not in done:
            unmatched[e["name"]] = unmatched.get(e["name"], 0.0) + e["total_us"]
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
    _annotate_tasks(G, events, assigned, runs)
    path, span = measured_critical_path(
        G, {n: d[PROFILE]["total_us"] for n, d in G.nodes(data=True) if PROFILE in d})
    for node in path:
        G.nodes[node][MEASURED_CRITICAL] = True
    G.graph[MEASURED_SPAN] = round(span, 3) if path else None
    G.graph[MEMORY] = memory
    G.graph[RUN_US] = run_us
    return {e["index"]: node for e, node in assigned if e.get("index", -1) >= 0}


def _place_decomposed(G: nx.DiGraph, pending: list[dict],
                      assigned: list[tuple[dict, str]]) -> list[tuple[dict, str]]:
    """The pieces of decomposed ops (``mm`` then ``add`` for an ``addmm``) by order: a
    first piece belongs to the first node of the whole op after the node of the event
    before it (on its thread, in its run), the next piece to the same node."""
    if not pending:
        return []
    position = {n: i for i, n in enumerate(G.nodes)}
    wholes = sorted({_DECOMPOSED[e["name"]] for e in pending})
    by_kind = {k: [position[n] for n, d in G.nodes(data=True) if d["kind"] == k]
               for k in wholes}
    nodes = list(G.nodes)
    stream = sorted([(e, n) for e, n in assigned] + [(e, None) for e in pending],
                    key=lambda en: (en[0]["run"], en[0]["tid"], en[0]["order"]))
    out: list[tuple[dict, str]] = []
    last, current, lane = -1, None, None
    for e, node in stream:
        if (e["run"], e["tid"]) != lane:
            lane, last, current = (e["run"], e["tid"]), -1, None
        if node is not None:
            last = position[node]
            continue
        if e["name"] == _FIRST_PIECE:
            after = [p for p in by_kind.get(_DECOMPOSED[e["name"]], ()) if p > last]
            current = nodes[after[0]] if after else None
        if current is not None:
            out.append((e, current))
            last = position[current]
        if e["name"] != _FIRST_PIECE:   # the op's last piece
            current = None
    return out


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """How long two sorted, disjoint interval lists overlap."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _annotate_tasks(G: nx.DiGraph, events: list[dict], assigned: list[tuple[dict, str]],
                    runs: int) -> None:
    """Each fork's ``irviz.profile_task``: when its task's ops ran (``span_us``, from the
    first one's start to the last one's end), their time (``busy_us``), and for how long
    other ops - the caller's, other tasks' - ran at the same time as the task's own
    (``overlap_us``): the overlap the fork bought, read from the trace's threads (a pool
    thread runs many tasks, so the thread alone does not say whose op it is). Medians
    over the runs."""
    forks = [n for n, d in G.nodes(data=True) if d["kind"] in ("prim::fork", "prim::awaitable")]
    if not forks:
        return
    in_task: dict[str, set[str]] = {f: set() for f in forks}
    for node, data in G.nodes(data=True):
        fork = data.get("subgraph_of")
        while fork is not None and fork in in_task:
            in_task[fork].add(node)
            fork = G.nodes[fork].get("subgraph_of")
    node_of = {id(e): n for e, n in assigned}
    by_run: dict[int, list[dict]] = {}
    for e in events:
        by_run.setdefault(e["run"], []).append(e)
    for fork in forks:
        spans, busy, overlap, threads = [], [], [], set()
        for run in range(runs):
            mine, others = [], []
            for e in by_run.get(run, ()):
                (mine if node_of.get(id(e)) in in_task[fork] else others).append(e)
            if not mine:
                continue
            threads |= {e["tid"] for e in mine}
            spans.append(max(e["start_us"] + e["total_us"] for e in mine)
                         - min(e["start_us"] for e in mine))
            busy.append(sum(e["total_us"] for e in mine))
            overlap.append(_overlap(
                _union([(e["start_us"], e["start_us"] + e["total_us"]) for e in mine]),
                _union([(e["start_us"], e["start_us"] + e["total_us"]) for e in others])))
        if spans:
            G.nodes[fork][TASK_TIME] = {
                "span_us": round(statistics.median(spans), 3),
                "busy_us": round(statistics.median(busy), 3),
                "overlap_us": round(statistics.median(overlap), 3),
                "threads": len(threads)}
