"""What a picture of the IR graph shows, decided apart from how it is written.

:func:`plan_view` makes every decision about *what* is drawn: which module calls are
boxes (``--depth``, ``--focus``, library modules, the drawn-node budget), which runs of
repeated sibling calls are rolled into one node, which empty library boxes are left out,
what each open container draws in which order, and on which drawn node each lint finding
sits. It returns a :class:`DrawPlan`: plain, immutable data with no DOT in it, so the DOT
writer (:mod:`.dot`), the labels (:mod:`.labels`) and the HTML viewer's module pages
(:mod:`.html`) all read the same decisions instead of re-deriving them (or parsing DOT).

Like the rest of ``render/``, it reads the graph and the facts analyses wrote on it and
never changes them; the same graph and options give the same plan.
"""
from __future__ import annotations

import functools
import os
import sys
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import chain as chained, groupby, repeat
from operator import itemgetter
from types import MappingProxyType
from typing import Mapping, NamedTuple

import networkx as nx

from ..analyses.graph_match import DIFF, DIFF_SUMMARY
from ..analyses.validation import CHECK, checks_at
from ..analyses.traced_control_flow import python_method
from ..analyses.unrolled_loops import unrolled_runs, unroller
from ..ir.model import CALL_KINDS, CHOICE_BODIES, LOOP_BODIES, is_folded, is_library_call
from ..location import Location
from ..paths import is_installed_library_file
from ..gc_pause import gc_paused

__all__ = ["DENSE_EDGES_PER_NODE", "DrawPlan", "Drawn", "GHOST_SPAN", "LONG_LOOP",
           "LONG_LOOP_BODY", "Layout", "MIN_ROLL_RUN", "RenderOptions", "call_method",
           "call_name", "call_numbers", "call_type", "is_library_call", "library_calls",
           "nodes_by_call", "plan_view", "predicted_layout_seconds"]

#: fewest consecutive identical sibling module calls rolled into one node when the budget
#: demands it (the first and the last call stay drawn, the ones between become the node)
MIN_ROLL_RUN = 4

#: an unrolled loop of at least this many iterations is rolled up even within the budget
#: (the first and the last iteration drawn): drawn out, ten or more copies of the same few
#: ops are a wall - fork_basics' 100 forks drew 100 task clusters and a fan of 100 edges
#: to 100 waits - that says nothing the first and the last copy do not, while 3-9 copies
#: still read as "this ran a few times" at a glance and are rolled only over the budget
LONG_LOOP = 10
#: ... when an iteration draws at most this many nodes and calls the same modules every
#: time (or none): a bigger iteration, or one calling another module each time (BERT's 12
#: encoder layers are a Python loop over a ModuleList), is structure a reader expects to
#: see, and stays drawn within the budget
LONG_LOOP_BODY = 5

#: drawn nodes an edge may skip before its source is drawn again as a ghost beside the
#: consumer (when the source feeds more than one node)
GHOST_SPAN = 60

# -- the layout budget (benchmarks/layout.py measures the figures below) -------------------
#: a drawn graph with at least this many data edges per drawn node is dense (DenseNet's
#: concatenations: 2.1 for densenet121, 2.6 for densenet161; chains, ResNets and
#: transformers draw 1.0-1.4)
DENSE_EDGES_PER_NODE = 1.8
#: a dense graph's ghost span: each consumer's far inputs are one ghost node, so dot lays
#: out short edges only (densenet121: 16-32 s -> 0.2-0.3 s, 5,602 pt -> 863 pt wide)
DENSE_GHOST_SPAN = 12
#: Graphviz settings for a dense graph: bound dot's network simplex (its x-positioning of
#: the virtual nodes of long edges is where DenseNet's time went, not crossing
#: minimisation: 19.5 of 23.6 s; alone 16.6 -> 3.5 s, after the merged ghosts 0.29 ->
#: 0.24 s; mclimit, searchsize, splines, remincross: no gain or slower)
DENSE_GRAPH_ATTRS = (("nslimit", "2"), ("nslimit1", "2"))
#: predicted dot seconds = LAYOUT_COEF * size ** LAYOUT_EXP, size = drawn nodes + ghost
#: copies + the ranks every drawn edge spans (the virtual nodes dot routes edges through),
#: fitted on benchmarks/layout.py's measurements (13 layouts of 0.3-32 s, 2 CPUs at load
#: ~6: 1.77e-8 * size ** 2.22; within 2-3x either way, an estimate, not a promise)
LAYOUT_COEF = 1.8e-8
LAYOUT_EXP = 2.2
#: the layout budget: a picture is collapsed further (as one over the drawn-node budget)
#: when its layout size exceeds this many times ``max_nodes``: 4,000 at the default 1000,
#: predicted 1.5 s (a chain's size is ~2x its nodes; the scripted Mask R-CNN-style
#: detector drew 920 nodes of size 8,127 in 3.3 s and 8,715 pt wide)
LAYOUT_SIZE_PER_NODE = 4


@dataclass
class RenderOptions:
    """What to draw. ``depth`` None = every module expanded."""

    depth: int | None = None
    expand_library: bool = False
    #: drawn-node budget: above it, module calls are collapsed from the deepest level up
    #: until the picture fits (None or 0: no budget). dot needs ~0.6 s at 1k nodes, ~19 s
    #: at 5k (measured), so the default keeps large models fast and readable. It bounds
    #: the layout size too (nodes + the ranks the edges span, :class:`Layout`):
    #: :data:`LAYOUT_SIZE_PER_NODE` times this.
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
    #: draw the validation code (raise-only branches, asserts) instead of folding it into
    #: a "checks" badge on the node it guards (:mod:`irviz.analyses.validation`)
    show_checks: bool = False


class Layout(NamedTuple):
    """What dot will have to lay out, estimated from the plan, and how it is eased."""

    #: drawn nodes (as ``DrawPlan.drawn_count``)
    nodes: int
    #: distinct drawn data edges (between different drawn nodes)
    edges: int
    #: drawn nodes + ghost copies + the ranks the edges span: what dot positions
    size: int
    #: predicted ``dot`` seconds for ``size`` (:func:`predicted_layout_seconds`)
    seconds: float
    #: edges per drawn node reached :data:`DENSE_EDGES_PER_NODE`
    dense: bool = False
    #: an edge skipping more drawn nodes than this has its source drawn again as a ghost
    ghost_span: int = GHOST_SPAN
    #: one ghost per consumer for all its far inputs (dense graphs), else one per edge
    merge_ghosts: bool = False
    #: Graphviz graph attributes to add, as (name, value) pairs
    graph_attrs: tuple[tuple[str, str], ...] = ()


def predicted_layout_seconds(size: int) -> float:
    """dot's layout time for a layout ``size`` (:class:`Layout`), on the machine the
    figures were measured on."""
    return LAYOUT_COEF * size ** LAYOUT_EXP


