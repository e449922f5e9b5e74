"""Example inputs: from ``--inputs`` or from the model file's ``example_inputs``.

Tracing (``--mode trace``, and ``--mode auto`` when scripting fails) runs the
model once, so it needs example inputs. irviz takes them from, in order:

1. ``--inputs EXPR`` - a Python expression evaluated with ``torch`` and every
   global of the model file in scope, e.g.
   ``--inputs "torch.rand(3, 4), torch.rand(3, 4)"`` or ``--inputs "make_batch()"``.
   What it gives is read as a call of ``forward``:

   * a tensor, or a tuple/list of tensors: positional inputs (elements may
     themselves be tuples, lists or dicts of tensors);
   * a dict with string keys: keyword inputs, e.g.
     ``--inputs "dict(input_ids=torch.randint(0, 100, (2, 16)), attention_mask=torch.ones(2, 16, dtype=torch.long))"``;
   * a pair ``(tuple, dict)``: both, ``((x,), {"mask": m})``.

   A single dict *positional* input is written as a one-element tuple: ``({"a": x},)``.

2. The model file's ``example_inputs``, one of:

   * a dict from model name to its inputs::

         example_inputs = {
             "MyCell": lambda: (torch.rand(3, 4), torch.rand(3, 4)),
             "MyDecisionGate": (torch.rand(3, 4),),
             "make_model()": lambda: torch.rand(3, 4),   # or "make_model"
         }

     A value is anything ``--inputs`` may give (positional, keyword or both), or a
     zero-argument callable returning it (called only when that model is traced). The key is
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
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from irviz.errors import InputsError, UsageError
from irviz.frontends.records import Target
from irviz.frontends.user_code import quiet_torch_warnings, user_traceback
from irviz.paths import display_path

__all__ = ["ExampleInputs", "forward_arguments", "forward_signature", "resolve_inputs"]


def forward_signature(obj: Any) -> inspect.Signature | None:
    """The signature of a module's ``forward`` (without ``self``) or of a function; None
    when Python cannot read it. The one place irviz reads what a model takes."""
    if isinstance(obj, torch.jit.ScriptModule) and "forward" not in obj._c._method_names():
        return _overload_signature(obj)
    fn = obj.forward if isinstance(obj, torch.nn.Module) else obj
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _overload_signature(scripted: torch.jit.ScriptModule) -> inspect.Signature | None:
    """A scripted module whose ``forward`` is overloaded (``nn.LSTM``: ``forward__0`` and
    ``forward__1``, no ``forward``, no Python signature): its first overload's schema, as
    a signature (torch's overloads of one ``forward`` share argument names)."""
    if "forward__0" not in scripted._c._method_names():
        return None
    params = []
    for arg in list(scripted._c._get_method("forward__0").schema.arguments)[1:]:  # self
        kind = (inspect.Parameter.KEYWORD_ONLY if arg.kwarg_only
                else inspect.Parameter.POSITIONAL_OR_KEYWORD)
        default = arg.default_value if arg.has_default_value() else inspect.Parameter.empty
        params.append(inspect.Parameter(arg.name, kind, default=default))
    return inspect.Signature(params)


def forward_arguments(obj: Any, positional_only: bool = False) -> list[str]:
    """The names of ``forward``'s arguments (not ``*args``/``**kwargs``); with
    ``positional_only``, those a call can give by position."""
    sig = forward_signature(obj)
    if sig is None:
        return []
    kinds = ((inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
             if positional_only else (inspect.Parameter.POSITIONAL_ONLY,
                                      inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                      inspect.Parameter.KEYWORD_ONLY))
    return [name for name, p in sig.parameters.items() if p.kind in kinds]


@dataclass(frozen=True, eq=False)
class ExampleInputs:
    """One call of the model: positional ``args`` and keyword ``kwargs`` (in the order given).

    A trace takes positional inputs only, so :mod:`irviz.frontends.adapters` puts the
    keywords after the positional ones (:attr:`flat`) and names them in the graph."""

    args: tuple
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def flat(self) -> tuple:
        """Every input, positional first, then the keyword ones in their order."""
        return self.args + tuple(self.kwargs.values())

    def call(self, fn: Callable) -> Any:
        """``fn(*args, **kwargs)``."""
        return fn(*self.args, **self.kwargs)

    def replaced(self, flat: tuple) -> "ExampleInputs":
        """The same call with other values, given in :attr:`flat`'s order."""
        n = len(self.args)
        return ExampleInputs(tuple(flat[:n]), dict(zip(self.kwargs, flat[n:])))

    def passed(self, fn: Callable) -> set[str] | None:
        """The names of ``fn``'s parameters this call gives a value (None: no signature)."""
        try:
            bound = inspect.signature(fn).bind_partial(*self.args, **self.kwargs)
        except (TypeError, ValueError):
            return None
        return set(bound.arguments)

    def names(self, obj: Any) -> list[str]:
        """What each input of :attr:`flat` is called: the parameter a positional input
        binds (``input_3`` past the named ones), then the keywords."""
        params = forward_arguments(obj, positional_only=True)
        return [params[i] if i < len(params) else f"input_{i}"
                for i in range(len(self.args))] + list(self.kwargs)

    def describe(self) -> str:
        """``2 positional, keywords input_ids, attention_mask`` for notes."""
        parts = [f"{len(self.args)} positional"] if self.args else []
        if self.kwargs:
            parts.append("keywords " + ", ".join(self.kwargs))
        return ", ".join(parts) or "no inputs"

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
            if item is None and _is_named_tuple(value):
                continue   # an Optional field: PackedSequence's sorted_indices
            _check(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _check(item, f"{where}[{key!r}]")
        return
    raise _NotTensors(where, value)


def _is_named_tuple(value: object) -> bool:
    """A NamedTuple (``PackedSequence``): one structured input, never a list of inputs."""
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _is_keywords(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) for k in value)


def _as_call(value: object) -> ExampleInputs:
    """A tensor or a NamedTuple -> one positional input; a tuple/list -> positional inputs; a dict with
    string keys -> keyword inputs; ``(tuple, dict)`` -> both. Not checked for tensors."""
    if isinstance(value, torch.Tensor) or _is_named_tuple(value):
        return ExampleInputs((value,))
    if _is_keywords(value) and value:
        return ExampleInputs((), dict(value))
    if isinstance(value, (tuple, list)) and len(value) == 2 \
            and isinstance(value[0], (tuple, list)) and _is_keywords(value[1]) and value[1]:
        return ExampleInputs(tuple(value[0]), dict(value[1]))
    if isinstance(value, (tuple, list)):
        return ExampleInputs(tuple(value))
    raise _NotTensors("", value)


def _check_tensors(inputs: ExampleInputs, nested: bool) -> ExampleInputs:
    """Raise _NotTensors unless every input is a tensor or a nest of tensors."""
    if nested:  # given as ((args), {kwargs})
        for i, item in enumerate(inputs.args):
            _check(item, f"[0][{i}]")
        for key, item in inputs.kwargs.items():
            _check(item, f"[1][{key!r}]")
        return inputs
    for i, item in enumerate(inputs.args):
        _check(item, f"[{i}]")
    for key, item in inputs.kwargs.items():
        _check(item, f"[{key!r}]")
    return inputs


def _normalize(value: object, target: Target | None = None, what: str = "the inputs"
               ) -> ExampleInputs:
    """``value`` read as a call of ``forward`` (:func:`_as_call`), its keywords checked
    against the signature, then its values checked for tensors."""
    inputs = _as_call(value)
    if target is not None:
        _checked_names(target, inputs, what)
    inputs = _check_tensors(inputs, nested=bool(inputs.args) and bool(inputs.kwargs))
    if target is not None:
        _checked_count(target, inputs, what)
    return inputs


def _not_tensors_message(source: str, exc: _NotTensors) -> str:
    if exc.where:
        return f"element {exc.where} of {source} is {_describe(exc.got)}, not a tensor"
    return (f"{source} gave {_describe(exc.got)}, but irviz needs a tensor, a tuple of "
            "tensors or a dict of them by argument name")


def _from_expression(target: Target, expr: str) -> ExampleInputs:
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
        return _normalize(value, target, "--inputs")
    except _NotTensors as exc:
        raise InputsError(_not_tensors_message("--inputs", exc),
                          hint=f"it must give a tensor, a tuple of tensors (e.g. {_EXAMPLE}) "
                               "or a dict of them by argument name") from None


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


def _validated(value: object, what: str, target: Target) -> ExampleInputs:
    try:
        return _normalize(value, target, what)
    except _NotTensors as exc:
        raise InputsError(
            _not_tensors_message(f"{what} in {_where(target)}", exc),
            hint="example_inputs values must be a tensor, a tuple of tensors, a dict of "
                 "them by argument name, or a zero-argument callable returning one "
                 "(see README: Example inputs)") from None


def _names(target: Target) -> list[str]:
    names = [target.name]
    if target.name.endswith(")") and "(" in target.name:
        bare = target.name.split("(", 1)[0]
        if bare not in names:
            names.append(bare)
    return names


def _from_convention(target: Target) -> ExampleInputs | None:
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


def _checked_count(target: Target, inputs: ExampleInputs, what: str) -> None:
    """No more positional inputs than ``forward`` takes, said before any capture in the
    user's terms: torch's own messages count ``self`` ("expected at most 2 argument(s) but
    received 3" for a forward taking one). Too few is left to torch, which names the
    missing argument."""
    sig = forward_signature(target.obj) if callable(target.obj) else None
    if sig is None:
        return
    params = sig.parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(inputs.args) > len(positional) and not any(p.kind is p.VAR_POSITIONAL
                                                      for p in params):
        names = ", ".join(p.name for p in positional) or "(none)"
        raise InputsError(
            f"{what} gives {_count(len(inputs.args), 'positional input')}, but "
            f"{target.name}'s forward{_shown_signature(sig)} takes at most {len(positional)}",
            hint=f"its positional arguments are: {names}")


def _checked_names(target: Target, inputs: ExampleInputs, what: str) -> ExampleInputs:
    """Keyword inputs must name arguments of ``forward`` (unless it takes ``**kwargs``),
    and positional and keyword inputs must not give one argument twice."""
    if not callable(target.obj):
        return inputs
    sig = forward_signature(target.obj)
    if sig is None:
        return inputs
    params = sig.parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [k for k in inputs.kwargs if k not in names]
    if unknown and not takes_any:
        raise InputsError(f"{what}: {target.name}'s forward() has no argument "
                          f"{', '.join(map(repr, unknown))}",
                          hint=f"its arguments are: {', '.join(names) or '(none)'}")
    if not inputs.kwargs:
        return inputs
    try:
        sig.bind(*inputs.args, **inputs.kwargs)
    except TypeError as exc:
        raise InputsError(f"{what} do not fit {target.name}'s forward(): {exc}",
                          hint=f"its arguments are: {', '.join(names) or '(none)'}") from None
    return inputs


def _shown_signature(sig: inspect.Signature) -> str:
    """``(x, h)``: the argument names, without annotations or defaults' values."""
    return "(" + ", ".join(str(p.replace(annotation=p.empty, default=p.empty))
                           if p.default is p.empty else f"{p.name}=..."
                           for p in sig.parameters.values()) + ")"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def resolve_inputs(target: Target, given: object = None) -> ExampleInputs | None:
    """Example inputs for ``target``: ``given`` or, without it, the file's convention.

    ``given`` is the ``--inputs`` expression (a string), or, from the Python API, what
    such an expression gives (a tensor, a tuple/list of tensors, a dict of ``forward``'s
    arguments by name, or a ``(tuple, dict)`` pair) or an :class:`ExampleInputs`.
    Returns None when there are none.
    """
    if isinstance(given, ExampleInputs):
        return given
    if isinstance(given, str):
        return _from_expression(target, given)
    if given is not None:
        try:
            return _normalize(given, target)
        except _NotTensors as exc:
            raise InputsError(_not_tensors_message("inputs", exc),
                              hint="pass a tensor, a tuple of tensors, a dict of them by "
                                   f"argument name, or an expression string such as "
                                   f"{_EXAMPLE.split(' ', 1)[1]}") from None
    if target.kind == "archive":
        return None
    return _from_convention(target)


def parse_dynamic_dims(specs: list[str] | None) -> dict[str, list[int]]:
    """``["x:0", "h:0,1"]`` -> ``{"x": [0], "h": [0, 1]}`` (option ``--dynamic-dims``)."""
    out: dict[str, list[int]] = {}
    for spec in specs or []:
        for item in spec.split(";"):
            item = item.strip()
            if not item:
                continue
            name, sep, dims = item.partition(":")
            try:
                if not sep or not name.strip():
                    raise ValueError
                out.setdefault(name.strip(), []).extend(int(d) for d in dims.split(","))
            except ValueError:
                raise UsageError(f"--dynamic-dims {item!r} is not NAME:DIM[,DIM...]",
                                 hint='e.g. --dynamic-dims "xs:0" (dimension 0 of forward '
                                      "argument xs may change)") from None
    return out
