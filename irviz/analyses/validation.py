"""Validation checks: code whose only effect is to raise, folded out of the model's dataflow.

Detection-scale scripted models draw more input validation than model: ``if x.dim() != 4:
raise ValueError(...)``, ``torch._assert(...)``, loops that check each target's boxes,
the size and ``isinstance`` tests that feed them. None of it computes a value the model
uses; drawn, it hides the backbone/neck/heads a user came to see (issue 16).

This analysis finds it, the way :mod:`.shape_arithmetic` finds integer size arithmetic:

* a *check* is a ``prim::If`` with no used outputs whose one branch raises (a
  ``prim::RaiseException``, with whatever builds its message) and whose other branch does
  nothing else (or only holds checks); a ``prim::Loop`` with no used outputs whose body
  holds only checks is one too;
* a node is *part of a check* when it is inside one, or when everything it feeds is part
  of a check (the condition ``x.dim() != 4``, a shape read, a tensor test);
* a call whose every node is part of a check is one (a scripted helper that validates).

It writes ``irviz.check`` (the check's text: the condition and what it raises) on each
check and ``irviz.check_part`` on every node folded with one, and on the graph
``irviz.checks``: drawn node -> the checks that guard it (the next node of the model's
dataflow after them, where the picture puts a small badge). torch's own argument checks
(inside ``nn.LSTM``, ``F.interpolate``) are folded without a badge: they are not the
model's. The IR is unchanged: lint and
the reports still see every node; ``irviz render --show-checks`` draws them again.
"""
from __future__ import annotations

import networkx as nx

from ..ir.model import CALL_KINDS, FORK_KINDS, constant_label, is_folded
from ..paths import is_torch_file

CHECK, PART, CHECKS = "irviz.check", "irviz.check_part", "irviz.checks"

#: nodes never folded into a check: the graph's ends and what starts work elsewhere
_KEEP = {"prim::Param", "prim::Return", *FORK_KINDS, "aten::wait"}


def is_check_part(data: dict) -> bool:
    """Whether the picture folds this node into a check (see the module doc)."""
    return PART in data


def checks_at(G: nx.DiGraph) -> dict[str, list[str]]:
    """Node -> the texts of the checks that guard it (drawn as its badge)."""
    return G.graph.get(CHECKS, {})


def _raise_text(G: nx.DiGraph, node: str) -> str:
    """``ValueError: expected a batch`` from a ``prim::RaiseException``."""
    inputs = G.nodes[node]["inputs"]
    message = constant_label(G, inputs[0]) if inputs else None
    kind = constant_label(G, inputs[1]) if len(inputs) > 1 else None
    kind = (kind or "").removeprefix("builtins.").strip("'\"")
    message = (message or "").strip("'\"")
    if kind and kind != "None" and not message.startswith(kind):
        return f"{kind}: {message}" if message else kind
    return message or "an exception"