class Drawn(NamedTuple):
    """One thing an open container draws directly, in drawing order.

    ``kind`` is ``node`` (an IR node), ``control`` (an ``If``/``Loop``/``fork`` node framed
    together with its ``blocks``), ``box`` (a collapsed call container), ``roll`` (a run
    of repeated calls, ``id`` is the roll id) or ``cluster`` (a call container drawn open;
    its own contents are ``DrawPlan.contents[id]``).
    """

    kind: str
    id: str
    blocks: tuple[str, ...] = ()


@dataclass(frozen=True)
class DrawPlan:
    """Everything :func:`plan_view` decided; ids are the ones the DOT and SVG use
    (IR node ids, ``box:<call container>``, ``roll:<first rolled call container>``)."""

    #: container id -> the outermost call container above it (or itself) drawn as a box
    collapsed: Mapping[str, str]
    #: IR node -> the drawn id standing for it: itself, its box or its roll node; None
    #: when it is not drawn (folded into its consumers, or inside a left-out box)
    representative: Mapping[str, str | None]
    #: roll id -> the run's call containers (the first and the last are drawn on their
    #: own, the ones between are the roll node), in the order they were rolled up
    rolls: Mapping[str, tuple[str, ...]]
    #: call containers drawn as boxes, in drawing order
    boxes: tuple[str, ...]
    #: box or roll id -> the IR nodes it stands for, in program order
    members: Mapping[str, tuple[str, ...]]
    #: ``box:<cid>`` of library calls that recorded no operation, left out of the picture
    skipped_boxes: frozenset[str]
    #: container drawn open (``root``, open calls, blocks of drawn control nodes) -> what
    #: it draws directly, in drawing order
    contents: Mapping[str, tuple[Drawn, ...]]
    #: how many nodes the picture draws (IR nodes, boxes and roll nodes)
    drawn_count: int
    #: what was decided that the user should hear (e.g. the budget collapsed modules)
    notes: tuple[str, ...]
    #: drawn id -> the lint findings on its source line
    badges: Mapping[str, tuple[dict, ...]]
    #: findings whose line no drawn node has (said under the title instead)
    unplaced_findings: tuple[dict, ...]
    #: drawn id -> the checks folded into a badge on it (empty with ``show_checks``)
    check_badges: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    #: whether validation code is drawn (else folded: :func:`~irviz.ir.model.is_folded`)
    show_checks: bool = False
    #: the drawn edges, the layout size and time dot is predicted to need, and the
    #: settings a dense graph gets
    layout: Layout = Layout(0, 0, 0, 0.0)
    #: roll id -> the unrolled loop it rolls up (``irviz.unrolled`` record of
    #: :mod:`~irviz.analyses.unrolled_loops`: the first and the last iteration are drawn on
    #: their own, the ones between are the roll node); ``rolls`` holds the runs of calls
    loops: Mapping[str, Mapping] = field(default_factory=lambda: MappingProxyType({}))
    #: call container -> its IR nodes at any depth (:func:`nodes_by_call`), when the plan
    #: walked the graph for them (it does to roll runs up): the roll labels read it
    #: instead of walking every node again
    call_nodes: Mapping[str, list[str]] | None = field(default=None, compare=False,
                                                         repr=False)
    #: the data edges drawn: the first IR edge ``(u, v)`` of each pair of drawn ids an
    #: edge joins, in ``G.edges()`` order (the DOT writer walks these, not every edge)
    edges: tuple[tuple[str, str], ...] = ()
    #: drawn id -> its place among the drawn ids, in program order
    position: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}),
                                        compare=False, repr=False)
    #: IR node -> its container, in program order (read once, for the writer and labels)
    block_of: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}),
                                        compare=False, repr=False)
    #: the IR nodes folded into their consumers (:func:`~irviz.ir.model.is_folded`)
    folded: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    #: IR node -> its place in program order (the order of :attr:`block_of`)
    place: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}),
                                     compare=False, repr=False)
    #: ``(container, start, stop)`` of each run of consecutive nodes (program places) in
    #: one container: what the writer walks instead of every node
    node_runs: tuple[tuple[str, int, int], ...] = field(default=(), compare=False,
                                                        repr=False)
    #: program place -> the drawn id standing for its node (:attr:`representative` by
    #: place): the writer slices it by :attr:`node_runs` instead of a lookup a node
    drawn_at: tuple[str | None, ...] = field(default=(), compare=False, repr=False)


@functools.lru_cache(maxsize=1024)
def _installed_class(qualified: str) -> bool:
    """The class named ``qualified`` (``transformers.pytorch_utils.Conv1D``) is defined in
    a file of an installed package, not in the user's own code."""
    module = qualified.rpartition(".")[0]
    while module:                       # a nested class: pkg.mod.Outer.Inner
        loaded = sys.modules.get(module)
        if loaded is not None:
            return is_installed_library_file(getattr(loaded, "__file__", None))
        module = module.rpartition(".")[0]
    return False


def library_calls(blocks: Mapping[str, dict]) -> set[str]:
    """The call containers drawn as one box by default (``--expand-library`` opens them):
    torch's own modules (:func:`is_library_call`), and the leaf modules of installed
    libraries - a module of transformers, torchvision, ... that calls no other module is
    a layer the way ``nn.Linear`` is (GPT-2's ``Conv1D``, an ``RMSNorm``, an activation),
    while a library module that calls others (an attention block) stays open."""
    calls_below: set[str] = set()
    for info in blocks.values():
        if info["kind"] in CALL_KINDS:
            parent = info["parent"]
            while parent is not None and parent not in calls_below:
                calls_below.add(parent)
                parent = blocks[parent]["parent"]
    out = set()
    for cid, info in blocks.items():
        if info["kind"] not in CALL_KINDS:
            continue
        if is_library_call(info):
            out.add(cid)
        elif info["kind"] == "method" and cid not in calls_below:
            qual = (info.get("qualified_type") or "").removeprefix("__torch__.")
            if "." in qual and _installed_class(qual):
                out.add(cid)
    return out


def call_name(info: dict) -> str:
    """How a call container is named to the user: its module path, else its label."""
    return info.get("module") or info["label"]


def call_type(info: dict) -> str:
    """The class a call container calls (``Block``)."""
    return info.get("class") or info["label"].rsplit(": ", 1)[-1]


def call_method(G: nx.DiGraph, info: dict) -> str | None:
    """The method a call container calls, as the user's code names it: never torch's own
    names for the methods it made (a trace's ``forward1``, ``forward2`` for a module's
    second and third call of ``forward``; ``forward__0`` for an overload), which no source
    file holds. In a scripted graph ``forward1`` is a method the user wrote."""
    return python_method(info.get("method"), G.graph.get("mode") != "script")


