"""The interactive HTML viewer: the SVG with zoom, pan, search, node details and
collapsible module clusters, in one self-contained page (no network, works from
``file://``), or as a fragment for the Sphinx extension.

The standalone page also holds module pages (:func:`module_pages`): the graph drawn with
``focus`` on each collapsed user module call of the overview, one page per distinct
structure, as inert ``<template>`` elements that the script swaps in (``#module=PATH``).
Which calls a picture draws as boxes is read from its :class:`~.plan.DrawPlan`, never
from the DOT text.

The page is plain data plus two static files, ``viewer/viewer.js`` and
``viewer/viewer.css`` (:data:`VIEWER_DIR`): the Sphinx extension copies them to
``_static``; :func:`viewer_page` inlines them. Every string from the model reaches the
browser either as XML-escaped SVG (Graphviz) or inside the JSON block, which the script
shows with ``textContent`` only.
"""
from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..analyses import fork_wait as fw, parallelism as par
from ..analyses.validation import checks_at
from ..analyses.unrolled_loops import unroller
from ..analyses.cost import cost_model, cost_of
from ..analyses.memory import BYTES
from ..analyses.profile_times import PROFILE
from ..ir.model import CALL_KINDS, is_folded
from ..location import Location, source_line
from .dot import DotResult
from .escape import json_dumps, xml_text
from .labels import evidence_line, node_facts, remedy_line
from ..analyses.traced_control_flow import python_method
from .plan import DrawPlan, RenderOptions, call_method, call_numbers, library_calls, plan_view

__all__ = ["MAX_PAGES", "VIEWER_DIR", "ModulePages", "module_pages", "node_details", "svg_ids",
           "viewer_fragment", "viewer_page"]

#: the viewer's static files (viewer.js, viewer.css)
VIEWER_DIR = Path(__file__).resolve().parent / "viewer"

_SVG_ID = re.compile(r'\bid="irviz:([^"]*)"')
_SVG_START = re.compile(r"<svg\b")
_SVG_SIZE = re.compile(r'\s(?:width|height)="[^"]*"')
_MANGLE = re.compile(r"___torch_mangle_\d+\.")

#: distinct module pages one viewer gets at most: each is one more Graphviz layout
MAX_PAGES = 40
#: drawn nodes of all module pages together (~2 KB of SVG each: keeps the file near 10 MB)
MAX_PAGE_NODES = 5000


# -- details -------------------------------------------------------------------------
class _Places:
    """Turns absolute source locations into JSON-safe ``file.py:12`` plus a link."""

    def __init__(self, root: str | None, source_url: str | None):
        self.root = os.path.abspath(root) if root else None
        self.source_url = source_url

    def _relative(self, path: str) -> str | None:
        """``path`` relative to the model's directory, or None when it is outside."""
        if not self.root:
            return None
        try:
            rel = os.path.relpath(os.path.abspath(path), self.root)
        except ValueError:  # another drive
            return None
        return None if rel == ".." or rel.startswith(".." + os.sep) else rel.replace(os.sep, "/")

    def place(self, location: str | None) -> dict:
        if not location:
            return {"source": None, "url": None, "code": None}
        try:
            path, line, _ = Location.parse(location)
        except ValueError:
            return {"source": None, "url": None, "code": None}
        rel = self._relative(path)
        shown = rel if rel is not None else os.path.basename(path)
        url = None
        if rel is not None and self.source_url:
            # the file name percent-encoded: a "#", "?", space or quote in it stays a path
            url = self.source_url.format(
                path=quote(rel, safe="/", errors="surrogateescape"), line=line)
        return {"source": f"{shown}:{line}", "url": url, "code": source_line(location)}


def _finding_view(finding: dict) -> dict:
    """What the details show of a finding: its code, message and severity, and the one
    line of its evidence (``counterexample: x negated: ...``; None without evidence)."""
    keep = ("code", "name", "message", "severity", "line", "hint")
    out = {k: finding.get(k) for k in keep}
    out["path"] = os.path.basename(str(finding.get("path", "")))
    out["evidence"] = evidence_line(finding)
    out["remedy"] = remedy_line(finding)
    evidence = finding.get("evidence")
    out["verdict"] = evidence.get("verdict") if isinstance(evidence, dict) else None
    return out


