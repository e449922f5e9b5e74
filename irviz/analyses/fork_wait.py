"""Fork/wait facts: which wait consumes which future, and each fork's region.

Pairing follows the future's dataflow, not adjacency: along every edge that
carries a ``Future`` (directly or inside a list/tuple), through method
boundaries (calls are expanded in the IR graph, so a future returned by a
callee flows straight to the caller's wait), from a container-mutating op
(``aten::append(list, fut)``) back to the container's definition, because
TorchScript keeps using the original list value after an in-place append, and
around loops: a future carried by a ``prim::Loop`` (``fut = fork(...)`` before the
loop, ``wait(fut); fut = nxt`` inside, ``wait(fut)`` after: software pipelining)
reaches the body's uses from the value it had before the loop and from the one the
body yields (the next iteration), and the uses after the loop from both (a loop may
run zero times). The IR graph is a DAG without those back edges; the loop records
them (``carried`` / ``carried_from``, :mod:`irviz.ir.model`) and the search below
follows them until nothing new is reached. A wait reached only through the back edge
of the fork's own loop waits on the previous iteration's task: it does not make the
fork "waited in the same iteration".

Annotates (its own keys only; structure untouched), read through the accessors below:

* wait nodes: ``irviz.forks`` - the forks whose future they may wait on;
* fork nodes: ``irviz.waits`` - the waits reached (empty: never waited), and
  ``irviz.fork`` - a :class:`ForkRegion`;
* overlap-window nodes: ``irviz.overlaps`` - the forks they run beside;
* graph: ``irviz.unpaired`` - an :class:`Unpaired`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

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


@dataclass(frozen=True)
class _LoopEdges:
    """The back edges of every loop-carried value: who uses it where."""

    #: (loop, index) -> nodes that use the carried value inside the body / after the loop
    param_users: dict
    output_users: dict
    #: producer -> [(loop, index)] of carried values it gives before the loop / yields
    init_of: dict
    yield_of: dict

    @classmethod
    def of(cls, G: nx.DiGraph) -> "_LoopEdges":
        param_users: dict = {}
        output_users: dict = {}
        init_of: dict = {}
        yield_of: dict = {}
        for node, data in G.nodes(data=True):
            for loop, index, where in data.get("carried_from", {}).values():
                users = param_users if where == "param" else output_users
                users.setdefault((loop, index), []).append(node)
            for index, carried in enumerate(data.get("carried", ())):
                for producer in carried["init"]:
                    init_of.setdefault(producer, []).append((node, index))
                for producer in carried["yield"]:
                    yield_of.setdefault(producer, []).append((node, index))
        return cls(param_users, output_users, init_of, yield_of)

    def around(self, producer: str) -> list[tuple[str, bool]]:
        """``(user, next_iteration)`` the carried values ``producer`` gives reach through
        the loop's back edge (next iteration) or past a loop that ran zero times."""
        out = []
        for key in self.init_of.get(producer, ()):
            out += [(u, False) for u in self.output_users.get(key, ())]
        for key in self.yield_of.get(producer, ()):
            out += [(u, True) for u in self.param_users.get(key, ())]
        return out


def _future_edge(G: nx.DiGraph, producer: str, consumer: str) -> bool:
    if G.has_edge(producer, consumer):
        return _carries_future(G.edges[producer, consumer].get("type"))
    return any(_carries_future(o.get("type")) for o in G.nodes[producer]["outputs"])


