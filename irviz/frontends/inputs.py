"""Example inputs: from ``--inputs`` or from the model file's ``example_inputs``.

Tracing (``--mode trace``, and ``--mode auto`` when scripting fails) runs the
model once, so it needs example inputs. irviz takes them from, in order:

1. ``--inputs EXPR`` - a Python expression evaluated with ``torch`` and every
   global of the model file in scope, e.g.
   ``--inputs "torch.rand(3, 4), torch.rand(3, 4)"`` or ``--inputs "make_batch()"``.
   It must give a tensor or a tuple/list of tensors (elements may themselves be
   tuples, lists or dicts of tensors).

2. The model file's ``example_inputs``, one of:

   * a dict from model name to its inputs::

         example_inputs = {
             "MyCell": lambda: (torch.rand(3, 4), torch.rand(3, 4)),
             "MyDecisionGate": (torch.rand(3, 4),),
             "make_model()": lambda: torch.rand(3, 4),   # or "make_model"
         }

     A value is a tensor, a tuple/list of tensors, or a zero-argument callable
     returning one of those (called only when that model is traced). The key is
     the name irviz shows for the model: the class, instance or function name;
     for a factory loaded as ``file.py:make_model()`` the key ``"make_model()"``
     is tried first, then ``"make_model"``.

   * a function taking the model name and returning its inputs::

         def example_inputs(name):
             return torch.rand(3, 4), torch.rand(3, 4)

     Return ``None`` for a name it has no inputs for. A function taking no
     arguments is called without the name.

   Plain (non-``nn.Module``) functions are models too when the dict names them:
   loading the whole file picks up every function that is a key of the dict.
   A function named there that takes no arguments is a *factory*: loading the
   whole file calls it and shows the model it returns as ``make_model()``.

A model with no entry has no example inputs; that is only an error when it has
to be traced. TorchScript archives (``.pt``) take inputs from ``--inputs`` only.
"""
from __future__ import annotations

import inspect
import traceback
from typing import Any

import torch

from irviz.errors import InputsError
from irviz.frontends.loader import Target, quiet_torch_warnings, user_traceback
from irviz.paths import display_path

__all__ = ["resolve_inputs"]

_EXAMPLE = '--inputs "torch.rand(3, 4), torch.rand(3, 4)"'


class _NotTensors(Exception):
    def __init__(self, where: str, got: object):
        super().__init__(where)
        self.where = where
        self.got = got


def _describe(value: object) -> str:
    if isinstance(value, type):
        return f"the class {value.__name__}"
    if value is None:
        return "None"
    if callable(value) and not isinstance(value, torch.Tensor):
        return f"the callable {getattr(value, '__name__', type(value).__name__)}"
    return type(value).__name__


def _check(value: object, where: str) -> None:
    """Raise _NotTensors unless ``value`` is a tensor or a nest of tensors."""
    if isinstance(value, torch.Tensor):
        return
    if isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            _check(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _check(item, f"{where}[{key!r}]")
        return
    raise _NotTensors(where, value)


def _normalize(value: object) -> tuple:
    """A tensor -> (tensor,); a tuple/list of (nests of) tensors -> tuple."""
    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            _check(item, f"[{i}]")
        return tuple(value)
    raise _NotTensors("", value)


def _not_tensors_message(source: str, exc: _NotTensors) -> str:
    if exc.where:
        return f"element {exc.where} of {source} is {_describe(exc.got)}, not a tensor"
    return f"{source} gave {_describe(exc.got)}, but irviz needs a tensor or a tuple of tensors"


def _from_expression(target: Target, expr: str) -> tuple:
    namespace: dict[str, Any] = {}
    if target.user_module is not None:
        namespace.update(vars(target.user_module))
    namespace["torch"] = torch
    try:
        code = compile(expr.strip(), "<--inputs>", "eval")
    except SyntaxError as exc:
        text = expr.strip()
        col = exc.offset or 1
        if exc.lineno and exc.lineno > 1:
            lines = text.splitlines()
            text = lines[exc.lineno - 1] if exc.lineno <= len(lines) else text
        raise InputsError(
            f"--inputs is not a valid Python expression: {exc.msg}",
            hint=f"e.g. {_EXAMPLE}",
            detail=f"    {text}\n    {' ' * max(col - 1, 0)}^") from None
    try:
        with quiet_torch_warnings():
            value = eval(code, namespace)  # noqa: S307 - the user's own expression
    except Exception as exc:  # noqa: BLE001
        first = (str(exc).strip().splitlines() or [""])[0]
        line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        # a traceback only helps when the error comes from a function the expression called
        frames = traceback.extract_tb(exc.__traceback__)
        deeper = any(f.filename not in ("<--inputs>", __file__) for f in frames)
        raise InputsError(f"evaluating --inputs raised {line}",
                          hint=f"the expression was: {expr.strip()}",
                          detail=user_traceback(exc) if deeper else None) from None
    try:
        return _normalize(value)
    except _NotTensors as exc:
        raise InputsError(_not_tensors_message("--inputs", exc),
                          hint=f"it must give a tensor or a tuple of tensors, e.g. {_EXAMPLE}") from None


def _where(target: Target) -> str:
    if target.source_file is not None:
        return display_path(target.source_file)
    return getattr(target.user_module, "__name__", "the model module")


def _call(fn: Any, args: tuple, what: str, target: Target) -> Any:
    try:
        with quiet_torch_warnings():
            return fn(*args)
    except Exception as exc:  # noqa: BLE001 - user code
        first = (str(exc).strip().splitlines() or [""])[0]
        line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        raise InputsError(f"{what} in {_where(target)} raised {line}",
                          hint="the error comes from your example_inputs, not from irviz; "
                               "see the traceback above",
                          detail=user_traceback(exc)) from None


def _accepts_no_args(fn: Any) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return not any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
                   for p in sig.parameters.values())


