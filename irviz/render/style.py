"""Colours and shapes, keyed by node category and container kind.

One table, so the legend, the DOT writer, the labels, the timeline and the docs
agree: no other module of ``render/`` writes a colour itself. Colours are chosen
to stay readable when printed in grey and on light backgrounds.
"""
from __future__ import annotations

from ..ir.model import CHOICE_BODIES, CHOICE_KINDS, LOOP_BODIES, LOOP_KINDS
from .engines import METRICS_FONT

#: Arial alone: the one name every Graphviz engine has metrics for (a list is measured in
#: Times by Graphviz 16); the SVG lists its metric-compatible stand-ins (see :mod:`.engines`)
FONT = METRICS_FONT

# Graphviz's built-in metrics have no bold face. Arial Bold is 0.055 em wider than regular
# for these characters and as wide for the others (measured on Liberation Sans, which has
# Arial's widths); a label pads its bold text by the difference so it fits its box.
_BOLD_WIDER = frozenset("!&:;?ABJKL[]{}'bcdfghijklmnopqrstuvwxy")
_BOLD_MUCH_WIDER = frozenset('"^')
#: width of a space in Graphviz's Arial metrics, in em
SPACE_EM = 0.2779


def bold_extra_em(text: str) -> float:
    """How much wider ``text`` is drawn in Arial Bold than Graphviz measures it, in em."""
    return sum(0.0556 if c in _BOLD_WIDER else 0.1191 if c in _BOLD_MUCH_WIDER else 0.0
               for c in text)

#: node category -> DOT node attributes
NODE_STYLE = {
    "input":   {"shape": "box", "style": "rounded,filled,bold", "fillcolor": "#d9f2d9",
                "color": "#2e7d32"},
    "output":  {"shape": "box", "style": "rounded,filled,bold", "fillcolor": "#fde0dc",
                "color": "#c62828"},
    "op":      {"shape": "box", "style": "rounded,filled", "fillcolor": "#ffffff",
                "color": "#607d8b"},
    "control": {"shape": "box", "style": "filled,bold", "fillcolor": "#fff3c4",
                "color": "#b28704"},
    "fork":    {"shape": "box", "style": "filled,bold", "fillcolor": "#ffd8a8",
                "color": "#e8590c"},
    "wait":    {"shape": "box", "style": "filled,bold", "fillcolor": "#ffe8cc",
                "color": "#e8590c"},
    "module":  {"shape": "box3d", "style": "filled", "fillcolor": "#dbe9f6",
                "color": "#1f5f99"},
    # a run of repeated module calls rolled into one node: the module box, border doubled
    "rolled":  {"shape": "box3d", "style": "filled", "fillcolor": "#dbe9f6",
                "color": "#1f5f99", "peripheries": "2"},
    "call":    {"shape": "box", "style": "rounded,filled,dashed", "fillcolor": "#eeeeee",
                "color": "#607d8b"},
    "empty":   {"shape": "plaintext", "style": "", "fillcolor": "", "color": "#9e9e9e"},
}

#: container kind -> DOT cluster attributes
CLUSTER_STYLE = {
    "method":    {"style": "rounded,dashed", "color": "#1f5f99", "fillcolor": "",
                  "fontcolor": "#1f5f99"},
    "function":  {"style": "rounded,dashed", "color": "#6a1b9a", "fillcolor": "",
                  "fontcolor": "#6a1b9a"},
    "if":        {"style": "rounded,filled", "color": "#b28704", "fillcolor": "#fffbea",
                  "fontcolor": "#7a5d00"},
    "loop":      {"style": "rounded,filled", "color": "#2b8a3e", "fillcolor": "#f1faf1",
                  "fontcolor": "#1b5e20"},
    "fork":      {"style": "rounded,filled", "color": "#e8590c", "fillcolor": "#fff4e6",
                  "fontcolor": "#b34700"},
    "if.then":   {"style": "rounded", "color": "#d4b106", "fillcolor": "", "fontcolor": "#7a5d00"},
    "if.else":   {"style": "rounded", "color": "#d4b106", "fillcolor": "", "fontcolor": "#7a5d00"},
    "loop.body": {"style": "rounded", "color": "#69b36f", "fillcolor": "", "fontcolor": "#1b5e20"},
    "fork.task": {"style": "rounded,filled", "color": "#e8590c", "fillcolor": "#ffe8cc",
                  "fontcolor": "#b34700"},
    "await.task": {"style": "rounded,filled", "color": "#e8590c", "fillcolor": "#ffe8cc",
                   "fontcolor": "#b34700"},
    "frozen":    {"color": "#c62828", "penwidth": "2.5"},
}
# torch.export's higher-order bodies: a cond branch looks like an if branch, a
# while/scan/map body like a loop body
CLUSTER_STYLE.update({kind: CLUSTER_STYLE["if.then"] for kind in CHOICE_BODIES
                      if kind not in CLUSTER_STYLE})
