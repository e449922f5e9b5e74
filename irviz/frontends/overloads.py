"""Which method of a compiled module is drawn: ``forward``, or one overload of it.

Torch's recurrent layers declare ``forward`` twice (``@overload``: a Tensor input and a
``PackedSequence``); scripting compiles each as ``forward__0``, ``forward__1`` and no
``forward`` at all, so ``torch.jit.script(nn.LSTM(4, 8)).graph`` raises "Method 'forward'
is not defined". A parent module's call picks its overload at compile time. irviz does the
same with the example inputs: the overload whose schema accepts them is drawn, with a note;
without inputs, each overload is its own view (:func:`overload_names` tells the Workspace
how many).
"""
from __future__ import annotations

import re

import torch

from ..errors import InputsError
from .inputs import ExampleInputs

__all__ = ["ENTRY", "overload_names", "overload_note", "select_overload", "entry_callable",
           "entry_graph"]

#: the method drawn when a module is not overloaded
ENTRY = "forward"
_OVERLOAD = re.compile(r"^forward__\d+$")


def overload_names(obj: object) -> list[str]:
    """``["forward__0", "forward__1"]`` for a module whose ``forward`` is overloaded (a
    scripted one, or a Python one that scripting will split), else ``[]``."""
    if isinstance(obj, torch.jit.ScriptModule):
        names = obj._c._method_names()
        if ENTRY in names:
            return []
        return sorted((n for n in names if _OVERLOAD.match(n)), key=lambda n: int(n[9:]))
    if isinstance(obj, torch.nn.Module):
        declared = torch._jit_internal._get_overloaded_methods(type(obj).forward, type(obj))
        return [f"forward__{i}" for i in range(len(declared or ()))]
    return []


def _accepts(arg, value) -> bool:
    inferred = torch._C._jit_try_infer_type(value)
    if inferred.success() and inferred.type().isSubtypeOf(arg.type):
        return True
    # a NamedTuple (PackedSequence) infers as a plain tuple: its class name decides
    return type(value).__name__ == str(arg.type).rsplit(".", 1)[-1]


def _schema_accepts(schema, inputs: ExampleInputs) -> bool:
    params = list(schema.arguments)[1:]   # self
    if len(inputs.args) > len(params):
        return False
    given = dict(zip((p.name for p in params), inputs.args))
    for name, value in inputs.kwargs.items():
        if name in given or name not in {p.name for p in params}:
            return False
        given[name] = value
    for param in params:
        if param.name in given:
            if not _accepts(param, given[param.name]):
                return False
        elif not param.has_default_value():
            return False
    return True


def select_overload(scripted, names: list[str], inputs: ExampleInputs | None,
                    spec: str) -> tuple[str, str]:
    """``(method, note)``: the overload the inputs select (the first one without inputs).
    Inputs no overload takes are the user's mistake."""
    schemas = {n: scripted._c._get_method(n).schema for n in names}
    if inputs is None:
        return names[0], (f"forward is overloaded ({', '.join(names)}); drawn: "
                          f"{_signature(schemas[names[0]])}")
    for name in names:
        if _schema_accepts(schemas[name], inputs):
            return name, (f"forward is overloaded; drawn: {_signature(schemas[name])}, the "
                          "overload these inputs select")
    raise InputsError(
        f"{spec}: forward is overloaded and no overload takes these inputs",
        hint="the overloads are " + "; ".join(_signature(s) for s in schemas.values()))


def overload_note(scripted, names: list[str], name: str) -> str:
    """The note of a view drawn for one overload the Workspace chose."""
    return (f"forward is overloaded ({', '.join(names)}); drawn: "
            f"{_signature(scripted._c._get_method(name).schema)}")


def _signature(schema) -> str:
    args = ", ".join(f"{a.type.annotation_str.rsplit('.', 1)[-1]} {a.name}"
                     for a in list(schema.arguments)[1:])
    return f"{schema.name}({args})"


def entry_callable(scripted, entry: str):
    """What runs the drawn method: the module itself for ``forward``."""
    return scripted if entry == ENTRY else getattr(scripted, entry)


def entry_graph(scripted, entry: str):
    return scripted.graph if entry == ENTRY else scripted._c._get_method(entry).graph
