"""Where a trace froze Python control flow: TracerWarnings mapped to module calls.

``torch.jit.trace`` records one path; a Python ``if`` on tensor data leaves no
node, only a TracerWarning on the user's line (once: Python shows a warning once per
line). This analysis finds every module call whose Python ``forward`` contains that
line - each call of a module the trace made, ``forward`` for the first and, as torch
names them, ``forward1``, ``forward2`` for the next (:func:`python_method`) - and
annotates its container with ``irviz.frozen`` (a one-line explanation), so the picture
can mark each of them: every call ran the same Python ``if``, and each froze the branch
its own input took. The full script-vs-trace comparison belongs to ``irviz lint``.
"""
from __future__ import annotations

import functools
import inspect
import re

import networkx as nx

from ..frontends.capture import Capture
from ..ir.source import source_line

#: TracerWarning prefixes that mean a Python value was frozen into the trace
FROZEN_PREFIXES = ("Converting a tensor to a Python", "Iterating over a tensor",
                   "Using len to get tensor shape")


#: torch's names for a method it made itself: a trace's later calls of a module's forward
#: (``forward1``, ``forward2``) and an overload of a scripted method (``forward__0``)
_TRACE_CALL = re.compile(r"^(forward)(\d+)$")
_OVERLOAD = re.compile(r"^(\w+?)__(\d+)$")


def python_method(method: str | None, traced: bool = True) -> str | None:
    """The name of the Python method a call container's ``method`` runs: torch's names for
    the methods it made (``forward1``: a trace's second call of ``forward``; ``forward__0``:
    an overload of a scripted ``forward``) without their numbers. ``traced``: the graph
    comes from a trace (a trace, or an archive, which may hold one), so ``forward1`` is
    torch's name; in a scripted graph it is the user's own method."""
    if not method:
        return method
    found = _OVERLOAD.match(method) or (_TRACE_CALL.match(method) if traced else None)
    return found.group(1) if found else method


def _forward_range(module, method: str) -> tuple[str, int, int] | None:
    cls = type(module)
    if getattr(cls, method, None) is None:   # forward1: the trace's second call of forward
        method = python_method(method) or "forward"
    return _class_method_range(cls, method)


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
