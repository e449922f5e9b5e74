"""Pair each fork with the wait(s) that consume its future.

Follows the future's dataflow, not adjacency: along every edge that carries a
``Future`` (directly or inside a list/tuple), and from a container-mutating op
(``aten::append(list, fut)``) back to the container's definition, because
TorchScript keeps using the original list value after an in-place append.

Annotates (namespaced keys, structure untouched):

* fork nodes: ``irviz.waits`` - ids of the waits reached (empty: never waited);
* wait nodes: ``irviz.forks`` - ids of the forks whose future they may wait on.
"""
from __future__ import annotations

import networkx as nx

FORK_KINDS = ("prim::fork", "prim::awaitable")
WAIT_KINDS = ("aten::wait", "prim::awaitable_wait")
#: ops that store their 2nd+ argument into the container passed as 1st argument
CONTAINER_WRITES = ("aten::append", "aten::insert", "aten::_set_item", "aten::extend",
                    "aten::add_")


def _carries_future(type_str: str | None) -> bool:
    return bool(type_str) and ("Future[" in type_str or "Await[" in type_str)


def waits_of(G: nx.DiGraph, fork: str) -> list[str]:
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
    order = {n: i for i, n in enumerate(G)}
    return sorted(found, key=order.__getitem__)


def annotate_fork_waits(G: nx.DiGraph) -> None:
    """Write ``irviz.waits`` on forks and ``irviz.forks`` on waits."""
    for node, data in G.nodes(data=True):
        if data["kind"] in WAIT_KINDS:
            data["irviz.forks"] = []
    for node, data in list(G.nodes(data=True)):
        if data["kind"] in FORK_KINDS:
            data["irviz.waits"] = waits_of(G, node)
            for wait in data["irviz.waits"]:
                G.nodes[wait]["irviz.forks"].append(node)
