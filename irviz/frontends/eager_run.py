"""Running the model's Python once, to learn what the compiled graph cannot say.

Two records come from one eager run (or, for a trace, from the trace's own run):

* which lines of the model's code ran (:class:`LineRecorder`): a lint finding on a line
  that never ran is not evidence of anything;
* for every aten op, the output shapes, the innermost Python line that called it and the
  module whose ``forward`` was running (its path, as ``named_modules`` names it): scripted
  graphs carry no shapes, and scripting compiles that same source, so
  :mod:`irviz.analyses.runtime_shapes` gives a scripted node the shapes recorded for its op,
  module and line (never another module's: library lines such as ``F.relu`` are shared by
  every caller).
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from typing import Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from ..paths import IRVIZ_DIR, TORCH_DIR, is_inside, is_stdlib_file

__all__ = ["CONFLICT", "EagerRun", "LineRecorder", "run_eagerly"]

_NOT_MODEL_CODE = (TORCH_DIR, IRVIZ_DIR)


class LineRecorder:
    """The ``(file, line)`` pairs of the model's code that ran inside the block.

    The model's code is every file but torch's, irviz's and the standard library's (an
    installed library a model comes from counts). Only frames of such files get a line
    tracer, so torch's own Python runs at full speed. A tracer already installed (a
    debugger, coverage) is put back afterwards."""

    def __init__(self) -> None:
        self.lines: set[tuple[str, int]] = set()
        self._wanted: dict[object, bool] = {}
        self._previous = None

    @staticmethod
    def watches(filename: str) -> bool:
        """Whether lines of ``filename`` are recorded: the model's code, i.e. not torch's,
        irviz's or the standard library's (a file not watched gives no evidence)."""
        return not filename.startswith("<") and not any(
            is_inside(filename, d) for d in _NOT_MODEL_CODE) and not is_stdlib_file(filename)

    def _is_model_code(self, code) -> bool:
        found = self._wanted.get(code)
        if found is None:
            found = self._wanted[code] = self.watches(code.co_filename)
        return found

    def _global(self, frame, event, _arg):
        if event == "call" and self._is_model_code(frame.f_code):
            self.lines.add((frame.f_code.co_filename, frame.f_lineno))
            return self._local
        return None

    def _local(self, frame, event, _arg):
        if event == "line":
            self.lines.add((frame.f_code.co_filename, frame.f_lineno))
        return self._local

    def __enter__(self) -> "LineRecorder":
        self._previous = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._previous)

    @contextlib.contextmanager
    def around_forward(self, model: object) -> Iterator[None]:
        """Record only while ``model``'s own ``forward`` runs (a module), else the whole
        block. ``torch.jit.trace`` makes ~85,000 Python calls around one ResNet-18 forward
        of ~550 (building the TracedModule hierarchy): a tracer over all of them took the
        trace from 299 to 557 ms, one over the forward alone from 497 to 527 ms (medians of
        7, side by side; the second pair on a busier machine)."""
        if not isinstance(model, torch.nn.Module):
            with self:
                yield
            return
        def start(*_) -> None:  # a pre-hook's return value would replace the inputs
            self.__enter__()

        def stop(*_) -> None:
            self.__exit__()

        handles = [model.register_forward_pre_hook(start),
                   model.register_forward_hook(stop, always_call=True)]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def executed(self) -> frozenset[tuple[str, int]]:
        return frozenset(self.lines)


CONFLICT = object()
#: one op recorded at one key with different shapes: the shape stays unknown
#: torch's dispatch plumbing, and ``Tensor``'s Python wrappers (``x ** 2`` runs ``pow``
#: from ``_tensor.py``'s ``__pow__``; the scripted node has the user's line)
_MACHINERY = tuple(f"{TORCH_DIR}/{part}" for part in (
    "_dynamo", "utils", "_ops.py", "overrides.py", "_compile.py", "_jit_internal.py",
    "_tensor.py"))
_filenames: dict[str, bool] = {}


def _is_dispatch_machinery(filename: str) -> bool:
    """Frames between the user's line and the op: torch's dispatch plumbing."""
    found = _filenames.get(filename)
    if found is None:
        found = _filenames[filename] = any(is_inside(filename, m) for m in _MACHINERY)
    return found


#: torch functions whose dispatched ops a scripted graph holds at the caller's line:
#: TorchScript compiles ``x[1:, :2]`` to ``aten::slice`` twice, not to one indexing op
_INDEXING = frozenset({"getitem", "setitem"})


class _ModuleStack:
    """The path of the module whose ``forward`` is running, kept by global forward
    hooks while the model runs once."""

    def __init__(self, root: object):
        self.paths = ({id(m): name for name, m in root.named_modules()}
                      if isinstance(root, torch.nn.Module) else {})
        #: ``(path, k)`` of the module calls running: the k-th call of that module
        self.stack: list[tuple[str, int]] = []
        #: module path -> how many times its forward has been called
        self.calls: dict[str, int] = {}
        #: the torch functions the function recorder is running (innermost last)
        self.functions: list[str] = []
        #: module path, and ``path#k`` for its k-th call -> ``((*dims, dtype),)`` of the
        #: tensor its forward returned (every call agreeing), or CONFLICT
        self.returned: dict[str, object] = {}
        self._handles = []

    @property
    def current(self) -> tuple[str, int]:
        return self.stack[-1] if self.stack else ("", 0)

    def _enter(self, module, _args):
        path = self.paths.get(id(module))
        if path is None:  # not one of the model's modules: still inside the caller
            self.stack.append(self.current)
            return
        k = self.calls[path] = self.calls.get(path, -1) + 1
        self.stack.append((path, k))

    def _leave(self, module, _args, out):
        if self.stack:
            self.stack.pop()
        path = self.paths.get(id(module))
        if path is not None and isinstance(out, torch.Tensor):
            shape = ((*out.shape, str(out.dtype)),)
            _remember(self.returned, path, shape)
            _remember(self.returned, f"{path}#{self.calls[path]}", shape)

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
    if frame is not None and frame.f_code.co_filename == __file__:
        # dispatched straight from a torch function written in C, run by the function
        # recorder: one of its pieces (``matmul`` runs ``bmm``) is recorded at the
        # caller's line only when the scripted graph has it there (see _INDEXING)
        under = modules.functions[-1] if modules.functions else None
        if under != name and under not in _INDEXING:
            return
        frame = frame.f_back
        while frame is not None and _is_dispatch_machinery(frame.f_code.co_filename):
            frame = frame.f_back
    if frame is None:
        return
    path, k = modules.current
    where = (frame.f_code.co_filename, frame.f_lineno)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    shapes = tuple(tuple(o.shape) + (str(o.dtype),) for o in outs if isinstance(o, torch.Tensor))
    _remember(seen, (name, path, *where), shapes)
    _remember(seen, (name, f"{path}#{k}", *where), shapes)   # the module's k-th call


def _remember(seen: dict, key, shapes) -> None:
    """Keep ``shapes`` at ``key`` while every record there agrees; CONFLICT after that."""
    previous = seen.get(key)
    if previous is None:
        seen[key] = shapes
    elif previous != shapes:
        seen[key] = CONFLICT


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
        name = getattr(func, "__name__", "")
        if name.startswith("__") and name.endswith("__"):
            name = name.strip("_").removeprefix("r") if name.startswith("__r") else name.strip("_")
        self.modules.functions.append(name)
        try:
            out = func(*args, **(kwargs or {}))
        finally:
            self.modules.functions.pop()
        if name:
            _record(self.seen, self.modules, name, out)
        return out



@dataclass
class EagerRun:
    """What one eager run of the model showed."""

    #: ``(file, line)`` of the model's code that ran
    executed_lines: frozenset[tuple[str, int]] = frozenset()
    #: ``(op, module, file, line)`` -> ``((*dims, dtype), ...)`` per output, or CONFLICT;
    #: ``module`` is the module's path (every call of it) and ``path#k`` (its k-th call)
    op_shapes: dict[tuple[str, str, str, int], object] = field(default_factory=dict)
    #: module path (and ``path#k``) -> ``((*dims, dtype),)`` of the tensor its forward
    #: returned, or CONFLICT
    module_shapes: dict[str, object] = field(default_factory=dict)
    #: module path -> how many times its forward ran
    module_calls: dict[str, int] = field(default_factory=dict)
    #: the model's own exception, when running it failed (the records are then partial)
    error: str | None = None


def run_eagerly(obj, inputs) -> EagerRun:
    """Run ``obj`` once on ``inputs`` (an :class:`~irviz.frontends.inputs.ExampleInputs`)
    without gradients, recording lines and op shapes."""
    run = EagerRun()
    lines = LineRecorder()
    modules = _ModuleStack(obj)
    try:
        with torch.no_grad(), modules, \
                _FunctionRecorder(run.op_shapes, modules), \
                _DispatchRecorder(run.op_shapes, modules), lines:
            inputs.call(obj)
    except Exception as exc:  # the model's own failure
        run.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    run.executed_lines = lines.executed()
    run.module_shapes = modules.returned
    run.module_calls = {path: k + 1 for path, k in modules.calls.items()}
    return run