def _callee(G, callee: str | None) -> str | None:
    """A forked callee as the user's code names it: ``models.0.cell_f.forward`` for the
    analyses' ``models.0.cell_f.forward__0`` (torch's name of an overload of ``forward``)."""
    if not callee or "." not in callee:
        return callee
    head, _, method = callee.rpartition(".")
    return f"{head}.{python_method(method, G.graph.get('mode') != 'script')}"


def _fork_info(G, node: str, data: dict, places: _Places) -> dict | None:
    """The fork facts a reader needs (not the analyses' node lists)."""
    def where(n: str) -> str | None:
        d = G.nodes[n] if n in G else {}
        return places.place(d.get("user_source") or d.get("source"))["source"] or n

    region = fw.region(data)
    if region is not None:
        costs = par.task_costs(data)
        out = {"callee": _callee(G, region.callee), "instances": region.instances,
               "loop": region.loop,
               "branch": region.branch, "nested_in": region.nested_in,
               "same_iteration": region.same_iteration,
               "task_cost": costs.task_cost if costs else None,
               "overlap_cost": costs.overlap_cost if costs else None,
               "task_ops": len(region.task_nodes), "overlap_ops": len(region.overlap),
               "waits": [where(w) for w in fw.waits(data)]}
        return out
    if fw.WAITS in data:  # a fork the analysis did not describe
        return {"callee": None, "waits": [where(w) for w in fw.waits(data)]}
    if fw.forks_waited(data):
        return {"waits_for": [where(f) for f in fw.forks_waited(data)]}
    if data.get("subgraph_of"):
        owner = fw.region(G.nodes.get(data["subgraph_of"], {}))
        return {"task_of": where(data["subgraph_of"]),
                "callee": _callee(G, owner.callee) if owner else None}
    return None


