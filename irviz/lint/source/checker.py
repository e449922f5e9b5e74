"""Walk one function body, run the checks on its nodes, record what they report.

Knowing what a name holds is :mod:`.inference`'s job and judging it is the checks'
(``checks_*.py``, one module per rule family); this module is the machinery between
them, so that neither has to walk a tree or compute a column. It visits the nodes
Python evaluates when the function runs (a nested ``def``/``lambda``/``class`` body
only where the walk reaches it directly), tells the checks whether an expression is
already inside a tested truth value (``if not x.any():`` is one finding, not two), and
turns ``report(RuleClass, node)`` into a :class:`SourceFinding` positioned in the file.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType

from ..registry import Rule
from .inference import FUNCTION_SCOPES, CallGraph, Inference, Source, Unit

__all__ = ["Checks", "FunctionChecker", "SourceFinding"]

_DETAIL_MAX = 80
#: calls whose arguments Python turns into truth values (max/min compare them)
_TRUTH_BUILTINS = {"builtins.bool", "builtins.max", "builtins.min"}


@dataclass(frozen=True)
class SourceFinding:
    """One finding of the AST layer, before it becomes a Diagnostic."""

    rule: type[Rule]     # the rule class, e.g. irviz.lint.rules.tracing.TensorToPythonBool
    path: str            # the source file (as inspect reports it)
    line: int            # 1-based
    column: int          # 1-based (ast col_offset + 1, in characters)
    end_line: int        # 1-based
    end_column: int      # 1-based, exclusive (ast end_col_offset + 1)
    detail: str          # the offending source, on one line, at most 80 characters
    function: str        # qualified function, e.g. "MyDecisionGate.forward"


Check = Callable[["FunctionChecker", ast.AST], None]


@dataclass(frozen=True)
class Checks:
    """The checks of some rule families: ``function`` ones run once on each analysed
    function's definition, ``nodes`` ones on each visited node of their type."""

    function: tuple[Check, ...] = ()
    nodes: Mapping[type, tuple[Check, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, *families: ModuleType) -> Checks:
        """The checks of modules that define ``FUNCTION_CHECKS`` and ``NODE_CHECKS``."""
        nodes: dict[type, tuple[Check, ...]] = {}
        for family in families:
            for node_type, checks in family.NODE_CHECKS.items():
                nodes[node_type] = nodes.get(node_type, ()) + tuple(checks)
        return cls(tuple(c for family in families for c in family.FUNCTION_CHECKS), nodes)


def _shorten(text: str) -> str:
    text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    if len(text) > _DETAIL_MAX:
        text = text[:_DETAIL_MAX - 3] + "..."
    return text


class FunctionChecker:
    """One analysis of one function: what the checks read (:attr:`infer`,
    :attr:`inside_test`) and where they report (:meth:`report`)."""

    def __init__(self, graph: CallGraph, unit: Unit, src: Source, checks: Checks):
        self.infer = Inference(graph, unit, src)
        self.src = src
        self.checks = checks
        self.findings: set[SourceFinding] = set()
        self._tests = 0

    @property
    def inside_test(self) -> bool:
        """True inside an expression whose truth value is tested already (an ``if``
        or ``while`` test, an operand of ``and``/``or``/``not``, an argument of
        ``bool``/``max``/``min``): a truth test in there is part of that one."""
        return self._tests > 0

    def report(self, rule: type[Rule], start: ast.AST, end: ast.AST | None = None) -> None:
        """A finding of ``rule`` from ``start`` to the end of ``end`` (default: ``start``);
        its detail is that source text, on one line."""
        end = end or start
        l1, c1 = start.lineno, start.col_offset
        l2 = getattr(end, "end_lineno", None) or l1
        c2 = getattr(end, "end_col_offset", None)
        if c2 is None:
            c2 = c1
        line, column = self._position(l1, c1)
        end_line, end_column = self._position(l2, c2)
        detail = _shorten(self._segment(l1, c1, l2, c2))
        self.findings.add(SourceFinding(rule, self.src.path, line, column, end_line,
                                        end_column, detail, self.infer.qualname))

    def _position(self, lineno: int, col: int) -> tuple:
        """(file line, 1-based character column) of a position in the parsed text."""
        idx = lineno - 1
        text = self.src.lines[idx] if 0 <= idx < len(self.src.lines) else ""
        chars = len(text.encode("utf-8")[:col].decode("utf-8", "replace"))
        removed = self.src.removed[idx] if 0 <= idx < len(self.src.removed) else 0
        return self.src.start + lineno - 1 - self.src.line_offset, chars + removed + 1

    def _segment(self, l1: int, c1: int, l2: int, c2: int) -> str:
        lines = [s.encode("utf-8") for s in self.src.lines[l1 - 1:l2]]
        if not lines:
            return ""
        if len(lines) == 1:
            return lines[0][c1:c2].decode("utf-8", "replace")
        lines[0] = lines[0][c1:]
        lines[-1] = lines[-1][:c2]
        return "\n".join(s.decode("utf-8", "replace") for s in lines)

    # ------------------------------------------------------------------ the walk
    def run(self) -> set[SourceFinding]:
        fdef = self.infer.fdef
        for check in self.checks.function:
            check(self, fdef)
        for stmt in fdef.body:
            self.visit(stmt)
        return self.findings

    def visit(self, node: ast.AST) -> None:
        for check in self.checks.nodes.get(type(node), ()):
            check(self, node)
        walk = getattr(self, "_walk_" + type(node).__name__, None)
        if walk is not None:
            walk(node)
        else:
            self._walk_children(node)

    def _walk_children(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, FUNCTION_SCOPES):
                self.visit(child)

    def _visit_test(self, node: ast.AST) -> None:
        self._tests += 1
        try:
            self.visit(node)
        finally:
            self._tests -= 1

    def _walk_If(self, node: ast.If | ast.While) -> None:
        self._visit_test(node.test)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    _walk_While = _walk_If

    def _walk_Assert(self, node: ast.Assert) -> None:
        self._visit_test(node.test)
        if node.msg is not None:
            self.visit(node.msg)

    def _walk_IfExp(self, node: ast.IfExp) -> None:
        self._visit_test(node.test)
        self.visit(node.body)
        self.visit(node.orelse)

    def _walk_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    _walk_AsyncFor = _walk_For

    def _walk_comprehension(self, node: ast.AST) -> None:
        for gen in node.generators:  # type: ignore[attr-defined]
            self.visit(gen.iter)
            for cond in gen.ifs:
                self._visit_test(cond)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)  # type: ignore[attr-defined]

    _walk_ListComp = _walk_SetComp = _walk_GeneratorExp = _walk_DictComp = _walk_comprehension

    def _walk_BoolOp(self, node: ast.BoolOp) -> None:
        for v in node.values[:-1]:
            self._visit_test(v)
        self.visit(node.values[-1])

    def _walk_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._visit_test(node.operand)
        else:
            self.visit(node.operand)

    def _walk_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def _walk_Starred(self, node: ast.Starred) -> None:
        self.visit(node.value)

    def _walk_Name(self, node: ast.Name) -> None:
        pass

    def _walk_Call(self, node: ast.Call) -> None:
        self.infer.record_call(node)  # what it calls is analysed too
        self.visit(node.func)
        tested = self.infer.canonical(node.func)[0] in _TRUTH_BUILTINS
        for arg in node.args:
            if tested:
                self._visit_test(arg)
            else:
                self.visit(arg)
        for kw in node.keywords:
            self.visit(kw.value)
