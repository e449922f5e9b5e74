"""Work, span, critical path and width of the fork/join program; the predicted speed-up.

The task DAG: within one thread of control (the entry graph, or one forked
task) operations run in program order; a ``prim::fork`` starts its task, and
each wait of the fork joins the task's end. Node weights are the cost
estimates of :mod:`irviz.analyses.cost` times how often the node runs on
that thread (loop trip counts; the tasks a loop forks run side by side unless
each is waited in the same iteration). Then::

    work  = sum of cost x executions            (the serial time)
    span  = longest weighted path (critical path)
    limit P = min(CPUs / intra-op threads,
                  inter-op threads + 1 if the caller works beside its tasks, else + 0)

The predicted speed-up is not min(work / span, P) any more (that counted threads, and
was off by 40 % both ways on the seed ensembles): :mod:`irviz.analyses.prediction`
plays the task DAG out on the inter-op pool, the caller and the cores with each op's
intra-op threads from its size (:mod:`irviz.analyses.schedule`,
:mod:`irviz.analyses.intraop`), for the current thread setting and for the setting
matrix ``irviz report --measure`` runs (``predictions``). work/span and P stay as bounds.

Annotates its own records (read them with the accessors below): ``irviz.critical``
(True) on critical-path nodes (only when there are forks: otherwise the whole program is
the path), ``irviz.task`` (:class:`TaskCosts`) on each fork, ``G.graph["irviz.parallelism"]``
(:class:`ParallelismFacts`) and ``G.graph["irviz.hazards"]`` (:class:`Hazard` list).
"""
from __future__ import annotations

import os
import weakref
from dataclasses import dataclass, field
from typing import Callable

import networkx as nx
import torch

from ..ir.model import FORK_KINDS
from .cost import _FREE, COST, FORK_OVERHEAD_US, cost_model, cost_of
from .fork_wait import (GLUE_KINDS, block_runs, program_order, region, runs_on_thread,
                        runs_once, unpaired, waits)

CRITICAL, TASK, FACTS, HAZARDS_KEY = ("irviz.critical", "irviz.task", "irviz.parallelism",
                                      "irviz.hazards")
#: graph -> the nodes this analysis marked :data:`CRITICAL` on it, in program order (none
#: without a fork): :func:`critical_nodes` without a pass over the nodes. Beside the graph,
#: not in ``G.graph`` (which the JSON writes whole); a graph made from marked nodes (a diff's
#: union, a copy) is not in it
_MARKED: "weakref.WeakKeyDictionary[nx.DiGraph, list[str]]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class TaskCosts:
    """What one fork's task costs, and the work its thread does beside it."""

    task_cost: float       # the task's nodes, times how often each runs on its thread
    overlap_cost: float    # the overlap window's nodes, likewise


@dataclass(frozen=True)
class ParallelismFacts:
    """The whole program as a fork/join DAG (see the module doc)."""

    unit: str                         # the cost unit: "us" or "ops"
    work: float                       # serial time: every node's cost x executions
    span: float                       # the critical path's cost
    parallelism: float                # work / span
    predicted_speedup: float          # min(parallelism, limit)
    predicted_speedup_intraop1: float  # the same with one intra-op thread per op
    limit: float                      # P, the most workers the forks can use
    interop_threads: int
    cpu_count: int
    intraop_threads: int
    caller_works: bool                # the caller has its own work beside its tasks
    width: int                        # 1 + the most task instances in flight at once
    critical_path: list[str] = field(default_factory=list)
    dynamic_trip_counts: bool = False
    #: the static prediction for each setting of the measured matrix (current first)
    predictions: list["SettingPrediction"] = field(default_factory=list)
    #: "simulated" (the schedule played out) or "bound" (min(work/span, P): it failed)
    prediction_basis: str = "simulated"


@dataclass(frozen=True)
class SettingPrediction:
    """The static predicted speed-up of one (intra-op, inter-op) thread setting."""

    intra_op: int
    inter_op: int
    predicted_speedup: float
    #: the simulated forked time, in the cost unit (compare settings with it)
    forked_time: float = 0.0


@dataclass(frozen=True)
class Hazard:
    """A fork/wait pattern that costs parallelism, named as the lint rule that reports
    it (``irviz rule NAME``); ``wait-without-fork`` has no rule."""

    code: str
    node: str
    message: str
    source: str | None
    wait: str | None = None
    task_cost: float | None = None


def is_critical(data: dict) -> bool:
    return bool(data.get(CRITICAL))