def pairing(G: nx.DiGraph, fork: str, loops: _LoopEdges | None = None
            ) -> tuple[list[str], set[str]]:
    """The waits the future of ``fork`` can reach, and those of them it reaches within one
    iteration of its own loop (not only through that loop's back edge)."""
    loops = loops or _LoopEdges.of(G)
    own_loop = _own_loop(G, fork)
    found: dict[str, bool] = {}   # wait -> reached in the fork's own iteration
    seen: set[tuple[str, bool]] = {(fork, False)}
    stack = [(fork, False)]
    while stack:
        node, later = stack.pop()
        steps = [(s, later) for s in G.successors(node)
                 if _carries_future(G.edges[node, s].get("type"))]
        steps += [(u, later or (nxt and _in_loop(G, u, own_loop)))
                  for u, nxt in loops.around(node) if _future_edge(G, node, u)
                  or _carries_future_in(G, u)]
        for succ, flag in steps:
            if (succ, flag) in seen:
                continue
            seen.add((succ, flag))
            kind = G.nodes[succ]["kind"]
            if kind in WAIT_KINDS:
                found[succ] = found.get(succ, False) or not flag
                continue
            stack.append((succ, flag))
            if kind in CONTAINER_WRITES:
                for producer in G.nodes[succ]["inputs"][0]:
                    if producer in G and (producer, flag) not in seen:
                        seen.add((producer, flag))
                        stack.append((producer, flag))
    return list(found), {w for w, direct in found.items() if direct}


def _carries_future_in(G: nx.DiGraph, node: str) -> bool:
    """Whether ``node`` takes a future among its inputs (a wait, a list of futures)."""
    return any(_carries_future(G.edges[p, node].get("type")) for p in G.predecessors(node))


def _own_loop(G: nx.DiGraph, node: str) -> str | None:
    blocks = G.graph["blocks"]
    return next((c for c in level_chain(G, G.nodes[node]["block"])
                 if blocks[c]["kind"] == LOOP_BODY), None)


def _in_loop(G: nx.DiGraph, node: str, loop_body: str | None) -> bool:
    return loop_body is not None and loop_body in container_chain(G, G.nodes[node]["block"])


def waits_of(G: nx.DiGraph, fork: str, order: dict[str, int] | None = None) -> list[str]:
    """Ids of the wait nodes the future of ``fork`` can reach, in graph order."""
    reached, _ = pairing(G, fork)
    order = order or program_order(G)
    return sorted(reached, key=order.__getitem__)


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


def block_runs(G: nx.DiGraph) -> Callable[[str], tuple[int | None, int | None]]:
    """Block -> how often it runs: in all (the trip counts of the loops around it), and on
    its thread (those up to its task: a task's body starts its thread's count again);
    None for a dynamic trip count. Each block's from its parent's, so once per block."""
    blocks, nodes = G.graph["blocks"], G._node
    memo: dict[str, tuple[int | None, int | None]] = {}

    def runs(block: str) -> tuple[int | None, int | None]:
        # up to the nearest block known, then down: no recursion, so the function holds
        # no reference to itself (a cycle that kept the graph's node dict for the
        # collector)
        chain, above = [], block
        while above is not None and above not in memo:
            chain.append(above)
            above = blocks[above]["parent"]
        total, on_thread = memo[above] if above is not None else (1, 1)
        for b in reversed(chain):
            info = blocks[b]
            if info["kind"] == LOOP_BODY:
                trip = nodes[info["owner"]].get("trip_count")
                trip = trip if isinstance(trip, int) else None
                total = total * trip if trip is not None and total is not None else None
                on_thread = on_thread * trip if trip is not None and on_thread is not None \
                    else None
            elif info["kind"] in TASK_KINDS:
                on_thread = 1   # the thread's count starts at its task
            memo[b] = (total, on_thread)
        return memo[block]
    return runs


def runs_once(G: nx.DiGraph) -> bool:
    """Every block runs once, on the caller's thread (no loop body, no task: a trace of a
    module tree), so every multiplicity is 1 without asking :func:`block_runs` a block."""
    kinds = {info["kind"] for info in G.graph["blocks"].values()}
    return LOOP_BODY not in kinds and kinds.isdisjoint(TASK_KINDS)


def runs_on_thread(G: nx.DiGraph, node: str, runs: Callable) -> int:
    """How often ``node`` runs on its thread (a dynamic trip count counts once), a task
    waited in the iteration that forked it once per iteration of that loop; ``runs``:
    a :func:`block_runs` of ``G``."""
    data = G.nodes[node]
    on_thread = runs(data["block"])[1] or 1
    fork = data["subgraph_of"]
    while fork is not None:
        found = region(G.nodes[fork])
        if found is not None and found.same_iteration:
            on_thread *= runs(G.nodes[fork]["block"])[1] or 1
        fork = G.nodes[fork]["subgraph_of"]
    return on_thread


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


