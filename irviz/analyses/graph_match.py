"""Match two IR graphs on stable identity, and say what changed between them.

Node ids (``n4/call/n2``) follow positions and TorchScript's ``%123`` names follow
nothing, so neither can pair the nodes of two graphs. :func:`match_graphs` pairs them the
way a text diff pairs lines, anchoring on what did not change:

1. **Containers**, hierarchically from the root (``G.graph["blocks"]``): the children of
   two matched containers are sequence-aligned on (kind, module path or call label,
   method, source line) - ``if.then``/``if.else``/``loop.body``/``fork.task`` on (kind,
   their owner's kind and line) - then again without the line, in order.
2. **Nodes** inside each pair of matched containers: the visible nodes the container owns
   directly, in program order, are sequence-aligned with :class:`difflib.SequenceMatcher`
   on (kind, source line), then what is left on kind alone. Hidden nodes (constants,
   parameter ``GetAttr``, constant lists: ``hidden=True``) are never listed: they fold
   into their consumer, whose constants they are.
3. **Inlined blocks**: the nodes of a container present on one side only (a branch of an
   ``if`` the trace froze, a function call the trace flattened) pair with the unmatched
   nodes of the enclosing matched container on the other side with the same (kind,
   line): the trace kept the taken branch's ops, so only the ``prim::If`` and the untaken
   branch read as removed.
4. **Structure**: what is still unpaired pairs with a node of the same kind in the
   counterpart container whose inputs come from matched producers (a reordered op).
5. **Same place, other kind**: a run of unpaired nodes between two anchors of step 2
   with as many nodes on each side pairs up in order as *changed* (``relu -> gelu``).

(The brief of issue 15 put the positional pairing of step 5 before the structural pass;
it is after it here, so a reordered op pairs with its own kind rather than with the op
that now stands in its place.)

A pair is *changed* when the kind differs, a folded constant differs (``dim: 1 -> 2``;
a parameter's shape counts), or a known output shape or dtype differs. Unpaired nodes are
*added* (right only) or *removed* (left only); a container present on one side only is
one entry (the ``prim::If`` owning the branches, the module call) with its contents
listed inside it. The result is a :class:`GraphDiff` of typed records;
:func:`union_graph` draws both graphs as one, each node annotated with its status under
:data:`DIFF`, for the renderer to read.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field

import networkx as nx

from ..ir.model import CONSTANT_KINDS, format_shape, is_library_call
from ..location import Location

__all__ = ["DIFF", "Change", "Entry", "GraphDiff", "diff_status", "match_graphs",
           "union_graph"]

#: the node (and container) attribute of a union graph: {"status", "left", "right", ...}
DIFF = "irviz.diff"
#: the graph attribute of a union graph: the counts
DIFF_SUMMARY = "irviz.diff_summary"
STATUSES = ("same", "changed", "added", "removed")
_IO = ("prim::Param", "prim::Return")


# -- records -------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """A node (or a container) present on one side only."""

    status: str              # "added" or "removed"
    kind: str                # aten::relu; a call: prim::CallMethod / prim::CallFunction
    label: str               # relu, dg: MyDecisionGate
    scope: str               # module path ("" = root)
    source: str | None       # decision_gate.py:11
    left: str | None         # its id on the left (removed), else None
    right: str | None        # its id on the right (added), else None
    #: the id of the added/removed container entry it is part of (None: top level)
    inside: str | None = None
    #: a container entry: how many of its ops are listed inside it
    ops: int | None = None
    code: str | None = None  # the source line, for control flow
    #: a torch.nn module or function call (:func:`~irviz.ir.model.is_library_call`)
    #: standing for its ``ops`` unpaired ops, which are not listed: one entry
    folded: bool = False

    @property
    def id(self) -> str:
        return self.left if self.left is not None else self.right

    def to_dict(self) -> dict:
        out = {"kind": self.kind, "label": self.label, "scope": self.scope,
               "source": self.source, "left": self.left, "right": self.right,
               "inside": self.inside}
        if self.ops is not None:
            out["ops"] = self.ops
        if self.folded:
            out["folded"] = True
        return out


@dataclass(frozen=True)
class Change:
    """Two paired nodes that differ: ``what`` says how (kind, constants, shapes)."""

    left: str
    right: str
    kind: str                # the left kind
    right_kind: str
    label: str               # relu → gelu, or the label when the kind stayed
    scope: str
    source: str | None       # the right side's place (the left's when it has none)
    what: tuple[str, ...]    # "aten::relu → aten::gelu", "dim: 1 → 2", "shape: 3×4 → 3×5"

    def to_dict(self) -> dict:
        return {"left": self.left, "right": self.right, "kind": self.kind,
                "right_kind": self.right_kind, "label": self.label, "scope": self.scope,
                "source": self.source, "what": list(self.what)}


@dataclass
class GraphDiff:
    """What changed from ``left`` to ``right`` (see the module doc)."""

    left: nx.DiGraph
    right: nx.DiGraph
    #: left node -> right node, every pair (same and changed, inputs and the return)
    pairs: dict[str, str]
    #: left container -> right container
    containers: dict[str, str]
    added: list[Entry] = field(default_factory=list)
    removed: list[Entry] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    same: int = 0

    @property
    def equal(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def status(self) -> dict[str, dict[str, str]]:
        """``{"left": {node: status}, "right": {node: status}}`` for every listed node."""
        left = {e.left: "removed" for e in self.removed}
        right = {e.right: "added" for e in self.added}
        for c in self.changed:
            left[c.left] = right[c.right] = "changed"
        return {"left": left, "right": right}

    def counts(self) -> dict[str, int]:
        return {"added": sum(1 for e in self.added if e.ops is None or e.folded),
                "removed": sum(1 for e in self.removed if e.ops is None or e.folded),
                "changed": len(self.changed), "same": self.same}


def diff_status(data: dict) -> str | None:
    """The status a union graph's node (or container) record carries, else None."""
    info = data.get(DIFF)
    return info["status"] if info else None