def node_details(view, findings: list[dict] | None = None,
                 source_url: str | None = None) -> dict:
    """What the viewer shows when a node is clicked, keyed like the SVG ids (without
    ``irviz:``): every drawable IR node, ``box:<container>`` for a module call drawn as
    one box and ``cluster:<container>`` for a module call drawn as a cluster.

    ``source_url`` is a format string with ``{path}`` (relative to the model's
    directory) and ``{line}``; files outside that directory get no link. Only JSON-safe
    data; no absolute paths.
    """
    G = view.graph
    if findings is None:
        findings = list(view.options.findings)
    root = view.options.source_root or (
        os.path.dirname(G.graph["source_file"]) if G.graph.get("source_file") else None)
    places = _Places(root, source_url)
    by_line: dict[tuple[str, int], list[dict]] = {}
    for f in findings:
        by_line.setdefault((os.path.abspath(str(f["path"])), int(f["line"])), []).append(f)

    def findings_at(location: str | None) -> list[dict]:
        if not location:
            return []
        try:
            path, line, _ = Location.parse(location)
        except ValueError:
            return []
        return [_finding_view(f) for f in by_line.get((os.path.abspath(path), line), [])]

    blocks = G.graph.get("blocks", {})
    details: dict[str, dict] = {}
    members: dict[str, int] = {}
    kinds: dict[str, set[str]] = {}
    show_checks = bool(getattr(getattr(view, "options", None), "show_checks", False))
    checks = {} if show_checks else checks_at(G)
    for node, data in G.nodes(data=True):
        chain = data.get("block")
        while chain is not None and chain in blocks:  # op counts of every call around it
            if blocks[chain]["kind"] in CALL_KINDS and not is_folded(data, show_checks):
                members[chain] = members.get(chain, 0) + 1
                kinds.setdefault(chain, set()).add(data["kind"])
            chain = blocks[chain]["parent"]
        if is_folded(data, show_checks):
            continue
        facts = node_facts(data)
        loc = facts.pop("location")
        entry = {**facts, **places.place(loc),
                 "findings": findings_at(data.get("user_source")),
                 "fork": _fork_info(G, node, data, places),
                 "critical": par.is_critical(data)}
        if checks.get(node):
            entry["checks"] = list(checks[node])
        details[node] = entry
    numbers = call_numbers(G) if blocks else {}
    for cid, info in blocks.items():
        if info["kind"] not in CALL_KINDS:
            continue
        number = numbers.get(cid)
        entry = {"kind": f"{info['kind']} call", "label": info.get("label"),
                 "module": info.get("module"), "class": info.get("class"),
                 # forward, never torch's forward1 (call_method); which call of the module
                 "method": call_method(G, info),
                 "call": f"{number[0]} of {number[1]}" if number else None,
                 "frozen": info.get("irviz.frozen"),
                 "type": info.get("qualified_type"),
                 "depth": info.get("depth"), "ops": members.get(cid, 0),
                 # what a search finds in a module drawn as one box
                 "contains": sorted(k for k in kinds.get(cid, ()) if not k.startswith("prim::"))[:40],
                 "outputs": [], "scope": info.get("module") or "",
                 **places.place(info.get("user_source")),
                 "findings": findings_at(info.get("user_source")), "fork": None}
        details[f"box:{cid}"] = entry
        details[f"cluster:{cid}"] = {**entry, "collapsible": True}
    for rid, calls in (getattr(view, "rolls", None) or {}).items():  # runs rolled by dot()
        rolled = [blocks[c] for c in calls[1:-1] if c in blocks]
        if not rolled:
            continue
        names = [b.get("module") or b.get("label") for b in rolled]
        entry = details.get(f"box:{calls[1]}", {})
        label, call = f"{names[0]} … {names[-1]}", None
        first, last = numbers.get(calls[1]), numbers.get(calls[-2])
        if len(set(names)) == 1 and first and last:   # one module called again and again
            call = f"{first[0]}–{last[0]} of {first[1]}"
            label = f"{names[0]} calls {call}"
        details[rid] = {**entry, "kind": f"{len(names)} repeated calls, rolled up",
                        "label": label, "call": call,
                        "ops": sum(members.get(c, 0) for c in calls[1:-1]),
                        # a search for blocks.500 finds the roll node
                        "contains": names + list(entry.get("contains", [])),
                        "scope": ", ".join(names[:20]) + (" …" if len(names) > 20 else ""),
                        "collapsible": False}
    plan = getattr(view, "plan", None)
    _add_metrics(G, details, plan)
    for rid, loop in (plan.loops.items() if plan is not None else ()):  # unrolled loops
        inside = [n for n in plan.members.get(rid, ()) if not is_folded(G.nodes[n], show_checks)]
        trips = len(loop["iterations"])
        first = G.nodes[loop["iterations"][1][0]]
        details[rid] = {"kind": f"{trips - 2} of {trips} iterations of a loop "
                                f"{unroller(G)} unrolled, rolled up",
                        "label": f"× {trips - 2} iterations ({loop['lines']})",
                        "ops": len(inside), "outputs": [],
                        "contains": sorted({G.nodes[n]["kind"] for n in inside})[:40],
                        "scope": first.get("scope") or "", "scope_class": first.get("scope_class"),
                        **places.place(first.get("user_source")),
                        "findings": findings_at(first.get("user_source")), "fork": None,
                        "collapsible": False}
    return details


#: what the viewer's overlay menu can colour the nodes by: (metric, menu text)
OVERLAYS = (("time", "measured time"), ("cost", "estimated cost"), ("bytes", "memory"))


def _node_metrics(data: dict) -> dict:
    """A node's numbers for the overlay: measured µs per run (``render --profile``), the
    cost model's estimate, the bytes its outputs allocate."""
    found = {}
    profile = data.get(PROFILE)
    if profile and profile.get("total_us"):
        found["time"] = profile["total_us"]
    cost = cost_of(data)
    if cost > 0:
        found["cost"] = cost
    if data.get(BYTES):
        found["bytes"] = data[BYTES]
    return found