def call_numbers(G: nx.DiGraph) -> dict[str, tuple[int, int]]:
    """Call container -> ``(k, n)``: it is the k-th of the n calls of one module's method
    (a traced loop calling ``gate`` three times: 1, 2 and 3 of 3), for the modules called
    more than once; program order. Only where each call runs once: none of a module's
    calls is in a branch or a loop body (there, the n drawn calls are not n runs)."""
    blocks = G.graph["blocks"]
    once: dict[str, bool] = {}

    def runs_once(cid: str) -> bool:
        chain, above = [], cid   # not recursive: a self-referring closure is a cycle
        while above is not None and above not in once:
            chain.append(above)
            above = blocks[above]["parent"]
        result = once[above] if above is not None else True
        for c in reversed(chain):
            result = once[c] = result and blocks[c]["kind"] not in CHOICE_BODIES + LOOP_BODIES
        return once[cid]

    calls_of: dict[str, int] = {}   # module -> its calls: most modules run once
    for info in blocks.values():
        if info["kind"] == "method" and info.get("module"):
            calls_of[info["module"]] = calls_of.get(info["module"], 0) + 1
    groups: dict[tuple, list[str]] = {}
    for cid, info in blocks.items():
        if info["kind"] == "method" and calls_of.get(info.get("module"), 0) > 1:
            groups.setdefault((info["module"], call_method(G, info)), []).append(cid)
    out = {}
    for calls in groups.values():
        if len(calls) < 2 or not all(runs_once(c) for c in calls):
            continue
        calls.sort(key=lambda c: blocks[c].get("at", 0))
        for k, cid in enumerate(calls, 1):
            out[cid] = (k, len(calls))
    return out


def nodes_by_call(G: nx.DiGraph, runs: list[tuple[str, list[str]]] | None = None
                  ) -> dict[str, list[str]]:
    """Call container id -> its IR nodes at any depth, in program order; ``runs``: the
    IR nodes as ``(container, consecutive nodes of it)``, in program order, when the
    caller grouped them already."""
    blocks = G.graph["blocks"]
    #: container -> the node lists of the calls around it, innermost first
    lists_around: dict[str, list[list[str]]] = {}
    out: dict[str, list[str]] = {}
    if runs is None:   # a run of consecutive nodes of one container at a time (a block's ops)
        first = itemgetter(0)
        runs = [(block, list(map(first, run))) for block, run in
                groupby(G.nodes(data="block"), key=itemgetter(1))]
    for block, nodes in runs:
        lists = lists_around.get(block)
        if lists is None:
            lists, b = [], block
            while b is not None:
                if blocks[b]["kind"] in CALL_KINDS:
                    lists.append(out.setdefault(b, []))
                b = blocks[b]["parent"]
            lists_around[block] = lists
        for inside in lists:
            inside.extend(nodes)
    return out


class _Rolled:
    """The IR nodes a picture rolls into roll nodes, by program place: a roll is a slice
    set in C, not a dict entry a node (mlp_stack(5882)'s one roll is 99,960 nodes)."""

    def __init__(self, size: int):
        #: program place -> its roll node (None: not rolled)
        self.at: list[str | None] = [None] * size
        #: the ``(start, stop)`` places of each roll, and the places inside them left out
        #: of it (the parent's folded nodes), in the order they were rolled
        self.spans: list[tuple[int, int]] = []
        self.kept: list[int] = []

    def copy(self) -> _Rolled:
        out = _Rolled(0)
        out.at, out.spans, out.kept = self.at.copy(), self.spans.copy(), self.kept.copy()
        return out


class _Drawing:
    """One picture the planner judged: its collapsed containers and rolled nodes, program
    place -> drawn id, and drawn id -> its place in program order (how many it draws); its
    edges when asked (:meth:`_Planner._edges_of`)."""

    def __init__(self, collapsed: dict[str, str], rolled: _Rolled, rep: list[str | None]):
        self.collapsed, self.rolled, self.rep = collapsed, rolled, rep
        drawn = dict.fromkeys(rep)   # in program order
        drawn.pop(None, None)
        self.position = {r: i for i, r in enumerate(drawn)}
        #: (drawn u, drawn v) -> the ranks the edge spans (negative: its source may be
        #: drawn as a ghost), and the first IR edge of each pair, in ``G.edges()`` order
        self.pairs: dict[tuple[str, str], int] | None = None
        self.firsts: tuple[tuple[str, str], ...] = ()


def plan_view(G: nx.DiGraph, options: RenderOptions | None = None) -> DrawPlan:
    """Decide what the picture of ``G`` draws under ``options`` (see the module doc).

    Raises :class:`irviz.errors.UsageError` when ``options.focus`` names no module call.
    """
    with gc_paused():
        return _Planner(G, options or RenderOptions()).plan()


def _frozen(mapping: dict) -> Mapping:
    return MappingProxyType(mapping)


