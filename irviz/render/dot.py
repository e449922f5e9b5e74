"""IR graph (+ annotations) -> DOT source. Pure Python, deterministic.

Reads the graph and the facts analyses wrote on it; never recomputes them.
Layout rules that keep ``dot`` fast and the picture readable (see the
README's architecture section for the measurements behind them):

* constants, parameter ``GetAttr`` and constant lists are folded into their
  consumer's label and tooltip, never drawn as nodes (they fan out to
  hundreds of consumers and make ``dot`` explode), and so is traced shape arithmetic
  (``size`` -> ``Int`` -> ``ListConstruct``), shown as ``size=[x.size(0), 12, 64]``;
* shapes go into node labels, types into tooltips: no edge labels;
* module calls are nested clusters; a module deeper than ``depth`` (and,
  unless asked, a ``torch.nn`` library module) is one box with its op count;
* a value used far from where it is defined gets a small per-use "ghost"
  copy next to the consumer instead of one long edge.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import networkx as nx

from ..ir.model import CALL_KINDS, TASK_KINDS, format_shape, is_folded
from ..ir.source import short_location, source_line, split_location
from ..perf import gc_paused
from .escape import HtmlLabel, dot_html, dot_string, dot_value, truncate
from .style import (CLUSTER_STYLE, CRITICAL, EDGE_STYLE, FONT, LEGEND, NODE_STYLE,
                    OVERLAP_FILL, node_category)

#: drawn nodes an edge may skip before its source is drawn again as a ghost
GHOST_SPAN = 60
#: folded constants shown in a label before "..."
MAX_FOLDED = 3
#: fewest consecutive identical sibling module calls rolled into one node when the budget
#: demands it (the first and the last call stay drawn, the ones between become the node)
MIN_ROLL_RUN = 4


@dataclass
class RenderOptions:
    """What to draw. ``depth`` None = every module expanded."""

    depth: int | None = None
    expand_library: bool = False
    #: drawn-node budget: above it, module calls are collapsed from the deepest level up
    #: until the picture fits (None or 0: no budget). dot needs ~0.6 s at 1k nodes, ~19 s
    #: at 5k (measured), so the default keeps large models fast and readable.
    max_nodes: int | None = 1000
    #: module path to draw expanded, everything outside its call chain collapsed
    focus: str | None = None
    title: str | None = None
    #: paths in labels/tooltips are shown relative to this directory
    source_root: str | None = None
    notes: list[str] = field(default_factory=list)
    #: lint findings to draw (``Diagnostic.to_dict()`` records): a badge on the node(s) of
    #: the finding's line, or a line under the title when no node has that line
    findings: list[dict] = field(default_factory=list)


def is_library_call(info: dict) -> bool:
    """A call container (``G.graph["blocks"][cid]``) of a torch.nn module, drawn as one box
    by default - but not the containers (Sequential, ModuleList, ModuleDict), which hold
    the user's own modules."""
    qual = info.get("qualified_type") or ""
    if ".torch.nn.modules.container." in qual or qual.startswith("torch.nn.modules.container."):
        return False
    return ".torch.nn." in qual or qual.startswith("torch.nn.")


#: longest line of a tooltip, and most lines (the full text is in the JSON data)
TOOLTIP_LINE = 200
TOOLTIP_LINES = 40

_q = dot_string   # a DOT double-quoted string
_h = dot_html     # text inside an HTML-like label


def _attrs(attrs: dict) -> str:
    parts = [f"{key}={dot_value(value)}" for key, value in attrs.items()
             if value is not None and value != ""]
    return "[" + ", ".join(parts) + "]"


def _truncate(text: str, width: int = 48) -> str:
    return truncate(str(text), width)


def _tip(lines: list[str]) -> str:
    """A tooltip: each line cut to :data:`TOOLTIP_LINE` characters, at most
    :data:`TOOLTIP_LINES` lines."""
    lines = [_truncate(line, TOOLTIP_LINE) for line in lines]
    if len(lines) > TOOLTIP_LINES:
        lines = lines[:TOOLTIP_LINES - 1] + [f"... {len(lines) - TOOLTIP_LINES + 1} more lines"]
    return "\n".join(lines)