def _add_metrics(G, details: dict, plan) -> None:
    """``metrics`` on each entry the overlay can colour: a node's own, a box's or a rolled
    run's the sum of what it holds."""
    for key, entry in details.items():
        if key in G:
            found = _node_metrics(G.nodes[key])
        else:
            members = (plan.members.get(key, ()) if plan is not None else ())
            found = {}
            for n in members:
                for name, value in _node_metrics(G.nodes[n]).items():
                    found[name] = found.get(name, 0) + value
        if found:
            entry["metrics"] = {k: round(v, 3) for k, v in found.items()}


def overlay_menu(details: dict, unit: str | None) -> str:
    """The toolbar's ``Colour: structure / measured time / estimated cost / memory``
    menu, with only the overlays some drawn node has numbers for ("" when none)."""
    have = {m for entry in details.values() for m in (entry.get("metrics") or ())}
    options = [(m, text) for m, text in OVERLAYS if m in have]
    if not options:
        return ""
    return ('<select class="irviz-overlay" aria-label="Colour the nodes by" '
            f'data-cost-unit="{xml_text(unit or "ops")}" title="Colour the nodes by">'
            '<option value="">colour: structure</option>'
            + "".join(f'<option value="{m}">colour: {xml_text(t)}</option>' for m, t in options)
            + "</select>")


# -- module pages --------------------------------------------------------------------
@dataclass
class ModulePage:
    """One module drawn expanded (``focus``), its surroundings as boxes."""

    key: str                 # "p1", "p2"... (the page's id in the HTML)
    module: str              # module path drawn expanded
    svg: str
    label: str               # the call's label, e.g. "encoder.layer.0: BertLayer"
    ops: int
    cid: str                 # its (first) call container: the page opens zoomed to it
    same: list[str] = field(default_factory=list)  # other paths of the same structure


@dataclass
class ModulePages:
    """The pages a viewer gets besides its overview: one per distinct collapsed user
    module call of the overview."""

    pages: list[ModulePage] = field(default_factory=list)
    #: module path -> {"page": key, "same_as": path or None} or {"note": why no page}
    modules: dict[str, dict] = field(default_factory=dict)
    #: user module calls the overview draws as boxes; distinct structures left without a
    #: page by the cap (``limit``)
    calls: int = 0
    skipped: int = 0
    limit: int = MAX_PAGES
    seconds: float = 0.0

    def manifest(self) -> dict:
        return {"pages": {p.key: {"module": p.module, "label": p.label, "ops": p.ops,
                                  "class": p.label.removeprefix(f"{p.module}: "),
                                  "cluster": f"cluster:{p.cid}", "same": p.same}
                          for p in self.pages},
                "modules": self.modules}

    def summary(self) -> str:
        n = len(self.pages)
        text = (f"viewer: {n} module page{'s' if n != 1 else ''} ({self.calls} user module "
                f"call{'s' if self.calls != 1 else ''} collapsed in the overview; "
                f"{self.seconds:.2f} s)")
        if self.skipped:
            text += (f"; {self.skipped} more not rendered (--max-pages {self.limit}): "
                     "--focus MODULE draws one")
        return text


def _structure(G, blocks: dict, cids: set[str]) -> dict[str, tuple]:
    """call container -> (class, method, kinds of the drawn ops inside in program order):
    calls with equal keys are drawn the same way."""
    kinds: dict[str, list[str]] = {cid: [] for cid in cids}
    for _, data in G.nodes(data=True):
        if is_folded(data):
            continue
        block = data.get("block")
        while block is not None and block in blocks:
            if block in kinds:
                kinds[block].append(data["kind"])
            block = blocks[block]["parent"]
    out = {}
    for cid in cids:
        info = blocks[cid]
        cls = _MANGLE.sub("", info.get("qualified_type") or info.get("class") or info["label"])
        out[cid] = (cls, call_method(G, info), tuple(kinds[cid]))
    return out


