"""``irviz diff`` output: a :class:`~irviz.analyses.graph_match.GraphDiff` as text or JSON.

Text reads like a unified diff, one hunk per module (``@@ dg: MyDecisionGate @@``),
removed ``-``, added ``+``, changed ``~`` lines in program order, the contents of a
container present on one side only indented under it, and the counts at the end. JSON is
``{"left", "right", "added", "removed", "changed", "same"}``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analyses.graph_match import Change, Entry, GraphDiff
from ..render.escape import json_dumps

__all__ = ["Side", "to_json", "to_text"]


@dataclass(frozen=True)
class Side:
    """How one side is named: the target, the model, the capture mode."""

    target: str
    model: str
    mode: str
    nodes: int

    def title(self) -> str:
        return f"{self.target} ({self.mode})"

    def to_dict(self) -> dict:
        return {"target": self.target, "model": self.model, "mode": self.mode,
                "nodes": self.nodes}


def _ranked(diff: GraphDiff) -> list[tuple[float, str, object]]:
    """Every record with its place in a merged program order: a left node's position; a
    right-only node just after the left partner of the node before it on the right."""
    L, R = diff.left, diff.right
    lpos = {n: i for i, n in enumerate(L)}
    rpairs = {b: a for a, b in diff.pairs.items()}
    rrank: dict[str, float] = {}
    anchor, step = -1.0, 0
    for b in R:
        if b in rpairs:
            anchor, step = float(lpos[rpairs[b]]), 0
        else:
            step += 1
            rrank[b] = anchor + step / (10.0 * (1 + R.number_of_nodes()))
    out: list[tuple[float, str, object]] = []
    def first_node(G, cid: str | None) -> str | None:
        """A folded call's place: its first node (the entry names the container)."""
        if cid is None or cid in G or cid not in G.graph["blocks"]:
            return cid
        return next((n for n, d in G.nodes(data=True)
                     if d["block"] == cid or d["block"].startswith(cid + "/")), None)

    for sign, entries, rank in (
            ("-", diff.removed, lambda e: lpos.get(first_node(L, e.left))),
            ("+", diff.added, lambda e: rrank.get(first_node(R, e.right)))):
        pending = []   # container entries: placed just before their first content
        for e in entries:
            r = rank(e)
            if r is None:
                pending.append(e)
                continue
            for c in pending:
                out.append((r - 1e-9, sign, c))
            pending = []
            out.append((r, sign, e))
        for c in pending:
            out.append((float("inf"), sign, c))
    out += [(float(lpos[first_node(L, c.left)]), "~", c) for c in diff.changed]
    out.sort(key=lambda item: (item[0], "-~+".index(item[1])))
    return out


def _module_title(G, scope: str) -> str:
    for info in G.graph["blocks"].values():
        if (info.get("module") or "") == scope and info["kind"] in ("method", "graph"):
            cls = info.get("class") or ""
            return f"{scope or '<root>'}: {cls}" if cls else (scope or "<root>")
    return scope or "<root>"


def _line(sign: str, record, depth: int) -> str:
    indent = "    " * depth
    if isinstance(record, Change):
        head = (f"{record.kind} → {record.right_kind}" if record.kind != record.right_kind
                else record.kind)
        rest = [w for w in record.what if "::" not in w]
        if record.kind in ("prim::CallMethod", "prim::CallFunction"):  # a torch.nn call
            head = f"{head} {record.label}"
        text = f"{head}  {record.source or '?'}"
        return f"~ {indent}{text}" + (f"  ({'; '.join(rest)})" if rest else "")
    e: Entry = record
    if e.ops is not None:
        what = f"{e.kind} {e.label}  {e.source or '?'}  ({e.ops} op{'s' if e.ops != 1 else ''})"
    else:
        what = f"{e.kind}  {e.source or '?'}" + (f"  {e.code}" if e.code else "")
    return f"{sign} {indent}{what}"


def to_text(diff: GraphDiff, left: Side, right: Side) -> str:
    lines = [f"--- {left.title()}", f"+++ {right.title()}"]
    hunks: dict[str, list[str]] = {}
    order: list[str] = []
    owners = {e.id: e for e in diff.removed + diff.added}
    for _, sign, record in _ranked(diff):
        scope = record.scope
        if isinstance(record, Entry) and record.inside is not None and \
                record.inside in owners:
            scope = owners[record.inside].scope   # contents stay under their container
        if scope not in hunks:
            hunks[scope] = []
            order.append(scope)
        depth = 0
        inside = record.inside if isinstance(record, Entry) else None
        while inside is not None and inside in owners and depth < 8:
            depth += 1
            inside = owners[inside].inside
        hunks[scope].append(_line(sign, record, depth))
    for scope in order:
        graph = diff.left if any(
            (d.get("scope") or "") == scope for _, d in diff.left.nodes(data=True)) \
            else diff.right
        lines.append(f"@@ {_module_title(graph, scope)} @@")
        lines += hunks[scope]
    counts = diff.counts()
    if diff.equal:
        lines.append(f"no difference ({counts['same']} nodes matched)")
    else:
        lines.append(f"{counts['removed']} removed, {counts['added']} added, "
                     f"{counts['changed']} changed, {counts['same']} same")
    return "\n".join(lines) + "\n"


def to_json(diff: GraphDiff, left: Side, right: Side, explained=None) -> str:
    """The diff as JSON; ``explained``: an ``--right-optimize`` diff's
    :class:`~irviz.analyses.optimization_diff.OptimizationReport`, under ``optimization``."""
    data = {"left": left.to_dict(), "right": right.to_dict(),
            "added": [e.to_dict() for e in diff.added],
            "removed": [e.to_dict() for e in diff.removed],
            "changed": [c.to_dict() for c in diff.changed],
            "same": diff.same}
    if explained is not None:
        data["optimization"] = explained.to_dict()
    return json_dumps(data, indent=1) + "\n"
