"""The AST layer of ``irviz lint``: tracing pitfalls found by reading the model's code.

Nothing is executed. ``source_findings(model)`` reads the Python source of ``forward``
and of everything it calls in user code, and reports each pitfall as a
:class:`SourceFinding` naming its rule class. Knowing and judging are kept apart:

* :mod:`.inference` knows which functions run and what each name holds (a taint
  analysis: tensor, size, metadata, future, ...);
* :mod:`.checker` walks each function and positions what the checks report;
* the checks judge, one module per rule family, each reporting rule classes from
  :mod:`irviz.lint.rules`: :mod:`.detect_tracing` (IRV1xx),
  :mod:`.detect_fork_wait` (IRV2xx), :mod:`.detect_scripting` (IRV3xx).
"""
from __future__ import annotations

from typing import Any

from ..registry import Rule
from . import detect_fork_wait, detect_scripting, detect_tracing
from .checker import Checks, FunctionChecker, SourceFinding
from .inference import CallGraph

__all__ = ["RULES", "SourceFinding", "source_findings"]

_FAMILIES = (detect_tracing, detect_fork_wait, detect_scripting)
_CHECKS = Checks.of(*_FAMILIES)
#: every rule this layer can report
RULES: tuple[type[Rule], ...] = tuple(r for family in _FAMILIES for r in family.RULES)


def source_findings(obj: Any) -> list[SourceFinding]:
    """Tracing pitfalls visible in the source of ``obj`` (an nn.Module or a function),
    sorted by place and rule code.

    ``forward`` and everything it calls in user code is read, never run. A
    ScriptModule/ScriptFunction is read from its original Python source when
    that can be found; a loaded or traced archive gives ``[]``.
    """
    graph = CallGraph.from_root(obj)
    if graph is None:
        return []
    latest: dict = {}  # unit -> its findings on its last analysis
    for unit, src in graph.pending():
        latest[unit] = FunctionChecker(graph, unit, src, _CHECKS).run()
    found: set[SourceFinding] = set().union(*latest.values())
    return sorted(found, key=lambda f: (f.path, f.line, f.column, f.rule.code, f.end_line,
                                        f.end_column, f.detail, f.function))
