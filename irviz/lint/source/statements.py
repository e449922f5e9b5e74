"""Which statement of a file decides whether a line runs, and which ``if`` only validates.

A counterexample shows *that* a trace leaves the model's path; the first node where a
second trace on it diverges shows *where*, as a line inside the branch or loop body that
one trace ran and the other did not. The finding belongs on the statement that chose:
the ``if``, ``while`` or ``for`` holding that line (:func:`deciding_lines`).

An ``if`` whose body only raises (``if x.size(1) > 4096: raise ValueError(...)``) is a
validation: the trace drops the check, and every input that passes it takes the traced
path (:func:`validates_only`).
"""
from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

__all__ = ["deciding_lines", "validates_only"]

_DECIDING = (ast.If, ast.For, ast.AsyncFor, ast.While)


class _Index:
    """One file's statements by the line they start on (in ``ast.walk`` order), its
    deciding statements with the lines they decide, and the attributes each line reads:
    made by one walk of the file, then looked up (the verify and settle layers ask about
    every finding's line; a walk per question was ~10% of lint's time on the Transformers
    corpus, whose modelling files run to ~2,000 lines)."""

    def __init__(self, tree: ast.AST):
        self.statements: dict[int, list[ast.stmt]] = {}
        #: ``(header line, first line, last line)`` of each deciding statement's bodies
        #: and each conditional expression's span
        self.deciders: list[tuple[int, int, int, bool]] = []
        self.attributes: dict[int, set[str]] = {}
        self.functions: list[tuple[int, int]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt):
                self.statements.setdefault(node.lineno, []).append(node)
            if isinstance(node, _DECIDING):
                span = _body_lines(node)
                if span:
                    self.deciders.append((node.lineno, span[0], span[1], False))
            elif isinstance(node, ast.IfExp):
                end = getattr(node, "end_lineno", None) or node.lineno
                self.deciders.append((node.lineno, node.lineno, end, True))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                self.attributes.setdefault(node.lineno, set()).add(node.attr)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.append((node.lineno, node.end_lineno or node.lineno))


@functools.lru_cache(maxsize=64)
def _tree(path: str, stamp: int) -> _Index | None:
    try:
        return _Index(ast.parse(Path(path).read_bytes()))
    except (OSError, SyntaxError, ValueError):
        return None


def _parsed(path: str) -> _Index | None:
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _tree(path, stamp)


def _body_lines(node: ast.AST) -> tuple[int, int] | None:
    """First and last line of a deciding statement's bodies (``orelse`` included), i.e.
    what it decides about, without its own header."""
    parts = list(getattr(node, "body", [])) + list(getattr(node, "orelse", []))
    if not parts:
        return None
    return (min(p.lineno for p in parts),
            max(getattr(p, "end_lineno", None) or p.lineno for p in parts))


def deciding_lines(path: str, line: int) -> list[int]:
    """The header lines of the statements deciding whether ``line`` of ``path`` runs, the
    innermost first (``[]`` when none, or the file cannot be read)."""
    index = _parsed(path)
    if index is None:
        return []
    found = [header for header, first, last, inline in index.deciders
             if first <= line <= last and not (inline and header == line)]
    return sorted(set(found), reverse=True)


def _raises(stmt: ast.stmt) -> bool:
    """A statement that only raises: ``raise``, ``assert``, ``torch._assert(...)``."""
    if isinstance(stmt, (ast.Raise, ast.Assert)):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in ("_assert", "_assert_async")
    return False


def validates_only(path: str, line: int) -> bool:
    """Whether the statement at ``line`` of ``path`` only validates: an ``assert``, a
    ``torch._assert(...)``, or an ``if`` with no ``else`` whose body only raises (warnings
    and log calls before the raise allowed)."""
    index = _parsed(path)
    if index is None:
        return False
    for node in index.statements.get(line, ()):
        if _raises(node):
            return True
        if isinstance(node, ast.If) and not node.orelse and node.body \
                and _raises(node.body[-1]) \
                and all(_raises(s) or _logs(s) for s in node.body):
            return True
    return False


def _logs(stmt: ast.stmt) -> bool:
    """``warnings.warn(...)``, ``logger.warning(...)``, a message built into a name."""
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in ("warn", "warning", "error", "info", "debug", "print")
    return False


def function_span(path: str, line: int) -> tuple[int, int] | None:
    """First and last line of the innermost function of ``path`` holding ``line``."""
    index = _parsed(path)
    if index is None:
        return None
    spans = [(first, last) for first, last in index.functions if first <= line <= last]
    return max(spans) if spans else None


def assigned_names(path: str, line: int) -> set[str]:
    """The names the statement at ``line`` binds (``a, b = ...``, ``for row in ...``)."""
    index = _parsed(path)
    if index is None:
        return set()
    out: set[str] = set()
    for node in index.statements.get(line, ()):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        for target in targets:
            out |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return out


def used_names(path: str, line: int) -> set[str]:
    """The names the statements starting at ``line`` read."""
    index = _parsed(path)
    if index is None:
        return set()
    return {n.id for node in index.statements.get(line, ())
            for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def reads_attribute(path: str, line: int, attr: str) -> bool:
    """Whether a statement at ``line`` of ``path`` reads an attribute ``attr``
    (``x.device``)."""
    index = _parsed(path)
    return index is not None and attr in index.attributes.get(line, ())
