"""Walk one function body, run the checks on its nodes, record what they report.

Knowing what a name holds is :mod:`.inference`'s job and judging it is the checks'
(``detect_*.py``, one module per rule family); this module is the machinery between
them, so that neither has to walk a tree or compute a column. It visits the nodes
Python evaluates when the function runs (a nested ``def``/``lambda``/``class`` body
only where the walk reaches it directly), tells the checks whether an expression is
already inside a tested truth value (``if not x.any():`` is one finding, not two), and
turns ``report(RuleClass, node)`` into a :class:`SourceFinding` positioned in the file.

The walk knows which compilations run the code it is in (:data:`.inference.COMPILERS`):
a trace never runs the body of ``if torch.jit.is_scripting():``, of ``if not
torch.jit.is_tracing():``, nor what follows ``torch.jit.is_tracing() or`` or ``if
torch.jit.is_tracing(): return``; TorchScript never compiles the ``else`` of ``if
torch.jit.is_scripting():``; a function called only from such code inherits it. A family's checks (its ``MODES``, default both) run only on code
one of its compilations runs: tracing pitfalls are not looked for where scripting alone
goes, and the other way round.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType

from ..registry import Rule
from .inference import (COMPILERS, FUNCTION_SCOPES, TRACE, CallGraph, Inference, Source,
                        Unit)

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
    #: file lines (first, last) any of which running shows that the flagged code ran;
    #: None: the finding's own lines. A declaration that runs no code of its own (a
    #: parameter, ``global``) ran when its function did: the function's lines.
    evidence: tuple[int, int] | None = None

    def evidence_lines(self) -> range:
        first, last = self.evidence or (self.line, self.end_line)
        return range(first, last + 1)


Check = Callable[["FunctionChecker", ast.AST], None]


@dataclass(frozen=True)
class Checks:
    """The checks of some rule families: ``function`` ones run once on each analysed
    function's definition, ``nodes`` ones on each visited node of their type. Code that
    only some compilations run gets the checks of the families judging one of them
    (:meth:`running`)."""

    function: tuple[Check, ...] = ()
    nodes: Mapping[type, tuple[Check, ...]] = field(default_factory=dict)
    #: the checks for code run by fewer compilations (empty: these, always)
    fewer: Mapping[frozenset, Checks] = field(default_factory=dict)

    @classmethod
    def of(cls, *families: ModuleType) -> Checks:
        """The checks of modules that define ``FUNCTION_CHECKS`` and ``NODE_CHECKS`` (and
        optionally ``MODES``: the compilations whose code they judge, default both)."""
        every = cls._of(families)
        fewer = {}
        for modes in ({"trace"}, {"script"}, set()):
            judging = [f for f in families
                       if set(getattr(f, "MODES", COMPILERS)) & modes]
            fewer[frozenset(modes)] = cls._of(judging)
        return cls(every.function, every.nodes, fewer)

    @classmethod
    def _of(cls, families) -> Checks:
        nodes: dict[type, tuple[Check, ...]] = {}
        for family in families:
            for node_type, checks in family.NODE_CHECKS.items():
                nodes[node_type] = nodes.get(node_type, ()) + tuple(checks)
        return cls(tuple(c for family in families for c in family.FUNCTION_CHECKS), nodes)

    def running(self, modes: frozenset) -> Checks:
        """The checks for code that the compilations ``modes`` run."""
        return self if modes >= COMPILERS else self.fewer.get(modes, self)


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
        #: the compilations that run the code being walked (its function's, then less
        #: under ``if torch.jit.is_scripting():`` and the like)
        self.modes: frozenset = unit.modes

    @property
    def inside_test(self) -> bool:
        """True inside an expression whose truth value is tested already (an ``if``
        or ``while`` test, an operand of ``and``/``or``/``not``, an argument of
        ``bool``/``max``/``min``): a truth test in there is part of that one."""
        return self._tests > 0

    def report(self, rule: type[Rule], start: ast.AST, end: ast.AST | None = None, *,
               declaration: bool = False) -> None:
        """A finding of ``rule`` from ``start`` to the end of ``end`` (default: ``start``);
        its detail is that source text, on one line. ``declaration``: the flagged code
        runs nothing itself (a parameter, ``global``): it ran when its function did."""
        end = end or start
        l1, c1 = start.lineno, start.col_offset
        l2 = getattr(end, "end_lineno", None) or l1
        c2 = getattr(end, "end_col_offset", None)
        if c2 is None:
            c2 = c1
        line, column = self._position(l1, c1)
        end_line, end_column = self._position(l2, c2)
        detail = _shorten(self._segment(l1, c1, l2, c2))
        evidence = None
        if declaration:
            fdef = self.infer.fdef
            evidence = (self._position(fdef.lineno, 0)[0],
                        self._position(fdef.end_lineno or fdef.lineno, 0)[0])
        self.findings.add(SourceFinding(rule, self.src.path, line, column, end_line,
                                        end_column, detail, self.infer.qualname, evidence))

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
        for check in self.checks.running(self.modes).function:
            check(self, fdef)
        self._visit_block(fdef.body)
        return self.findings

    def visit(self, node: ast.AST) -> None:
        for check in self.checks.running(self.modes).nodes.get(type(node), ()):
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

    def _visit_run_by(self, modes: frozenset, nodes: list, test: bool = False) -> None:
        """Visit ``nodes`` (expressions tested for truth, or a block of statements) as
        code the compilations ``modes`` run."""
        outer, self.modes = self.modes, modes
        try:
            if test:
                for node in nodes:
                    self._visit_test(node)
            else:
                self._visit_block(nodes)
        finally:
            self.modes = outer

    def _visit_block(self, stmts: list) -> None:
        """Visit a block's statements; after ``if torch.jit.is_tracing(): return ...`` the
        rest of the block is code a trace never runs."""
        outer = self.modes
        try:
            for stmt in stmts:
                self.visit(stmt)
                if isinstance(stmt, ast.If) and TRACE in self.modes:
                    taken = self.infer.under_trace(stmt.test)
                    branch = {True: stmt.body, False: stmt.orelse}.get(taken)
                    if branch and isinstance(branch[-1], (ast.Return, ast.Raise)):
                        self.modes = self.modes - {TRACE}
        finally:
            self.modes = outer

    def _walk_If(self, node: ast.If) -> None:
        self._visit_test(node.test)
        body, orelse = self.infer.branch_modes(node.test, self.modes)
        self._visit_run_by(body, node.body)
        self._visit_run_by(orelse, node.orelse)

    def _walk_While(self, node: ast.While) -> None:
        self._visit_test(node.test)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    def _walk_Assert(self, node: ast.Assert) -> None:
        self._visit_test(node.test)
        if node.msg is not None:
            self.visit(node.msg)

    def _walk_IfExp(self, node: ast.IfExp) -> None:
        self._visit_test(node.test)
        body, orelse = self.infer.branch_modes(node.test, self.modes)
        self._visit_run_by(body, [node.body])
        self._visit_run_by(orelse, [node.orelse])

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
        traced = len(self.infer.traced_operands(node))
        for i, v in enumerate(node.values):
            # after ``torch.jit.is_tracing() or``: code a trace never evaluates
            modes = self.modes if i < traced else self.modes - {TRACE}
            self._visit_run_by(modes, [v], test=i < len(node.values) - 1)

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
        self.infer.record_call(node, self.modes)  # what it calls is analysed too
        self.visit(node.func)
        tested = self.infer.canonical(node.func)[0] in _TRUTH_BUILTINS
        for arg in node.args:
            if tested:
                self._visit_test(arg)
            else:
                self.visit(arg)
        for kw in node.keywords:
            self.visit(kw.value)
