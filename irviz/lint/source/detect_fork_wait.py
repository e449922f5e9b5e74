"""IRV2xx in the source: ``torch.jit.fork`` calls whose task cannot run in parallel.

A fork pays off only when the caller does other work before it waits. These checks
read where the future of each ``fork`` goes: straight into ``wait``, nowhere, or into
a ``wait`` in the same loop iteration. The IR layer finds the same patterns in the
graph; this one names the source line even when nothing is run.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..rules.fork_wait import ForkNeverWaited, ForkWaitSameIteration, WaitImmediatelyAfterFork
from .inference import FORK, WAIT, walk_scope

if TYPE_CHECKING:
    from .checker import FunctionChecker

#: the rules this family reports
RULES = (WaitImmediatelyAfterFork, ForkNeverWaited, ForkWaitSameIteration)

_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _innermost_loop(c: FunctionChecker, node: ast.AST) -> ast.AST | None:
    """The loop or comprehension whose every iteration runs ``node`` (None outside)."""
    parent = c.infer.parent
    prev, cur = node, parent(node)
    skip = None
    while cur is not None and cur is not c.infer.fdef:
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return None
        if isinstance(cur, _LOOPS) and any(prev is s for s in cur.body):
            return cur
        if isinstance(cur, ast.comprehension):
            owner = parent(cur)
            if prev is cur.iter and owner is not None and owner.generators[0] is cur:
                skip = owner
        if isinstance(cur, _COMPS) and cur is not skip:
            return cur
        prev, cur = cur, parent(cur)
    return None


def _next_statement(c: FunctionChecker, stmt: ast.AST) -> ast.AST | None:
    parent = c.infer.parent(stmt)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list):
            for i, s in enumerate(block):
                if s is stmt:
                    return block[i + 1] if i + 1 < len(block) else None
    return None


def _is_wait_of(c: FunctionChecker, call: ast.AST, name: str) -> bool:
    """``torch.jit.wait(name)`` or ``name.wait()``."""
    if not isinstance(call, ast.Call):
        return False
    if c.infer.canonical(call.func)[0] == WAIT:
        return bool(call.args) and isinstance(call.args[0], ast.Name) \
            and call.args[0].id == name
    return (isinstance(call.func, ast.Attribute) and call.func.attr == "wait"
            and isinstance(call.func.value, ast.Name) and call.func.value.id == name)


def fork_call(c: FunctionChecker, node: ast.Call) -> None:
    infer = c.infer
    if infer.canonical(node.func)[0] != FORK:
        return
    parent = infer.parent(node)
    loop = _innermost_loop(c, node)
    if isinstance(parent, ast.Call) and infer.canonical(parent.func)[0] == WAIT \
            and parent.args and parent.args[0] is node:
        c.report(WaitImmediatelyAfterFork, node)
        if loop is not None:
            c.report(ForkWaitSameIteration, node)
        return
    if isinstance(parent, ast.Expr):
        c.report(ForkNeverWaited, node)
        return
    name = None
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and \
            isinstance(parent.targets[0], ast.Name):
        name = parent.targets[0].id
    elif isinstance(parent, ast.AnnAssign) and isinstance(parent.target, ast.Name):
        name = parent.target.id
    if name is None:
        return
    nxt = _next_statement(c, parent)
    if nxt is not None and any(_is_wait_of(c, n, name) for n in walk_scope(nxt)):
        # ``fa = fork(..); fb = fork(..); wait(fa) + wait(fb)``: the tasks overlap
        # each other, so only a statement waiting for nothing but ``name`` counts
        others = {n.args[0].id for n in walk_scope(nxt)
                  if isinstance(n, ast.Call) and infer.canonical(n.func)[0] == WAIT
                  and n.args and isinstance(n.args[0], ast.Name)} - {name}
        if not others:
            c.report(WaitImmediatelyAfterFork, node)
    after = (parent.end_lineno, parent.end_col_offset)
    used = False
    for n in walk_scope(infer.fdef, nested=True):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
            if (n.lineno, n.col_offset) >= after or (
                    loop is not None and _innermost_loop(c, n) is loop):
                used = True
                break
    if not used:
        c.report(ForkNeverWaited, node)
        return
    if loop is not None:
        for n in walk_scope(loop):
            if _is_wait_of(c, n, name) and _innermost_loop(c, n) is loop:
                c.report(ForkWaitSameIteration, node)
                break


FUNCTION_CHECKS = ()
NODE_CHECKS = {ast.Call: (fork_call,)}
