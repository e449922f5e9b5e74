"""What the model's Python decided at a line, on one run: condition coverage.

A tracing finding rests on a Python decision: an ``if`` or ``while`` on tensor data or
metadata, a ``for`` whose trip count comes from a size, a value turned into a Python
number. The trace keeps what the example decided. A variant on which the trace agrees
with the model proves something about that decision only when the decision went another
way on it (docs/lint.md: held and undecided), so each run of the model's Python records,
for each watched line, what was decided there:

* an ``if``/``while``: the side taken each time the header ran (the next line the frame
  ran: inside the body or not), so also a ``while``'s trip count;
* a ``for``: how many times the body was entered (the trip count);
* any other line (``n = int(x.sum())``, ``y = a if x.dim() == 3 else b``): the values of
  the conversions and conditional tests on it (``int(...)``, ``len(...)``, ``.item()``,
  ``.size(...)``, ``.dim()``, an ``IfExp``'s test), evaluated in the frame just before
  the line runs. These are reads of values the line computes anyway; a probe that raises
  (a name bound inside a comprehension) records ``?``.

The next-line reading needs no evaluation at all, so an ``if`` whose condition has side
effects is read without repeating them. Only frames of the watched files get a line
tracer (``sys.settrace``; Python 3.11 has no ``sys.monitoring``), so the rest of the
model runs at full speed.
"""
from __future__ import annotations

import ast
import functools
import os
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Decision", "DecisionRecorder", "decision_at"]

#: calls whose result is a Python value the trace bakes (or a size it reads)
_PROBED_CALLS = frozenset({"int", "float", "bool", "len", "item", "tolist", "size", "dim",
                           "numel", "numpy", "is_floating_point"})
_PROBED_ATTRS = frozenset({"shape", "ndim", "dtype", "training"})
#: a probed tensor up to this many elements is compared by its values too
_HASHED = 1 << 16


@dataclass(frozen=True)
class Decision:
    """The statement a finding's line holds, as the recorder reads it."""

    path: str           # real path
    line: int
    #: ``if``, ``while``, ``for`` or ``value``
    kind: str
    #: the last line of the header (a condition may span lines)
    header_end: int
    #: first and last line of the body (``if``/``while``/``for``), else None
    body: tuple[int, int] | None
    #: ``value`` lines: the source and compiled code of each probed expression
    probes: tuple[tuple[str, Any], ...] = ()

    def describe(self, value: tuple) -> str:
        """One run's value in words: ``True``, ``10 iterations``, ``n=3``."""
        if value == ():
            return "not reached"
        if self.kind == "if":
            return "/".join(dict.fromkeys("true" if v else "false" for v in value))
        if self.kind in ("for", "while"):
            return f"{sum(value)} iteration{'s' if sum(value) != 1 else ''}"
        return ", ".join(f"{src}={v}" for src, v in zip((p[0] for p in self.probes),
                                                        value[0]))

    def summary(self, value: tuple) -> tuple:
        """What is compared between runs: the sides taken, the trip count, the values."""
        if self.kind == "if":
            return tuple(sorted(set(value)))
        if self.kind in ("for", "while"):
            return (sum(value),)
        return tuple(dict.fromkeys(value))


def _statements(tree: ast.AST) -> dict[int, ast.stmt]:
    """Each line's statement (an ``if``/``while``/``for`` before any other starting on the
    same line), from one walk of the file: a finding's line is looked up, not walked for
    (a Transformers modelling file is ~2,000 lines, asked about for every finding)."""
    out: dict[int, ast.stmt] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            best = out.get(node.lineno)
            if best is None or isinstance(node, (ast.If, ast.While, ast.For)):
                out[node.lineno] = node
    return out


def _probes(stmt: ast.stmt) -> tuple[tuple[str, Any], ...]:
    out = []
    for node in ast.walk(stmt):
        expr = None
        if isinstance(node, ast.IfExp):
            expr = node.test
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in _PROBED_CALLS:
                expr = node
        elif isinstance(node, ast.Attribute) and node.attr in _PROBED_ATTRS \
                and isinstance(node.ctx, ast.Load):
            expr = node
        if expr is None:
            continue
        source = ast.unparse(expr)
        if any(source == s for s, _ in out):
            continue
        try:
            code = compile(ast.Expression(expr), "<irviz-probe>", "eval")
        except (SyntaxError, ValueError, TypeError):
            continue
        out.append((source, code))
        if len(out) >= 4:
            break
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _parsed(path: str, _stamp: int) -> dict[int, ast.stmt] | None:
    """The statements of ``path`` by line (:func:`_statements`), for its ``_stamp``."""
    try:
        with open(path, "rb") as f:
            return _statements(ast.parse(f.read()))
    except (OSError, SyntaxError, ValueError):
        return None


