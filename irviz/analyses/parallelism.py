"""Work, span, critical path and width of the fork/join program; the predicted speed-up.

The task DAG: within one thread of control (the entry graph, or one forked
task) operations run in program order; a ``prim::fork`` starts its task, and
each wait of the fork joins the task's end. Node weights are the cost
estimates of :mod:`irviz.analyses.cost` times how often the node runs on
that thread (loop trip counts; the tasks a loop forks run side by side unless
each is waited in the same iteration). Then::

    work  = sum of cost x executions            (the serial time)
    span  = longest weighted path (critical path)
    predicted speed-up = min(work / span, P)
    P = min(CPUs / intra-op threads,
            inter-op threads + 1 if the caller works beside its tasks, else + 0)

Annotates ``irviz.critical`` on critical-path nodes (only when there are forks:
otherwise the whole program is the path), ``irviz.task_cost`` and
``irviz.overlap_cost`` inside each fork's ``irviz.fork`` region, and
``G.graph["irviz.parallelism"]``.
"""
from __future__ import annotations

import os

import networkx as nx
import torch

from .fork_wait import (FORK_KINDS, GLUE_KINDS, container_chain, level_chain,
                        loop_multiplicity, program_order)


def _enclosing_forks(G: nx.DiGraph, node: str) -> list[str]:
    forks = []
    fork = G.nodes[node]["subgraph_of"]
    while fork is not None:
        forks.append(fork)
        fork = G.nodes[fork]["subgraph_of"]
    return forks


def _multiplicities(G: nx.DiGraph, node: str) -> tuple[int, int, bool]:
    """(runs in total, runs on the critical thread, a trip count was dynamic)."""
    block = G.nodes[node]["block"]
    total = loop_multiplicity(G, container_chain(G, block))
    on_thread = loop_multiplicity(G, level_chain(G, block))
    dynamic = total is None or on_thread is None
    on_thread = on_thread or 1
    for fork in _enclosing_forks(G, node):
        if G.nodes[fork]["irviz.fork"]["same_iteration"]:
            on_thread *= loop_multiplicity(G, level_chain(G, G.nodes[fork]["block"])) or 1
    return total or 1, on_thread, dynamic


def _task_dag(G: nx.DiGraph, order: dict[str, int]) -> nx.DiGraph:
    drawn = [n for n in G if not G.nodes[n].get("hidden")]
    levels: dict[str | None, list[str]] = {}
    for node in drawn:
        levels.setdefault(G.nodes[node]["subgraph_of"], []).append(node)
    D = nx.DiGraph()
    D.add_nodes_from(drawn)
    for chain in levels.values():
        nx.add_path(D, chain)
    for node in drawn:
        if G.nodes[node]["kind"] not in FORK_KINDS:
            continue
        task = levels.get(node, [])
        if not task:
            continue
        D.add_edge(node, task[0])
        for wait in G.nodes[node].get("irviz.waits", []):
            D.add_edge(task[-1], wait)
    return D


def _width(G: nx.DiGraph, level: str | None, levels: dict, order: dict[str, int]) -> int:
    """1 + the most task instances in flight at once on this thread (recursively)."""
    events = []
    for node in levels.get(level, []):
        data = G.nodes[node]
        if data["kind"] not in FORK_KINDS:
            continue
        region = data["irviz.fork"]
        count = 1 if region["same_iteration"] else (
            loop_multiplicity(G, level_chain(G, data["block"])) or 1)
        waits = data.get("irviz.waits") or []
        end = order[waits[0]] if waits else len(order)
        inner = _width(G, node, levels, order)
        events.append((order[node], count * inner))
        events.append((end, -count * inner))
    active = peak = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
        active += delta
        peak = max(peak, active)
    return 1 + peak


