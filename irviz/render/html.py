"""The interactive HTML viewer: the SVG with zoom, pan, search, node details and
collapsible module clusters, in one self-contained page (no network, works from
``file://``), or as a fragment for the Sphinx extension.

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
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..ir.model import CALL_KINDS, format_shape
from ..ir.source import source_line, split_location
from .escape import json_dumps, xml_text

__all__ = ["VIEWER_DIR", "node_details", "svg_ids", "viewer_fragment", "viewer_page"]

#: the viewer's static files (viewer.js, viewer.css)
VIEWER_DIR = Path(__file__).resolve().parent / "viewer"

_SVG_ID = re.compile(r'\bid="irviz:([^"]*)"')
_SVG_START = re.compile(r"<svg\b")
_SVG_SIZE = re.compile(r'\s(?:width|height)="[^"]*"')


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
            path, line, _ = split_location(location)
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
    keep = ("code", "name", "message", "severity", "line", "hint")
    out = {k: finding.get(k) for k in keep}
    out["path"] = os.path.basename(str(finding.get("path", "")))
    return out


def _fork_info(G, node: str, data: dict, places: _Places) -> dict | None:
    """The fork facts a reader needs (not the analyses' node lists)."""
    def where(n: str) -> str | None:
        d = G.nodes[n] if n in G else {}
        return places.place(d.get("user_source") or d.get("source"))["source"] or n

    fork = data.get("irviz.fork")
    if fork is not None:
        out = {k: fork.get(k) for k in ("callee", "instances", "loop", "branch", "nested_in",
                                         "same_iteration", "task_cost", "overlap_cost")}
        out["task_ops"] = len(fork.get("task_nodes") or [])
        out["overlap_ops"] = len(fork.get("overlap") or [])
        out["waits"] = [where(w) for w in data.get("irviz.waits", [])]
        return out
    if "irviz.waits" in data:  # a fork the analysis did not describe
        return {"callee": None, "waits": [where(w) for w in data["irviz.waits"]]}
    if data.get("irviz.forks"):
        return {"waits_for": [where(f) for f in data["irviz.forks"]]}
    if data.get("subgraph_of"):
        owner = G.nodes.get(data["subgraph_of"], {})
        callee = (owner.get("irviz.fork") or {}).get("callee")
        return {"task_of": where(data["subgraph_of"]), "callee": callee}
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
            path, line, _ = split_location(location)
        except ValueError:
            return []
        return [_finding_view(f) for f in by_line.get((os.path.abspath(path), line), [])]

    blocks = G.graph.get("blocks", {})
    details: dict[str, dict] = {}
    members: dict[str, int] = {}
    kinds: dict[str, set[str]] = {}
    for node, data in G.nodes(data=True):
        chain = data.get("block")
        while chain is not None and chain in blocks:  # op counts of every call around it
            if blocks[chain]["kind"] in CALL_KINDS and not data.get("hidden"):
                members[chain] = members.get(chain, 0) + 1
                kinds.setdefault(chain, set()).add(data["kind"])
            chain = blocks[chain]["parent"]
        if data.get("hidden"):
            continue
        outputs = []
        for out in data.get("outputs", []):
            shape = format_shape(out)
            name = f"{out['name']}: " if out.get("name") else ""
            outputs.append(f"{name}{out.get('type')}" + (f" [{shape}]" if shape else ""))
        loc = data.get("user_source") or data.get("source")
        entry = {"kind": data["kind"], "label": data.get("label"), "outputs": outputs,
                 "scope": data.get("scope") or "", "scope_class": data.get("scope_class"),
                 **places.place(loc), "findings": findings_at(data.get("user_source")),
                 "fork": _fork_info(G, node, data, places),
                 "critical": bool(data.get("irviz.critical"))}
        details[node] = entry
    for cid, info in blocks.items():
        if info["kind"] not in CALL_KINDS:
            continue
        entry = {"kind": f"{info['kind']} call", "label": info.get("label"),
                 "module": info.get("module"), "class": info.get("class"),
                 "method": info.get("method"), "type": info.get("qualified_type"),
                 "depth": info.get("depth"), "ops": members.get(cid, 0),
                 # what a search finds in a module drawn as one box
                 "contains": sorted(k for k in kinds.get(cid, ()) if not k.startswith("prim::"))[:40],
                 "outputs": [], "scope": info.get("module") or "",
                 **places.place(info.get("user_source")),
                 "findings": findings_at(info.get("user_source")), "fork": None}
        details[f"box:{cid}"] = entry
        details[f"cluster:{cid}"] = {**entry, "collapsible": True}
    return details


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


def viewer_fragment(svg: str | bytes, details: dict, *, title: str, uid: str) -> str:
    """One viewer: toolbar, the inline SVG, the details panel and the details as JSON
    (only the entries whose id is in the SVG). No inline handlers: viewer.js wires it."""
    inline = _inline_svg(svg)
    ids = svg_ids(inline)
    data = {key: value for key, value in details.items() if key in ids}
    t = xml_text(title)
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
        '<span class="irviz-count" aria-live="polite"></span></div>\n'
        '<div class="irviz-body"><div class="irviz-canvas">\n'
        f'{inline}\n</div>\n'
        '<aside class="irviz-details" aria-live="polite"><p class="irviz-hint">'
        'Click a node for its details; click a module title to fold it. '
        'Drag to pan, wheel to zoom.</p></aside></div>\n'
        f'<script type="application/json" class="irviz-data">{_json_for_script(data)}</script>\n'
        '</div>\n')


def _static(name: str) -> str:
    return (VIEWER_DIR / name).read_text(encoding="utf-8")


def viewer_page(view, *, findings: list[dict] | None = None, source_url: str | None = None,
                engine: str = "auto") -> str:
    """The standalone page: one viewer with its CSS and JS inlined, no network at all
    (a Content-Security-Policy forbids every fetch)."""
    overrides = {"findings": list(findings)} if findings is not None else {}
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
        + viewer_fragment(svg, details, title=title, uid=uid)
        + f"<script>{js}</script>\n</body>\n</html>\n")
