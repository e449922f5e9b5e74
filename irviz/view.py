"""One captured model and its renderings: what every interface hands the user.

A Visualization only reads: its graph comes from the workspace with every analysis's
facts on it, and its renderings (DOT, SVG, node-link JSON) are drawn from those facts.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from . import __version__
from .analyses.traced_control_flow import (batchnorms_in_training, is_batchnorm_check,
                                           normalised_by_batch)
from .frontends.capture import Capture
from .lint.rule_words import rule_words
from .render.dot import DotResult, RenderOptions, build_dot
from .render.escape import json_dumps

__all__ = ["Visualization", "JSON_SCHEMA_VERSION"]

#: version of the node-link JSON layout written by ``--format json``
JSON_SCHEMA_VERSION = 1


def first_sentence(message: str) -> str:
    """The message up to its first full stop that ends a sentence: not the dot inside
    ``torch.tensor results are registered as constants``."""
    return re.split(r"\.(?:\s|$)", message.strip(), maxsplit=1)[0]

@dataclass
class Visualization:
    """One captured model: its capture, its annotated IR graph, and its renderings."""

    capture: Capture
    graph: nx.DiGraph
    options: RenderOptions = field(default_factory=RenderOptions)
    #: what the last ``dot()`` decided (e.g. modules collapsed to fit the node budget)
    render_notes: list[str] = field(default_factory=list)
    drawn_nodes: int = 0
    #: the runs of repeated calls the last ``dot()`` rolled up (``DotResult.rolls``)
    rolls: dict[str, list[str]] = field(default_factory=dict)
    #: the DrawPlan of the last ``dot()`` (what was drawn, boxed and rolled)
    plan: object = None

    @property
    def name(self) -> str:
        return self.capture.name

    def __repr__(self) -> str:
        """``<Visualization decision_gate.py:MyCell script: 23 nodes, 2 notes>``: no
        tensors, no eager run (a notebook cell shows it whole)."""
        notes = len(self.notes)
        return (f"<Visualization {self.title()} {self.capture.mode}: "
                f"{self.graph.number_of_nodes()} nodes, {notes} note{'s' if notes != 1 else ''}>")

    @property
    def notes(self) -> list[str]:
        """Remarks shown in the picture: fallbacks and what torch warned about (a list,
        like ``capture.notes``, which it extends). A warning
        from BatchNorm's training-mode check says which BatchNorm is in training mode and
        what to do (:meth:`batchnorm_note`), not the line torch's warning was put on; only
        when a ``batch_norm`` of the graph did use the batch's statistics (GroupNorm and
        weight standardisation run the same check in torch)."""
        notes = list(self.capture.notes)
        batch_statistics = None
        for w in self.capture.warnings:
            if is_batchnorm_check(w):
                if batch_statistics is None:
                    batch_statistics = normalised_by_batch(self.graph)
                note = self.batchnorm_note(w) if batch_statistics else None
                if note is not None and note not in notes:   # else GroupNorm's check:
                    notes.append(note)                         # torch checking its input
            elif w.category == "TracerWarning" and w.origin is None:
                loc = f"{w.filename.rsplit('/', 1)[-1]}:{w.lineno}"
                words = rule_words(w.message, w.filename, w.lineno)   # irviz's, if it has
                if words:   # without the rule's code: the picture names a rule only as a
                    words = words.rpartition(" (lint rule ")[0]   # finding the gate kept
                note = f"⚠ {w.category} at {loc}: {words or first_sentence(w.message)}"
                if note not in notes:   # torch warns once per traced call of the line
                    notes.append(note)
        return notes

    def batchnorm_note(self, warning) -> str:
        """``⚠ 1: BatchNorm2d is in training mode: ...; call .eval() before tracing``: what a
        TracerWarning from BatchNorm's batch-size check means. torch puts it on a line with
        no branch (the model's line calling the module, or a ``Sequential``'s ``forward``);
        the cause is a BatchNorm left in training mode, which the trace records as such
        (it normalises by each batch's statistics and updates the running ones on every
        call)."""
        found = batchnorms_in_training(self.capture.target.obj)
        # what to do first: the title shows 140 characters of a note
        what = "call .eval() before tracing (the trace normalises by each batch's statistics)"
        if not found:
            loc = f"{Path(warning.filename).name}:{warning.lineno}"
            return f"⚠ batch_norm ran in training mode (TracerWarning at {loc}): {what}"
        (path, cls), more = found[0], len(found) - 1
        name = f"{path or '<root>'}: {cls}"
        if not more:
            return f"⚠ {name} is in training mode: {what}"
        return (f"⚠ {name} and {more} more BatchNorm{'s' if more > 1 else ''} are in "
                f"training mode: {what}")

    def title(self) -> str:
        """``decision_gate.py:MyCell`` (no directories: output must not depend on them)."""
        target = self.capture.target
        if target.kind == "archive" or target.source_file is None:
            return Path(target.spec).name
        return f"{Path(target.source_file).name}:{target.name}"

    def drawing(self, **overrides) -> DotResult:
        """What ``dot(**overrides)`` would draw (DOT text and its plan), without
        recording it as this view's last drawing: the module pages use it."""
        opts = RenderOptions(**{**self.options.__dict__, **overrides})
        if not opts.notes:
            opts.notes = self.notes
        if opts.title is None:
            opts.title = self.title()
        return build_dot(self.graph, opts)

    def dot(self, **overrides) -> str:
        """DOT source (``overrides`` are :class:`RenderOptions` fields); the plan it drew
        is kept as ``self.plan``."""
        result = self.drawing(**overrides)
        self.render_notes, self.drawn_nodes = result.notes, result.drawn_nodes
        self.rolls, self.plan = result.rolls, result.plan
        return result.text

    def svg(self, engine: str = "auto", **overrides) -> bytes:
        """SVG bytes, laid out by Graphviz (``engine``: auto, pure, dot or wasm; see
        :mod:`irviz.render.engines`). A fallback that draws less says so once on stderr."""
        from .render import engines  # the wasm engine is loaded only when used

        return engines.render(self.dot(**overrides), "svg", engine)

    def png(self, engine: str = "auto", **overrides) -> bytes:
        """PNG bytes (graphviz-pure, or ``dot``): the picture :meth:`svg` draws."""
        from .render import engines

        return engines.render(self.dot(**overrides), "png", engine)

    def node_link(self) -> dict:
        """The IR graph in networkx's node-link format (plus irviz metadata)."""
        data = nx.node_link_data(self.graph, edges="edges")
        data["graph"] = {**data["graph"], "irviz_version": __version__,
                         "schema_version": JSON_SCHEMA_VERSION}
        return data

    def json(self) -> str:
        """The node-link JSON: every string as the model had it (see ``json_dumps``)."""
        return json_dumps(self.node_link(), indent=1) + "\n"

    def _repr_svg_(self) -> str:  # Jupyter: the picture where HTML is not shown
        return self.svg().decode("utf-8")

    def _repr_html_(self) -> str:
        """Jupyter: the interactive viewer (pan, zoom, search, fold, node details) in an
        ``<iframe srcdoc>`` holding the standalone viewer page. The frame keeps the page's
        CSS, script and Content-Security-Policy apart from the notebook's, so views never
        clash, and needs no server or network; Colab and VS Code show it as Jupyter does.
        ``sandbox="allow-scripts"`` runs viewer.js without the notebook's origin."""
        from .render.html import viewer_page

        page = viewer_page(self).replace("</head>", f"<style>{FRAME_CSS}</style>\n</head>", 1)
        return (f'<iframe class="irviz-frame" title="{html.escape(self.title())} · irviz" '
                f'sandbox="allow-scripts" style="width:100%;height:{frame_height(page)}px;'
                f'border:1px solid #ccc;border-radius:4px" '
                f'srcdoc="{html.escape(page, quote=True)}"></iframe>')