def _region(G: nx.DiGraph, fork: str, waits: list[str], order: dict[str, int],
            direct: set[str] | None = None) -> ForkRegion:
    data = G.nodes[fork]
    blocks = G.graph["blocks"]
    own = level_chain(G, data["block"])
    loop = next((c for c in own if blocks[c]["kind"] == LOOP_BODY), None)
    branch = next((c for c in own if blocks[c]["kind"] in ("if.then", "if.else")), None)
    task_prefix = f"{fork}/task/"
    task_nodes = [n for n in G if n.startswith(task_prefix)]
    level = data["subgraph_of"]
    overlap: list[str] = []
    direct = set(waits) if direct is None else direct
    if waits:
        start, end = order[fork], order[_first_wait(fork, waits, order, direct)]
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
                                        for w in waits if w in direct)
    return ForkRegion(
        callee=task_callee(G, fork), call=task_call(G, fork),
        instances=block_runs(G)(data["block"])[0],
        loop=loop, branch=branch, nested_in=level, task_nodes=task_nodes, overlap=overlap,
        same_iteration=same_iteration,
        overlap_has_work=any(G.nodes[n]["kind"] not in GLUE_KINDS for n in overlap))


def _first_wait(fork: str, waits: list[str], order: dict[str, int],
                direct: set[str] | None = None) -> str:
    """Where the fork's window ends: its first wait after it in program order, preferring
    one reached in its own iteration (in a pipelined loop the next wait in the body is the
    previous iteration's; this task is waited for in the next iteration or after the loop)."""
    after = [w for w in waits if order[w] > order[fork]]
    own = [w for w in after if direct is None or w in direct]
    return (own or after or waits)[0]


def annotate_fork_waits(G: nx.DiGraph) -> None:
    """Pair forks and waits and describe each fork's region (see module doc)."""
    forks: list[str] = []
    wait_nodes: list[str] = []
    # one pass over networkx's own dict (its view costs a call per node); most programs
    # have neither
    for node, data in G._node.items():
        kind = data["kind"]
        if kind in WAIT_KINDS:
            data[FORKS] = []
            wait_nodes.append(node)
        elif kind in FORK_KINDS:
            forks.append(node)
    if forks:
        _pair(G, forks, wait_nodes)
    G.graph[UNPAIRED] = Unpaired(
        forks=[f for f in forks if not G.nodes[f][WAITS]],
        waits=[w for w in wait_nodes if not G.nodes[w][FORKS]])


def _pair(G: nx.DiGraph, forks: list[str], wait_nodes: list[str]) -> None:
    """Annotate the waits of each fork, the forks of each wait and each fork's region."""
    order = program_order(G)
    loops = _LoopEdges.of(G)
    direct: dict[str, set[str]] = {}
    for fork in forks:
        reached, direct[fork] = pairing(G, fork, loops)
        reached = G.nodes[fork][WAITS] = sorted(reached, key=order.__getitem__)
        for wait in reached:
            G.nodes[wait][FORKS].append(fork)
    for wait in wait_nodes:
        G.nodes[wait][FORKS].sort(key=order.__getitem__)
    spans = {}
    for fork in forks:
        reached = G.nodes[fork][WAITS]
        found = G.nodes[fork][REGION] = _region(G, fork, reached, order, direct[fork])
        for node in found.overlap:
            G.nodes[node].setdefault(OVERLAPS, []).append(fork)
        spans[fork] = (order[fork], order[_first_wait(fork, reached, order, direct[fork])]
                       if reached else len(order))
    for fork in forks:  # other tasks of the same thread in flight at the same time
        level, (start, end) = G.nodes[fork]["subgraph_of"], spans[fork]
        G.nodes[fork][REGION].concurrent = [
            other for other in forks if other != fork
            and G.nodes[other]["subgraph_of"] == level
            and spans[other][0] < end and start < spans[other][1]]