CLUSTER_STYLE.update({kind: CLUSTER_STYLE["loop.body"] for kind in LOOP_BODIES
                      if kind not in CLUSTER_STYLE})


def control_style(kind: str) -> str:
    """The frame style (``if``, ``loop`` or ``fork``) of a node kind that owns blocks."""
    if kind in CHOICE_KINDS:
        return "if"
    if kind in LOOP_KINDS:
        return "loop"
    return "fork"

#: facts from the analyses, drawn on top of the node's own style
OVERLAP_FILL = "#fff0d6"     # parent work that runs beside a forked task
CRITICAL = {"color": "#c2185b", "penwidth": "2.4"}   # on the critical path

#: a drawn node (or box) a lint finding points at: an error or a warning (a counterexample
#: or a certainty shows the model breaks), and an ``info`` finding (nothing showed it: a note,
#: drawn in a neutral colour, never the warning red)
FINDING = {"color": "#c62828", "penwidth": "2.4"}
FINDING_INFO = {"color": "#5c6bc0", "penwidth": "1.8"}
#: a value drawn again beside a far consumer (the ghost node, on top of NODE_STYLE["op"])
GHOST_NODE = {"style": "rounded,dashed", "color": "#90a4ae", "fontcolor": "#607d8b",
              "fontsize": "9"}
#: the words in an empty container ("no operations recorded", "passes its input through")
PLACEHOLDER_TEXT = {"fontsize": "9", "fontcolor": "#757575"}

#: text colours inside labels (``<FONT COLOR=...>`` of HTML-like labels)
TEXT_COLOR = {
    "detail": "#455a64",     # the small lines: shapes, op counts, folded arguments
    "warning": "#c62828",    # error/warning badges, frozen control flow, warning notes
    "info": "#3949ab",       # info badges (lint findings no run confirmed)
    "note": "#455a64",       # informational notes under the title (budget, traced outputs)
    "mode": "#607d8b",       # "(script)" / "(trace)" beside the title
    "future": "#b34700",     # the legend's fork/wait edges
    "critical": "#c2185b",   # the legend's critical path
}

EDGE_STYLE = {
    "data":    {"color": "#546e7a"},
    "future":  {"color": "#e8590c", "style": "dashed", "penwidth": "1.6"},
    "pairing": {"color": "#e8590c", "style": "dashed", "penwidth": "2", "constraint": "false",
                "arrowhead": "odot"},
    "result":  {"color": "#e8590c", "style": "bold"},
    "control": {"color": "#b28704", "style": "dotted", "arrowhead": "none"},
    "ghost":   {"color": "#90a4ae", "style": "dotted"},
}

#: an invisible edge that keeps a node nothing flows into below what ran before it
ANCHOR = {"style": "invis", "arrowhead": "none"}