#: the notebook frame's height bounds (px): fits a small graph, scrolls no cell off-screen
FRAME_MIN, FRAME_MAX = 320, 600
#: the width (px) the graph gets in a notebook cell: a ~900 px output area less the
#: details panel beside it (viewer.css: 300 px) and margins
CELL_CANVAS_WIDTH = 560
#: the viewer's toolbar, margins and borders around the graph (px), on one line
FRAME_CHROME = 84
#: in the frame the viewer fills the frame's height: a column of the toolbar (however
#: many lines it wraps to), the module breadcrumb, and the graph beside its details
#: taking what is left (the standalone page gives the graph 70% of the window)
FRAME_CSS = (
    "html,body.irviz-page{height:100%}"
    "body.irviz-page{box-sizing:border-box;padding:6px;display:flex;flex-direction:column}"
    ".irviz-viewer{flex:1 1 auto;min-height:0;margin:0;display:flex;flex-direction:column}"
    ".irviz-body{flex:1 1 auto;min-height:0;flex-wrap:nowrap;align-items:stretch}"
    ".irviz-canvas svg{height:100%;min-height:120px}"
    ".irviz-details{max-height:none}")
_VIEWBOX = re.compile(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+) ([\d.]+)"')


def frame_height(page: str) -> int:
    """The frame height that shows the page's graph whole at the size it gets in a cell
    (scaled to the canvas width; Graphviz's points are 4/3 px) below the toolbar, within
    ``FRAME_MIN``..``FRAME_MAX``."""
    found = _VIEWBOX.search(page)
    if not found:
        return FRAME_MAX
    width, height = (float(v) * 4 / 3 for v in found.groups())
    shown = height * min(1.0, CELL_CANVAS_WIDTH / max(width, 1.0))
    return int(min(FRAME_MAX, max(FRAME_MIN, shown + FRAME_CHROME)))