def decision_at(path: str, line: int) -> Decision | None:
    """The decision at ``line`` of ``path`` (None: the file cannot be read, or no
    statement starts there)."""
    real = os.path.realpath(path)
    try:
        statements = _parsed(real, os.stat(real).st_mtime_ns)
    except OSError:
        return None
    stmt = statements.get(line) if statements is not None else None
    if stmt is None:
        return None
    if isinstance(stmt, (ast.If, ast.While)):
        kind = "if" if isinstance(stmt, ast.If) else "while"
        end = stmt.test.end_lineno or line
        body = (stmt.body[0].lineno, max(s.end_lineno or s.lineno for s in stmt.body))
        return Decision(real, line, kind, end, body)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        end = stmt.iter.end_lineno or line
        body = (stmt.body[0].lineno, max(s.end_lineno or s.lineno for s in stmt.body))
        return Decision(real, line, "for", end, body)
    return Decision(real, line, "value", stmt.end_lineno or line, None, _probes(stmt))


def _plain(value: Any) -> Any:
    """A probed value as a hashable, comparable record (a tensor by its shape, dtype and,
    when it is one number, its value)."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.numel() == 1:
            return value.item()
        small = value.numel() <= _HASHED
        return ("tensor", tuple(value.shape), str(value.dtype),
                hash(value.detach().cpu().contiguous().numpy().tobytes()) if small else None)
    if hasattr(value, "tobytes") and hasattr(value, "shape"):  # a NumPy array
        return ("array", tuple(value.shape), hash(value.tobytes()))
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (int, float, bool, str, type(None))):
        return value
    return repr(value)[:40]


@dataclass
class DecisionRecorder:
    """Records what each of ``decisions`` decided while the block runs (:attr:`values`:
    ``(path, line) ->`` a tuple, one entry per time the line ran)."""

    decisions: list[Decision]
    values: dict[tuple[str, int], list] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_file: dict[str, dict[int, Decision]] = {}
        for d in self.decisions:
            self._by_file.setdefault(d.path, {})[d.line] = d
        self._files: dict[str, dict[int, Decision] | None] = {}
        self._codes: dict[Any, dict[int, Decision] | None] = {}
        self._pending: dict[Any, Decision] = {}
        self._previous = None

    def _watched(self, code) -> dict[int, Decision] | None:
        """The decisions inside ``code``'s own lines (None: none), so that only the
        functions holding one get a line tracer, not every function of their file."""
        found = self._codes.get(code, False)
        if found is False:
            name = code.co_filename
            in_file = self._files.get(name, False)
            if in_file is False:
                in_file = self._files[name] = self._by_file.get(os.path.realpath(name))
            found = None
            if in_file:
                lines = {line for _start, _end, line in code.co_lines() if line is not None}
                found = {n: d for n, d in in_file.items() if n in lines} or None
            self._codes[code] = found
        return found

    def _global(self, frame, event, _arg):
        if event == "call" and self._watched(frame.f_code) is not None:
            return self._local
        return None

    def _local(self, frame, event, _arg):
        if event == "line":
            line = frame.f_lineno
            pending = self._pending.get(frame)
            if pending is not None and not (pending.line <= line <= pending.header_end):
                del self._pending[frame]
                body = pending.body
                self._add(pending, bool(body and body[0] <= line <= body[1]))
            decision = self._watched(frame.f_code).get(line)
            if decision is not None and frame not in self._pending:
                if decision.kind == "value":
                    self._add(decision, self._probe(decision, frame))
                else:
                    self._pending[frame] = decision
        elif event == "return":
            pending = self._pending.pop(frame, None)
            if pending is not None:
                self._add(pending, False)
        return self._local

    @staticmethod
    def _probe(decision: Decision, frame) -> tuple:
        out = []
        for _source, code in decision.probes:
            try:
                out.append(_plain(eval(code, frame.f_globals, frame.f_locals)))  # noqa: S307
            except Exception:  # noqa: BLE001 - a probe the frame cannot evaluate yet
                out.append("?")
        return tuple(out)

    def _add(self, decision: Decision, value: Any) -> None:
        self.values.setdefault((decision.path, decision.line), []).append(value)

    def __enter__(self) -> "DecisionRecorder":
        self._previous = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._previous)
        self._pending.clear()

    def taken(self) -> dict[tuple[str, int], tuple]:
        """``(path, line) ->`` what was decided each time the line ran."""
        return {key: tuple(v) for key, v in self.values.items()}
