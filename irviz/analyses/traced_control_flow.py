"""Where a trace froze Python control flow: TracerWarnings mapped to module calls.

``torch.jit.trace`` records one path; a Python ``if`` on tensor data leaves no
node, only a TracerWarning on the user's line. This analysis finds the module
call whose Python ``forward`` contains that line and annotates its container
with ``irviz.frozen`` (a one-line explanation), so the picture can mark it.
The full script-vs-trace comparison belongs to ``irviz lint``.
"""
from __future__ import annotations

import functools
import inspect

import networkx as nx

from ..frontends.capture import Capture
from ..ir.source import source_line

#: TracerWarning prefixes that mean a Python value was frozen into the trace
FROZEN_PREFIXES = ("Converting a tensor to a Python", "Iterating over a tensor",
                   "Using len to get tensor shape")


def _forward_range(module, method: str) -> tuple[str, int, int] | None:
    return _class_method_range(type(module), method)


@functools.lru_cache(maxsize=1024)
def _class_method_range(cls: type, method: str) -> tuple[str, int, int] | None:
    """(file, first line, last line) of ``cls.method``; cached: one lookup per class."""
    fn = getattr(cls, method, None)
    try:
        lines, start = inspect.getsourcelines(fn)
        return inspect.getsourcefile(fn), start, start + len(lines) - 1
    except (TypeError, OSError):
        return None


def annotate_frozen_control_flow(G: nx.DiGraph, capture: Capture) -> None:
    """Write ``irviz.frozen`` on the containers whose Python code the trace froze."""
    if capture.mode != "trace":
        return
    root = capture.target.obj
    get = getattr(root, "get_submodule", None)
    frozen = [w for w in capture.warnings if w.category == "TracerWarning"
              and w.origin is None and w.message.startswith(FROZEN_PREFIXES)]
    for warning in frozen:
        code = source_line(f"{warning.filename}:{warning.lineno}:1") or ""
        text = f"⚠ trace froze line {warning.lineno}: {code}"
        for cid, info in G.graph["blocks"].items():
            if info["kind"] != "method" or get is None:
                continue
            try:
                module = get(info["module"]) if info["module"] else root
            except AttributeError:
                continue
            span = _forward_range(module, info.get("method") or "forward")
            if span and span[0] == warning.filename and span[1] <= warning.lineno <= span[2]:
                info["irviz.frozen"] = text
