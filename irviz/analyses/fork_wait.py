"""Fork/wait facts: which wait consumes which future, and each fork's region.

Pairing follows the future's dataflow, not adjacency: along every edge that
carries a ``Future`` (directly or inside a list/tuple), through method
boundaries (calls are expanded in the IR graph, so a future returned by a
callee flows straight to the caller's wait), and from a container-mutating op
(``aten::append(list, fut)``) back to the container's definition, because
TorchScript keeps using the original list value after an in-place append.

Annotates (its own keys only; structure untouched), read through the accessors below:

* wait nodes: ``irviz.forks`` - the forks whose future they may wait on;
* fork nodes: ``irviz.waits`` - the waits reached (empty: never waited), and
  ``irviz.fork`` - a :class:`ForkRegion`;
* overlap-window nodes: ``irviz.overlaps`` - the forks they run beside;
* graph: ``irviz.unpaired`` - an :class:`Unpaired`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from ..ir.model import FORK_KINDS, LOOP_BODY, TASK_KINDS, WAIT_KINDS

REGION, WAITS, FORKS, OVERLAPS, UNPAIRED = ("irviz.fork", "irviz.waits", "irviz.forks",
                                            "irviz.overlaps", "irviz.unpaired")


@dataclass
class ForkRegion:
    """What one fork starts and what its thread does until the first wait."""

    #: what the task runs, in the report's words: ``models.0.forward``, ``fork_basics.foo``,
    #: ``aten::neg`` (one traced op) or ``N traced ops``
    callee: str
    #: the method/function container the task calls (None: traced ops, no call)
    call: str | None
    #: how many tasks this fork starts: the trip counts of the loops around it (None: dynamic)
    instances: int | None
    #: the innermost loop body / if branch around the fork on its own thread, or None
    loop: str | None
    branch: str | None
    #: the fork whose task this fork is in (None: the caller's thread)
    nested_in: str | None
    #: the IR nodes of the task
    task_nodes: list[str]
    #: the overlap window: nodes between the fork and its first wait that do not need it
    overlap: list[str]
    #: the fork and a wait of it in the same loop iteration
    same_iteration: bool
    #: the window holds real work (not only list/tuple bookkeeping)
    overlap_has_work: bool
    #: other forks of the same thread in flight at the same time
    concurrent: list[str] = field(default_factory=list)


@dataclass
class Unpaired:
    """Forks no wait was found for, and waits no fork was found for."""

    forks: list[str] = field(default_factory=list)
    waits: list[str] = field(default_factory=list)


def region(data: dict) -> ForkRegion | None:
    """The region of a fork node's data (None for other nodes)."""
    return data.get(REGION)


def waits(data: dict) -> list[str]:
    """The waits a fork node's future reaches."""
    return data.get(WAITS, [])


def forks_waited(data: dict) -> list[str]:
    """The forks a wait node may wait on."""
    return data.get(FORKS, [])


def overlapping(data: dict) -> list[str]:
    """The forks whose task a node runs beside."""
    return data.get(OVERLAPS, [])


def unpaired(G: nx.DiGraph) -> Unpaired:
    return G.graph.get(UNPAIRED) or Unpaired()
#: ops that store their 2nd+ argument into the container passed as 1st argument
CONTAINER_WRITES = ("aten::append", "aten::insert", "aten::_set_item", "aten::extend",
                    "aten::add_")
#: bookkeeping ops that do no work worth overlapping with a task (another fork in the
#: window is work: its task runs beside this one)
GLUE_KINDS = ("prim::ListConstruct", "prim::TupleConstruct", "prim::TupleUnpack",
              "prim::ListUnpack", "aten::append", "aten::__getitem__", "aten::len",
              "prim::Loop", "prim::If", "prim::Param", "prim::Return", "aten::wait",
              "prim::awaitable_wait", "prim::Uninitialized",
              "aten::Bool", "aten::Int", "aten::size", "aten::dim", "prim::device",
              "prim::dtype", "aten::__is__", "aten::__isnot__", "prim::unchecked_cast",
              "prim::RaiseException", "aten::format", "prim::TupleIndex", "aten::eq",
              "aten::ne", "aten::lt", "aten::gt", "aten::le", "aten::ge")


def _carries_future(type_str: str | None) -> bool:
    return bool(type_str) and ("Future[" in type_str or "Await[" in type_str)


def waits_of(G: nx.DiGraph, fork: str, order: dict[str, int] | None = None) -> list[str]:
    """Ids of the wait nodes the future of ``fork`` can reach, in graph order."""
    found: list[str] = []
    seen = {fork}
    stack = [fork]
    while stack:
        node = stack.pop()
        for succ in G.successors(node):
            if succ in seen or not _carries_future(G.edges[node, succ].get("type")):
                continue
            seen.add(succ)
            kind = G.nodes[succ]["kind"]
            if kind in WAIT_KINDS:
                found.append(succ)
                continue
            stack.append(succ)
            if kind in CONTAINER_WRITES:
                for producer in G.nodes[succ]["inputs"][0]:
                    if producer in G and producer not in seen:
                        seen.add(producer)
                        stack.append(producer)
    order = order or program_order(G)
    return sorted(found, key=order.__getitem__)