def critical_nodes(G: nx.DiGraph) -> list[str]:
    """The nodes :func:`is_critical` marks, in program order: as the analysis listed them
    (none without a fork: the picture of a model without forks asks twice, and a pass over
    100k nodes costs 45 ms), else (a graph made of marked nodes: a diff's union, a copy) one
    pass over networkx's own node dict."""
    listed = _MARKED.get(G)
    if listed is not None:
        return listed
    return [node for node, data in G._node.items() if data.get(CRITICAL)]


def task_costs(data: dict) -> TaskCosts | None:
    return data.get(TASK)


def facts(G: nx.DiGraph) -> ParallelismFacts | None:
    return G.graph.get(FACTS)


def hazards(G: nx.DiGraph) -> list[Hazard]:
    return G.graph.get(HAZARDS_KEY, [])


def _multiplicities(G: nx.DiGraph, node: str, block: str, level: str | None,
                    runs: Callable) -> tuple[int, int, bool]:
    """(runs in total, runs on its thread, a trip count was dynamic) of ``node`` in
    ``block`` on the thread of ``level`` (its ``subgraph_of``); ``runs``: a
    :func:`block_runs` of ``G``."""
    total, here = runs(block)
    on_thread = (here or 1) if level is None else runs_on_thread(G, node, runs)
    return total or 1, on_thread, total is None or here is None


def _task_dag(G: nx.DiGraph, drawn: list[str], levels: dict[str | None, list[str]],
              forks: list[str]) -> nx.DiGraph:
    """The drawn nodes, each thread's in program order, a fork before its task's first
    node and its task's last node before each of its waits."""
    D = nx.DiGraph()
    D.add_nodes_from(drawn)
    for chain in levels.values():
        nx.add_path(D, chain)
    for node in forks:
        task = levels.get(node, [])
        if not task or G.nodes[node].get("hidden"):
            continue
        D.add_edge(node, task[0])
        for wait in waits(G.nodes[node]):
            D.add_edge(task[-1], wait)
    return D


def _width(G: nx.DiGraph, level: str | None, levels: dict, order: dict[str, int],
           runs: Callable) -> int:
    """1 + the most task instances in flight at once on this thread (recursively);
    ``runs``: a :func:`block_runs` of ``G``."""
    events = []
    for node in levels.get(level, []):
        data = G.nodes[node]
        if data["kind"] not in FORK_KINDS:
            continue
        count = 1 if region(data).same_iteration else (runs(data["block"])[1] or 1)
        reached = waits(data)
        end = order[reached[0]] if reached else len(order)
        inner = _width(G, node, levels, order, runs)
        events.append((order[node], count * inner))
        events.append((end, -count * inner))
    active = peak = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
        active += delta
        peak = max(peak, active)
    return 1 + peak


def _longest_path(D: nx.DiGraph, weight: dict[str, float],
                  order: dict[str, int]) -> tuple[list[str], float]:
    """The heaviest path through the task DAG ``D`` and its weight (ties: program order)."""
    dist: dict[str, float] = {}
    best_pred: dict[str, str | None] = {}
    for node in nx.topological_sort(D):
        preds = list(D.predecessors(node))
        if len(preds) == 1:   # most nodes: the one before them on their thread
            pred = preds[0]
        else:
            pred = max(preds, key=lambda p: (dist[p], -order[p])) if preds else None
        dist[node] = weight.get(node, 0.0) + (dist[pred] if pred is not None else 0.0)
        best_pred[node] = pred
    end = max(dist, key=lambda n: (dist[n], -order[n])) if dist else None
    span = dist[end] if end is not None else 0.0
    path = []
    while end is not None:
        path.append(end)
        end = best_pred[end]
    path.reverse()
    return path, span


def _chain_path(chain: list[str], weight: dict[str, float]) -> tuple[list[str], float]:
    """:func:`_longest_path` of one thread and no forks, where the task DAG is ``chain``
    (program order) itself: the path runs from its start to its heaviest prefix."""
    dist = span = 0.0
    end = -1
    for at, node in enumerate(chain):
        dist = weight.get(node, 0.0) + dist
        if end < 0 or dist > span:   # ties: the earlier node, as there
            end, span = at, dist
    return chain[:end + 1], span