def _validated(value: object, what: str, target: Target) -> tuple:
    try:
        return _normalize(value)
    except _NotTensors as exc:
        raise InputsError(
            _not_tensors_message(f"{what} in {_where(target)}", exc),
            hint="example_inputs values must be a tensor, a tuple of tensors, or a "
                 "zero-argument callable returning one (see README: Example inputs)") from None


def _names(target: Target) -> list[str]:
    names = [target.name]
    if target.name.endswith(")") and "(" in target.name:
        bare = target.name.split("(", 1)[0]
        if bare not in names:
            names.append(bare)
    return names


def _from_convention(target: Target) -> tuple | None:
    module = target.user_module
    if module is None:
        return None
    ex = vars(module).get("example_inputs")
    if ex is None:
        return None
    if isinstance(ex, dict):
        for key in _names(target):
            if key in ex:
                value = ex[key]
                what = f"example_inputs[{key!r}]"
                if callable(value) and not isinstance(value, torch.Tensor):
                    value = _call(value, (), f"{what}()", target)
                return _validated(value, what, target)
        return None
    if callable(ex) and not isinstance(ex, type):
        if _accepts_no_args(ex):
            value = _call(ex, (), "example_inputs()", target)
            return None if value is None else _validated(value, "example_inputs()", target)
        for key in _names(target):
            value = _call(ex, (key,), f"example_inputs({key!r})", target)
            if value is not None:
                return _validated(value, f"example_inputs({key!r})", target)
        return None
    raise InputsError(
        f"example_inputs in {_where(target)} is {_describe(ex)}; "
        "it must be a dict from model name to inputs or a function example_inputs(name)",
        hint="see README: Example inputs")


def _from_keywords(target: Target, given: dict) -> tuple:
    """A dict of keyword inputs as the positional tuple ``forward`` takes."""
    obj = target.obj
    fn = obj.forward if isinstance(obj, torch.nn.Module) else obj
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        raise InputsError(f"{target.name} has no readable signature, so inputs given by "
                          "name cannot be placed", hint="pass a tuple of tensors") from None
    names = [p.name for p in params]
    unknown = [k for k in given if k not in names]
    if unknown:
        raise InputsError(f"{target.name}'s forward() has no argument "
                          f"{', '.join(map(repr, unknown))}",
                          hint=f"its arguments are: {', '.join(names) or '(none)'}")
    last = max(names.index(k) for k in given) if given else -1
    gaps = [n for n in names[:last + 1] if n not in given]
    if gaps:
        raise InputsError(f"inputs by name must not leave out earlier arguments of "
                          f"{target.name}'s forward(): {', '.join(gaps)} missing",
                          hint="give them too, or pass a tuple of tensors")
    value = tuple(given[n] for n in names[:last + 1])
    try:
        return _normalize(value)
    except _NotTensors as exc:
        raise InputsError(_not_tensors_message("the inputs", exc),
                          hint="pass tensors (or nests of tensors)") from None


def resolve_inputs(target: Target, given: object = None) -> tuple | None:
    """Example inputs for ``target``: ``given`` or, without it, the file's convention.

    ``given`` is the ``--inputs`` expression (a string), or, from the Python API, a
    tensor, a tuple/list of tensors, or a dict of ``forward``'s arguments by name.
    Returns a tuple of positional inputs, or None when there are none.
    """
    if isinstance(given, str):
        return _from_expression(target, given)
    if isinstance(given, dict):
        return _from_keywords(target, given)
    if given is not None:
        try:
            return _normalize(given)
        except _NotTensors as exc:
            raise InputsError(_not_tensors_message("inputs", exc),
                              hint="pass a tensor, a tuple of tensors, a dict of them by "
                                   f"argument name, or an expression string such as "
                                   f"{_EXAMPLE.split(' ', 1)[1]}") from None
    if target.kind == "archive":
        return None
    return _from_convention(target)