class _DotWriter:
    def __init__(self, G: nx.DiGraph, options: RenderOptions):
        self.G = G
        self.opt = options
        self.blocks: dict[str, dict] = G.graph["blocks"]
        self.root_dir = options.source_root or (
            os.path.dirname(G.graph["source_file"]) if G.graph.get("source_file") else None)
        self.notes_out: list[str] = []  # what the writer decided, for the user's stderr
        #: runs of repeated calls drawn as one node: "roll:<first rolled cid>" -> the run's
        #: call container ids (first and last drawn); IR node -> its roll node
        self.rolls: dict[str, list[str]] = {}
        self._rolled: dict[str, str] = {}
        self.collapsed = self._choose_collapse()
        self.rep = {n: self._representative(n) for n in G}
        self._box_members: dict[str, list[str]] = {}   # "box:cid" -> its nodes, in order
        for node, rep in self.rep.items():
            if rep is not None and rep.startswith("box:"):
                self._box_members.setdefault(rep, []).append(node)
        self._drop_empty_library_boxes()
        self.badges, self.unplaced = self._place_findings()
        self.lines: list[str] = []
        self._control_edges: list[tuple[str, str]] = []
        self._kids = self._children()
        self._members: dict[str, list[str]] = {c: [] for c in self.blocks}
        for node, data in G.nodes(data=True):
            self._members[data["block"]].append(node)

    # -- what is drawn -----------------------------------------------------------
    def _chain(self, block: str) -> list[str]:
        """Container ids from the root down to ``block``."""
        chain = []
        while block is not None:
            chain.append(block)
            block = self.blocks[block]["parent"]
        return chain[::-1]

    def _is_library(self, info: dict) -> bool:
        return is_library_call(info)

    def _collapsed_containers(self, depth: int | None,
                              focus: set[str] | None = None) -> dict[str, str]:
        """container id -> id of the outermost collapsed call container above it.

        ``focus``: the call containers to keep open (the focused module's calls, their
        ancestors and everything inside them); every other call is collapsed.
        """
        out: dict[str, str] = {}
        for cid in self.blocks:
            for anc in self._chain(cid):
                info = self.blocks[anc]
                if info["kind"] not in CALL_KINDS:
                    continue
                too_deep = depth is not None and info["depth"] > depth
                library = not self.opt.expand_library and self._is_library(info)
                outside = focus is not None and anc not in focus
                if too_deep or library or outside:
                    out[cid] = anc
                    break
        return out

    def _drawn_count(self, collapsed: dict[str, str],
                     rolled: dict[str, str] | None = None) -> int:
        reps = set()
        for node, data in self.G.nodes(data=True):
            roll = rolled.get(node) if rolled else None
            if roll is not None:
                reps.add(roll)
                continue
            box = collapsed.get(data["block"])
            if box is not None:
                reps.add(box)
            elif not is_folded(data):
                reps.add(node)
        return len(reps)

    def _focus_set(self) -> set[str] | None:
        focus = self.opt.focus
        if not focus:
            return None
        calls = {cid: info for cid, info in self.blocks.items() if info["kind"] in CALL_KINDS}
        hits = [cid for cid, info in calls.items() if info.get("module") == focus]
        if not hits:
            from ..errors import UsageError
            import difflib

            modules = sorted({info.get("module") for info in calls.values()
                              if info.get("module")})
            close = difflib.get_close_matches(focus, modules, n=3)
            raise UsageError(f"--focus {focus}: the model has no module call with that path",
                             hint=(f"did you mean {', '.join(close)}? " if close else "")
                             + f"module paths: {', '.join(modules[:30])}"
                             + (" ..." if len(modules) > 30 else ""))
        keep: set[str] = set()
        for cid in hits:
            keep.update(self._chain(cid))
        for cid in calls:
            if any(anc in hits for anc in self._chain(cid)):
                keep.add(cid)
        return keep

    def _choose_collapse(self) -> dict[str, str]:
        """Apply --depth/--focus; then fit the drawn-node budget.

        Over the budget, the depth levels are tried from the deepest up: the calls deeper
        than the level collapsed into boxes and, when that alone still draws too many
        nodes, runs of repeated sibling calls rolled into one node each
        (:meth:`_roll_up`). Of the pictures that fit, the one drawing the most nodes wins
        (a tie goes to the deeper level; with --focus, a picture keeping the focused call
        open beats any that boxes it). So rolling comes before giving up a level when it
        keeps more detail - 1,667 identical blocks draw the first and the last block open
        around one roll node, not 1,669 boxes - and depth alone wins when it keeps more -
        10 stages of 100 blocks at a budget of 5,000 draw 1,000 block boxes rather than
        every stage's blocks rolled. Nothing is rolled when the picture fits as it is, nor
        under an explicit --depth; the focused call and its ancestors are never rolled.
        When nothing fits, the shallowest level with every run rolled is drawn, and the
        note says so.
        """
        focus = self._focus_set()
        collapsed = self._collapsed_containers(self.opt.depth, focus)
        budget = self.opt.max_nodes
        if not budget or self.opt.depth is not None:
            return collapsed
        drawn = self._drawn_count(collapsed)
        if drawn <= budget:
            return collapsed
        depths = sorted({info["depth"] for info in self.blocks.values()
                         if info["kind"] in CALL_KINDS}, reverse=True)
        levels = [(None, collapsed)] + [(d - 1, None) for d in depths if d > 0]
        focused = [cid for cid, info in self.blocks.items() if focus is not None
                   and info["kind"] in CALL_KINDS and info.get("module") == self.opt.focus]
        best = None  # (rank, count, depth, collapsed, rolled, rolls)
        for depth, candidate in levels:
            if candidate is None:
                candidate = self._collapsed_containers(depth, focus)
            rank = (not any(cid in candidate for cid in focused),)
            count = self._drawn_count(candidate)
            if count <= budget:  # depth alone fits; shallower levels only draw less
                if best is None or rank + (count,) > best[0]:
                    best = (rank + (count,), count, depth, candidate, {}, {})
                break
            rolled, rolls, rolled_count = self._roll_up(candidate, count, budget)
            if rolled_count <= budget and (best is None or rank + (rolled_count,) > best[0]):
                best = (rank + (rolled_count,), rolled_count, depth, candidate, rolled, rolls)
            last = (None, rolled_count, depth, candidate, rolled, rolls)
        if best is None:  # nothing fits: the fewest nodes there are
            best = last
        _, count, depth, candidate, self._rolled, self.rolls = best
        self.notes_out.append(self._budget_note(drawn, budget, count, depth))
        return candidate

    def _budget_note(self, drawn: int, budget: int, count: int, depth: int | None) -> str:
        did = []
        if depth is not None:
            did.append(f"module calls deeper than {depth} are drawn as boxes")
        if self.rolls:
            runs = []
            for calls in list(self.rolls.values())[:2]:
                first, last = self.blocks[calls[1]], self.blocks[calls[-2]]
                runs.append(f"{self._call_name(first)} … {self._call_name(last)}, "
                            f"{len(calls) - 2} × {self._call_type(first)}")
            more = len(self.rolls) - len(runs)
            n = len(self.rolls)
            did.append(f"{n} run{'s' if n != 1 else ''} of repeated calls "
                       f"{'are' if n != 1 else 'is'} rolled up (" + "; ".join(runs)
                       + (f"; {more} more" if more else "") + ")")
        if not did:
            return (f"{drawn} nodes exceed the budget of {budget}, but the model has "
                    "no module calls to collapse: drawing all of them")
        over = ", still over the budget" if count > budget else ""
        return (f"{drawn} nodes exceed the budget of {budget}: " + ", and ".join(did)
                + f" ({count} nodes{over}; --depth or --max-nodes to change, "
                  "--focus MODULE to open one)")

    @staticmethod
    def _call_name(info: dict) -> str:
        return info.get("module") or info["label"]

    @staticmethod
    def _call_type(info: dict) -> str:
        return info.get("class") or info["label"].rsplit(": ", 1)[-1]

    # -- rolling up runs of repeated calls ---------------------------------------
    def _call_nodes(self) -> dict[str, list[str]]:
        """Call container id -> its IR nodes at any depth, in program order (once)."""
        if not hasattr(self, "_calls_in"):
            self._order = list(self.G)
            self._pos = {n: i for i, n in enumerate(self._order)}
            self._calls_in: dict[str, list[str]] = {}
            for node in self._order:
                block = self.G.nodes[node]["block"]
                while block is not None:
                    if self.blocks[block]["kind"] in CALL_KINDS:
                        self._calls_in.setdefault(block, []).append(node)
                    block = self.blocks[block]["parent"]
        return self._calls_in

    def _runs(self) -> list[list[str]]:
        """Runs of repeated calls: at least :data:`MIN_ROLL_RUN` call containers with the
        same parent, consecutive in program order, of the same kind, type and method and
        with the same number of ops; between two calls of a run only nodes of the parent,
        the same kinds in every gap (a transformer's tuple unpacking between layers).
        The focused call and its ancestors end a run. Program order; computed once."""
        if hasattr(self, "_runs_found"):
            return self._runs_found
        inside = self._call_nodes()
        G, pos, order = self.G, self._pos, self._order
        never: set[str] = set()
        if self.opt.focus:
            for cid, info in self.blocks.items():
                if info["kind"] in CALL_KINDS and info.get("module") == self.opt.focus:
                    never.update(self._chain(cid))
        siblings: dict[str, list[str]] = {}
        for cid in inside:  # calls that ran no operation have no place: never rolled
            siblings.setdefault(self.blocks[cid]["parent"], []).append(cid)

        def signature(cid: str) -> tuple:
            info = self.blocks[cid]
            ops = sum(1 for n in inside[cid] if not is_folded(G.nodes[n]))
            return (info["kind"], info.get("qualified_type") or info["label"],
                    info.get("method"), ops)

        runs: list[list[str]] = []
        for parent, calls in siblings.items():
            calls.sort(key=lambda c: pos[inside[c][0]])
            run: list[str] = []
            run_sig = gap_sig = None
            for cid in calls + [None]:
                sig = signature(cid) if cid is not None else None
                if run and cid is not None and cid not in never and sig == run_sig:
                    gap = order[pos[inside[run[-1]][-1]] + 1:pos[inside[cid][0]]]
                    if all(G.nodes[n]["block"] == parent for n in gap):
                        kinds = tuple(G.nodes[n]["kind"] for n in gap
                                      if not is_folded(G.nodes[n]))
                        if len(run) == 1 or kinds == gap_sig:
                            run.append(cid)
                            gap_sig = kinds
                            continue
                if len(run) >= MIN_ROLL_RUN:
                    runs.append(run)
                run = [cid] if cid is not None and cid not in never else []
                run_sig, gap_sig = sig, None
        runs.sort(key=lambda r: pos[inside[r[0]][0]])
        self._runs_found = runs
        return runs

    def _roll_up(self, collapsed: dict[str, str], count: int,
                 budget: int) -> tuple[dict[str, str], dict[str, list[str]], int]:
        """Roll up runs (:meth:`_runs`) whose parent is drawn open, longest first, runs of
        the same length together (ten stages of 100 blocks look alike), until the
        picture fits ``budget``. In a rolled run the first and the last call stay as
        they are; every node of the calls between (and of the parent between them) is
        represented by the node ``roll:<first rolled cid>``.

        Returns IR node -> roll node, roll node -> the run's calls, and the drawn count.
        """
        inside = self._call_nodes()
        runs = [r for r in self._runs() if self.blocks[r[0]]["parent"] not in collapsed]
        runs.sort(key=lambda r: -len(r))  # stable: program order among equal lengths
        rolled: dict[str, str] = {}
        rolls: dict[str, list[str]] = {}
        i = 0
        while count > budget and i < len(runs):
            length = len(runs[i])
            while i < len(runs) and len(runs[i]) == length:
                run = runs[i]
                i += 1
                start, end = inside[run[1]][0], inside[run[-2]][-1]
                if start in rolled:  # inside a call an outer run already rolled
                    continue
                rid = f"roll:{run[1]}"
                parent = self.blocks[run[0]]["parent"]
                for node in self._order[self._pos[start]:self._pos[end] + 1]:
                    data = self.G.nodes[node]
                    if data["block"] != parent or not is_folded(data):
                        rolled[node] = rid  # an inner run rolled before is swallowed
                rolls[rid] = run
            count = self._drawn_count(collapsed, rolled)
        live = set(rolled.values())
        return rolled, {rid: run for rid, run in rolls.items() if rid in live}, count

    def _drop_empty_library_boxes(self) -> None:
        """A collapsed library call that recorded no operation (a traced ``nn.Identity``)
        has no edges; drawn, it is a stray box at the top of its cluster that pushes the
        layout into a staircase (ResNet-18). Its folded constants are not drawn either."""
        self.skipped_boxes = {
            box for box, members in self._box_members.items()
            if self._is_library(self.blocks[box[4:]])
            and all(is_folded(self.G.nodes[n]) for n in members)}
        for box in self.skipped_boxes:
            for node in self._box_members.pop(box):
                self.rep[node] = None

    def _representative(self, node: str) -> str | None:
        roll = self._rolled.get(node)
        if roll is not None:
            return roll
        data = self.G.nodes[node]
        box = self.collapsed.get(data["block"])
        if box is not None:
            return f"box:{box}"
        if is_folded(data):
            return None
        return node

    def _place_findings(self) -> tuple[dict[str, list[dict]], list[dict]]:
        """Drawn node (or box) -> findings on its source line; findings with no node."""
        by_line: dict[tuple[str, int], str] = {}
        for node, data in self.G.nodes(data=True):
            rep = self.rep[node]
            loc = data.get("user_source")
            if rep is None or not loc:
                continue
            path, line, _ = split_location(loc)
            by_line.setdefault((os.path.abspath(path), line), rep)
        badges: dict[str, list[dict]] = {}
        unplaced = []
        for finding in self.opt.findings:
            rep = by_line.get((os.path.abspath(finding["path"]), finding["line"]))
            if rep is None:
                unplaced.append(finding)
            else:
                badges.setdefault(rep, []).append(finding)
        return badges, unplaced

    def _badge_rows(self, rep: str) -> list[str]:
        codes = sorted({f["code"] for f in self.badges.get(rep, [])})
        return [f'<FONT POINT-SIZE="9" COLOR="#c62828"><B>⚠ {_h(" ".join(codes))}</B></FONT>'] \
            if codes else []

    def _badge_tooltip(self, rep: str) -> list[str]:
        return [f"{f['code']} {f['name']}: {f['message']}" for f in self.badges.get(rep, [])]

    def _loc(self, location: str | None) -> str | None:
        return short_location(location, self.root_dir)

    # -- labels ------------------------------------------------------------------
    def _const_text(self, node: str) -> str:
        data = self.G.nodes[node]
        if "irviz.shape_expr" in data:
            return data["irviz.shape_expr"]
        if data["kind"] == "prim::Constant":
            return data["label"]
        if data["kind"] == "prim::GetAttr":
            shape = format_shape(data["outputs"][0]) if data["outputs"] else None
            return f"{data['label']}: {shape}" if shape else data["label"]
        if data["kind"] in ("prim::ListConstruct", "prim::TupleConstruct"):
            items = [self._const_text(p[0]) for p in data["inputs"] if p]
            bracket = "[]" if data["kind"] == "prim::ListConstruct" else "()"
            return bracket[0] + ", ".join(items) + bracket[1]
        return data["label"]

    def _folded(self, node: str) -> list[str]:
        """``name=value`` for each input folded into this node's label."""
        data = self.G.nodes[node]
        names = data.get("arg_names") or []
        out = []
        for i, producers in enumerate(data["inputs"]):
            if len(producers) != 1 or producers[0] not in self.G:
                continue
            producer = producers[0]
            if self.rep[producer] is not None:
                continue
            value = self._const_text(producer)
            if value == "None":
                continue
            name = names[i] if i < len(names) else None
            out.append(f"{name}={value}" if name else value)
        return out

    def _op_label(self, node: str) -> HtmlLabel:
        data = self.G.nodes[node]
        kind = data["kind"]
        title = data["label"]
        rows = []
        if kind == "prim::Param":
            title = data["label"]
        elif kind == "prim::If":
            title = "if " + _truncate(_strip_keyword(data.get("code"), "if") or "…", 36)
        elif kind == "prim::Loop":
            trip = data.get("trip_count")
            title = "loop"
            count = data["inputs"][0] if data["inputs"] else []
            if len(count) == 1 and count[0] in self.G and self.rep[count[0]] is None:
                trip = self._const_text(count[0])   # e.g. xs.size(0), folded
            if trip is not None:
                rows.append(f"trip count: {trip}")
        elif kind in ("prim::fork", "prim::awaitable"):
            title = "fork" if kind == "prim::fork" else "awaitable"
            callee = self._task_callee(node)
            if callee:
                rows.append(f"→ {callee}")
        shapes = [format_shape(o) for o in data["outputs"]]
        shapes = [s for s in shapes if s]
        if shapes:
            rows.append(_truncate(", ".join(shapes), 40))
        elif kind == "prim::Param" and data["outputs"]:
            rows.append(data["outputs"][0]["type"])
        folded = self._folded(node) if kind != "prim::Loop" else []
        if folded:
            more = "…" if len(folded) > MAX_FOLDED else ""
            rows.append(_truncate(", ".join(folded[:MAX_FOLDED]) + more, 44))
        cells = [f"<B>{_h(_truncate(title, 60))}</B>"]
        cells += [f'<FONT POINT-SIZE="9" COLOR="#455a64">{_h(_truncate(r, 60))}</FONT>'
                  for r in rows if r]
        cells += self._badge_rows(node)
        return HtmlLabel("<" + "<BR/>".join(cells) + ">")

    def _task_callee(self, fork: str) -> str | None:
        task = f"{fork}/task"
        for cid, info in self.blocks.items():
            if info["parent"] != task or info["kind"] not in CALL_KINDS:
                continue
            if info["kind"] == "function":
                return info["label"]
            method = info.get("method")
            suffix = f".{method}" if method not in (None, "forward") else ""
            return info["label"].split(":")[0] + suffix
        return None

    def _tooltip(self, node: str) -> str:
        data = self.G.nodes[node]
        lines = [data["kind"]]
        loc = data.get("user_source") or data.get("source")
        if loc:
            lines.append(f"source: {self._loc(loc)}")
            text = source_line(loc)
            if text:
                lines.append(f"  {_truncate(text, 80)}")
        if data.get("source") and data.get("user_source") != data.get("source"):
            lines.append(f"op defined at: {self._loc(data['source'])}")
        scope = data.get("scope")
        lines.append(f"scope: {scope or '<root>'} ({data.get('scope_class')})")
        for i, out in enumerate(data["outputs"]):
            shape = format_shape(out)
            name = f"{out['name']}: " if out.get("name") else ""
            lines.append(f"out{i}: {name}{out['type']}" + (f" [{shape}]" if shape else ""))
        folded = self._folded(node)
        if folded:
            lines.append("args: " + ", ".join(folded))
        lines += self._badge_tooltip(node)
        if "irviz.waits" in data:
            waits = data["irviz.waits"]
            lines.append("waited by: " + (", ".join(self._loc(self.G.nodes[w].get("source"))
                                                  or w for w in waits) or "never waited"))
        return _tip(lines)

    # -- emit --------------------------------------------------------------------
    def emit(self) -> str:
        G = self.G
        out = self.lines
        out.append(f"digraph {_q(G.graph.get('name') or 'irviz')} {{")
        out.append(f"  graph {_attrs({'rankdir': 'TB', 'ordering': 'out', 'fontname': FONT, 'fontsize': '11', 'nodesep': '0.25', 'ranksep': '0.35', 'newrank': 'true', 'labelloc': 't', 'labeljust': 'l', 'label': self._title_label(), 'tooltip': _tip([G.graph.get('name') or 'irviz'])})};")
        out.append(f"  node {_attrs({'fontname': FONT, 'fontsize': '11', 'margin': '0.12,0.04', 'height': '0.3'})};")
        out.append(f"  edge {_attrs({'fontname': FONT, 'fontsize': '9', 'arrowsize': '0.6'})};")
        self._emit_container("root", "  ")
        self._emit_edges()
        out.append("}")
        return "\n".join(out) + "\n"

    def _title_label(self) -> HtmlLabel:
        G = self.G
        title = self.opt.title or f"{G.graph.get('name')} · {G.graph.get('root_class')}"
        rows = [f'<TR><TD ALIGN="LEFT" COLSPAN="{len(LEGEND)}"><B>{_h(_truncate(title, 140))}</B>'
                f' <FONT COLOR="#607d8b">({_h(G.graph.get("mode"))})</FONT></TD></TR>']
        notes = list(self.opt.notes) + self.notes_out + [
            f"⚠ {f['code']} {os.path.basename(f['path'])}:{f['line']}: {f['message']}"
            for f in self.unplaced]
        for note in notes:
            rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="{len(LEGEND)}">'
                        f'<FONT COLOR="#c62828">{_h(_truncate(note, 140))}</FONT></TD></TR>')
        cells = []
        for category, text in LEGEND:
            style = NODE_STYLE[category]
            cells.append(f'<TD BGCOLOR="{style["fillcolor"]}" COLOR="{style["color"]}">'
                         f'<FONT POINT-SIZE="9">{_h(text)}</FONT></TD>')
        rows.append("<TR>" + "".join(cells) + "</TR>")
        edge_cells = ('<TR><TD ALIGN="LEFT" COLSPAN="%d"><FONT POINT-SIZE="9" COLOR="#b34700">'
                      '- - ▸ future (fork → wait)   ━▸ task result   </FONT>'
                      '<FONT POINT-SIZE="9" COLOR="#c2185b">▭ critical path   </FONT>'
                      '<FONT POINT-SIZE="9" COLOR="#455a64">dashed box: module call · '
                      'yellow: if/loop · orange: forked task, light orange: work beside it '
                      '· hover for source</FONT>'
                      '</TD></TR>' % len(LEGEND))
        rows.append(edge_cells)
        return HtmlLabel('<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2" CELLPADDING="3">'
                         + "".join(rows) + "</TABLE>>")

    def _children(self) -> dict[str, list[str]]:
        kids: dict[str, list[str]] = {cid: [] for cid in self.blocks}
        for cid, info in self.blocks.items():
            if info["parent"] is not None:
                kids[info["parent"]].append(cid)
        return kids

    def _emit_container(self, cid: str, indent: str) -> None:
        # nodes that own blocks are wrapped together with their blocks
        owned = {}
        for child in self._kids[cid]:
            owner = self.blocks[child].get("owner")
            if owner is not None:
                owned.setdefault(owner, []).append(child)
        for node in self._members[cid]:
            if node in owned and self.rep[node] == node:
                self._emit_control(node, owned[node], indent)
            else:
                self._emit_node(node, indent)
        for child in self._kids[cid]:
            info = self.blocks[child]
            if info.get("owner") is not None:
                continue
            if child in self._roll_middles():  # drawn once, as the run's roll node
                if f"roll:{child}" in self.rolls:
                    self._emit_roll(f"roll:{child}", indent)
                continue
            if child in self.collapsed and self.collapsed[child] == child:
                self._emit_box(child, indent)
            elif child not in self.collapsed:
                self._emit_call_cluster(child, indent)

    def _emit_node(self, node: str, indent: str) -> None:
        rep = self.rep[node]
        if rep != node:
            return
        data = self.G.nodes[node]
        category = node_category(data["kind"])
        attrs = dict(NODE_STYLE[category])
        attrs.update(label=self._op_label(node), tooltip=self._tooltip(node),
                     id=f"irviz:{node}", **{"class": f"irviz-{category}"})
        classes = [f"irviz-{category}"]
        if data.get("irviz.overlaps") and category == "op":
            attrs["fillcolor"] = OVERLAP_FILL
            classes.append("irviz-overlap")
        if data.get("irviz.critical"):
            attrs.update(CRITICAL)
            classes.append("irviz-critical")
        if node in self.badges:
            attrs.update(color="#c62828", penwidth="2.4")
            classes.append("irviz-finding")
        attrs["class"] = " ".join(classes)
        self.lines.append(f"{indent}{_q(node)} {_attrs(attrs)};")

    def _emit_box(self, cid: str, indent: str) -> None:
        info = self.blocks[cid]
        if f"box:{cid}" in self.skipped_boxes:
            return
        members = self._box_members.get(f"box:{cid}", [])
        shown = [n for n in members if not is_folded(self.G.nodes[n])]
        ops = len(shown)
        last_out = self.G.nodes[shown[-1]]["outputs"] if shown else []
        shape = format_shape(last_out[0]) if last_out else None  # what the call returns
        rows = [f"<B>{_h(_truncate(info['label'], 60))}</B>",
                f'<FONT POINT-SIZE="9" COLOR="#455a64">{ops} op{"s" if ops != 1 else ""}'
                + (f" → {_h(shape)}" if shape else "") + "</FONT>"]
        label = HtmlLabel("<" + "<BR/>".join(rows + self._badge_rows(f"box:{cid}")) + ">")
        tooltip = [f"{info['kind']} call: {info['label']}",
                   f"type: {info.get('qualified_type')}"]
        if info.get("user_source"):
            tooltip.append(f"called at: {self._loc(info['user_source'])}")
        tooltip.append(f"collapsed: {ops} operations inside")
        tooltip += self._badge_tooltip(f"box:{cid}")
        attrs = dict(NODE_STYLE["module"])
        attrs.update(label=label, tooltip=_tip(tooltip), id=f"irviz:box:{cid}",
                     **{"class": "irviz-module"})
        if any(self.G.nodes[n].get("irviz.critical") for n in members):
            attrs.update(CRITICAL)
            attrs["class"] += " irviz-critical"
        self.lines.append(f"{indent}{_q('box:' + cid)} {_attrs(attrs)};")

    def _roll_middles(self) -> set[str]:
        """The call containers drawn as a roll node (the middles of the rolled runs)."""
        if not hasattr(self, "_middles"):
            self._middles = {c for calls in self.rolls.values() for c in calls[1:-1]}
        return self._middles

    def _emit_roll(self, rid: str, indent: str) -> None:
        """The calls between the first and the last of a run of repeated calls, as one
        node: their paths, how many, what the last one returns (see :meth:`_roll_up`)."""
        calls = self.rolls[rid]
        first, last = self.blocks[calls[0]], self.blocks[calls[-1]]
        middle = [self.blocks[c] for c in calls[1:-1]]
        inside = self._call_nodes()
        if not hasattr(self, "_roll_members"):
            self._roll_members: dict[str, list[str]] = {}
            for n, r in self.rep.items():
                if r is not None and r.startswith("roll:"):
                    self._roll_members.setdefault(r, []).append(n)
        members = self._roll_members.get(rid, [])
        ops = sum(1 for n in members if not is_folded(self.G.nodes[n]))
        shown = [n for n in inside[calls[-2]] if not is_folded(self.G.nodes[n])]
        last_out = self.G.nodes[shown[-1]]["outputs"] if shown else []
        shape = format_shape(last_out[0]) if last_out else None  # what the last one returns
        kind = self._call_type(first)
        names = [self._call_name(info) for info in middle]
        head = f"{names[0]} … {names[-1]}"
        rows = [f"<B>{_h(_truncate(head, 60))}</B>",
                f'<FONT POINT-SIZE="9" COLOR="#455a64">'
                f'{_h(_truncate(f"{kind} × {len(names)} (same as {self._call_name(first)})", 60))}'
                "</FONT>",
                f'<FONT POINT-SIZE="9" COLOR="#455a64">{ops} op{"s" if ops != 1 else ""}'
                + (f" → {_h(shape)}" if shape else "") + "</FONT>"]
        label = HtmlLabel("<" + "<BR/>".join(rows + self._badge_rows(rid)) + ">")
        tooltip = [f"{len(names)} repeated calls of {kind} rolled up "
                   f"(type: {first.get('qualified_type') or first['label']})",
                   f"between {self._call_name(first)} and {self._call_name(last)}, "
                   "drawn before and after",
                   f"{ops} operations inside, {ops // max(len(names), 1)} per call"]
        if middle[0].get("user_source"):
            tooltip.append(f"called at: {self._loc(middle[0]['user_source'])}")
        line = "calls:"
        for name in names:  # the paths, a line at a time
            if len(line) + len(name) > 120:
                tooltip.append(line)
                line = " "
            line += f" {name}"
        tooltip.append(line)
        tooltip += self._badge_tooltip(rid)
        attrs = dict(NODE_STYLE["rolled"])
        attrs.update(label=label, tooltip=_tip(tooltip), id=f"irviz:{rid}",
                     **{"class": "irviz-module irviz-rolled"})
        if any(self.G.nodes[n].get("irviz.critical") for n in members):
            attrs.update(CRITICAL)
            attrs["class"] += " irviz-critical"
        if rid in self.badges:
            attrs.update(color="#c62828", penwidth="2.4")
            attrs["class"] += " irviz-finding"
        self.lines.append(f"{indent}{_q(rid)} {_attrs(attrs)};")

    def _cluster_head(self, cid: str, kind: str, label: str, tooltip: str, indent: str,
                      frozen: bool = False) -> None:
        style = dict(CLUSTER_STYLE[kind])
        if frozen:
            style.update(CLUSTER_STYLE["frozen"])
        self.lines.append(f"{indent}subgraph {_q('cluster_' + cid)} {{")
        attrs = {"label": label, "tooltip": tooltip, "fontsize": "10", "labeljust": "l",
                 "margin": "8", "id": f"irviz:cluster:{cid}", **style}
        for key, value in attrs.items():
            if value:
                self.lines.append(f"{indent}  {key}={dot_value(value)};")

    def _emit_call_cluster(self, cid: str, indent: str) -> None:
        info = self.blocks[cid]
        where = self._loc(info.get("user_source"))
        label = f"<<B>{_h(_truncate(info['label'], 80))}</B>"
        if info.get("method") not in (None, "forward") and info["kind"] == "method":
            label += f" <FONT POINT-SIZE=\"9\">.{_h(_truncate(info['method'], 40))}()</FONT>"
        frozen = info.get("irviz.frozen")
        if frozen:
            label += f'<BR/><FONT COLOR="#c62828" POINT-SIZE="9">{_h(_truncate(frozen, 140))}</FONT>'
        self._cluster_head(cid, info["kind"], HtmlLabel(label + ">"),
                           _tip([f"{info['label']}" + (f" (called at {where})" if where else "")]),
                           indent, frozen=bool(frozen))
        self._emit_container(cid, indent + "  ")
        if self._first_drawn(cid) is None:  # e.g. a traced module that only returned its input
            attrs = dict(NODE_STYLE["empty"])
            attrs.update(label="no operations recorded", fontsize="9", fontcolor="#757575",
                         tooltip=_tip([f"{info['label']}: the call ran no operations "
                                       f"(it returned its input or a constant)"]))
            self.lines.append(f"{indent}  {_q(cid + '/empty')} {_attrs(attrs)};")
        self.lines.append(f"{indent}}}")

    def _emit_control(self, node: str, blocks: list[str], indent: str) -> None:
        data = self.G.nodes[node]
        kind = {"prim::If": "if", "prim::Loop": "loop"}.get(data["kind"], "fork")
        where = self._loc(data.get("user_source") or data.get("source"))
        code = data.get("code") or {
            "prim::fork": "torch.jit.fork (traced: no source line)",
            "prim::awaitable": "torch.jit._awaitable"}.get(data["kind"], data["kind"])
        label = f"<<B>{_h(_truncate(code, 60))}</B>"
        if where:
            label += f' <FONT POINT-SIZE="9">{_h(_truncate(where, 60))}</FONT>'
        self._cluster_head(f"ctl:{node}", kind, HtmlLabel(label + ">"),
                           _tip([f"{data['kind']} at {where}"]), indent)
        self._emit_node(node, indent + "  ")
        for cid in blocks:
            info = self.blocks[cid]
            sub_label = info["label"]
            if info["kind"] in TASK_KINDS:
                sub_label = "forked task (runs in parallel until its wait)"
            self._cluster_head(cid, info["kind"], sub_label, sub_label, indent + "  ")
            self._emit_container(cid, indent + "    ")
            first = self._first_drawn(cid)
            if first is None:
                placeholder = f"{cid}/empty"
                text = "passes its input through" if info["kind"].startswith("if") else "empty"
                attrs = dict(NODE_STYLE["empty"])
                attrs.update(label=text, fontsize="9", fontcolor="#757575",
                             tooltip=_tip([f"{info['label']}: no operations"]))
                self.lines.append(f"{indent}    {_q(placeholder)} {_attrs(attrs)};")
                self._control_edges.append((node, placeholder))
            elif first != node:
                self._control_edges.append((node, first))
            self.lines.append(f"{indent}  }}")
        self.lines.append(f"{indent}}}")

    def _first_drawn(self, cid: str) -> str | None:
        """The first drawn node (or box) inside container ``cid``, at any depth."""
        if not hasattr(self, "_first_in"):
            self._first_in: dict[str, str] = {}
            for node in self.G:  # program order; each node marks its enclosing containers
                rep = self.rep[node]
                if rep is None:
                    continue
                block = self.G.nodes[node]["block"]
                while block is not None and block not in self._first_in:
                    self._first_in[block] = rep
                    block = self.blocks[block]["parent"]
        return self._first_in.get(cid)

    def _edge_kind(self, u: str, v: str, data: dict) -> str:
        t = data.get("type") or ""
        return "future" if ("Future[" in t or "Await[" in t) else "data"

    def _emit_edges(self) -> None:
        G = self.G
        position: dict[str, int] = {}
        for n in G:
            rep = self.rep[n]
            if rep is not None and rep not in position:
                position[rep] = len(position)
        seen: set[tuple[str, str]] = set()
        ghosts = 0
        for u, v, data in G.edges(data=True):
            ru, rv = self.rep[u], self.rep[v]
            if ru is None or rv is None or ru == rv or (ru, rv) in seen:
                continue
            seen.add((ru, rv))
            kind = self._edge_kind(u, v, data)
            attrs = dict(EDGE_STYLE[kind])
            shape = format_shape(data)
            attrs["tooltip"] = _tip([(data.get("type") or "") + (f" [{shape}]" if shape else "")])
            src = ru
            if position.get(rv, 0) - position.get(ru, 0) > GHOST_SPAN and G.out_degree(u) > 1:
                ghosts += 1
                src = f"ghost:{ghosts}:{ru}"
                ghost = dict(NODE_STYLE["op"])
                ghost.update(style="rounded,dashed", color="#90a4ae", fontcolor="#607d8b",
                             fontsize="9", label=f"↺ {_truncate(self._ghost_label(ru), 48)}",
                             tooltip=f"same value as {ru} (drawn again to avoid a long edge)")
                self.lines.append(f"  {_q(src)} {_attrs(ghost)};")
                attrs.update(EDGE_STYLE["ghost"])
            self.lines.append(f"  {_q(src)} -> {_q(rv)} {_attrs(attrs)};")
        for u, v in self._control_edges:
            self.lines.append(f"  {_q(u)} -> {_q(v)} {_attrs(EDGE_STYLE['control'])};")
        # fork -> wait pairings (from analyses.fork_wait) and task results
        for node, data in G.nodes(data=True):
            if "irviz.waits" not in data or self.rep[node] != node:
                continue
            results = [self.rep[r] for r in data.get("task_returns", []) if r in self.rep]
            for wait in data["irviz.waits"]:
                rw = self.rep[wait]
                if rw is None:
                    continue
                if (node, rw) not in seen:
                    seen.add((node, rw))
                    self.lines.append(f"  {_q(node)} -> {_q(rw)} "
                                      f"{_attrs({**EDGE_STYLE['pairing'], 'tooltip': 'future waited here'})};")
                for r in results:
                    if r and r != rw and (r, rw) not in seen:
                        seen.add((r, rw))
                        self.lines.append(f"  {_q(r)} -> {_q(rw)} "
                                          f"{_attrs({**EDGE_STYLE['result'], 'constraint': 'false', 'tooltip': 'task result'})};")

    def _ghost_label(self, rep: str) -> str:
        if rep.startswith("box:"):
            return self.blocks[rep[4:]]["label"]
        if rep.startswith("roll:"):
            calls = self.rolls[rep]
            return (f"{self._call_name(self.blocks[calls[1]])} … "
                    f"{self._call_name(self.blocks[calls[-2]])}")
        return self.G.nodes[rep]["label"]


def _strip_keyword(code: str | None, keyword: str) -> str | None:
    if not code:
        return None
    code = code.strip()
    if code.startswith(keyword + " "):
        code = code[len(keyword) + 1:]
    return code.rstrip(":")


@dataclass
class DotResult:
    text: str
    #: decisions the user should hear about (e.g. the budget collapsed modules)
    notes: list[str]
    drawn_nodes: int
    #: runs of repeated calls drawn as one node: "roll:<cid>" -> the run's call container
    #: ids (the first and the last are drawn on their own, the others are the roll node)
    rolls: dict[str, list[str]] = field(default_factory=dict)


def build_dot(G: nx.DiGraph, options: RenderOptions | None = None) -> DotResult:
    """DOT source plus what the writer decided; deterministic for the same input."""
    with gc_paused():
        writer = _DotWriter(G, options or RenderOptions())
        text = writer.emit()
    drawn = len({r for r in writer.rep.values() if r is not None})
    return DotResult(text, writer.notes_out, drawn, writer.rolls)


def to_dot(G: nx.DiGraph, options: RenderOptions | None = None) -> str:
    """DOT source for an IR graph; the same graph and options give the same bytes."""
    return build_dot(G, options).text
