"""Colours and shapes, keyed by node category and container kind.

One table, so the legend, the DOT writer and the docs agree. Colours are
chosen to stay readable when printed in grey and on light backgrounds.
"""
from __future__ import annotations

FONT = "Helvetica"

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

#: facts from the analyses, drawn on top of the node's own style
OVERLAP_FILL = "#fff0d6"     # parent work that runs beside a forked task
CRITICAL = {"color": "#c2185b", "penwidth": "2.4"}   # on the critical path

EDGE_STYLE = {
    "data":    {"color": "#546e7a"},
    "future":  {"color": "#e8590c", "style": "dashed", "penwidth": "1.6"},
    "pairing": {"color": "#e8590c", "style": "dashed", "penwidth": "2", "constraint": "false",
                "arrowhead": "odot"},
    "result":  {"color": "#e8590c", "style": "bold"},
    "control": {"color": "#b28704", "style": "dotted", "arrowhead": "none"},
    "ghost":   {"color": "#90a4ae", "style": "dotted"},
}

#: legend rows: (category or edge style, text)
LEGEND = [
    ("input", "graph input"), ("output", "graph output"), ("op", "operation"),
    ("control", "if / loop"), ("fork", "fork / wait"), ("module", "collapsed module (ops)"),
]


def node_category(kind: str) -> str:
    """The style category of a TorchScript node kind."""
    if kind == "prim::Param":
        return "input"
    if kind == "prim::Return":
        return "output"
    if kind in ("prim::If", "prim::Loop"):
        return "control"
    if kind in ("prim::fork", "prim::awaitable"):
        return "fork"
    if kind in ("aten::wait", "prim::awaitable_wait"):
        return "wait"
    if kind in ("prim::CallMethod", "prim::CallFunction"):
        return "call"
    return "op"
