"""Shapes for scripted graphs, recorded by running the model once on its inputs.

Scripted graphs carry no shapes. When example inputs exist, the Python model
is run once eagerly under a dispatch mode that records, for every aten op, the
output shapes and the innermost Python source line that called it. Scripting
compiles that same source, so a scripted node with the same op name and the
same ``file:line`` gets those shapes - but only when every call recorded for
that key agrees (a line run with different shapes stays unknown).
"""
from __future__ import annotations

import os
import sys

import networkx as nx
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..frontends.capture import Capture

_CONFLICT = object()
_MACHINERY = tuple(os.path.join(os.path.dirname(torch.__file__), part) for part in (
    "_dynamo", "utils", "_ops.py", "overrides.py", "_compile.py", "_jit_internal.py"))


def _is_dispatch_machinery(filename: str) -> bool:
    """Frames between the user's line and the op: torch's dispatch plumbing."""
    return filename.startswith(_MACHINERY)


def _record(seen: dict, name: str, out) -> None:
    """Remember the output shapes of op ``name`` called from the innermost user-level frame."""
    frame = sys._getframe(2)
    while frame is not None and _is_dispatch_machinery(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return
    key = (name, frame.f_code.co_filename, frame.f_lineno)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    shapes = tuple(tuple(o.shape) + (str(o.dtype),) for o in outs if isinstance(o, torch.Tensor))
    previous = seen.get(key)
    if previous is None:
        seen[key] = shapes
    elif previous != shapes:
        seen[key] = _CONFLICT


class _DispatchRecorder(TorchDispatchMode):
    """Sees aten ops after autograd (``aten::add``, but ``linear`` as ``t`` + ``addmm``)."""

    def __init__(self, seen: dict):
        super().__init__()
        self.seen = seen

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        _record(self.seen, func._schema.name.split("::")[-1], out)
        return out


# torch wraps every ``__torch_dispatch__`` in ``torch._compile._disable_dynamo``, whose first
# call imports ``torch._dynamo``: ~1 s and +70 MB per process (measured), for a guard that
# only matters while dynamo traces, which never happens here. The plain function is enough.
_DispatchRecorder.__torch_dispatch__ = getattr(_DispatchRecorder.__torch_dispatch__,
                                               "__wrapped__", _DispatchRecorder.__torch_dispatch__)


class _FunctionRecorder(TorchFunctionMode):
    """Sees the torch API calls (``F.linear``, ``_VF.lstm``) before they decompose."""

    def __init__(self, seen: dict):
        super().__init__()
        self.seen = seen

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name.startswith("__") and name.endswith("__"):
            name = name.strip("_").removeprefix("r") if name.startswith("__r") else name.strip("_")
        if name:
            _record(self.seen, name, out)
        return out


def annotate_runtime_shapes(G: nx.DiGraph, capture: Capture) -> None:
    """Fill unknown tensor shapes of a scripted graph from one eager run."""
    obj = capture.target.obj
    if capture.mode != "script" or capture.inputs is None or not callable(obj) \
            or isinstance(obj, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return
    seen: dict[tuple[str, str, int], object] = {}
    try:
        with torch.no_grad(), _FunctionRecorder(seen), _DispatchRecorder(seen):
            obj(*capture.inputs)
    except Exception as exc:  # the model's own failure: shapes stay unknown
        capture.notes.append(f"shapes not recorded: running the model raised "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return
    for node, data in G.nodes(data=True):
        if not data.get("source") or "::" not in data["kind"]:
            continue
        path, line, _ = data["source"].rsplit(":", 2)
        op = data["kind"].split("::")[-1]
        shapes = seen.get((op, path, int(line)))
        if shapes is None or shapes is _CONFLICT:
            continue
        tensors = [i for i, o in enumerate(data["outputs"]) if o["type"] == "Tensor"]
        if len(tensors) != len(shapes):
            continue
        for index, (*dims, dtype) in zip(tensors, shapes):
            info = data["outputs"][index]
            if info["shape"] is None:
                info["shape"], info["dtype"] = list(dims), dtype.replace("torch.", "")