# -- one side of the match -----------------------------------------------------------
def _line(location: str | None) -> int | None:
    if not location:
        return None
    try:
        return Location.parse(location).line
    except ValueError:
        return None


def _place(data: dict) -> str | None:
    loc = data.get("user_source") or data.get("source")
    if not loc:
        return None
    try:
        path, line, _ = Location.parse(loc)
    except ValueError:
        return None
    return f"{os.path.basename(path)}:{line}"


class _Side:
    """The index of one graph the matcher reads: per container its visible nodes and its
    child containers, in program order."""

    def __init__(self, G: nx.DiGraph):
        self.G = G
        self.blocks: dict[str, dict] = G.graph["blocks"]
        self.own: dict[str, list[str]] = {cid: [] for cid in self.blocks}
        self.kids: dict[str, list[str]] = {cid: [] for cid in self.blocks}
        self.pos: dict[str, int] = {}
        self.params: list[str] = []
        self.line: dict[str, int | None] = {}
        #: the innermost place (file name, line): a library op's own line, which script
        #: and trace agree on when one names the user's line and the other the library's
        self.inner: dict[str, tuple[str, int] | None] = {}
        for i, (node, data) in enumerate(G.nodes(data=True)):
            self.pos[node] = i
            if data["kind"] == "prim::Param":
                self.params.append(node)
            elif data["kind"] != "prim::Return" and not data.get("hidden"):
                self.own[data["block"]].append(node)
            self.line[node] = _line(data.get("user_source") or data.get("source"))
            inner = data.get("source")
            self.inner[node] = ((os.path.basename(Location.parse(inner).path), _line(inner))
                                if inner and _line(inner) is not None else None)
        for cid, info in self.blocks.items():
            if info["parent"] is not None:
                self.kids[info["parent"]].append(cid)
        #: control node -> the containers it owns
        self.owned: dict[str, list[str]] = {}
        for cid, info in self.blocks.items():
            if info.get("owner") is not None:
                self.owned.setdefault(info["owner"], []).append(cid)

    def container_line(self, cid: str) -> int | None:
        info = self.blocks[cid]
        owner = info.get("owner")
        if owner is not None and owner in self.G:
            return self.line.get(owner)
        return _line(info.get("user_source") or info.get("source"))

    def container_key(self, cid: str, with_line: bool) -> tuple:
        info = self.blocks[cid]
        kind = info["kind"]
        if kind == "method":
            key = (kind, info.get("module"), info.get("method"))
        elif kind == "function":
            key = (kind, info.get("qualified_type") or info.get("label"))
        else:
            owner = info.get("owner")
            key = (kind, self.G.nodes[owner]["kind"] if owner in self.G else None)
        return key + (self.container_line(cid),) if with_line else key

    def subtree(self, cid: str) -> list[str]:
        """``cid`` and every container inside it."""
        out, todo = [], [cid]
        while todo:
            c = todo.pop()
            out.append(c)
            todo.extend(self.kids[c])
        return out

    def const(self, node: str) -> str:
        """A folded input as text: ``2``, ``[3, -1]``, ``weight: 4×4 float32``."""
        data = self.G.nodes[node]
        kind = data["kind"]
        if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            return "[" + ", ".join(self.const(p[0]) if len(p) == 1 and p[0] in self.G else "?"
                                   for p in data["inputs"]) + "]"
        if kind == "prim::GetAttr" and data["outputs"]:
            shape = format_shape(data["outputs"][0])
            return f"{data['label']}: {shape}" if shape else data["label"]
        if kind in CONSTANT_KINDS and data["outputs"] and data["outputs"][0].get("shape"):
            # a frozen weight reads as the parameter it was (``layer1.conv1.weight (bn
            # folded)`` -> ``weight (bn folded): 8×8×3×3 float32``): freezing alone is no change
            name, _, notes = data["label"].partition(" (")
            notes = f" ({notes}" if notes else ""
            return f"{name.rsplit('.', 1)[-1]}{notes}: {format_shape(data['outputs'][0])}"
        return data["label"]


