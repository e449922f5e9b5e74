"""The model's call sites of findings in other files: a finding in a library the model wraps
gets the lines of the model's file whose calls led there, read from the trace's stacks.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

from ...frontends.capture import Capture
from ...paths import display_path
from .context import Findings, LayerContext, TargetRun, real_path, watched_file


def run(ctx: LayerContext) -> None:
    """Relate the findings outside the model's file to its lines that called them."""
    _add_call_sites(ctx.run, ctx.findings)


class _CallSites:
    """Which line of the model's file led into each line of other files a trace ran, read
    from the Python stack torch keeps on every traced node (innermost first): the
    innermost frame in the model's file is the call, the frames inside it the lines it
    led to."""

    def __init__(self, cap: Capture, user_file: str):
        self._user = real_path(user_file)
        self._lines: dict[str, dict[int, dict[tuple[str, int], None]]] = {}
        try:  # a trace drawn without its TracedModule: its graph is already inlined
            graph = (cap.trace_graph.graph if cap.trace_graph is not None
                     else cap.scripted.inlined_graph)
        except (AttributeError, RuntimeError):
            return
        from ...location import traced_stack

        known: dict[str, tuple[str, bool]] = {}  # path -> (real path, watched)
        for text in {_range(node) for node in _all_nodes(graph)} - {""}:
            frames = traced_stack(text)
            for path, _ in frames:
                if path not in known:
                    known[path] = (real_path(path), watched_file(path))
            user = next((i for i, (path, _) in enumerate(frames)
                         if known[path][0] == self._user), None)
            if not user:  # no frame of the model's file, or the node is its own line
                continue
            site = frames[user]
            for path, line in frames[:user]:
                real, watched = known[path]
                if watched:  # not torch's, irviz's or the standard library's
                    self._lines.setdefault(real, {}).setdefault(line, {})[site] = None

    def of(self, path: str, line: int) -> list[tuple[str, int]]:
        """The calls in the model's file that led into the function around ``path:line``
        (its own line when it is in no function); ``[]`` when the trace shows none."""
        real = real_path(path)
        lines = self._lines.get(real)
        if not lines or real == self._user:
            return []
        first, last = _function_around(path, line)
        sites: dict[tuple[str, int], None] = {}
        for number in sorted(n for n in lines if first <= n <= last):
            sites.update(lines[number])
        return sorted(sites, key=lambda s: (s[0], s[1]))


def _range(node) -> str:
    try:
        return node.sourceRange()
    except RuntimeError:
        return ""


def _all_nodes(graph):
    for node in graph.nodes():
        yield node
        for block in node.blocks():
            yield from _all_nodes(block)


def _function_around(path: str, line: int) -> tuple[int, int]:
    """``(first, last)`` line of the innermost function of ``path`` holding ``line``;
    ``(line, line)`` at module level or when the file cannot be read."""
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return line, line
    around = [(first, last) for first, last in _functions(path, stamp)
              if first <= line <= last]
    return max(around) if around else (line, line)


@functools.lru_cache(maxsize=64)
def _functions(path: str, stamp: int) -> tuple[tuple[int, int], ...]:
    """``(first, last)`` line of every function defined in ``path`` (as of ``stamp``, its
    modification time)."""
    import ast

    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return ()
    return tuple((node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _add_call_sites(run: TargetRun, findings: Findings) -> None:
    """Findings in other files than the model's own (a library it wraps) that no layer
    related yet get the model's lines whose calls led there, when the trace shows them."""
    user_file = run.target.source_file
    if run.trace is None or user_file is None or run.target.kind not in ("module",
                                                                         "function"):
        return
    user = real_path(str(user_file))
    outside = [key for key, d in findings.found.items()
               if not d.related and real_path(d.path) != user]
    if not outside:
        return
    sites = _CallSites(run.trace, str(user_file))
    for code, path, line in outside:
        related = [(display_path(p), n, "called from") for p, n in sites.of(path, line)]
        findings.relate(code, (path, line), related)