def module_pages(view, *, engine: str = "auto", findings: list[dict] | None = None,
                 max_pages: int = MAX_PAGES,
                 overview: DrawPlan | DotResult | str | None = None,
                 max_page_nodes: int = MAX_PAGE_NODES) -> ModulePages:
    """The module pages of ``view``'s overview: each collapsed call of a user module (not a library
    module, see :func:`.plan.library_calls`, unless ``expand_library``) gets the graph drawn
    with ``focus=<its path>``, within the same node budget; the user modules such a page still
    draws as boxes inside its module get pages too (breadth first). Calls of the same class with
    the same ops share the first one's page; past ``max_pages`` distinct pages, or once the
    pages draw ``max_page_nodes`` nodes in all, a module gets a note instead (each page is one
    more Graphviz layout and ~2 KB of SVG per node). ``overview``: the overview's plan (or the
    ``DotResult`` holding it), when already made with the same options; otherwise, and for DOT
    text, which is not read, the plan is made here (planning only, no DOT). ``view`` is left as
    it was: its last ``dot()`` stays the overview's."""
    from ..errors import RenderError
    from . import engines

    started = time.perf_counter()
    result = ModulePages(limit=max_pages)
    if max_pages <= 0:
        return result
    G = view.graph
    blocks = G.graph.get("blocks", {})
    library = set() if view.options.expand_library else library_calls(blocks)
    overrides = {"findings": list(findings)} if findings is not None else {}

    def boxes(plan: DrawPlan, inside: str | None = None) -> list[tuple[str, str]]:
        """(module path, call container) of the user module calls drawn as boxes."""
        out = []
        for cid in plan.boxes:
            info = blocks.get(cid)
            if (info is None or info["kind"] != "method" or not info.get("module")
                    or cid in library
                    or (inside is not None and not info["module"].startswith(inside + "."))):
                continue
            out.append((info["module"], cid))
        return out

    if isinstance(overview, DotResult):
        overview = overview.plan
    if not isinstance(overview, DrawPlan):
        overview = plan_view(G, RenderOptions(**{**view.options.__dict__, **overrides}))
    queue = boxes(overview)
    result.calls = len(queue)
    if not queue:
        return result
    shape = _structure(G, blocks, {c for c, i in blocks.items() if i["kind"] == "method"})
    first: dict[tuple, str] = {}   # structure -> the path whose page shows it
    page_nodes = 0
    drawn: list[tuple[str, str]] = []
    texts: list[str] = []
    for path, cid in queue:        # grows: the boxes inside each page drawn
        if path in result.modules:
            continue
        key = shape[cid]
        if key in first:
            result.modules[path] = {"page": None, "same_as": first[key]}
            continue
        first[key] = path
        if len(drawn) < max_pages and page_nodes < max_page_nodes:
            drawn.append((path, cid))
            page = _page_drawing(view, path, overrides)
            texts.append(page.text)
            page_nodes += page.drawn_nodes
            result.modules[path] = {"page": None, "same_as": None}
            queue.extend(boxes(page.plan, inside=path))
        else:
            result.skipped += 1
            why = (f"the viewer draws at most {max_pages} module pages"
                   if len(drawn) >= max_pages else
                   f"the pages already draw {page_nodes} nodes; more would make the "
                   "file too big to open")
            result.modules[path] = {"page": None, "note": (
                f"not rendered ({why}): irviz render --focus {path} draws it")}

    def layout(text: str) -> str | RenderError:
        try:
            return engines.render(text, "svg", engine).decode("utf-8")
        except RenderError as exc:  # one page Graphviz fails on must not lose the rest
            return exc

    jobs = max(1, min(len(texts), os.cpu_count() or 1, 8))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        svgs = list(pool.map(layout, texts))
    pages: dict[str, ModulePage] = {}
    for (path, cid), svg in zip(drawn, svgs):
        entry = result.modules[path]
        if isinstance(svg, RenderError):
            entry.update(page=None, note=f"could not be drawn: {svg}")
            continue
        ops = len(shape[cid][2])
        page = ModulePage(f"p{len(result.pages) + 1}", path, svg, blocks[cid]["label"], ops, cid)
        entry["page"] = page.key
        pages[path] = page
        result.pages.append(page)
    for path, entry in result.modules.items():
        if entry.get("same_as"):
            owner = pages.get(entry["same_as"])
            if owner is None:
                entry.update(note=result.modules[entry["same_as"]].get("note"))
            else:
                entry["page"] = owner.key
                owner.same.append(path)
    result.seconds = time.perf_counter() - started
    return result


