"""Remedies written as edits of the user's file (``irviz lint --fix`` applies them).

A remedy found on the loaded model (eval mode) becomes an edit only where the file says
where the model is made: a target built by a zero-argument factory of the user's file
(``model.py:make_model()``) gets ``.eval()`` on the factory's one ``return``. A class the
loader constructs itself has no line that makes it, so its remedy stays code to paste.
"""
from __future__ import annotations

import ast
import linecache
import types

from .records import SourceEdit, Target

__all__ = ["eval_in_factory"]

#: expressions ``.eval()`` can follow without parentheses
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


def _factory(target: Target) -> types.FunctionType | None:
    """The zero-argument function of the target's own file that made it (None for a
    class, an instance, a factory called with arguments)."""
    name = target.name
    if target.user_module is None or not name.endswith("()"):
        return None
    fn = vars(target.user_module).get(name[:-2])
    if not isinstance(fn, types.FunctionType):
        return None
    if fn.__code__.co_filename != getattr(target.user_module, "__file__", None):
        return None   # imported from elsewhere: not the file the target was loaded from
    return fn


def _returns(node: ast.FunctionDef) -> list[ast.Return]:
    """The ``return`` statements of ``node`` itself (not of functions nested in it)."""
    found, todo = [], list(node.body)
    while todo:
        item = todo.pop()
        if isinstance(item, ast.Return):
            found.append(item)
        elif not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                   ast.Lambda)):
            todo.extend(ast.iter_child_nodes(item))
    return found


def _already_eval(value: ast.expr) -> bool:
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "eval" and not value.args)


def eval_in_factory(target: Target) -> SourceEdit | None:
    """The edit ``return X`` -> ``return X.eval()`` in the factory that made ``target``:
    None when it was not made by one, or the factory does not end in exactly one
    ``return`` written on one line."""
    fn = _factory(target)
    if fn is None:
        return None
    path = fn.__code__.co_filename
    try:
        tree = ast.parse("".join(linecache.getlines(path)))
    except SyntaxError:   # the file changed since it was imported
        return None
    first = fn.__code__.co_firstlineno   # its first decorator's line, or the def's
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef)
                 and min([n.lineno] + [d.lineno for d in n.decorator_list]) == first), None)
    returns = _returns(node) if node is not None else []
    if len(returns) != 1 or returns[0].value is None:
        return None
    value = returns[0].value
    if value.lineno != value.end_lineno or _already_eval(value):
        return None
    old = linecache.getline(path, value.lineno).rstrip("\r\n")
    raw = old.encode("utf-8")   # ast's columns count UTF-8 bytes
    head = raw[:value.col_offset].decode("utf-8")
    text = raw[value.col_offset:value.end_col_offset].decode("utf-8")
    tail = raw[value.end_col_offset:].decode("utf-8")
    made = f"{text}.eval()" if isinstance(value, _ATOMS) else f"({text}).eval()"
    return SourceEdit(path, value.lineno, old, head + made + tail)