class _Finder:
    def __init__(self, G: nx.DiGraph):
        self.G = G
        # the fixpoint below reads every node's data and successors on every pass: read
        # networkx's own node and adjacency dicts, not its views (the graph does not change
        # while the checks are found)
        self.data: dict[str, dict] = G._node
        self.succ: dict[str, dict] = G._succ
        self.blocks = G.graph["blocks"]
        self.visible: dict[str, list[str]] = {cid: [] for cid in self.blocks}
        for node, data in self.data.items():
            if not data.get("hidden"):
                self.visible[data["block"]].append(node)
        self.children: dict[str, list[str]] = {cid: [] for cid in self.blocks}
        #: (container, control node in it) -> the blocks the node owns, in order (asked
        #: for every node of every pass: a container can hold hundreds of blocks)
        self._owned: dict[tuple[str, str], list[str]] = {}
        for cid, info in self.blocks.items():
            if info["parent"] is not None:
                self.children[info["parent"]].append(cid)
                if info.get("owner") is not None:
                    self._owned.setdefault((info["parent"], info["owner"]), []).append(cid)
        self.part: set[str] = set()
        self.checks: dict[str, str] = {}
        self._inside_of: dict[str, list[str]] = {}

    def _inside(self, cid: str) -> list[str]:
        """Visible nodes of ``cid`` and of every container in it (computed once: the
        fixpoint below asks for each container many times)."""
        found = self._inside_of.get(cid)
        if found is None:
            found = list(self.visible[cid])
            for child in self.children[cid]:
                found += self._inside(child)
            self._inside_of[cid] = found
        return found

    def _only_checks(self, cid: str) -> bool:
        return all(n in self.part for n in self._inside(cid))

    def _unused(self, node: str) -> bool:
        return all(s in self.part for s in self.succ[node])

    def _raises(self, cid: str) -> str | None:
        """The raise of a branch whose nodes only serve it, else None."""
        nodes = self._inside(cid)
        raises = [n for n in nodes if self.data[n]["kind"] == "prim::RaiseException"]
        if not raises:
            return None
        inside = set(nodes)
        for n in nodes:  # the message's string building may only feed the branch itself
            if any(s not in inside and s not in self.part for s in self.succ[n]):
                return None
        return raises[0]

    def _describe(self, node: str, what: str) -> str:
        data = self.G.nodes[node]
        code = (data.get("code") or "").strip()
        if not code:
            from ..location import source_line

            code = (source_line(self._location(node)) or "").strip()
        code = code.split("  #")[0].rstrip(":").strip()
        if not code:
            code = "assert" if "AssertionError" in what else "a check"
        return f"{code} → {what}"

    def _as_check(self, node: str) -> str | None:
        """The text of the check ``node`` is, or None (``node``: unused, not yet part)."""
        data = self.data[node]
        kind = data["kind"]
        if kind not in ("prim::If", "prim::Loop"):
            return None
        owned = self._owned.get((data["block"], node), [])
        if kind == "prim::If" and len(owned) == 2:
            for raising, other in (owned, owned[::-1]):
                found = self._raises(raising)
                if found is not None and self._only_checks(other):
                    return self._describe(node, "raise " + _raise_text(self.G, found))
        if kind == "prim::Loop" and owned and all(self._only_checks(c) for c in owned) \
                and self._inside(owned[0]):
            return self._describe(node, "checks in a loop")
        return None

    def find(self) -> None:
        changed = True
        while changed:
            changed = False
            for node in reversed(self.data):  # consumers before producers
                data = self.data[node]
                if node in self.part or data.get("hidden") or data["kind"] in _KEEP \
                        or not self._unused(node):
                    continue   # feeds the model: neither a check nor part of one
                text = self._as_check(node)
                if text is not None:
                    self.checks[node] = text
                    owned = self._owned.get((data["block"], node), [])
                    self.part.add(node)
                    for cid in owned:
                        self.part.update(self._inside(cid))
                    changed = True
                elif self.succ[node] and not self._owns_blocks(node):
                    self.part.add(node)  # only feeds checks: a condition, a shape read
                    changed = True
        # calls that only validate
        for cid, info in self.blocks.items():
            if info["kind"] in CALL_KINDS and self._inside(cid) and self._only_checks(cid):
                info[CHECK] = True

    def _owns_blocks(self, node: str) -> bool:
        return (self.data[node]["block"], node) in self._owned

    def anchors(self) -> dict[str, list[str]]:
        """The next node of the dataflow after each outermost check, in its container or
        an enclosing one (the graph's return when nothing follows)."""
        out: dict[str, list[str]] = {}
        if not self.checks:
            return out
        order = list(self.G)
        position = {n: i for i, n in enumerate(order)}
        outermost = [n for n in self.checks
                     if not any(a in self.checks for a in self._owners(n))]
        for check in sorted(outermost, key=position.__getitem__):
            if self._in_torch(check):
                continue  # torch's own argument checks (nn.LSTM's): folded, no badge
            chain = self._chain(self.G.nodes[check]["block"])
            last = max(position[n] for n in [check, *self._owned_nodes(check)])
            anchor = next((n for n in order[last + 1:]
                           if n not in self.part and not is_folded(self.G.nodes[n])
                           and self.G.nodes[n]["block"] in chain), "out")
            out.setdefault(anchor, []).append(self.checks[check])
        return out

    def _location(self, node: str) -> str:
        """Where a check is: its own line, or, compiled from a string (``torch._assert``'s
        body), the line of the condition that feeds it (the user's call)."""
        data = self.G.nodes[node]
        source = data.get("user_source") or data.get("source") or ""
        if source.startswith("<"):
            for producers in data["inputs"]:
                for p in producers:
                    found = self.G.nodes[p].get("user_source") if p in self.G else None
                    if found and not found.startswith("<"):
                        return found
        return source

    def _in_torch(self, node: str) -> bool:
        source = self._location(node)
        path = source.rsplit(":", 2)[0] if source.count(":") >= 2 else source
        return not path or path.startswith("<") or is_torch_file(path)

    def _owned_nodes(self, node: str) -> list[str]:
        owned = self._owned.get((self.G.nodes[node]["block"], node), [])
        return [n for c in owned for n in self._inside(c)]

    def _owners(self, node: str) -> list[str]:
        """The control nodes whose blocks hold ``node``."""
        out = []
        block = self.G.nodes[node]["block"]
        while block is not None:
            owner = self.blocks[block].get("owner")
            if owner is not None:
                out.append(owner)
            block = self.blocks[block]["parent"]
        return out

    def _chain(self, block: str) -> set[str]:
        chain = set()
        while block is not None:
            chain.add(block)
            block = self.blocks[block]["parent"]
        return chain


def annotate_checks(G: nx.DiGraph) -> None:
    """Write ``irviz.check`` / ``irviz.check_part`` and the graph's ``irviz.checks``
    (after :mod:`.shape_arithmetic`: a badge goes on a node the picture draws)."""
    # a check is an If or a Loop with its blocks (a trace of Python has neither): asked of
    # the blocks' owners, not of every node (the containers are fewer, and most, the
    # calls, have no owner)
    nodes = G._node
    owners = {info.get("owner") for info in G.graph["blocks"].values()}
    if not any(nodes[owner]["kind"] in ("prim::If", "prim::Loop")
               for owner in owners if owner in nodes):
        G.graph[CHECKS] = {}
        return
    finder = _Finder(G)
    finder.find()
    for node in finder.part:
        G.nodes[node][PART] = True
    for node, text in finder.checks.items():
        G.nodes[node][CHECK] = text
    G.graph[CHECKS] = finder.anchors()