# -- matching ------------------------------------------------------------------------
class _Matcher:
    def __init__(self, left: nx.DiGraph, right: nx.DiGraph):
        self.L, self.R = _Side(left), _Side(right)
        self.pairs: dict[str, str] = {}
        self.rpairs: dict[str, str] = {}
        self.cpairs: dict[str, str] = {"root": "root"}
        self.rcpairs: dict[str, str] = {"root": "root"}
        #: unpaired runs between anchors: (left nodes, right nodes)
        self.regions: list[tuple[list[str], list[str]]] = []

    def pair(self, a: str, b: str) -> None:
        if a in self.pairs or b in self.rpairs:
            return
        self.pairs[a] = b
        self.rpairs[b] = a

    # 1. containers
    def match_containers(self) -> None:
        todo = [("root", "root")]
        while todo:
            lc, rc = todo.pop()
            for a, b in _align_containers(self, self.L.kids[lc], self.R.kids[rc]):
                self.cpairs[a] = b
                self.rcpairs[b] = a
                todo.append((a, b))

    # 2. nodes of matched containers
    def match_nodes(self) -> None:
        L, R = self.L, self.R
        by_name = {L.G.nodes[p]["label"]: p for p in L.params}
        used = set()
        for p in R.params:
            q = by_name.get(R.G.nodes[p]["label"])
            if q is not None and q not in used:
                self.pair(q, p)
                used.add(q)
        rest_l = [p for p in L.params if p not in self.pairs]
        rest_r = [p for p in R.params if p not in self.rpairs]
        for a, b in zip(rest_l, rest_r):
            self.pair(a, b)
        if "out" in L.G and "out" in R.G:
            self.pair("out", "out")
        # owners of matched blocks are the same node
        for lc, rc in self.cpairs.items():
            lo, ro = L.blocks[lc].get("owner"), R.blocks[rc].get("owner")
            if lo is not None and ro is not None:
                self.pair(lo, ro)
        for lc, rc in self.cpairs.items():
            self._align_nodes(L.own[lc], R.own[rc])

    def _node_key(self, side: _Side, node: str, fine: bool) -> tuple:
        partner = (self.pairs if side is self.L else self.rpairs).get(node)
        if partner is not None:  # an anchor already paired (a control node)
            return ("pair", node if side is self.L else partner)
        kind = side.G.nodes[node]["kind"]
        return (kind, side.line[node]) if fine else (kind,)

    def _align_nodes(self, left: list[str], right: list[str]) -> None:
        lk = [self._node_key(self.L, n, True) for n in left]
        rk = [self._node_key(self.R, n, True) for n in right]
        sm = difflib.SequenceMatcher(None, lk, rk, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                for a, b in zip(left[i1:i2], right[j1:j2]):
                    self.pair(a, b)
                continue
            sub_l, sub_r = left[i1:i2], right[j1:j2]
            if not sub_l or not sub_r:
                continue
            coarse_l = [self._node_key(self.L, n, False) for n in sub_l]
            coarse_r = [self._node_key(self.R, n, False) for n in sub_r]
            sm2 = difflib.SequenceMatcher(None, coarse_l, coarse_r, autojunk=False)
            for tag2, k1, k2, m1, m2 in sm2.get_opcodes():
                if tag2 == "equal":
                    for a, b in zip(sub_l[k1:k2], sub_r[m1:m2]):
                        self.pair(a, b)
                elif tag2 == "replace":
                    self.regions.append((sub_l[k1:k2], sub_r[m1:m2]))

    # 3. nodes of one-sided containers against the enclosing container's other side
    def match_inlined(self) -> None:
        for this, other, cmap, mine in ((self.L, self.R, self.cpairs, True),
                                        (self.R, self.L, self.rcpairs, False)):
            for cid, info in this.blocks.items():
                parent = info["parent"]
                if cid in cmap or parent is None or parent not in cmap:
                    continue
                inner = [n for c in this.subtree(cid) for n in this.own[c]]
                inner.sort(key=this.pos.__getitem__)
                counterpart = cmap[parent]
                candidates = [n for c in other.subtree(counterpart) for n in other.own[c]
                              if c == counterpart or not self._matched_container(other, c)]
                candidates.sort(key=other.pos.__getitem__)
                # first on the user's line, then on the innermost one: a script names a
                # library op by the library's line (linear.py:134), a trace by the
                # user's line that called it, and both name the library's innermost
                for place in ("line", "inner"):
                    done = self.rpairs if mine else self.pairs
                    candidates = [n for n in candidates if n not in done]
                    inner = [n for n in inner if n not in (self.pairs if mine else self.rpairs)]
                    self._pair_on_place(this, other, inner, candidates, place, mine)

    def _pair_on_place(self, this: _Side, other: _Side, inner: list[str],
                       candidates: list[str], place: str, mine: bool) -> None:
        """Pair the nodes of a one-sided container with the candidates of the other side
        that have their kind and place (``line`` or ``inner``), in order."""
        ik = [(this.G.nodes[n]["kind"], getattr(this, place)[n]) for n in inner]
        ck = [(other.G.nodes[n]["kind"], getattr(other, place)[n]) for n in candidates]
        sm = difflib.SequenceMatcher(None, ik, ck, autojunk=False)
        for block in sm.get_matching_blocks():
            for k in range(block.size):
                a, b = inner[block.a + k], candidates[block.b + k]
                if ik[block.a + k][1] is None:
                    continue  # no line: nothing says it is the same op
                if mine:
                    self.pair(a, b)
                else:
                    self.pair(b, a)

    def _matched_container(self, side: _Side, cid: str) -> bool:
        return cid in (self.cpairs if side is self.L else self.rcpairs)

    # 4. structure
    def match_structure(self) -> None:
        L, R = self.L, self.R
        free: dict[tuple[str, str], list[str]] = {}
        for lc, rc in self.cpairs.items():
            for n in L.own[lc]:
                if n not in self.pairs:
                    free.setdefault((rc, L.G.nodes[n]["kind"]), []).append(n)
        if not free:
            return
        for rc in self.rcpairs:
            for b in R.own[rc]:
                if b in self.rpairs:
                    continue
                candidates = free.get((rc, R.G.nodes[b]["kind"]))
                if not candidates:
                    continue
                want = self._inputs(R, b, self.rpairs)
                for a in candidates:
                    if a not in self.pairs and self._inputs(L, a, None) == want:
                        self.pair(a, b)
                        break

    def _inputs(self, side: _Side, node: str, mapping: dict | None) -> tuple:
        """A node's inputs as left ids (through ``mapping``) or folded constants."""
        G = side.G
        out = []
        for producers in G.nodes[node]["inputs"]:
            item = []
            for p in producers:
                if p not in G:
                    item.append(p)
                elif G.nodes[p].get("hidden"):
                    item.append("=" + side.const(p))
                else:
                    item.append(mapping.get(p, "?" + p) if mapping is not None else p)
            out.append(tuple(item))
        return tuple(out)

    # 5. same place, other kind
    def match_positions(self) -> None:
        for left, right in self.regions:
            left = [n for n in left if n not in self.pairs]
            right = [n for n in right if n not in self.rpairs]
            if len(left) != len(right):
                continue
            for a, b in zip(left, right):
                ka, kb = self.L.G.nodes[a]["kind"], self.R.G.nodes[b]["kind"]
                if ka != kb and (a in self.L.owned or b in self.R.owned):
                    continue  # a control node is the same control node or none
                self.pair(a, b)


def _align_containers(m: _Matcher, left: list[str], right: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    rest_l, rest_r = left, right
    for fine in (True, False):
        lk = [m.L.container_key(c, fine) for c in rest_l]
        rk = [m.R.container_key(c, fine) for c in rest_r]
        sm = difflib.SequenceMatcher(None, lk, rk, autojunk=False)
        got = {}
        for block in sm.get_matching_blocks():
            for k in range(block.size):
                got[rest_l[block.a + k]] = rest_r[block.b + k]
        out.extend(got.items())
        rest_l = [c for c in rest_l if c not in got]
        taken = set(got.values())
        rest_r = [c for c in rest_r if c not in taken]
    return out


# -- what changed --------------------------------------------------------------------
def _changes(m: _Matcher, a: str, b: str) -> tuple[str, ...]:
    """How the pair (``a`` left, ``b`` right) differs; empty when it does not."""
    L, R = m.L, m.R
    da, db = L.G.nodes[a], R.G.nodes[b]
    what = []
    if da["kind"] != db["kind"]:
        what.append(f"{da['kind']} → {db['kind']}")
    ia, ib = da["inputs"], db["inputs"]
    if da["kind"] == db["kind"] and da["kind"] != "prim::Return":
        if len(ia) != len(ib):
            what.append(f"inputs: {len(ia)} → {len(ib)}")
        names = da.get("arg_names") or []
        for i, (pa, pb) in enumerate(zip(ia, ib)):
            if len(pa) != 1 or len(pb) != 1 or pa[0] not in L.G or pb[0] not in R.G:
                continue
            if not (L.G.nodes[pa[0]].get("hidden") and R.G.nodes[pb[0]].get("hidden")):
                continue
            ca, cb = L.const(pa[0]), R.const(pb[0])
            name = names[i] if i < len(names) else f"input {i}"
            if ca != cb and not _spelled_alike(name, ca, cb):
                ca, cb = (c.removeprefix(f"{name}: ") for c in (ca, cb))  # weight: 4×4
                what.append(f"{name}: {ca} → {cb}")
    oa, ob = da["outputs"], db["outputs"]
    for i, (x, y) in enumerate(zip(oa, ob)):
        known = [k for k in ("shape", "dtype") if x.get(k) is not None and y.get(k) is not None]
        if any(x[k] != y[k] for k in known):
            tag = "shape" if len(oa) == 1 else f"shape of output {i}"
            what.append(f"{tag}: {format_shape(x)} → {format_shape(y)}")
    return tuple(what)


#: a trace writes booleans as integers
_BOOL_AS_INT = {"False": "0", "True": "1"}
#: arguments whose ``None`` (a script passes the schema's default) means the value a trace
#: writes out: pinned memory off, the strided layout (0), the CPU the trace ran on
_NONE_MEANS = {"pin_memory": ("0",), "layout": ("0",), "device": ("cpu",),
               "non_blocking": ("0",)}


def _spelled_alike(name: str, a: str, b: str) -> bool:
    """Two folded constants that are one value printed two ways (``pin_memory: None`` and
    ``0``): not a change."""
    a, b = _BOOL_AS_INT.get(a, a), _BOOL_AS_INT.get(b, b)
    if a == b:
        return True
    if "None" not in (a, b):
        return False
    return (b if a == "None" else a) in _NONE_MEANS.get(name, ())


def _label(G: nx.DiGraph, node: str) -> str:
    return G.nodes[node]["label"]


class _Lister:
    """The added or removed entries of one side, containers first, in program order."""

    def __init__(self, m: _Matcher, side: _Side, status: str):
        self.m, self.side, self.status = m, side, status
        self.mine = side is m.L
        self.paired = m.pairs if self.mine else m.rpairs
        self.cmap = m.cpairs if self.mine else m.rcpairs

    def _scope_of(self, cid: str) -> str:
        blocks = self.side.blocks
        while cid is not None:
            if blocks[cid]["kind"] == "method" or cid == "root":
                return blocks[cid].get("module") or ""
            cid = blocks[cid]["parent"]
        return ""

    def _top_container(self, block: str) -> str | None:
        """The outermost one-sided container around ``block`` (its parent is matched)."""
        found = None
        while block is not None and block not in self.cmap:
            found = block
            block = self.side.blocks[block]["parent"]
        return found

    def _library_call(self, block: str) -> str | None:
        """The outermost torch.nn module or function call around ``block``, if any."""
        found = None
        blocks = self.side.blocks
        while block is not None:
            if blocks[block]["kind"] in ("method", "function") and \
                    is_library_call(blocks[block]):
                found = block
            block = blocks[block]["parent"]
        return found

    def entries(self) -> list[Entry]:
        side = self.side
        G = side.G
        listed: list[tuple[int, Entry]] = []
        inside_count: dict[str, int] = {}
        where: dict[str, str | None] = {}      # one-sided top container -> entry id
        #: torch's own calls with unpaired ops -> how many: one entry each, the ops unlisted
        folded: dict[str, int] = {}
        for node, data in G.nodes(data=True):
            kind = data["kind"]
            if node in self.paired or kind == "prim::Return" or data.get("hidden"):
                continue
            library = self._library_call(data["block"])
            if library is not None:
                folded[library] = folded.get(library, 0) + 1
                continue
            top = self._top_container(data["block"])
            inside = None
            if top is not None:
                if top not in where:
                    where[top] = self._container_entry(top)
                inside = where[top]
            if inside is not None:
                inside_count[inside] = inside_count.get(inside, 0) + 1
            ids = (node, None) if self.mine else (None, node)
            listed.append((side.pos[node], Entry(
                self.status, kind, data["label"], data.get("scope") or "", _place(data),
                *ids, inside=inside, code=data.get("code"))))
        for cid, ops in folded.items():
            info = side.blocks[cid]
            top = self._top_container(info["parent"])
            inside = None
            if top is not None:
                if top not in where:
                    where[top] = self._container_entry(top)
                inside = where[top]
            ids = (cid, None) if self.mine else (None, cid)
            first = min((side.pos[n] for c in side.subtree(cid) for n in side.own[c]),
                        default=info.get("at", 0))
            kind = "prim::CallMethod" if info["kind"] == "method" else "prim::CallFunction"
            listed.append((first - 0.25, Entry(
                self.status, kind, info["label"], self._scope_of(info["parent"]),
                _place({"user_source": info.get("user_source"), "source": info.get("source")}),
                *ids, inside=inside, ops=ops, folded=True)))
            if inside is not None:
                inside_count[inside] = inside_count.get(inside, 0) + ops
        out: list[tuple[int, Entry]] = []
        for top, entry_id in where.items():
            info = side.blocks[top]
            if entry_id is None or info.get("owner") is not None:
                continue  # a branch: its owner node is the entry (listed above)
            ops = inside_count.get(entry_id, 0)
            kind = "prim::CallMethod" if info["kind"] == "method" else "prim::CallFunction"
            ids = (top, None) if self.mine else (None, top)
            first = min((side.pos[n] for c in side.subtree(top) for n in side.own[c]),
                        default=None)
            if first is None:
                first = side.blocks[top].get("at", 0)
            out.append((first - 0.5, Entry(
                self.status, kind, info["label"], self._scope_of(info["parent"]),
                _place({"user_source": info.get("user_source"), "source": info.get("source")}),
                *ids, ops=ops)))
        out += listed
        out.sort(key=lambda item: item[0])
        return [e for _, e in out]

    def _container_entry(self, top: str) -> str | None:
        """The id of the entry standing for one-sided container ``top``: its owner node
        (a branch of an unpaired ``if``), itself (a call), or None (a branch whose owner
        is paired: its nodes are listed on their own). A call whose ops were all paired
        elsewhere (a function the trace inlined) is no entry either."""
        info = self.side.blocks[top]
        owner = info.get("owner")
        if owner is not None:
            return None if owner in self.paired else owner
        nodes = [n for c in self.side.subtree(top) for n in self.side.own[c]]
        if nodes and all(n in self.paired for n in nodes):
            return None
        return top


def _library_changes(m: _Matcher, result: GraphDiff) -> list[Change]:
    """A torch.nn call present on both sides whose insides differ (a script's checks and
    untaken branches, a trace's lower-level op) is one change of that call, not an entry
    per op of torch's code; a call on one side only stays one added/removed entry."""
    ops: dict[str, list[int]] = {}   # left call -> [unpaired left ops, unpaired right ops]
    keep_removed, keep_added = [], []
    for e in result.removed:
        if e.folded and e.left in m.cpairs:
            ops.setdefault(e.left, [0, 0])[0] = e.ops
        else:
            keep_removed.append(e)
    for e in result.added:
        if e.folded and e.right in m.rcpairs:
            ops.setdefault(m.rcpairs[e.right], [0, 0])[1] = e.ops
        else:
            keep_added.append(e)
    result.removed, result.added = keep_removed, keep_added
    out = []
    for cid, (removed, added) in ops.items():
        info, rinfo = m.L.blocks[cid], m.R.blocks[m.cpairs[cid]]
        kind = "prim::CallMethod" if info["kind"] == "method" else "prim::CallFunction"
        place = _place({"user_source": rinfo.get("user_source"),
                        "source": rinfo.get("source")}) or _place(
            {"user_source": info.get("user_source"), "source": info.get("source")})
        scope = _Lister(m, m.L, "removed")._scope_of(info["parent"])
        what = f"inside: {removed} op{'s' if removed != 1 else ''} left only, {added} right only"
        out.append(Change(cid, m.cpairs[cid], kind, kind, info["label"], scope, place,
                          (what,)))
    return out


def match_graphs(left: nx.DiGraph, right: nx.DiGraph) -> GraphDiff:
    """Pair the nodes and containers of two IR graphs and list what changed (see the
    module doc). Reads the graphs; writes nothing on them."""
    m = _Matcher(left, right)
    m.match_containers()
    m.match_nodes()
    m.match_inlined()
    m.match_structure()
    m.match_positions()
    result = GraphDiff(left, right, dict(m.pairs), dict(m.cpairs))
    result.removed = _Lister(m, m.L, "removed").entries()
    result.added = _Lister(m, m.R, "added").entries()
    result.changed += _library_changes(m, result)
    for a in sorted(m.pairs, key=m.L.pos.__getitem__):
        b = m.pairs[a]
        if a == "out":
            continue
        what = _changes(m, a, b)
        if not what:
            result.same += 1
            continue
        da, db = left.nodes[a], right.nodes[b]
        label = (f"{da['label']} → {db['label']}" if da["kind"] != db["kind"]
                 else da["label"])
        result.changed.append(Change(a, b, da["kind"], db["kind"], label,
                                     db.get("scope") or "", _place(db) or _place(da), what))
    return result


# -- both graphs as one --------------------------------------------------------------
#: analysis records whose ids name nodes of their own graph: not carried over from the
#: right side (the union graph's right-only nodes have other ids)
_KEEP_FACTS = ("irviz.shape_expr",)


def _right_id(node: str) -> str:
    return f"r:{node}"


def _inlined_calls(diff: GraphDiff, L: nx.DiGraph, pairs: dict,
                   left_status: dict) -> dict[str, str]:
    """Left-only call containers whose ops the right still runs, inlined (freezing inlines
    every module call; a trace flattens a scripted function): ``same`` when all their
    drawn ops are paired and unchanged, ``changed`` when some are. Such a call is not
    *removed*: ``stem: Conv2d`` with its weight folded is changed, ``fc: Linear`` the same."""
    blocks = L.graph["blocks"]
    kids: dict[str, list[str]] = {}
    for cid, info in blocks.items():
        if info["parent"] is not None:
            kids.setdefault(info["parent"], []).append(cid)
    own: dict[str, list[str]] = {}
    for n, data in L.nodes(data=True):
        if not data.get("hidden") and data["kind"] not in _IO:
            own.setdefault(data["block"], []).append(n)
    out: dict[str, str] = {}
    for cid, info in blocks.items():
        if cid in diff.containers or info["kind"] not in ("method", "function"):
            continue
        todo, inner = [cid], []
        while todo:
            c = todo.pop()
            inner += own.get(c, ())
            todo += kids.get(c, ())
        kept = [n for n in inner if n in pairs]
        if kept:
            same = len(kept) == len(inner) and all(
                left_status.get(n, "same") == "same" for n in kept)
            out[cid] = "same" if same else "changed"
    return out


def union_graph(diff: GraphDiff, title: str | None = None) -> nx.DiGraph:
    """Both graphs as one, for the renderer: the left graph's nodes and containers (paired
    right nodes are their left partner), and the right-only ones with ids ``r:<id>``,
    placed after the node that precedes them on the right. Every node and container gets
    :data:`DIFF` ``{"status", "left", "right"}`` (``label`` ``relu → gelu`` and ``what``
    for a changed node); every edge its status under :data:`DIFF` too; the graph :data:`DIFF_SUMMARY`
    (the counts). The picture centres on the change by reading these."""
    L, R = diff.left, diff.right
    pairs = diff.pairs
    rpairs = {b: a for a, b in pairs.items()}
    rc = {b: a for a, b in diff.containers.items()}
    status = diff.status()
    changes = {c.left: c for c in diff.changed}

    def node_id(b: str) -> str:
        return rpairs.get(b) or _right_id(b)

    def block_id(b: str | None) -> str | None:
        return None if b is None else rc.get(b) or _right_id(b)

    # program order: the left's, each right-only node after the one before it on the right
    after: dict[str | None, list[str]] = {}
    anchor: str | None = None
    for b in R:
        if b in rpairs:
            anchor = rpairs[b]
        else:
            after.setdefault(anchor, []).append(b)
    U = nx.DiGraph()

    def add_right(b: str) -> None:
        data = dict(R.nodes[b])
        for key in list(data):
            if key.startswith("irviz.") and key not in _KEEP_FACTS:
                del data[key]
        data["block"] = block_id(data["block"])
        data["inputs"] = [[node_id(p) if p in R else p for p in ps] for ps in data["inputs"]]
        for key in ("task_returns",):
            if key in data:
                data[key] = [node_id(p) for p in data[key] if p in R]
        data.pop("branch_yields", None)
        data.pop("captured", None)
        data[DIFF] = {"status": "added", "left": None, "right": b}
        U.add_node(_right_id(b), **data)

    for b in after.get(None, ()):
        add_right(b)
    for a, data in L.nodes(data=True):
        record = {"status": status["left"].get(a, "same" if a in pairs else "removed"),
                  "left": a, "right": pairs.get(a)}
        if a in changes:
            c = changes[a]
            record.update(label=c.label, what=list(c.what), right_kind=c.right_kind)
        U.add_node(a, **{**data, DIFF: record})
        for b in after.get(a, ()):
            add_right(b)
    for u, v, data in L.edges(data=True):
        U.add_edge(u, v, **data, **{DIFF: "removed"})
    for u, v, data in R.edges(data=True):
        mu, mv = node_id(u), node_id(v)
        if U.has_edge(mu, mv):
            U.edges[mu, mv][DIFF] = "same"
        else:
            U.add_edge(mu, mv, **data, **{DIFF: "added"})
    for u, v, data in U.edges(data=True):  # an edge between paired nodes kept its place
        if data[DIFF] == "removed" and u in pairs and v in pairs and \
                R.has_edge(pairs[u], pairs[v]):
            data[DIFF] = "same"

    blocks: dict[str, dict] = {}
    right_blocks = R.graph["blocks"]
    later: dict[str | None, list[str]] = {}
    prev = None
    for cid in right_blocks:
        if cid in rc:
            prev = rc[cid]
        else:
            later.setdefault(prev, []).append(cid)

    def add_right_block(cid: str) -> None:
        info = dict(right_blocks[cid])
        info["parent"] = block_id(info["parent"])
        if info.get("owner") is not None:
            info["owner"] = node_id(info["owner"])
        if "returns" in info:
            info["returns"] = [[node_id(p) for p in ps if p in R] for ps in info["returns"]]
        info[DIFF] = {"status": "added", "left": None, "right": cid}
        blocks[_right_id(cid)] = info

    for cid in later.get(None, ()):
        add_right_block(cid)
    inlined = _inlined_calls(diff, L, pairs, status["left"])
    for cid, info in L.graph["blocks"].items():
        partner = diff.containers.get(cid)
        record = {"status": "same" if partner else "removed", "left": cid, "right": partner}
        if cid in inlined:   # its ops are still there, inlined on the right
            record.update(status=inlined[cid], inlined=True)
        if partner and right_blocks[partner]["label"] != info["label"]:
            record["right_label"] = right_blocks[partner]["label"]   # another class
        blocks[cid] = {**info, DIFF: record}
        for right_cid in later.get(cid, ()):
            add_right_block(right_cid)
    U.graph.update(L.graph)
    lmode, rmode = L.graph.get("mode"), R.graph.get("mode")
    U.graph.update(
        blocks=blocks, name=title or L.graph.get("name"),
        mode=lmode if lmode == rmode else f"{lmode} → {rmode}",
        inputs=list(L.graph.get("inputs", [])) + [
            _right_id(p) for p in R.graph.get("inputs", []) if p not in rpairs],
        **{DIFF_SUMMARY: diff.counts()})
    return U
