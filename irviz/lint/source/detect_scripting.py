"""IRV3xx in the source: calls that ``torch.jit.script`` leaves out of the compiled model.

A ``@torch.jit.ignore`` function the model calls stays a Python call (the scripted
model cannot be saved); a ``@torch.jit.unused`` one is replaced by code that raises
when the path is taken. Only the source shows the call site; which function a call
runs is :mod:`.inference`'s answer, and such a function is not entered, so nothing
inside it is reported.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..rules.scripting import JitIgnoreReachable, JitUnusedReachable

if TYPE_CHECKING:
    from .checker import FunctionChecker

#: the rules this family reports
RULES = (JitIgnoreReachable, JitUnusedReachable)
#: the compilation whose code these checks judge: not the ``else`` of ``if
#: torch.jit.is_scripting():``, which TorchScript never compiles (see :mod:`.checker`)
MODES = ("script",)


def jit_modified_call(c: FunctionChecker, node: ast.Call) -> None:
    modifier = c.infer.jit_modifier(node)
    if modifier == "ignore":
        c.report(JitIgnoreReachable, node)
    elif modifier == "unused":
        c.report(JitUnusedReachable, node)


FUNCTION_CHECKS = ()
NODE_CHECKS = {ast.Call: (jit_modified_call,)}