def measured_critical_path(G: nx.DiGraph, weight: dict[str, float]) -> tuple[list[str], float]:
    """The critical path with measured times (``weight``: µs per node and run) instead of
    the cost model's: the same task DAG, each thread in program order, a task beside its
    caller until its wait. Empty when the program has no forks (then it is all of it)."""
    forks = [n for n, d in G.nodes(data=True) if d["kind"] in FORK_KINDS]
    if not forks:
        return [], 0.0
    levels: dict[str | None, list[str]] = {}
    drawn = []
    for node, data in G.nodes(data=True):
        if not data.get("hidden"):
            drawn.append(node)
            levels.setdefault(data["subgraph_of"], []).append(node)
    return _longest_path(_task_dag(G, drawn, levels, forks), weight, program_order(G))


def annotate_parallelism(G: nx.DiGraph, interop_threads: int | None = None,
                         cpu_count: int | None = None,
                         intraop_threads: int | None = None) -> ParallelismFacts:
    """Compute and annotate work, span, critical path, width and predicted speed-up."""
    weight: dict[str, float] = {}   # of the nodes that cost something
    work = 0.0
    dynamic = False
    per_place: dict[tuple, tuple[int, int, bool]] = {}   # nodes of one block share them
    forks: list[str] = []
    #: the drawn (not hidden) nodes of each thread (None: the caller's), in program order
    levels: dict[str | None, list[str]] = {}
    drawn: list[str] = []
    runs = block_runs(G)
    # a module tree's trace: every block (one a call) runs once, asked for nothing
    once = runs_once(G)
    block = level = None   # the last place's: a program's nodes come in runs
    found = (1, 1, False)
    for node, data in G._node.items():   # networkx's own dict: its view costs a call a node
        if data["kind"] in FORK_KINDS:
            forks.append(node)
        if not data.get("hidden"):
            drawn.append(node)
            levels.setdefault(data["subgraph_of"], []).append(node)
        cost = data.get(COST, _FREE).cost   # cost_of, without a call per node
        if not cost:
            continue   # weighs nothing, however often it runs (most nodes: constants)
        if not once and (data["block"] is not block or data["subgraph_of"] is not level):
            block, level = data["block"], data["subgraph_of"]
            found = per_place.get((block, level))
            if found is None:
                found = per_place[block, level] = _multiplicities(G, node, block, level, runs)
        total, on_thread, dyn = found
        dynamic |= dyn
        work += cost * total
        weight[node] = cost * on_thread
    if forks or len(levels) > 1:
        order = program_order(G)
        path, span = _longest_path(_task_dag(G, drawn, levels, forks), weight, order)
        width = _width(G, None, levels, order, runs)
    else:   # one thread: the task DAG is the program itself
        path, span = _chain_path(drawn, weight)
        width = 1
    marked: list[str] = []
    if forks:  # else the path is the whole program
        for node in path:
            G.nodes[node][CRITICAL] = True
        on_path = set(path)
        marked = [node for node in G if node in on_path]
    _MARKED[G] = marked
    for fork in forks:   # only forks have a region
        data = G.nodes[fork]
        found = region(data)
        if found is not None:
            data[TASK] = TaskCosts(
                task_cost=round(sum(weight.get(n, 0.0) for n in found.task_nodes), 3),
                overlap_cost=round(sum(weight.get(n, 0.0) for n in found.overlap), 3))
    interop = interop_threads or torch.get_num_interop_threads()
    cpus = cpu_count or os.cpu_count() or 1
    # tasks run on the inter-op pool; the caller adds a worker only when it has its own
    # work beside its tasks (measured: BiFork 1.9x with 1 pool thread, LSTMEnsemble 0.92x)
    caller_works = any(
        G.nodes[f]["subgraph_of"] is None and any(
            G.nodes[n]["kind"] not in GLUE_KINDS and G.nodes[n]["kind"] not in FORK_KINDS
            for n in region(G.nodes[f]).overlap)
        for f in forks)
    # each op already runs on `intra` threads: the cores left for overlap are cpus / intra
    # (measured: with torch's default intra-op threads the forks gained 1.0-1.15x)
    intra = intraop_threads or torch.get_num_threads()
    limit = max(1.0, min(cpus / max(1, intra), interop + (1 if caller_works else 0)))
    parallelism = work / span if span > 0 else 1.0
    model = cost_model(G)
    unit = model.unit if model is not None else "ops"
    bound = round(min(parallelism, limit), 3)
    bound1 = round(min(parallelism, max(1.0, min(cpus, interop + (1 if caller_works else 0)))), 3)
    predictions, basis = _simulated(G, intra, interop, cpus, forked=bool(forks))
    now = next((p.predicted_speedup for p in predictions
                if (p.intra_op, p.inter_op) == (intra, interop)), bound)
    one = next((p.predicted_speedup for p in predictions
                if (p.intra_op, p.inter_op) == (1, interop)), None)
    if one is None and basis == "simulated":
        one = _simulated(G, 1, interop, cpus, matrix=False,
                         forked=bool(forks))[0][0].predicted_speedup
    result = ParallelismFacts(
        unit=unit, work=round(work, 3), span=round(span, 3),
        parallelism=round(parallelism, 3),
        predicted_speedup=now,
        predicted_speedup_intraop1=one if one is not None else bound1,
        limit=round(limit, 3), interop_threads=interop, cpu_count=cpus,
        intraop_threads=intra, caller_works=caller_works,
        width=width, critical_path=path,
        dynamic_trip_counts=dynamic, predictions=predictions, prediction_basis=basis)
    G.graph[FACTS] = result
    G.graph[HAZARDS_KEY] = _hazards(G, interop, unit, forks)
    return result