class _Planner:
    """The state of one :func:`plan_view` call."""

    def __init__(self, G: nx.DiGraph, options: RenderOptions):
        self.G = G
        self.opt = options
        self.blocks: dict[str, dict] = G.graph["blocks"]
        self._library = library_calls(self.blocks)
        self.notes: list[str] = []
        self._order: list[str] = list(G)
        self._pos = dict(zip(self._order, range(len(self._order))))
        self._inside: dict[str, list[str]] | None = None
        self._runs_found: list[list[str]] | None = None
        self._loops_found: list[dict] | None = None
        #: every container with what decides whether it is a box (:meth:`_call_tree`)
        self._tree: tuple[set[str] | None, list[tuple[str, str | None, bool, int | None]]] \
            | None = None
        # read once per node: the budget search asks every candidate picture about every
        # node (17 candidates for the scripted detector's 11,289 nodes)
        # networkx's own dict: its views cost a generator step a node; one pass, each
        # node's dict fetched once (at 100k: 0.60 us a node, two comprehensions 0.76)
        self._block_of: dict[str, str] = {}
        self._folded_nodes: set[str] = set()
        block_of, fold, show_checks = self._block_of, self._folded_nodes.add, options.show_checks
        for node, data in G._node.items():
            block_of[node] = data.get("block")
            if is_folded(data, show_checks):
                fold(node)
        #: container -> its own nodes
        self._by_block: dict[str, list[str]] = {}
        first, folded = itemgetter(0), self._folded_nodes
        #: (container, a run of consecutive nodes of it), program order (:func:`nodes_by_call`)
        self._runs_of_nodes = [(block, list(map(first, run))) for block, run in
                               groupby(self._block_of.items(), key=itemgetter(1))]
        for block, added in self._runs_of_nodes:
            self._by_block.setdefault(block, []).extend(added)
        #: program place -> the node, None when folded: what an open container draws
        self._drawable: list[str | None] = [None if node in folded else node
                                            for node in self._order]
        #: container -> the program positions of its own folded nodes (:meth:`_roll`)
        self._folded_at: dict[str, list[int]] = {}
        #: the collapsed containers last asked about, and program place -> drawn id
        #: without rolls
        self._unrolled: tuple[dict[str, str], list[str | None]] | None = None
        #: each node's out-degree, and every edge's program places of u and v (in
        #: ``G.edges()`` order: :meth:`_edges_of` maps them in C; the few edges drawn get
        #: their names back from the places)
        self._edges: tuple[list[int], list[int], list[int]] | None = None
        #: (id(collapsed), id(rolled)) -> the picture judged (:meth:`_drawing`): the
        #: budget search asks about a picture more than once, and :meth:`plan` draws one
        self._judged: dict[tuple[int, int], _Drawing] = {}
        #: an ``irviz diff`` union graph: the call containers with a change inside
        self._changed: set[str] | None = (self._changed_calls() if DIFF_SUMMARY in G.graph
                                          else None)

    def _changed_calls(self) -> set[str]:
        """Call containers (and everything around them) that hold a node or a container
        of one side only, or a changed node: the rest of a diff picture is boxed."""
        marked = [data["block"] for _, data in self.G.nodes(data=True)
                  if (data.get(DIFF) or {}).get("status", "same") != "same"
                  and not data.get("hidden")]
        marked += [cid for cid, info in self.blocks.items()
                   if (info.get(DIFF) or {}).get("status", "same") != "same"]
        out: set[str] = set()
        for block in marked:
            while block is not None and block not in out:
                out.add(block)
                block = self.blocks[block]["parent"]
        return out

    def plan(self) -> DrawPlan:
        collapsed, rolled, rolls, loops = self._choose_collapse()
        drawing = self._drawing(collapsed, rolled)
        rep = dict(zip(self._order, drawing.rep))   # for the picture drawn only
        self._judged.clear()
        members: dict[str, list[str]] = {}   # "box:cid" / "roll:cid" -> its nodes, in order
        first = itemgetter(0)
        for r, run in groupby(rep.items(), key=itemgetter(1)):   # a roll: one long run
            if r is not None and r.startswith(("box:", "roll:")):
                members.setdefault(r, []).extend(map(first, run))
        skipped = self._empty_library_boxes(members, collapsed)
        # the boxes a roll swallowed are skipped too (no members): the picture is the same
        left_out = [members.pop(box) for box in skipped if box in members]
        rep.update((node, None) for node in chained.from_iterable(left_out))
        if left_out:
            drawing = _Drawing(collapsed, rolled, list(rep.values()))
        contents, boxes = self._contents(collapsed, rep, rolls, skipped, loops)
        layout = self._layout(drawing, final=True)
        if layout.graph_attrs:
            self.notes.append(self._dense_note(layout))
        badges, unplaced = self._place_findings(rep)
        checks: dict[str, list[str]] = {}
        if not self.opt.show_checks:
            for anchor, texts in checks_at(self.G).items():
                drawn = rep.get(anchor) if anchor in rep else None
                if drawn is not None:
                    checks.setdefault(drawn, []).extend(texts)
        return DrawPlan(
            collapsed=_frozen(collapsed),
            representative=_frozen(rep),
            rolls=_frozen({rid: tuple(calls) for rid, calls in rolls.items()}),
            boxes=tuple(boxes),
            members=_frozen({k: tuple(v) for k, v in members.items()}),
            skipped_boxes=frozenset(skipped),
            contents=_frozen(contents),
            drawn_count=len(drawing.position),
            notes=tuple(self.notes),
            badges=_frozen({k: tuple(v) for k, v in badges.items()}),
            unplaced_findings=tuple(unplaced),
            check_badges=_frozen({k: tuple(v) for k, v in checks.items()}),
            show_checks=self.opt.show_checks,
            layout=layout,
            loops=_frozen(loops),
            call_nodes=None if self._inside is None else _frozen(self._inside),
            edges=drawing.firsts,
            position=_frozen(drawing.position),
            block_of=_frozen(self._block_of),
            folded=frozenset(self._folded_nodes),
            place=_frozen(self._pos),
            node_runs=tuple(self._node_runs()),
            drawn_at=tuple(drawing.rep))

    def _node_runs(self):
        """:attr:`DrawPlan.node_runs`, from the runs the planner grouped."""
        start = 0
        for block, nodes in self._runs_of_nodes:
            yield block, start, start + len(nodes)
            start += len(nodes)

    # -- which calls are boxes ---------------------------------------------------
    def _chain(self, block: str) -> list[str]:
        """Container ids from the root down to ``block``."""
        chain = []
        while block is not None:
            chain.append(block)
            block = self.blocks[block]["parent"]
        return chain[::-1]

    def _collapsed_containers(self, depth: int | None,
                              focus: set[str] | None = None) -> dict[str, str]:
        """container id -> id of the outermost collapsed call container above it.

        ``focus``: the call containers to keep open (the focused module's calls, their
        ancestors and everything inside them); every other call is collapsed.
        """
        if self._tree is None or self._tree[0] is not focus:
            self._tree = (focus, self._call_tree(focus))
        # each container decided once, from its parent's answer (parents come first)
        top: dict[str, str | None] = {}
        for cid, parent, always, call_depth in self._tree[1]:
            above = top[parent] if parent is not None else None
            if above is None and (always or depth is not None and call_depth is not None
                                  and call_depth > depth):
                above = cid
            top[cid] = above
        return {cid: top[cid] for cid in self.blocks if top[cid] is not None}

    def _call_tree(self, focus: set[str] | None
                   ) -> list[tuple[str, str | None, bool, int | None]]:
        """Every container, parents first: its parent, whether it collapses at any depth
        (``focus``, library modules, a diff's unchanged calls) and the depth of a call
        (None for other containers: never too deep). Read once for the levels the budget
        search tries."""
        def collapses(cid: str) -> bool:
            info = self.blocks[cid]
            library = not self.opt.expand_library and cid in self._library
            outside = focus is not None and cid not in focus
            if self._changed is not None:  # a diff: open only what changed, and a torch.nn
                # call present on one side only as one box (one entry, as the text says)
                record = info.get(DIFF) or {}
                one_sided = record.get("status") in ("added", "removed") or \
                    record.get("inlined", False)   # a call the right side runs inlined
                outside = cid not in self._changed
                library = outside or (one_sided and not self.opt.expand_library
                                      and cid in self._library)
            return library or outside

        tree: list[tuple[str, str | None, bool, int | None]] = []
        seen: set[str] = set()
        for cid in self.blocks:
            chain = []
            block = cid
            while block is not None and block not in seen:
                chain.append(block)
                block = self.blocks[block]["parent"]
            for block in reversed(chain):
                seen.add(block)
                info = self.blocks[block]
                call = info["kind"] in CALL_KINDS
                tree.append((block, info["parent"], call and collapses(block),
                             info["depth"] if call else None))
        return tree

    def _drawn_count(self, collapsed: dict[str, str], rolled: _Rolled) -> int:
        """The drawn ids: roll nodes, boxes, and the unfolded nodes of open containers."""
        return len(self._drawing(collapsed, rolled).position)

    def _focused_calls(self) -> list[str]:
        """The call containers of the focused module (none without --focus)."""
        if not self.opt.focus:
            return []
        return [cid for cid, info in self.blocks.items()
                if info["kind"] in CALL_KINDS and info.get("module") == self.opt.focus]

    def _focus_set(self) -> set[str] | None:
        focus = self.opt.focus
        if not focus:
            return None
        calls = {cid: info for cid, info in self.blocks.items() if info["kind"] in CALL_KINDS}
        hits = self._focused_calls()
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

    def _choose_collapse(self) -> tuple[dict[str, str], _Rolled,
                                        dict[str, list[str]], dict[str, dict]]:
        """Apply --depth/--focus; then fit the drawn-node budget and the layout budget (the
        layout size, edges counted: :meth:`_layout`). Returns the collapsed containers, the
        rolled nodes (:class:`_Rolled`), roll node -> the run's calls, and roll node -> the
        unrolled loop it rolls up.

        Over the budget, the depth levels are tried from the deepest up: the calls deeper
        than the level collapsed into boxes and, when that alone still draws too many
        nodes, runs of repeated sibling calls and the middle iterations of loops a trace
        unrolled rolled into one node each (:meth:`_roll_up`). Of the pictures that fit,
        the one drawing the most nodes wins (a tie goes to the deeper level; with --focus, a
        picture keeping the focused call open beats any that boxes it). So rolling comes
        before giving up a level when it keeps more detail - 1,667 identical blocks draw
        the first and the last block open around one roll node, not 1,669 boxes - and depth
        alone wins when it keeps more -
        10 stages of 100 blocks at a budget of 5,000 draw 1,000 block boxes rather than
        every stage's blocks rolled. Nothing is rolled when the picture fits as it is, nor
        under an explicit --depth, but long loops of small iterations
        (:meth:`_roll_long_loops`), whatever the budget (not without one: --max-nodes 0);
        the focused call and its ancestors are never rolled.
        When nothing fits, the shallowest level with every run rolled is drawn, and the
        note says so.
        """
        focus = self._focus_set()
        collapsed = self._collapsed_containers(self.opt.depth, focus)
        budget = self.opt.max_nodes
        if not budget:
            return collapsed, _Rolled(len(self._order)), {}, {}
        rolled, loops = self._roll_long_loops(collapsed)
        drawn = self._drawn_count(collapsed, rolled)
        first = self._layout_of(collapsed, rolled) if drawn <= budget else None
        if self.opt.depth is not None or (
                first is not None and first.size <= LAYOUT_SIZE_PER_NODE * budget):
            if loops:
                self.notes.append(self._long_loops_note(loops, unroller(self.G)))
            return collapsed, rolled, {}, loops
        over_layout = [first] if first is not None else []  # fit the node budget only

        def fits(candidate: dict[str, str], rolled: _Rolled, count: int) -> bool:
            """Within the node budget and the layout budget (edges counted)."""
            if count > budget:
                return False
            layout = self._layout_of(candidate, rolled)
            if layout.size > LAYOUT_SIZE_PER_NODE * budget:
                over_layout.append(layout)
                return False
            return True
        depths = sorted({info["depth"] for info in self.blocks.values()
                         if info["kind"] in CALL_KINDS}, reverse=True)
        levels = [(None, collapsed)] + [(d - 1, None) for d in depths if d > 0]
        focused = self._focused_calls()
        best = None  # (rank, count, depth, collapsed, rolled, rolls)
        last = None
        for depth, candidate in levels:
            if candidate is None:
                candidate = self._collapsed_containers(depth, focus)
                if last is not None and candidate == last[3]:
                    # a level that collapses nothing more (its calls are library boxes
                    # already) draws the same picture: judged once, only its depth is new
                    last = last[:2] + (depth,) + last[3:]
                    continue
            rank = (not any(cid in candidate for cid in focused),)
            if candidate is collapsed:   # judged above
                long_rolled, long_loops, count = rolled, loops, drawn
            else:
                long_rolled, long_loops = self._roll_long_loops(candidate)
                count = self._drawn_count(candidate, long_rolled)
            if fits(candidate, long_rolled, count):  # depth alone fits: the rest draw less
                if best is None or rank + (count,) > best[0]:
                    best = (rank + (count,), count, depth, candidate, long_rolled, long_loops)
                break
            rolled, rolls, rolled_count = self._roll_up(candidate, count, fits, long_rolled,
                                                        dict(long_loops))
            if (fits(candidate, rolled, rolled_count)
                    and (best is None or rank + (rolled_count,) > best[0])):
                best = (rank + (rolled_count,), rolled_count, depth, candidate, rolled, rolls)
            last = (None, rolled_count, depth, candidate, rolled, rolls)
            self._keep_judged(*(best or last)[3:5])
        if best is None:  # nothing fits: the fewest nodes there are
            best = last
        _, count, depth, candidate, rolled, rolls = best
        final = self._layout_of(candidate, rolled)
        self.notes.append(self._budget_note(drawn, budget, count, depth, rolls, first, final))
        if over_layout:
            most = max(over_layout, key=lambda layout: layout.nodes)
            self.notes.append(
                f"layout budget: {most.nodes:,} nodes with {most.edges:,} edges have a layout "
                f"size of {most.size:,} > {LAYOUT_SIZE_PER_NODE * budget:,} (predicted "
                f"{most.seconds:.1f} s; drawn: {final.size:,}, {final.seconds:.1f} s)")
        loops = {rid: run for rid, run in rolls.items() if isinstance(run, dict)}
        calls = {rid: run for rid, run in rolls.items() if rid not in loops}
        return candidate, rolled, calls, loops

    def _budget_note(self, drawn: int, budget: int, count: int, depth: int | None,
                     rolled_up: dict[str, list[str] | dict], first: Layout | None,
                     final: Layout) -> str:
        """What the budget did; ``first`` is the layout before it when only the layout
        budget was exceeded (None: the node budget was), ``final`` the one drawn;
        ``rolled_up``: roll node -> its run of calls, or the unrolled loop's record."""
        rolls = {rid: run for rid, run in rolled_up.items() if not isinstance(run, dict)}
        loops = [run for run in rolled_up.values() if isinstance(run, dict)]
        if first is None:
            over_what = f"{drawn} nodes exceed the budget of {budget}"
        else:
            over_what = f"{drawn} nodes with {first.edges:,} edges exceed the layout budget"
        did = []
        if depth is not None:
            did.append(f"module calls deeper than {depth} are drawn as boxes")
        if rolls:
            runs = []
            for calls in list(rolls.values())[:2]:
                first, last = self.blocks[calls[1]], self.blocks[calls[-2]]
                if call_name(first) == call_name(last):   # one module called again and again
                    runs.append(f"{call_name(first)}: {len(calls) - 2} calls of "
                                f"{call_type(first)}")
                    continue
                runs.append(f"{call_name(first)} … {call_name(last)}, "
                            f"{len(calls) - 2} × {call_type(first)}")
            more = len(rolls) - len(runs)
            n = len(rolls)
            did.append(f"{n} run{'s' if n != 1 else ''} of repeated calls "
                       f"{'are' if n != 1 else 'is'} rolled up (" + "; ".join(runs)
                       + (f"; {more} more" if more else "") + ")")
        if loops:
            did.append(self._loops_said(loops, unroller(self.G)))
        if not did:
            return (f"{over_what}, but the model has no module calls to collapse: drawing "
                    "all of them")
        over = (", still over the budget" if count > budget
                or final.size > LAYOUT_SIZE_PER_NODE * budget else "")
        return (f"{over_what}: " + ", and ".join(did)
                + f" ({count} nodes{over}; --depth or --max-nodes to change, "
                  "--focus MODULE to open one)")

    @staticmethod
    def _loops_said(loops: list[dict], by: str) -> str:
        """What the note says of rolled unrolled loops: where, how many iterations."""
        said = [f"{loop['lines']}, {len(loop['iterations']) - 2} of "
                f"{len(loop['iterations'])} iterations" for loop in loops[:2]]
        more = len(loops) - len(said)
        n = len(loops)
        return (f"the middle iterations of {n} loop{'s' if n != 1 else ''} {by} "
                "unrolled are rolled up (" + "; ".join(said)
                + (f"; {more} more" if more else "") + ")")

    @staticmethod
    def _long_loops_note(loops: dict[str, dict], by: str) -> str:
        """The note of long loops rolled within the budget (:meth:`_roll_long_loops`),
        short enough for the title (140 characters of a note are shown)."""
        said = [f"{loop['lines']}, {len(loop['iterations']) - 2} of {len(loop['iterations'])}"
                for loop in list(loops.values())[:2]]
        more = len(loops) - len(said)
        n = len(loops)
        return (f"{by} unrolled {n} loop{'s' if n != 1 else ''}: the middle iterations "
                "are rolled up (" + "; ".join(said) + (f"; {more} more" if more else "")
                + "; --max-nodes 0 draws all)")

    # -- the layout budget -------------------------------------------------------
    def _drawing(self, collapsed: dict[str, str], rolled: _Rolled) -> _Drawing:
        """The picture ``collapsed``/``rolled``, judged once (kept, with the two maps,
        until :meth:`_forget`)."""
        key = (id(collapsed), id(rolled))
        drawing = self._judged.get(key)
        if drawing is None:
            rep = self._representatives(collapsed, rolled)
            drawing = self._judged[key] = _Drawing(collapsed, rolled, rep)
        return drawing

    def _keep_judged(self, collapsed: dict[str, str], rolled: _Rolled) -> None:
        """Forget every picture judged but this one (a level of the budget search is
        done: a picture of N nodes each)."""
        kept = self._judged.get((id(collapsed), id(rolled)))
        self._judged = {} if kept is None else {(id(collapsed), id(rolled)): kept}

    def _forget(self, collapsed: dict[str, str], rolled: _Rolled) -> None:
        """``rolled`` is about to change: what was judged of it is not true any more."""
        self._judged.pop((id(collapsed), id(rolled)), None)

    def _edges_of(self, drawing: _Drawing) -> _Drawing:
        """``drawing`` with its drawn data edges, as the DOT writer draws them: one per
        pair of drawn ids, from the pair's first IR edge."""
        if drawing.pairs is not None:
            return drawing
        rep, position = drawing.rep, drawing.position
        if self._edges is None:   # a node's out-edges at a time, in C
            # networkx keeps _adj in the order of _node (program order): u's place is its index
            adj = self.G._adj
            outs = list(map(len, adj.values()))
            self._edges = (outs, list(chained.from_iterable(map(repeat, range(len(outs)), outs))),
                           list(map(self._pos.__getitem__, chained.from_iterable(adj.values()))))
        outs, at_u, at_v = self._edges
        order = self._order
        # program place -> its drawn id's place: the edges' ends looked up in a list, and
        # pairs of small ints hashed, not of names
        drawn_at = list(map(position.get, rep))
        ends = list(zip(map(drawn_at.__getitem__, at_u), map(drawn_at.__getitem__, at_v)))
        # each pair of drawn ends -> its first edge: a pass in C, then the few pairs
        first = dict(zip(reversed(ends), range(len(ends) - 1, -1, -1)))
        pairs: dict[tuple[str, str], int] = {}   # (drawn u, drawn v) -> span if ghostable
        firsts: list[tuple[str, str]] = []
        for (pu, pv), i in sorted(first.items(), key=itemgetter(1)):
            if pu is None or pv is None or pu == pv:
                continue
            span = pv - pu   # < 0: a loop's back edge, never a ghost
            pairs[(rep[at_u[i]], rep[at_v[i]])] = \
                -span if outs[at_u[i]] > 1 and span > 0 else abs(span)
            firsts.append((order[at_u[i]], order[at_v[i]]))
        drawing.pairs, drawing.firsts = pairs, tuple(firsts)
        return drawing

    def _layout(self, drawing: _Drawing, final: bool = False) -> Layout:
        """Estimate what dot lays out for a picture: its drawn data edges (an edge
        skipping more than the ghost span from a value used more than once starts at a
        ghost copy instead), and the ranks they span. Dense graphs get a short ghost span
        with one merged ghost per consumer, and the Graphviz settings that paid off on
        them; ``final``: the picture drawn, which gets the same easing when it is still
        over the layout budget (never a candidate of the budget search: eased, a picture
        with more detail would pass for fitting, and be drawn twice as wide)."""
        pairs = self._edges_of(drawing).pairs
        nodes, edges = len(drawing.position), len(pairs)
        dense = edges >= DENSE_EDGES_PER_NODE * max(nodes, 1)
        size = self._layout_size(pairs, nodes, dense)
        budget = self.opt.max_nodes
        if final and not dense and budget and size > LAYOUT_SIZE_PER_NODE * budget:
            # over the layout budget with what collapsing left (a traced detector's
            # unrolled post-processing at the top level: 1,937 nodes, dot > 10 min): its
            # long edges are eased as a dense graph's, the only lever left
            eased = self._layout_size(pairs, nodes, True)
            return Layout(nodes, edges, eased, round(predicted_layout_seconds(eased), 2),
                          False, DENSE_GHOST_SPAN, True, DENSE_GRAPH_ATTRS)
        return Layout(nodes, edges, size, round(predicted_layout_seconds(size), 2), dense,
                      DENSE_GHOST_SPAN if dense else GHOST_SPAN, dense,
                      DENSE_GRAPH_ATTRS if dense else ())

    @staticmethod
    def _layout_size(pairs: dict[tuple[str, str], int], nodes: int, eased: bool) -> int:
        """Drawn nodes + ghost copies + the ranks the edges span; ``eased``: the dense
        drawing (short ghost span, one merged ghost per consumer)."""
        ghost_span = DENSE_GHOST_SPAN if eased else GHOST_SPAN
        size, ghosts = nodes, set()
        for (_, rv), span in pairs.items():
            if -span > ghost_span:   # drawn from a ghost beside rv: one short edge
                ghosts.add(rv if eased else len(ghosts))
                size += 1
            else:
                size += abs(span) or 1
        return size + len(ghosts)

    def _layout_of(self, collapsed: dict[str, str], rolled: _Rolled) -> Layout:
        return self._layout(self._drawing(collapsed, rolled))

    def _dense_note(self, layout: Layout) -> str:
        settings = ", ".join(f"{k}={v}" for k, v in layout.graph_attrs)
        # the title shows 140 characters of a note
        if not layout.dense:   # the predictor was fitted below ~10k: past it, say less
            return (f"still over the layout budget ({layout.nodes:,} nodes, {layout.edges:,} "
                    f"edges): far inputs drawn as one ↺ ghost; {settings}; the layout may "
                    "take minutes")
        return (f"dense graph ({layout.edges:,} edges on {layout.nodes:,} nodes): inputs from "
                f"> {layout.ghost_span} nodes back drawn as one ↺ ghost; {settings}; "
                f"predicted layout {layout.seconds:.1f} s")

    # -- rolling up runs of repeated calls ---------------------------------------
    def _call_nodes(self) -> dict[str, list[str]]:
        """Call container id -> its IR nodes at any depth, in program order (once)."""
        if self._inside is None:
            self._inside = nodes_by_call(self.G, self._runs_of_nodes)
        return self._inside

    def _runs(self) -> list[list[str]]:
        """Runs of repeated calls: at least :data:`MIN_ROLL_RUN` call containers with the
        same parent, consecutive in program order, of the same kind, type and method and
        with the same number of ops; between two calls of a run only nodes of the parent,
        the same kinds in every gap (a transformer's tuple unpacking between layers).
        The focused call and its ancestors end a run. Program order; computed once."""
        if self._runs_found is not None:
            return self._runs_found
        inside = self._call_nodes()
        G, pos, order, block_of = self.G, self._pos, self._order, self._block_of
        never: set[str] = set()
        for cid in self._focused_calls():
            never.update(self._chain(cid))
        siblings: dict[str, list[str]] = {}
        for cid in inside:  # calls that ran no operation have no place: never rolled
            siblings.setdefault(self.blocks[cid]["parent"], []).append(cid)

        folded = self._folded_nodes

        def signature(cid: str) -> tuple:
            info = self.blocks[cid]
            nodes = inside[cid]   # its unfolded nodes at any depth, in C: asked of the
            ops = len(nodes) - len(folded.intersection(nodes))   # calls with 3+ siblings
            # a trace's forward1, forward2: the same method (call_method)
            return (info["kind"], info.get("qualified_type") or info["label"],
                    call_method(G, info), ops)

        runs: list[list[str]] = []
        for parent, calls in siblings.items():
            if len(calls) < MIN_ROLL_RUN:
                continue
            calls.sort(key=lambda c: pos[inside[c][0]])
            run: list[str] = []
            run_sig = gap_sig = None
            for cid in calls + [None]:
                sig = signature(cid) if cid is not None else None
                if run and cid is not None and cid not in never and sig == run_sig:
                    gap = order[pos[inside[run[-1]][-1]] + 1:pos[inside[cid][0]]]
                    if all(block_of[n] == parent for n in gap):
                        kinds = tuple(G._node[n]["kind"] for n in gap
                                      if n not in self._folded_nodes)
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

    def _loops(self) -> list[dict]:
        """The unrolled loops (:mod:`~irviz.analyses.unrolled_loops`) but those a run of
        repeated calls covers in the same container (an iteration of one call and some
        ops between: the run rolls it, naming the modules); computed once."""
        if self._loops_found is None:
            inside, pos = self._call_nodes(), self._pos
            spans: dict[str, list[tuple[int, int]]] = {}
            for run in self._runs():
                spans.setdefault(self.blocks[run[0]]["parent"], []).append(
                    (pos[inside[run[0]][0]], pos[inside[run[-1]][-1]]))
            self._loops_found = [
                loop for loop in unrolled_runs(self.G)
                if not any(lo <= pos[loop["iterations"][-1][1]]
                           and pos[loop["iterations"][0][0]] <= hi
                           for lo, hi in spans.get(loop["block"], ()))]
        return self._loops_found

    def _roll_long_loops(self, collapsed: dict[str, str]
                         ) -> tuple[dict[str, str], dict[str, dict]]:
        """Roll up the middle iterations of every long unrolled loop of small iterations
        in an open container (:data:`LONG_LOOP`, :data:`LONG_LOOP_BODY`), budget or not
        (a run of calls in the same stretch is then not rolled: its calls are inside).
        A loop around the focused call is not rolled. Returns the rolled nodes
        (:class:`_Rolled`) and roll node -> the loop's record."""
        rolled = _Rolled(len(self._order))
        loops: dict[str, dict] = {}
        inside = self._call_nodes()
        focused = [self._pos[inside[cid][0]] for cid in self._focused_calls() if inside.get(cid)]
        for loop in unrolled_runs(self.G):   # before any run of calls it overlaps
            iterations, parent = loop["iterations"], loop["block"]
            if (len(iterations) < LONG_LOOP or parent in collapsed
                    or not loop.get("same_calls", True)
                    or rolled.at[self._pos[iterations[1][0]]] is not None
                    or any(self._pos[iterations[1][0]] <= at <= self._pos[iterations[-2][1]]
                           for at in focused)):
                continue
            first, last = self._pos[iterations[0][0]], self._pos[iterations[0][1]]
            body = set()
            for node in self._order[first:last + 1]:
                box = collapsed.get(self._block_of[node])
                if box is not None:
                    body.add(box)
                elif node not in self._folded_nodes:
                    body.add(node)
            if len(body) > LONG_LOOP_BODY:
                continue
            start, end = iterations[1][0], iterations[-2][1]
            rid = f"roll:{start}"
            self._roll(rolled, start, end, parent, rid)
            loops[rid] = loop
        return rolled, loops

    def _roll(self, rolled: _Rolled, start: str, end: str, parent: str, rid: str) -> None:
        """Every node from ``start`` to ``end`` (program order) -> ``rid``, but the folded
        nodes of ``parent`` (the rolled calls' container: they stay with their consumers,
        as they were). Marked in C, the few folded nodes of ``parent`` put back."""
        lo, hi = self._pos[start], self._pos[end] + 1
        at = self._folded_at.get(parent)
        if at is None:   # program positions of parent's own folded nodes
            at = self._folded_at[parent] = [self._pos[n] for n in self._by_block.get(parent, ())
                                            if n in self._folded_nodes]
        kept = at[bisect_left(at, lo):bisect_left(at, hi)]
        before = list(map(rolled.at.__getitem__, kept))
        rolled.at[lo:hi] = [rid] * (hi - lo)
        for place, was in zip(kept, before):
            rolled.at[place] = was
        rolled.spans.append((lo, hi))
        rolled.kept.extend(kept)

    def _roll_up(self, collapsed: dict[str, str], count: int, fits, rolled: _Rolled,
                 rolls: dict[str, list[str] | dict] | None = None
                 ) -> tuple[_Rolled, dict[str, list[str] | dict], int]:
        """Roll up runs whose container is drawn open - runs of repeated calls
        (:meth:`_runs`) and loops a trace unrolled (:mod:`~irviz.analyses.unrolled_loops`)
        - longest first, runs of the same length together (ten stages of 100 blocks look
        alike), until ``fits(collapsed, rolled, count)`` (both budgets). In a rolled run the
        first and the last call (iteration) stay as they are; every node of the calls
        (iterations) between, and of the parent between them, is represented by the node
        ``roll:<first rolled cid>`` (``roll:<first node of the first rolled iteration>``).

        ``rolled`` and ``rolls``: what is rolled already (long loops), kept.

        Returns the rolled nodes, roll node -> the run's calls (or the loop's record),
        and the drawn count.
        """
        inside = self._call_nodes()
        # (length, first rolled node, last rolled node, container, roll id, run)
        candidates = [(len(r), inside[r[1]][0], inside[r[-2]][-1], self.blocks[r[0]]["parent"],
                       f"roll:{r[1]}", r)
                      for r in self._runs() if self.blocks[r[0]]["parent"] not in collapsed]
        candidates += [(len(loop["iterations"]), loop["iterations"][1][0],
                        loop["iterations"][-2][1], loop["block"],
                        f"roll:{loop['iterations'][1][0]}", loop)
                       for loop in self._loops() if loop["block"] not in collapsed]
        # program order, then longest first (stable: program order among equal lengths)
        candidates.sort(key=lambda c: self._pos[c[1]])
        candidates.sort(key=lambda c: -c[0])
        rolled = rolled.copy()
        rolls = dict(rolls or {})
        i = 0
        while i < len(candidates) and not fits(collapsed, rolled, count):
            length = candidates[i][0]
            self._forget(collapsed, rolled)
            while i < len(candidates) and candidates[i][0] == length:
                _, start, end, parent, rid, run = candidates[i]
                i += 1
                if rolled.at[self._pos[start]] is not None:  # inside a call an outer run
                    continue
                self._roll(rolled, start, end, parent, rid)  # swallows inner runs rolled
                rolls[rid] = run
            count = self._drawn_count(collapsed, rolled)
        live = set(rolled.at)
        return rolled, {rid: run for rid, run in rolls.items() if rid in live}, count

    # -- what stands for each node -----------------------------------------------
    def _representatives(self, collapsed: dict[str, str],
                         rolled: _Rolled) -> list[str | None]:
        """Program place -> its node's roll node, else its box, else the node itself
        unless folded (None). Without rolls once per ``collapsed`` (the budget search asks
        it of every candidate, with and without rolls), in C; the rolls are slices."""
        if self._unrolled is None or self._unrolled[0] is not collapsed:
            boxes = {block: f"box:{box}" for block, box in collapsed.items()}
            self._unrolled = (collapsed, list(map(boxes.get, self._block_of.values(),
                                                  self._drawable)))
        base = self._unrolled[1]
        rep, at = base.copy(), rolled.at
        for lo, hi in rolled.spans:
            rep[lo:hi] = at[lo:hi]
        for place in rolled.kept:   # a folded node of the rolls' parent, not swallowed
            if at[place] is None:   # by a roll around it
                rep[place] = base[place]
        return rep

    def _empty_library_boxes(self, members: dict[str, list[str]],
                             collapsed: dict[str, str]) -> set[str]:
        """A collapsed library call that recorded no operation (``nn.Identity``, traced or
        scripted: the batch norms a quantized model fused away) has no edges; drawn, it is a
        stray box at the top of its cluster that pushes the layout into a staircase
        (ResNet-18). Its folded constants are not drawn either."""
        boxes = {f"box:{cid}" for cid in collapsed.values()}
        return {box for box in boxes
                if box[4:] in self._library
                and all(n in self._folded_nodes for n in members.get(box, ()))}

    # -- what each open container draws ------------------------------------------
    def _contents(self, collapsed: dict[str, str], rep: dict[str, str | None],
                  rolls: dict[str, list[str]], skipped: set[str], loops: dict[str, dict]
                  ) -> tuple[dict[str, tuple[Drawn, ...]], list[str]]:
        """Open container -> what it draws, and the boxes in drawing order: a container
        draws its own nodes first (a control node framed with the blocks it owns; a rolled
        loop's roll node where its iterations were), then its calls - a roll node for the
        first rolled call of a run (the others are in it), a box, or the call drawn
        open."""
        kids: dict[str, list[str]] = {cid: [] for cid in self.blocks}
        for cid, info in self.blocks.items():
            if info["parent"] is not None:
                kids[info["parent"]].append(cid)
        own: dict[str, list[str]] = {cid: [] for cid in self.blocks}
        own.update(self._by_block)
        middles = {c for calls in rolls.values() for c in calls[1:-1]}
        inside = self._call_nodes() if loops else {}
        placed: set[str] = set()    # the loop roll nodes drawn so far
        contents: dict[str, tuple[Drawn, ...]] = {}
        boxes: list[str] = []

        def visit(cid: str) -> None:
            owned: dict[str, list[str]] = {}
            for child in kids[cid]:
                owner = self.blocks[child].get("owner")
                if owner is not None:
                    owned.setdefault(owner, []).append(child)
            drawn: list[Drawn] = []
            contents[cid] = ()   # before the blocks below: the drawing order of containers
            for node in own[cid]:
                if rep[node] != node:
                    loop = loops.get(rep[node])
                    if loop is not None and loop["block"] == cid and rep[node] not in placed:
                        placed.add(rep[node])
                        drawn.append(Drawn("roll", rep[node]))
                    continue
                if node in owned:
                    drawn.append(Drawn("control", node, tuple(owned[node])))
                    for block in owned[node]:
                        visit(block)
                else:
                    drawn.append(Drawn("node", node))
            for child in kids[cid]:
                if self.blocks[child].get("owner") is not None:
                    continue
                if child in middles:  # drawn once, as the run's roll node
                    if f"roll:{child}" in rolls:
                        drawn.append(Drawn("roll", f"roll:{child}"))
                    continue
                nodes = inside.get(child) or own[child]
                if nodes and rep[nodes[0]] in loops:
                    continue  # in the middle iterations of a rolled loop: in its roll node
                if self.blocks[child].get(CHECK) and not self.opt.show_checks:
                    continue  # a call that only validates: folded into its checks' badge
                if collapsed.get(child) == child:
                    if f"box:{child}" not in skipped:
                        drawn.append(Drawn("box", child))
                        boxes.append(child)
                elif child not in collapsed:
                    drawn.append(Drawn("cluster", child))
                    visit(child)
            contents[cid] = tuple(drawn)

        visit("root")
        visit = None   # it calls itself: a cycle that kept the planner alive till a collection
        return contents, boxes

    # -- lint findings -----------------------------------------------------------
    def _place_findings(self, rep: dict[str, str | None]
                        ) -> tuple[dict[str, list[dict]], list[dict]]:
        """Drawn node (or box) -> findings on its source line; findings with no node."""
        if not self.opt.findings:
            return {}, []
        by_line: dict[tuple[str, int], str] = {}
        absolute: dict[str, str] = {}   # a few source files, thousands of nodes
        for node, data in self.G.nodes(data=True):
            r = rep[node]
            loc = data.get("user_source")
            if r is None or not loc:
                continue
            path, line, _ = Location.parse(loc)
            if path not in absolute:
                absolute[path] = os.path.abspath(path)
            by_line.setdefault((absolute[path], line), r)
        badges: dict[str, list[dict]] = {}
        unplaced = []
        for finding in self.opt.findings:
            r = by_line.get((os.path.abspath(finding["path"]), finding["line"]))
            if r is None:
                unplaced.append(finding)
            else:
                badges.setdefault(r, []).append(finding)
        return badges, unplaced
