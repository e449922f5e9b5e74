"""The IR graph's invariants, asserted by the tests on every sample.

Checks that the graph is a DAG, that every recorded use has a definition
with an edge from it, and that every node belongs to a known container whose
owner sits in the container's parent. Messages say what is wrong, at which
node, and the likely cause.
"""
from __future__ import annotations

import networkx as nx

from .model import CONTAINER_KINDS, TASK_KINDS


class InvariantError(AssertionError):
    """The IR graph breaks one of its invariants (an irviz bug)."""


def assert_invariants(G: nx.DiGraph) -> None:
    """Raise :class:`InvariantError` listing every broken invariant."""
    problems: list[str] = []
    blocks = G.graph.get("blocks", {})
    if "root" not in blocks:
        problems.append("no 'root' container in G.graph['blocks']")
    for cid, info in blocks.items():
        if info["kind"] not in CONTAINER_KINDS:
            problems.append(f"container {cid}: unknown kind {info['kind']!r}")
        parent = info["parent"]
        if cid != "root" and parent not in blocks:
            problems.append(f"container {cid}: parent {parent!r} does not exist")
        owner = info.get("owner")
        if owner is not None:
            if owner not in G:
                problems.append(f"container {cid}: owner node {owner} is not in the graph")
            elif G.nodes[owner]["block"] != parent:
                problems.append(
                    f"container {cid}: owner {owner} lives in {G.nodes[owner]['block']}, "
                    f"not in the container's parent {parent} (block ownership broken)")
        if not cid == "root" and not cid.startswith(tuple(
                f"{p}/" for p in [owner or info.get("call_site") or ""] if p)):
            problems.append(f"container {cid}: id does not extend its owner/call site id")
    if not nx.is_directed_acyclic_graph(G):
        cycle = nx.find_cycle(G)
        problems.append(f"the graph has a cycle: {cycle[:6]}")
    for node, data in G.nodes(data=True):
        block = data.get("block")
        if block not in blocks:
            problems.append(f"node {node} ({data.get('kind')}): unknown block {block!r}")
            continue
        prefix = "" if block == "root" else block + "/"
        if node not in ("out",) and not node.startswith("in") and not (
                node.startswith(prefix) and "/" not in node[len(prefix):]):
            problems.append(f"node {node}: id is not directly inside its block {block}")
        for i, producers in enumerate(data.get("inputs", [])):
            for producer in producers:
                if producer.startswith(("module:", "function:")):
                    continue
                if producer not in G:
                    problems.append(f"node {node} ({data['kind']}) input {i}: producer "
                                    f"{producer} is not in the graph (use without definition)")
                elif not G.has_edge(producer, node):
                    problems.append(f"node {node} input {i}: no edge from its producer "
                                    f"{producer}")
        fork = data.get("subgraph_of")
        if fork is not None:
            if fork not in G or G.nodes[fork]["kind"] not in ("prim::fork", "prim::awaitable"):
                problems.append(f"node {node}: subgraph_of={fork} is not a fork node")
            elif not node.startswith(f"{fork}/task/"):
                problems.append(f"node {node}: claims fork {fork} but is not inside its task")
        elif any(blocks[c]["kind"] in TASK_KINDS for c in _chain(blocks, block)):
            problems.append(f"node {node}: inside a fork task but subgraph_of is None")
    if problems:
        shown = "\n  ".join(problems[:30])
        more = f"\n  ... and {len(problems) - 30} more" if len(problems) > 30 else ""
        raise InvariantError(f"IR graph {G.graph.get('name')!r} breaks {len(problems)} "
                             f"invariant(s):\n  {shown}{more}")


def _chain(blocks: dict, block: str) -> list[str]:
    out = []
    while block is not None:
        out.append(block)
        block = blocks[block]["parent"]
    return out