def _drawing(view, **overrides) -> DotResult:
    """What ``view.dot(**overrides)`` draws, leaving the view's record of its last
    drawing (the overview's) alone."""
    return view.drawing(**overrides)


def _page_drawing(view, path: str, overrides: dict) -> DotResult:
    """``path`` drawn expanded, within the budget. When the budget would box the module
    itself, its own calls are boxed instead (``depth`` = its depth)."""
    blocks = view.graph.graph["blocks"]
    title = f"{view.title()} › {path}"
    page = _drawing(view, focus=path, depth=None, title=title, **overrides)
    hits = [cid for cid, info in blocks.items()
            if info["kind"] in CALL_KINDS and info.get("module") == path]
    if not set(hits) & set(page.plan.boxes):
        return page
    depth = min(blocks[cid]["depth"] for cid in hits)
    note = (f"{path} alone exceeds the budget of {view.options.max_nodes} nodes: "
            "the modules it calls are drawn as boxes")
    return _drawing(view, focus=path, depth=depth, title=title, notes=view.notes + [note],
                    **overrides)


# -- HTML ----------------------------------------------------------------------------
def _json_for_script(data: object) -> str:
    """JSON that cannot end or confuse its ``<script>`` element: ``<``, ``>`` and ``&``
    are written as ``\\u003c`` etc. (so no ``</script`` nor ``<!--`` can appear)."""
    text = json_dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _inline_svg(svg: str | bytes) -> str:
    """The ``<svg>`` element alone (prolog, doctype and comments before it dropped),
    without its fixed width/height so the stylesheet sizes it."""
    if isinstance(svg, bytes):
        svg = svg.decode("utf-8")
    start = _SVG_START.search(svg)
    if start is None:
        raise ValueError("not an SVG document: no <svg> element")
    svg = svg[start.start():]
    head_end = svg.index(">") + 1
    head = _SVG_SIZE.sub("", svg[:head_end])
    return head + svg[head_end:]


def svg_ids(svg: str) -> set[str]:
    """The irviz ids (without ``irviz:``) of an SVG's nodes and clusters."""
    return {html.unescape(m) for m in _SVG_ID.findall(svg)}


def _page_data(inline: str, details: dict) -> str:
    """The JSON block of one SVG: only the details of the ids drawn in it."""
    ids = svg_ids(inline)
    data = {key: value for key, value in details.items() if key in ids}
    return f'<script type="application/json" class="irviz-data">{_json_for_script(data)}</script>'


def _templates(pages: ModulePages, details: dict) -> str:
    """The module pages: their index as JSON, each page's SVG and data in an inert
    ``<template>`` that viewer.js swaps into the canvas when the page is opened."""
    out = [f'<script type="application/json" class="irviz-pages">'
           f'{_json_for_script(pages.manifest())}</script>\n']
    for page in pages.pages:
        inline = _inline_svg(page.svg)
        out.append(f'<template class="irviz-page" data-page="{xml_text(page.key)}">\n{inline}\n'
                   f'{_page_data(inline, details)}</template>\n')
    return "".join(out)