def annotate_parallelism(G: nx.DiGraph, interop_threads: int | None = None,
                         cpu_count: int | None = None, intraop_threads: int | None = None) -> dict:
    """Compute and annotate work, span, critical path, width and predicted speed-up."""
    order = program_order(G)
    weight: dict[str, float] = {}
    work = 0.0
    dynamic = False
    per_place: dict[tuple, tuple[int, int, bool]] = {}   # nodes of one block share them
    for node, data in G.nodes(data=True):
        cost = data.get("irviz.cost", {}).get("cost", 0.0)
        place = (data["block"], data["subgraph_of"])
        if place not in per_place:
            per_place[place] = _multiplicities(G, node)
        total, on_thread, dyn = per_place[place]
        dynamic |= dyn and cost > 0
        work += cost * total
        weight[node] = cost * on_thread
    D = _task_dag(G, order)
    dist: dict[str, float] = {}
    best_pred: dict[str, str | None] = {}
    for node in nx.topological_sort(D):
        preds = list(D.predecessors(node))
        pred = max(preds, key=lambda p: (dist[p], -order[p])) if preds else None
        dist[node] = weight[node] + (dist[pred] if pred is not None else 0.0)
        best_pred[node] = pred
    end = max(dist, key=lambda n: (dist[n], -order[n])) if dist else None
    span = dist[end] if end is not None else 0.0
    path = []
    while end is not None:
        path.append(end)
        end = best_pred[end]
    path.reverse()
    if any(G.nodes[n]["kind"] in FORK_KINDS for n in G):  # else the path is the whole program
        for node in path:
            G.nodes[node]["irviz.critical"] = True
    levels: dict[str | None, list[str]] = {}
    for node in G:
        if not G.nodes[node].get("hidden"):
            levels.setdefault(G.nodes[node]["subgraph_of"], []).append(node)
    for fork, data in G.nodes(data=True):
        if data["kind"] in FORK_KINDS:
            region = data["irviz.fork"]
            region["task_cost"] = round(sum(weight[n] for n in region["task_nodes"]), 3)
            region["overlap_cost"] = round(sum(weight[n] for n in region["overlap"]), 3)
    interop = interop_threads or torch.get_num_interop_threads()
    cpus = cpu_count or os.cpu_count() or 1
    # tasks run on the inter-op pool; the caller adds a worker only when it has its own
    # work beside its tasks (measured: BiFork 1.9x with 1 pool thread, LSTMEnsemble 0.92x)
    caller_works = any(
        G.nodes[f]["subgraph_of"] is None and any(
            G.nodes[n]["kind"] not in GLUE_KINDS and G.nodes[n]["kind"] not in FORK_KINDS
            for n in G.nodes[f]["irviz.fork"]["overlap"])
        for f in G if G.nodes[f]["kind"] in FORK_KINDS)
    # each op already runs on `intra` threads: the cores left for overlap are cpus / intra
    # (measured: with torch's default intra-op threads the forks gained 1.0-1.15x)
    intra = intraop_threads or torch.get_num_threads()
    limit = max(1.0, min(cpus / max(1, intra), interop + (1 if caller_works else 0)))
    parallelism = work / span if span > 0 else 1.0
    facts = {
        "unit": G.graph.get("irviz.cost_model", {}).get("unit", "ops"),
        "work": round(work, 3), "span": round(span, 3),
        "parallelism": round(parallelism, 3),
        "predicted_speedup": round(min(parallelism, limit), 3),
        # the same with one intra-op thread per op, the setting where forks usually pay off
        "predicted_speedup_intraop1": round(min(parallelism, max(1.0, min(
            cpus, interop + (1 if caller_works else 0)))), 3),
        "limit": round(limit, 3), "interop_threads": interop, "cpu_count": cpus,
        "intraop_threads": intra,
        "caller_works": caller_works,
        "width": _width(G, None, levels, order),
        "critical_path": path, "dynamic_trip_counts": dynamic,
    }
    G.graph["irviz.parallelism"] = facts
    G.graph["irviz.hazards"] = _hazards(G, interop, facts["unit"])
    return facts


#: hazards, named as the lint rule that reports each one (``irviz rule NAME``); a wait
#: without a fork has no rule: the report lists it under "Unpaired"
HAZARDS = {
    "wait-immediately-after-fork": "the future is waited with no work in between: the fork buys nothing",
    "fork-wait-same-iteration": "fork and wait in the same loop iteration: the tasks run one "
                                "after another",
    "fork-single-interop-thread": "torch has 1 inter-op thread: forked tasks cannot run in parallel",
    "fork-tiny-task": "the task costs less than launching it (about {overhead:.0f} us per fork)",
    "fork-never-waited": "the future is never waited (it is returned or dropped)",
    "wait-without-fork": "no fork could be found for this wait's future",
}


def _hazards(G: nx.DiGraph, interop: int, unit: str) -> list[dict]:
    from .cost import FORK_OVERHEAD_US

    found = []

    def add(code, node, **extra):
        text = HAZARDS[code].format(overhead=FORK_OVERHEAD_US)
        found.append({"code": code, "node": node, "message": text,
                      "source": G.nodes[node].get("user_source") or G.nodes[node].get("source"),
                      **extra})

    forks = [n for n, d in G.nodes(data=True) if d["kind"] in FORK_KINDS]
    for fork in forks:
        data = G.nodes[fork]
        region = data["irviz.fork"]
        waits = data.get("irviz.waits") or []
        if not waits:
            add("fork-never-waited", fork)
            continue
        if region["same_iteration"]:
            add("fork-wait-same-iteration", fork, wait=waits[0])
        elif not (region["overlap_has_work"] or region["concurrent"]
                  or region["instances"] != 1):  # a loop of forks runs its tasks together
            add("wait-immediately-after-fork", fork, wait=waits[0])
        if unit == "us" and region["task_cost"] < FORK_OVERHEAD_US:
            add("fork-tiny-task", fork, task_cost=region["task_cost"])
    for wait in G.graph.get("irviz.unpaired", {}).get("waits", []):
        add("wait-without-fork", wait)
    if forks and interop == 1:
        add("fork-single-interop-thread", forks[0])
    return found
