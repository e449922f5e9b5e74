"""IR graph (+ annotations) -> DOT source. Pure Python, deterministic.

Reads the graph and the facts analyses wrote on it; never recomputes them. What is
drawn is decided by :func:`.plan.plan_view` (a :class:`~.plan.DrawPlan`), what it
says by :class:`.labels.Labels`, how it looks by :mod:`.style`; this module only
writes that as DOT. Layout rules that keep ``dot`` fast and the picture readable (see
docs/architecture.md for the measurements behind them):

* constants, parameter ``GetAttr`` and constant lists are folded into their
  consumer's label and tooltip, never drawn as nodes (they fan out to
  hundreds of consumers and make ``dot`` explode), and so is traced shape arithmetic
  (``size`` -> ``Int`` -> ``ListConstruct``), shown as ``size=[x.size(0), 12, 64]``;
* shapes go into node labels, types into tooltips: no edge labels;
* module calls are nested clusters; a module deeper than ``depth`` (and,
  unless asked, a ``torch.nn`` library module) is one box with its op count;
* a value used far from where it is defined gets a small per-use "ghost"
  copy next to the consumer instead of one long edge;
* a dense graph (the plan's :class:`~.plan.Layout`: DenseNet's concatenations feed every
  layer's output to every later layer of its block) gets a short ghost span, one ghost per
  consumer for all its far inputs, and Graphviz settings that bound the layout.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby

import networkx as nx

from ..analyses.fork_wait import WAITS, overlapping, waits
from ..analyses.graph_match import DIFF, diff_status
from ..analyses.parallelism import critical_nodes, is_critical
from ..analyses.profile_times import MEASURED_SPAN, is_measured_critical, measured_critical_nodes
from ..gc_pause import gc_paused
from .escape import dot_string, dot_value
from .labels import Labels, is_alarm, tooltip
from .plan import GHOST_SPAN, DrawPlan, Drawn, RenderOptions, plan_view
from .style import (ANCHOR, CLUSTER_STYLE, CRITICAL, DIFF_CLUSTER, DIFF_EDGE, DIFF_NODE,
                    EDGE_STYLE, FINDING, FINDING_INFO, FONT, GHOST_NODE, NODE_STYLE,
                    OVERLAP_FILL, PLACEHOLDER_TEXT, control_style, node_category)

#: at most this many invisible edges hold one stage below the stage before it
MAX_STAGE_ENTRIES = 24

__all__ = ["DotResult", "GHOST_SPAN", "RenderOptions", "build_dot", "to_dot"]

_q = dot_string   # a DOT double-quoted string


def _attrs(attrs: dict) -> str:
    parts = [f"{key}={dot_value(value)}" for key, value in attrs.items()
             if value is not None and value != ""]
    return "[" + ", ".join(parts) + "]"


def _edge_kind(data: dict) -> str:
    t = data.get("type") or ""
    return "future" if ("Future[" in t or "Await[" in t) else "data"


class _DotWriter:
    """Writes one :class:`DrawPlan` of ``G`` as DOT (``plan`` made here when not given)."""

    def __init__(self, G: nx.DiGraph, options: RenderOptions, plan: DrawPlan | None = None):
        self.G = G
        self.plan = plan if plan is not None else plan_view(G, options)
        self.labels = Labels(G, self.plan, options)
        #: with a profile, the critical path by measured times replaces the estimated one
        measured = G.graph.get(MEASURED_SPAN) is not None
        self.critical = is_measured_critical if measured else is_critical
        #: the nodes ``critical`` marks, in one pass (a box's or roll's are looked up)
        self.critical_nodes = measured_critical_nodes if measured else critical_nodes
        self.blocks: dict[str, dict] = G.graph["blocks"]
        self.lines: list[str] = []
        self._control_edges: list[tuple[str, str]] = []
        self._first_in: dict[str, str] | None = None
        #: call container -> the placeholder drawn for it (it draws nothing else)
        self._placeholders: dict[str, str] = {}
        self._with_nodes: set[str] | None = None
        self._nodes: list[str] | None = None
        self._critical_drawn: set[str | None] | None = None

    # what tests/test_hostile.py checks the DOT against
    @property
    def rep(self):
        return self.plan.representative

    @property
    def collapsed(self):
        return self.plan.collapsed

    def emit(self) -> str:
        G = self.G
        out = self.lines
        out.append(f"digraph {_q(G.graph.get('name') or 'irviz')} {{")
        layout = dict(self.plan.layout.graph_attrs)   # a dense graph's bounds, else none
        out.append(f"  graph {_attrs({'rankdir': 'TB', 'ordering': 'out', 'fontname': FONT, 'fontsize': '11', 'nodesep': '0.25', 'ranksep': '0.35', 'newrank': 'true', **layout, 'labelloc': 't', 'labeljust': 'l', 'label': self.labels.title(), 'tooltip': self.labels.graph_tooltip()})};")
        out.append(f"  node {_attrs({'fontname': FONT, 'fontsize': '11', 'margin': '0.12,0.04', 'height': '0.3'})};")
        out.append(f"  edge {_attrs({'fontname': FONT, 'fontsize': '9', 'arrowsize': '0.6'})};")
        self._emit_container("root", "  ")
        self._emit_edges()
        out.append("}")
        return "\n".join(out) + "\n"

    # -- nodes and clusters ------------------------------------------------------
    def _emit_container(self, cid: str, indent: str) -> None:
        for item in self.plan.contents[cid]:
            if item.kind == "node":
                self._emit_node(item.id, indent)
            elif item.kind == "control":
                self._emit_control(item, indent)
            elif item.kind == "roll":
                self._emit_roll(item.id, indent)
            elif item.kind == "box":
                self._emit_box(item.id, indent)
            else:
                self._emit_call_cluster(item.id, indent)

    def _any_critical(self, drawn: str) -> bool:
        """A member of box or roll node ``drawn`` is on the critical path: the drawn ids
        holding one, found in one pass over the nodes (a roll holds nearly all of them)."""
        if self._critical_drawn is None:
            rep = self.plan.representative
            self._critical_drawn = {rep[n] for n in self.critical_nodes(self.G)}
        return drawn in self._critical_drawn

    def _highlight(self, attrs: dict, classes: list[str], drawn: str, critical: bool,
                   finding: bool = True) -> None:
        """The facts drawn on top of a node's style: on the critical path, and (unless
        not ``finding``) a lint finding on its line."""
        if critical:
            attrs.update(CRITICAL)
            classes.append("irviz-critical")
        if finding and drawn in self.plan.badges:   # red for errors and warnings only
            alarm = any(is_alarm(f) for f in self.plan.badges[drawn])
            attrs.update(FINDING if alarm else FINDING_INFO)
            classes.append("irviz-finding" if alarm else "irviz-finding irviz-finding-info")

    def _emit_node(self, node: str, indent: str) -> None:
        data = self.G.nodes[node]
        category = node_category(data["kind"])
        label, tooltip = self.labels.op(node)
        attrs = dict(NODE_STYLE[category])
        attrs.update(label=label, tooltip=tooltip, id=f"irviz:{node}",
                     **{"class": f"irviz-{category}"})
        classes = [f"irviz-{category}"]
        if overlapping(data) and category == "op":
            attrs["fillcolor"] = OVERLAP_FILL
            classes.append("irviz-overlap")
        timed = self.labels.profile.fill(node)
        if timed is not None:   # render --profile: the measured time's colour
            attrs["fillcolor"] = timed
            classes.append("irviz-profiled")
        self._highlight(attrs, classes, node, self.critical(data))
        self._diff(attrs, classes, diff_status(data))
        attrs["class"] = " ".join(classes)
        self.lines.append(f"{indent}{_q(node)} {_attrs(attrs)};")

    @staticmethod
    def _diff(attrs: dict, classes: list[str], status: str | None) -> None:
        """An ``irviz diff`` union graph's status, drawn on top of everything else."""
        if status is None:
            return
        attrs.update(DIFF_NODE[status])
        classes.append(f"irviz-diff-{status}")

    def _members_status(self, drawn: str, cid: str | None) -> str | None:
        """The diff status of a box or roll node: its container's when one side only has
        it, else ``changed`` when anything drawn inside it changed, else ``same``."""
        if cid is not None:
            status = diff_status(self.blocks[cid])
            if status is None:
                return None
            if status != "same":
                return status
        found = "same"
        for n in self.plan.members.get(drawn, ()):
            data = self.G.nodes[n]
            status = diff_status(data)
            if status is None:
                return None
            if status != "same" and not data.get("hidden"):
                found = "changed"
                break
        return found

    def _emit_box(self, cid: str, indent: str) -> None:
        box = f"box:{cid}"
        label, tooltip = self.labels.box(cid)
        attrs = dict(NODE_STYLE["module"])
        attrs.update(label=label, tooltip=tooltip, id=f"irviz:{box}",
                     **{"class": "irviz-module"})
        classes = ["irviz-module"]
        timed, _ = self.labels.profile.fill_of(self.plan.members.get(box, ()))
        if timed is not None:   # render --profile: the sum of what the box holds
            attrs["fillcolor"] = timed
            classes.append("irviz-profiled")
        # a finding on a box is shown by its label and tooltip, not its border
        self._highlight(attrs, classes, box, self._any_critical(box),
                        finding=False)
        self._diff(attrs, classes, self._members_status(box, cid))
        if attrs.get("style", "").startswith("rounded"):  # a module box keeps its shape
            attrs["style"] = attrs["style"].replace("rounded,", "")
        attrs["class"] = " ".join(classes)
        self.lines.append(f"{indent}{_q(box)} {_attrs(attrs)};")

    def _emit_roll(self, rid: str, indent: str) -> None:
        label, tooltip = self.labels.roll(rid)
        attrs = dict(NODE_STYLE["rolled"])
        attrs.update(label=label, tooltip=tooltip, id=f"irviz:{rid}",
                     **{"class": "irviz-module irviz-rolled"})
        classes = ["irviz-module", "irviz-rolled"]
        self._highlight(attrs, classes, rid, self._any_critical(rid))
        self._diff(attrs, classes, self._members_status(rid, None))
        if attrs.get("style", "").startswith("rounded"):
            attrs["style"] = attrs["style"].replace("rounded,", "")
        attrs["class"] = " ".join(classes)
        self.lines.append(f"{indent}{_q(rid)} {_attrs(attrs)};")

    def _emit_placeholder(self, name: str, text: tuple[str, str], indent: str) -> None:
        """The words drawn in a container that draws nothing else."""
        attrs = dict(NODE_STYLE["empty"])
        attrs.update(label=text[0], **PLACEHOLDER_TEXT, tooltip=text[1])
        self.lines.append(f"{indent}{_q(name)} {_attrs(attrs)};")

    def _cluster_head(self, cid: str, kind: str, label: str, tooltip: str, indent: str,
                      frozen: bool = False, diff: str | None = None) -> None:
        style = dict(CLUSTER_STYLE[kind])
        if frozen:
            style.update(CLUSTER_STYLE["frozen"])
        if diff in DIFF_CLUSTER:  # a container of one side only (irviz diff)
            style.update(DIFF_CLUSTER[diff], **{"class": f"irviz-diff-{diff}"})
        self.lines.append(f"{indent}subgraph {_q('cluster_' + cid)} {{")
        attrs = {"label": label, "tooltip": tooltip, "fontsize": "10", "labeljust": "l",
                 "margin": "8", "id": f"irviz:cluster:{cid}", **style}
        for key, value in attrs.items():
            if value:
                self.lines.append(f"{indent}  {key}={dot_value(value)};")

    def _emit_call_cluster(self, cid: str, indent: str) -> None:
        info = self.blocks[cid]
        label, tooltip = self.labels.call_cluster(cid)
        self._cluster_head(cid, info["kind"], label, tooltip, indent,
                           frozen=bool(info.get("irviz.frozen")), diff=diff_status(info))
        self._emit_container(cid, indent + "  ")
        if self._first_drawn(cid) is None:  # e.g. a traced module that only returned its input
            self._placeholders[cid] = cid + "/empty"
            self._emit_placeholder(cid + "/empty", self.labels.empty_call(cid), indent + "  ")
        self.lines.append(f"{indent}}}")

    def _emit_control(self, item: Drawn, indent: str) -> None:
        node = item.id
        kind = control_style(self.G.nodes[node]["kind"])
        label, tooltip = self.labels.control_frame(node)
        self._cluster_head(f"ctl:{node}", kind, label, tooltip, indent,
                           diff=diff_status(self.G.nodes[node]))
        self._emit_node(node, indent + "  ")
        for cid in item.blocks:
            block_label, block_tooltip = self.labels.block(cid)
            self._cluster_head(cid, self.blocks[cid]["kind"], block_label, block_tooltip,
                               indent + "  ", diff=diff_status(self.blocks[cid]))
            self._emit_container(cid, indent + "    ")
            first = self._first_drawn(cid)
            if first is None:
                placeholder = f"{cid}/empty"
                self._emit_placeholder(placeholder, self.labels.empty_block(cid), indent + "    ")
                self._control_edges.append((node, placeholder))
            elif first != node:
                self._control_edges.append((node, first))
            self.lines.append(f"{indent}  }}")
        self.lines.append(f"{indent}}}")

    def _first_drawn(self, cid: str) -> str | None:
        """The first drawn node (or box) inside container ``cid``, at any depth."""
        if self._first_in is None:
            self._first_in = {}
            drawn_at = self.plan.drawn_at
            for block, i, j in self.plan.node_runs:
                if block in self._first_in:   # and so is every container around it
                    continue
                drawn = next(filter(None, drawn_at[i:j]), None)
                if drawn is None:
                    continue
                while block is not None and block not in self._first_in:
                    self._first_in[block] = drawn
                    block = self.blocks[block]["parent"]
        return self._first_in.get(cid)

    # -- edges -------------------------------------------------------------------
    def _emit_edges(self) -> None:
        G, rep, position = self.G, self.plan.representative, self.plan.position
        seen: set[tuple[str, str]] = set()
        fed: set[str] = set()  # drawn items a (non-ghost) edge flows into
        ghosts = 0
        layout = self.plan.layout
        span = layout.ghost_span if layout.nodes else GHOST_SPAN
        merged: dict[str, list[str]] = {}   # consumer -> the far values its one ghost stands for
        for u, v in self.plan.edges:   # one per pair of drawn ids
            data = G.adj[u][v]
            ru, rv = rep[u], rep[v]
            seen.add((ru, rv))
            attrs = dict(EDGE_STYLE[_edge_kind(data)])
            attrs["tooltip"] = self.labels.edge_tooltip(data)
            status = data.get(DIFF)
            if status is not None:  # irviz diff: an edge of one side only, or of both
                attrs.update(DIFF_EDGE[status], **{"class": f"irviz-diff-{status}"})
            src = ru
            far = position.get(rv, 0) - position.get(ru, 0) > span and G.out_degree(u) > 1
            if far and layout.merge_ghosts:
                merged.setdefault(rv, []).append(ru)
                continue
            if far:
                ghosts += 1
                src = f"ghost:{ghosts}:{ru}"
                label, tooltip = self.labels.ghost(ru)
                ghost = dict(NODE_STYLE["op"])
                ghost.update(**GHOST_NODE, label=label, tooltip=tooltip)
                self.lines.append(f"  {_q(src)} {_attrs(ghost)};")
                attrs.update(EDGE_STYLE["ghost"])
            else:
                fed.add(rv)
            self.lines.append(f"  {_q(src)} -> {_q(rv)} {_attrs(attrs)};")
        for rv, values in merged.items():
            self._emit_merged_ghost(rv, values)
        for u, v in self._control_edges:
            fed.add(v)
            self.lines.append(f"  {_q(u)} -> {_q(v)} {_attrs(EDGE_STYLE['control'])};")
        # fork -> wait pairings (from analyses.fork_wait) and task results
        pairing = {**EDGE_STYLE["pairing"], "tooltip": "future waited here"}
        result = {**EDGE_STYLE["result"], "constraint": "false", "tooltip": "task result"}
        for node in self.plan.position:   # program order: the nodes drawn as themselves
            if rep.get(node) != node or WAITS not in (data := G.nodes[node]):
                continue
            results = [rep[r] for r in data.get("task_returns", []) if r in rep]
            for wait in waits(data):
                rw = rep[wait]
                if rw is None:
                    continue
                fed.add(rw)
                if (node, rw) not in seen:
                    seen.add((node, rw))
                    self.lines.append(f"  {_q(node)} -> {_q(rw)} {_attrs(pairing)};")
                for r in results:
                    if r and r != rw and (r, rw) not in seen:
                        seen.add((r, rw))
                        self.lines.append(f"  {_q(r)} -> {_q(rw)} {_attrs(result)};")
        self._emit_anchors(fed)
        self._emit_stage_order()

    def _emit_merged_ghost(self, consumer: str, values: list[str]) -> None:
        """One ghost beside ``consumer`` for all the far values it reads (a dense graph):
        a DenseNet layer reading 30 earlier outputs gets one small node, not 30 copies
        side by side (the width) or 30 long edges (the layout time)."""
        src = f"ghost:0:{consumer}"   # the viewer keys it to the consumer it sits beside
        names = [self.labels.ghost(r).label.removeprefix("↺ ") for r in values]
        if len(values) == 1:
            label = self.labels.ghost(values[0]).label
        else:
            label = f"↺ {len(values)} earlier values"
        ghost = dict(NODE_STYLE["op"])
        ghost.update(**GHOST_NODE, label=label,
                     tooltip=tooltip(["drawn again to avoid long edges:"] + names))
        self.lines.append(f"  {_q(src)} {_attrs(ghost)};")
        attrs = {**EDGE_STYLE["data"], **EDGE_STYLE["ghost"],
                 "tooltip": f"{len(values)} value{'s' if len(values) != 1 else ''}"}
        self.lines.append(f"  {_q(src)} -> {_q(consumer)} {_attrs(attrs)};")

    def _emit_anchors(self, fed: set[str]) -> None:
        """Invisible edges that keep a node nothing flows into (``self.training``, a
        ``raise``, an ``if`` on an attribute, a node fed only by a ghost copy of a far
        producer) below what ran before it in its module or block. Without one dot puts such a node on the top rank and its
        cluster stretches over the whole picture's height."""
        G = self.G
        last: dict[str, str] = {}  # container -> the last drawn item inside it so far
        anchored: set[str] = set(G.graph.get("inputs", ()))  # inputs share the top rank
        # placeholders of calls that recorded no node at all: placed by where the call was
        nodeless: dict[int, list[tuple[str, str]]] = {}
        for cid, placeholder in self._placeholders.items():
            if placeholder not in self._placed_by_nodes():
                nodeless.setdefault(self.blocks[cid].get("at", 0), []).append(
                    (placeholder, self.blocks[cid]["parent"]))
        block_of, drawn_at = self.plan.block_of, self.plan.drawn_at
        if self._placeholders:
            items = []
            for i, (drawn, block) in enumerate(zip(drawn_at, block_of.values())):
                items.extend(nodeless.pop(i, ()))   # program order
                items.append((drawn or self._placeholder_of(block), block))
            items.extend(item for rest in nodeless.values() for item in rest)
        else:   # each node's drawn id and container, in C
            items = zip(drawn_at, block_of.values())
        stretch: set[str] = set()   # the containers whose last is ``drawn`` since it began
        previous = None
        for (drawn, block), _ in groupby(items):   # a node like the one before adds nothing
            if drawn is None:
                continue
            if drawn != previous:
                stretch.clear()
                previous = drawn
            if drawn not in fed and drawn not in anchored:
                anchored.add(drawn)
                b = block
                while b is not None:
                    before = last.get(b)
                    if before is not None and before != drawn:
                        self.lines.append(f"  {_q(before)} -> {_q(drawn)} {_attrs(ANCHOR)};")
                        break
                    b = self.blocks[b]["parent"]
            b = block
            while b is not None and b not in stretch:   # a roll's calls share their parents
                last[b] = drawn
                stretch.add(b)
                b = self.blocks[b]["parent"]

    def _emit_stage_order(self) -> None:
        """Invisible edges that keep a module's stages in program order: when a call uses
        what the call drawn before it (in the same module or block) produced, it starts
        below that call's last node. Without one a stage whose first ops read only early
        values rises beside the stage it follows (Faster R-CNN's ``filter_proposals``
        starts with the length of a list made before the head ran)."""
        G, rep, blocks = self.G, self.plan.representative, self.blocks
        is_open = {item.id for items in self.plan.contents.values() for item in items
                   if item.kind == "cluster"}
        if len(is_open) < 2:
            return
        chains: dict[str, tuple[str, ...]] = {}

        def chain(block: str) -> tuple[str, ...]:
            """The open call clusters around ``block``, outermost first."""
            found = chains.get(block)
            if found is None:
                calls, b = [], block
                while b is not None:
                    if b in is_open:
                        calls.append(b)
                    b = blocks[b]["parent"]
                found = chains[block] = tuple(reversed(calls))
            return found

        first: dict[str, str] = {}
        last: dict[str, str] = {}
        span: dict[str, list[int]] = {}  # open call -> [first, last] program position inside
        order, position, drawn_at = self._order(), self.plan.place, self.plan.drawn_at
        for block, i, j in self.plan.node_runs:
            calls = chain(block)
            if not calls:
                continue
            drawn = [r for r in drawn_at[i:j] if r is not None]
            for cid in calls:
                span.setdefault(cid, [i, j - 1])[1] = j - 1
                if drawn:
                    first.setdefault(cid, drawn[0])
                    last[cid] = drawn[-1]

        def reached(a: str, b: str) -> set[str]:
            """The nodes up to ``b``'s last one that read (through any path) what call
            ``a`` made. A call's nodes are consecutive in program order and edges run
            forward, so the search stops at ``b``'s last position."""
            (a0, a1), b1 = span[a], span[b][1]
            succ = G._adj   # networkx's own dict: successors() costs a call a node
            todo = [v for n in order[a0:a1 + 1] for v in succ[n]
                    if a1 < position[v] <= b1]
            seen = set(todo)
            while todo:
                v = todo.pop()
                for w in succ[v]:
                    if w not in seen and position[w] <= b1:
                        seen.add(w)
                        todo.append(w)
            return seen

        def entries(b: str, after_a: set[str]) -> list[str]:
            """Where ``b`` starts apart from ``a``: what it draws that nothing inside ``b``
            flows into and that does not read ``a``'s result (what does is below ``a``
            already; an edge to each of those made DenseNet's layout 6x slower). A box is
            judged by all its members (its folded weights read nothing)."""
            b0, b1 = span[b]
            starts: dict[str, bool] = {}
            for n in order[b0:b1 + 1]:
                r = rep[n]
                if r is None:
                    continue
                fed = n in after_a or any(b0 <= position[p] <= b1 and rep[p] not in (None, r)
                                          for p in G.predecessors(n))
                starts[r] = starts.get(r, True) and not fed
            return [r for r, start in starts.items() if start][:MAX_STAGE_ENTRIES]

        for items in self.plan.contents.values():
            calls = [item.id for item in items if item.kind == "cluster"]
            for a, b in zip(calls, calls[1:]):
                if a not in last or b not in first:
                    continue
                after_a = reached(a, b)
                b0, b1 = span[b]
                if any(b0 <= position[v] <= b1 for v in after_a):  # b uses a's result
                    for entry in entries(b, after_a):
                        if entry != last[a]:
                            self.lines.append(
                                f"  {_q(last[a])} -> {_q(entry)} {_attrs(ANCHOR)};")

    def _order(self) -> list[str]:
        """The IR nodes in program order."""
        if self._nodes is None:
            self._nodes = list(self.plan.block_of)
        return self._nodes

    def _placed_by_nodes(self) -> set[str]:
        """Placeholders of calls that hold nodes (all folded): found through their nodes."""
        if self._with_nodes is None:
            self._with_nodes = {p for b in self.plan.block_of.values()
                                if (p := self._placeholder_of(b)) is not None}
        return self._with_nodes

    def _placeholder_of(self, block: str | None) -> str | None:
        """The placeholder drawn for the innermost call around ``block`` that draws nothing."""
        while block is not None:
            if block in self._placeholders:
                return self._placeholders[block]
            block = self.blocks[block]["parent"]
        return None


@dataclass
class DotResult:
    text: str
    #: decisions the user should hear about (e.g. the budget collapsed modules)
    notes: list[str]
    drawn_nodes: int
    #: runs of repeated calls drawn as one node: "roll:<cid>" -> the run's call container
    #: ids (the first and the last are drawn on their own, the others are the roll node)
    rolls: dict[str, list[str]] = field(default_factory=dict)
    #: everything that was decided about what to draw (the boxes, in drawing order, ...)
    plan: DrawPlan | None = None


def build_dot(G: nx.DiGraph, options: RenderOptions | None = None) -> DotResult:
    """DOT source plus what was decided; deterministic for the same input."""
    options = options or RenderOptions()
    with gc_paused():
        plan = plan_view(G, options)
        text = _DotWriter(G, options, plan).emit()
    return DotResult(text, list(plan.notes), plan.drawn_count,
                     {rid: list(calls) for rid, calls in plan.rolls.items()}, plan)


def to_dot(G: nx.DiGraph, options: RenderOptions | None = None) -> str:
    """DOT source for an IR graph; the same graph and options give the same bytes."""
    return build_dot(G, options).text
