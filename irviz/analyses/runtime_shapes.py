"""Shapes for scripted graphs, recorded by running the model once on its inputs.

Scripted graphs carry no shapes. When example inputs exist, the Python model
is run once eagerly under a dispatch mode that records, for every aten op, the
output shapes, the innermost Python source line that called it and the module
whose ``forward`` was running (its path, as ``named_modules`` names it). Scripting
compiles that same source, so a scripted node with the same op, the same module
scope and the same ``file:line`` gets those shapes - but only when every call
recorded for that key agrees (a line run with different shapes stays unknown).

The module path matters: library code shares its source lines across every caller
(``F.relu`` is one line for every ``nn.ReLU`` of a model), and a node in a branch
that did not run (``else: relu`` of an in-place ``nn.ReLU``) must get no shape at
all rather than the shape of another module's call of that line.
"""
from __future__ import annotations

import sys

import networkx as nx
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..frontends.capture import Capture
from ..paths import TORCH_DIR, is_inside

_CONFLICT = object()
_MACHINERY = tuple(f"{TORCH_DIR}/{part}" for part in (
    "_dynamo", "utils", "_ops.py", "overrides.py", "_compile.py", "_jit_internal.py"))
_filenames: dict[str, bool] = {}


def _is_dispatch_machinery(filename: str) -> bool:
    """Frames between the user's line and the op: torch's dispatch plumbing."""
    found = _filenames.get(filename)
    if found is None:
        found = _filenames[filename] = any(is_inside(filename, m) for m in _MACHINERY)
    return found


class _ModuleStack:
    """The path of the module whose ``forward`` is running, kept by global forward
    hooks while the model runs once."""

    def __init__(self, root: object):
        self.paths = ({id(m): name for name, m in root.named_modules()}
                      if isinstance(root, torch.nn.Module) else {})
        self.stack: list[str] = []
        self._handles = []

    @property
    def current(self) -> str:
        return self.stack[-1] if self.stack else ""

    def _enter(self, module, _args):
        self.stack.append(self.paths.get(id(module), self.current))

    def _leave(self, _module, _args, _out):
        if self.stack:
            self.stack.pop()

    def __enter__(self) -> "_ModuleStack":
        hooks = torch.nn.modules.module
        self._handles = [hooks.register_module_forward_pre_hook(self._enter),
                         hooks.register_module_forward_hook(self._leave, always_call=True)]
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()


def _record(seen: dict, modules: _ModuleStack, name: str, out) -> None:
    """Remember the output shapes of op ``name`` called from the innermost user-level
    frame, inside the module whose forward is running."""
    frame = sys._getframe(2)
    while frame is not None and _is_dispatch_machinery(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return
    key = (name, modules.current, frame.f_code.co_filename, frame.f_lineno)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    shapes = tuple(tuple(o.shape) + (str(o.dtype),) for o in outs if isinstance(o, torch.Tensor))
    previous = seen.get(key)
    if previous is None:
        seen[key] = shapes
    elif previous != shapes:
        seen[key] = _CONFLICT


class _DispatchRecorder(TorchDispatchMode):
    """Sees aten ops after autograd (``aten::add``, but ``linear`` as ``t`` + ``addmm``)."""

    def __init__(self, seen: dict, modules: _ModuleStack):
        super().__init__()
        self.seen, self.modules = seen, modules

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        _record(self.seen, self.modules, func._schema.name.split("::")[-1], out)
        return out


# torch wraps every ``__torch_dispatch__`` in ``torch._compile._disable_dynamo``, whose first
# call imports ``torch._dynamo``: ~1 s and +70 MB per process (measured), for a guard that
# only matters while dynamo traces, which never happens here. The plain function is enough.
_DispatchRecorder.__torch_dispatch__ = getattr(_DispatchRecorder.__torch_dispatch__,
                                               "__wrapped__", _DispatchRecorder.__torch_dispatch__)


class _FunctionRecorder(TorchFunctionMode):
    """Sees the torch API calls (``F.linear``, ``_VF.lstm``) before they decompose."""

    def __init__(self, seen: dict, modules: _ModuleStack):
        super().__init__()
        self.seen, self.modules = seen, modules

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name.startswith("__") and name.endswith("__"):
            name = name.strip("_").removeprefix("r") if name.startswith("__r") else name.strip("_")
        if name:
            _record(self.seen, self.modules, name, out)
        return out


def annotate_runtime_shapes(G: nx.DiGraph, capture: Capture) -> None:
    """Fill unknown tensor shapes of a scripted graph from one eager run."""
    obj = capture.target.obj
    if capture.mode != "script" or capture.inputs is None or not callable(obj) \
            or isinstance(obj, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return
    seen: dict[tuple[str, str, str, int], object] = {}
    try:
        with torch.no_grad(), _ModuleStack(obj) as modules, \
                _FunctionRecorder(seen, modules), _DispatchRecorder(seen, modules):
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
        shapes = seen.get((op, data.get("scope") or "", path, int(line)))
        if shapes is None or shapes is _CONFLICT:
            continue
        tensors = [i for i, o in enumerate(data["outputs"]) if o["type"] == "Tensor"]
        if len(tensors) != len(shapes):
            continue
        for index, (*dims, dtype) in zip(tensors, shapes):
            info = data["outputs"][index]
            if info["shape"] is None:
                info["shape"], info["dtype"] = list(dims), dtype.replace("torch.", "")