#: legend rows: (category or edge style, text); a row whose category the model has no node
#: of is left out (``fork`` stands for fork and wait, ``module`` is always shown)
LEGEND = [
    ("input", "graph input"), ("output", "graph output"), ("op", "operation"),
    ("control", "if / loop"), ("fork", "fork / wait"), ("module", "collapsed module (ops)"),
]
#: the legend's last row, what the edges and frames mean: (TEXT_COLOR key, text, shown
#: when the model has: ``fork`` a fork or wait, ``critical`` a critical path, None always)
LEGEND_NOTES = [
    ("future", "- - ▸ future (fork → wait)   ━▸ task result   ", "fork"),
    ("critical", "▭ critical path   ", "critical"),
]
#: the parts of that row's grey text, each (text, shown when the model has, as above;
#: ``control``: an if or a loop)
LEGEND_DETAIL = [
    ("dashed box: module call", None), ("yellow: if/loop", "control"),
    ("orange: forked task, light orange: work beside it", "fork"), ("hover for source", None),
]

#: the legend's row of lint badges, drawn when the picture has findings: (TEXT_COLOR key,
#: text)
LEGEND_FINDINGS = [
    ("warning", "⚠ lint error / warning: a counterexample or a certainty   "),
    ("info", "ℹ lint note (info): nothing showed the model breaks · hover for the evidence"),
]

#: the timeline (:mod:`.timeline`): page, text and grid colours
TIMELINE = {
    "background": "#ffffff", "title": "#222222", "text": "#555555", "lane_name": "#333333",
    "axis": "#888888", "grid": "#e3e3e3", "lane": "#f6f7f9",
}
#: timeline bars (fill, stroke, text): the call on the main thread, and the forked tasks'
#: colours, one per distinct label, in order of appearance
TIMELINE_MAIN = ("#dbe9f6", "#1f5f99", "#0d3559")
TIMELINE_TASKS = [("#ffd8a8", "#e8590c", "#5c2300"), ("#ffe3a3", "#c77c02", "#4d3000"),
                  ("#f8c4b4", "#c2410c", "#5a1a04"), ("#e9d5c3", "#8d5b34", "#3d2410"),
                  ("#fcd1e0", "#c2255c", "#5a0f2a"), ("#d3f0d8", "#2b8a3e", "#0f3d19")]


def node_category(kind: str) -> str:
    """The style category of a TorchScript node kind."""
    if kind == "prim::Param":
        return "input"
    if kind == "prim::Return":
        return "output"
    if kind in CHOICE_KINDS or kind in LOOP_KINDS:
        return "control"
    if kind in ("prim::fork", "prim::awaitable"):
        return "fork"
    if kind in ("aten::wait", "prim::awaitable_wait"):
        return "wait"
    if kind in ("prim::CallMethod", "prim::CallFunction"):
        return "call"
    return "op"

#: ``irviz diff``'s union graph: a node's diff status -> what is drawn on top of its style
#: (removed red and dashed, added green, changed amber, unchanged greyed out)
DIFF_NODE = {
    "removed": {"color": "#c62828", "fillcolor": "#fde0dc", "fontcolor": "#8e0000",
                "style": "rounded,filled,dashed", "penwidth": "2"},
    "added":   {"color": "#2e7d32", "fillcolor": "#d9f2d9", "fontcolor": "#1b5e20",
                "style": "rounded,filled", "penwidth": "2"},
    "changed": {"color": "#e69500", "fillcolor": "#ffe8a3", "fontcolor": "#5c3d00",
                "style": "rounded,filled", "penwidth": "2.4"},
    "same":    {"color": "#c4c9cc", "fillcolor": "#f7f7f7", "fontcolor": "#9aa3a8"},
}
#: a container present on one side only (its frame), and a call box holding a change
DIFF_CLUSTER = {
    "removed": {"color": "#c62828", "fontcolor": "#8e0000", "style": "rounded,dashed",
                "penwidth": "2"},
    "added":   {"color": "#2e7d32", "fontcolor": "#1b5e20", "style": "rounded",
                "penwidth": "2"},
}
#: an edge of one side only
DIFF_EDGE = {
    "removed": {"color": "#c62828", "style": "dashed"},
    "added":   {"color": "#2e7d32", "penwidth": "1.6"},
    "same":    {"color": "#b0bec5"},
}
#: the diff legend's cells: (status, text)
DIFF_LEGEND = [("removed", "− removed (left only)"), ("added", "+ added (right only)"),
               ("changed", "~ changed"), ("same", "unchanged")]