@dataclass(frozen=True)
class DataflowBound:
    """What a parallel executor could make of a program with no forks (an exported one):
    its ops as a DAG of their data dependences alone, each at its estimated cost."""

    work: float
    span: float
    parallelism: float       # work / span: the most any number of workers could gain


def dataflow_bound(G: nx.DiGraph) -> DataflowBound:
    """Work and span of ``G``'s data dependences (``torch.export``'s interpreter runs the
    ops one after another; independent branches are what NativeRT's experimental
    ParallelGraphExecutor could overlap)."""
    weight = {n: cost_of(d) for n, d in G.nodes(data=True)}
    longest: dict[str, float] = {}
    for node in nx.topological_sort(G):
        preds = [longest[p] for p in G.predecessors(node)]
        longest[node] = weight[node] + (max(preds) if preds else 0.0)
    work = sum(weight.values())
    span = max(longest.values(), default=0.0)
    return DataflowBound(round(work, 3), round(span, 3),
                         round(work / span, 3) if span > 0 else 1.0)


def setting_matrix(intra: int, interop: int, cpus: int) -> list[tuple[int, int]]:
    """The current setting, then ``irviz report --measure``'s matrix: torch's default,
    intra-op 1 with CPUs inter-op threads, intra-op 1 with 2 x CPUs."""
    out: list[tuple[int, int]] = []
    for s in [(intra, interop), (torch.get_num_threads(), torch.get_num_interop_threads()),
              (1, cpus), (1, 2 * cpus)]:
        if s not in out:
            out.append(s)
    return out


def _simulated(G: nx.DiGraph, intra: int, interop: int, cpus: int, matrix: bool = True,
               forked: bool = True) -> tuple[list[SettingPrediction], str]:
    """Static predictions of the setting matrix (or of (intra, interop) alone);
    ``forked``: the graph has a fork (else nothing runs in parallel)."""
    from .prediction import predict

    if not forked:
        settings = setting_matrix(intra, interop, cpus) if matrix else [(intra, interop)]
        return [SettingPrediction(a, b, 1.0) for a, b in settings], "simulated"
    out = []
    try:
        for a, b in (setting_matrix(intra, interop, cpus) if matrix else [(intra, interop)]):
            found = predict(G, a, b, cpus)
            out.append(SettingPrediction(a, b, found.speedup, found.forked_us))
    except (ValueError, KeyError, RecursionError):   # a program the simulation cannot play
        return [], "bound"
    return out, "simulated"


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


def _hazards(G: nx.DiGraph, interop: int, unit: str, forks: list[str]) -> list[Hazard]:
    found: list[Hazard] = []

    def add(code, node, **extra):
        text = HAZARDS[code].format(overhead=FORK_OVERHEAD_US)
        source = G.nodes[node].get("user_source") or G.nodes[node].get("source")
        found.append(Hazard(code=code, node=node, message=text, source=source, **extra))

    for fork in forks:
        data = G.nodes[fork]
        found_region, reached = region(data), waits(data)
        if not reached:
            add("fork-never-waited", fork)
            continue
        if found_region.same_iteration:
            add("fork-wait-same-iteration", fork, wait=reached[0])
        elif not (found_region.overlap_has_work or found_region.concurrent
                  or found_region.instances != 1):  # a loop of forks runs its tasks together
            add("wait-immediately-after-fork", fork, wait=reached[0])
        cost = task_costs(data).task_cost
        if unit == "us" and cost < FORK_OVERHEAD_US:
            add("fork-tiny-task", fork, task_cost=cost)
    for wait in unpaired(G).waits:
        add("wait-without-fork", wait)
    if forks and interop == 1:
        add("fork-single-interop-thread", forks[0])
    return found