def viewer_fragment(svg: str | bytes, details: dict, *, title: str, uid: str,
                    pages: ModulePages | None = None, diff: bool = False,
                    cost_unit: str | None = None) -> str:
    """One viewer: toolbar, the inline SVG, the details panel and the details as JSON
    (only the entries whose id is in the SVG), plus the module ``pages`` if any. No
    inline handlers: viewer.js wires it."""
    inline = _inline_svg(svg)
    t = xml_text(title)
    hint = ("Click a node for its details; click a module title to fold it"
            + ("; double-click a module box to open its page. " if pages and pages.pages
               else ". ") + "Drag to pan, wheel to zoom.")
    return (
        f'<div class="irviz-viewer" id="{xml_text(uid)}" data-irviz-version="{__version__}" '
        f'data-title="{t}">\n'
        '<div class="irviz-toolbar" role="toolbar">'
        f'<span class="irviz-title">{t}</span>'
        '<button type="button" data-action="zoom-in" title="Zoom in">+</button>'
        '<button type="button" data-action="zoom-out" title="Zoom out">−</button>'
        '<button type="button" data-action="fit" title="Fit to width">Fit width</button>'
        '<button type="button" data-action="reset" title="Show the whole graph">Whole</button>'
        '<input type="search" class="irviz-search" placeholder="Search: name, kind, file:line"'
        ' aria-label="Search nodes" autocomplete="off">'
        '<span class="irviz-count" aria-live="polite"></span>'
        + ("" if diff else overlay_menu(details, cost_unit))
        + (_DIFF_TOGGLE if diff else "") + '</div>\n'
        '<div class="irviz-body"><div class="irviz-canvas">\n'
        f'{inline}\n</div>\n'
        f'<aside class="irviz-details" aria-live="polite"><p class="irviz-hint">{hint}</p>'
        '</aside></div>\n'
        f'{_page_data(inline, details)}\n'
        + (_templates(pages, details) if pages and pages.pages else "")
        + '</div>\n')


#: ``irviz diff``'s viewer: show the left graph, the right one, or both (viewer.js sets
#: ``data-diff`` on the viewer; viewer.css hides the other side's nodes, edges and frames)
_DIFF_TOGGLE = (
    '<span class="irviz-diff-toggle" role="group" aria-label="Which graph">'
    '<button type="button" data-action="diff-left" title="The left graph only">left</button>'
    '<button type="button" data-action="diff-right" title="The right graph only">right'
    '</button><button type="button" data-action="diff-both" aria-pressed="true" '
    'title="Both graphs, changes coloured">both</button></span>')


def _static(name: str) -> str:
    return (VIEWER_DIR / name).read_text(encoding="utf-8")


def viewer_page(view, *, findings: list[dict] | None = None, source_url: str | None = None,
                engine: str = "auto", max_pages: int = MAX_PAGES,
                pages: ModulePages | None = None, diff: bool = False) -> str:
    """The standalone page: one viewer with its CSS and JS inlined, no network at all
    (a Content-Security-Policy forbids every fetch). Besides the overview it holds the
    :func:`module_pages` (``pages``, or computed with ``max_pages``; 0: none)."""
    overrides = {"findings": list(findings)} if findings is not None else {}
    if pages is None:
        pages = module_pages(view, engine=engine, findings=findings, max_pages=max_pages)
    svg = view.svg(engine, **overrides).decode("utf-8")
    details = node_details(view, findings, source_url)
    title = view.title()
    uid = "irviz-" + re.sub(r"[^A-Za-z0-9_-]", "-", view.name)[:60]
    js, css = _static("viewer.js"), _static("viewer.css")
    if "</script" in js.lower() or "</style" in css.lower():
        raise ValueError("viewer.js/viewer.css must not contain a closing tag")
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
           "img-src data:")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        f"<title>{xml_text(title)} · irviz</title>\n<style>\n{css}</style>\n</head>\n"
        '<body class="irviz-page">\n'
        + viewer_fragment(svg, details, title=title, uid=uid, pages=pages, diff=diff,
                          cost_unit=getattr(cost_model(view.graph), "unit", None))
        + f"<script>{js}</script>\n</body>\n</html>\n")