def program_order(G: nx.DiGraph) -> dict[str, int]:
    """Node -> position; the IR walk adds nodes in execution order (calls inline)."""
    return {n: i for i, n in enumerate(G)}


def container_chain(G: nx.DiGraph, block: str) -> list[str]:
    """Containers from ``block`` outwards to the root."""
    blocks = G.graph["blocks"]
    chain = []
    while block is not None:
        chain.append(block)
        block = blocks[block]["parent"]
    return chain


def level_chain(G: nx.DiGraph, block: str) -> list[str]:
    """Containers from ``block`` outwards, stopping at the enclosing task (same thread)."""
    blocks = G.graph["blocks"]
    out = []
    for cid in container_chain(G, block):
        if blocks[cid]["kind"] in TASK_KINDS:
            break
        out.append(cid)
    return out


def loop_multiplicity(G: nx.DiGraph, chain: list[str]) -> int | None:
    """Product of the trip counts of the loops in ``chain`` (None: a dynamic count)."""
    blocks = G.graph["blocks"]
    total: int | None = 1
    for cid in chain:
        if blocks[cid]["kind"] != LOOP_BODY:
            continue
        trip = G.nodes[blocks[cid]["owner"]].get("trip_count")
        if isinstance(trip, int) and total is not None:
            total *= trip
        else:
            total = None
    return total


def task_call(G: nx.DiGraph, fork: str) -> str | None:
    """The method/function container the task of ``fork`` calls, or None."""
    task = f"{fork}/task"
    return next((cid for cid, info in G.graph["blocks"].items()
                 if info["parent"] == task and info["kind"] in ("method", "function")), None)


def task_callee(G: nx.DiGraph, fork: str) -> str:
    """What the task runs: ``models.0.forward``, ``foo``, ``aten::relu``, or ``N traced ops``."""
    call = task_call(G, fork)
    if call is not None:
        info = G.graph["blocks"][call]
        if info["kind"] == "method":
            return f"{info['module'] or '<self>'}.{info['method']}"
        return (info.get("qualified_type") or info["label"]).removeprefix("__torch__.")
    task = f"{fork}/task"
    ops = [n for n in G if n.startswith(task + "/") and not G.nodes[n].get("hidden")]
    if len(ops) == 1:
        return G.nodes[ops[0]]["kind"]
    return f"{len(ops)} traced ops"


def _region(G: nx.DiGraph, fork: str, waits: list[str], order: dict[str, int]) -> ForkRegion:
    data = G.nodes[fork]
    blocks = G.graph["blocks"]
    own = level_chain(G, data["block"])
    loop = next((c for c in own if blocks[c]["kind"] == LOOP_BODY), None)
    branch = next((c for c in own if blocks[c]["kind"] in ("if.then", "if.else")), None)
    task_prefix = f"{fork}/task/"
    task_nodes = [n for n in G if n.startswith(task_prefix)]
    level = data["subgraph_of"]
    overlap: list[str] = []
    if waits:
        start, end = order[fork], order[waits[0]]
        dependent = nx.descendants(G, fork)
        for node in G:
            pos = order[node]
            if pos <= start or pos >= end:
                continue
            nd = G.nodes[node]
            if nd["subgraph_of"] != level or nd.get("hidden") or node in dependent:
                continue
            overlap.append(node)
    same_iteration = bool(loop) and any(loop in container_chain(G, G.nodes[w]["block"])
                                        for w in waits)
    return ForkRegion(
        callee=task_callee(G, fork), call=task_call(G, fork),
        instances=loop_multiplicity(G, container_chain(G, data["block"])),
        loop=loop, branch=branch, nested_in=level, task_nodes=task_nodes, overlap=overlap,
        same_iteration=same_iteration,
        overlap_has_work=any(G.nodes[n]["kind"] not in GLUE_KINDS for n in overlap))


def annotate_fork_waits(G: nx.DiGraph) -> None:
    """Pair forks and waits and describe each fork's region (see module doc)."""
    order = program_order(G)
    for _, data in G.nodes(data=True):
        if data["kind"] in WAIT_KINDS:
            data[FORKS] = []
    forks = [n for n, d in G.nodes(data=True) if d["kind"] in FORK_KINDS]
    for fork in forks:
        reached = waits_of(G, fork, order)
        G.nodes[fork][WAITS] = reached
        for wait in reached:
            G.nodes[wait][FORKS].append(fork)
    spans = {}
    for fork in forks:
        reached = G.nodes[fork][WAITS]
        found = G.nodes[fork][REGION] = _region(G, fork, reached, order)
        for node in found.overlap:
            G.nodes[node].setdefault(OVERLAPS, []).append(fork)
        spans[fork] = (order[fork], order[reached[0]] if reached else len(order))
    for fork in forks:  # other tasks of the same thread in flight at the same time
        level, (start, end) = G.nodes[fork]["subgraph_of"], spans[fork]
        G.nodes[fork][REGION].concurrent = [
            other for other in forks if other != fork
            and G.nodes[other]["subgraph_of"] == level
            and spans[other][0] < end and start < spans[other][1]]
    G.graph[UNPAIRED] = Unpaired(
        forks=[f for f in forks if not G.nodes[f][WAITS]],
        waits=[n for n, d in G.nodes(data=True) if d["kind"] in WAIT_KINDS and not d[FORKS]])
