"""Capture: turn a loaded target into TorchScript (script, trace or as loaded).

This is the only module that calls ``torch.jit.script`` / ``torch.jit.trace``; a trace of
a plain module tree is taken by :mod:`irviz.frontends.trace_graph` (the graph without the
TracedModule), its TracedModule made here only when something runs it.
Every warning torch raises while capturing is recorded (torch's own filter
that hides TracerWarnings from ``torch*``-named modules is overridden),
attributed to the innermost frame of the user's file, de-duplicated and kept
on the :class:`Capture` for later analyses; torch's DeprecationWarnings about
TorchScript never reach the user's terminal.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from ..errors import CaptureError, InputsError
from ..location import stack_frames
from ..paths import IRVIZ_DIR, display_path, is_inside, is_stdlib_file, is_torch_file, torch_relative
from ..gc_pause import gc_paused
from .adapters import CallAdapter
from .compiled_run import CompiledRun, run_compiled
from .overloads import (ENTRY, entry_callable, entry_graph, overload_names, overload_note,
                        select_overload)
from .eager_run import EagerRun, LineRecorder, run_eagerly
from .inputs import ExampleInputs
from . import trace_graph
from .records import Target

MODES = ("script", "trace", "auto", "export")


@dataclass(frozen=True)
class CapturedWarning:
    """One warning torch raised while capturing, located in the user's code."""

    category: str
    message: str
    filename: str
    lineno: int
    #: True when ``filename:lineno`` is a frame of the user's code (not torch's)
    in_user_code: bool
    #: where torch raised it when that was inside torch (``rnn.py:1123``), else None
    origin: str | None = None
    #: ``(file, line)`` of the user's own line that called into the library the warning
    #: is located in (a model wrapping a library model), else None
    called_from: tuple[str, int] | None = None

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.lineno}"


@dataclass
class Capture:
    """The TorchScript form of one target, and what happened while making it."""

    target: Target
    #: "script", "trace", "archive" or "export" (what was actually done)
    mode: str
    #: the ScriptModule or ScriptFunction once made (None for ``export``, and for a trace
    #: drawn from :attr:`trace_graph` until something runs it: see :attr:`scripted`)
    compiled: Any
    #: the example inputs as given (positional and keyword)
    inputs: ExampleInputs | None
    warnings: list[CapturedWarning] = field(default_factory=list)
    #: human-readable remarks, e.g. the fallback from script to trace
    notes: list[str] = field(default_factory=list)
    #: a trace: the lines its run executed (None when they were not asked for:
    #: :attr:`lines_skipped`); a scripted capture of a Python model with inputs: see
    #: :attr:`eager`, which runs the Python when first read
    _eager: EagerRun | None = field(default=None, repr=False)
    #: how a trace called the model (keyword inputs placed, outputs flattened); None for
    #: other captures
    adapter: CallAdapter | None = None
    #: ``export``: the ``torch.export.ExportedProgram`` (from the model or a ``.pt2``)
    exported: Any = None
    #: a trace of a plain module tree: the traced graph without the TracedModule
    #: (:mod:`irviz.frontends.trace_graph`); None for every other capture
    trace_graph: Any = None
    #: compiled code given example inputs (an archive, a ScriptModule or ScriptFunction):
    #: the recorded run of an instrumented copy (:mod:`irviz.frontends.compiled_run`)
    compiled_run: CompiledRun | None = None
    #: the method drawn and run: ``forward``, or the overload of an overloaded one
    #: (:mod:`irviz.frontends.overloads`)
    entry: str = ENTRY
    #: a trace made without recording the lines its run executed (nothing was to read
    #: them): :attr:`executed_lines` is None, unknown, not "none ran"
    lines_skipped: bool = False
    #: makes :attr:`compiled` the first time something needs to run it (a
    #: cached function: shared by copies, as ``auto``'s copy of the workspace's trace)
    _make_compiled: Any = field(default=None, repr=False)
    #: runs the model's Python the first time :attr:`eager` is read (cached: shared by copies)
    _run_python: Any = field(default=None, repr=False)

    def __repr__(self) -> str:
        """``<Capture samples/decision_gate.py:MyCell script: 1 warning, 0 notes>``: the
        compiled model, its inputs and eager run are left out (a notebook shows a repr
        whole; theirs run to tens of KB)."""
        def count(n: int, word: str) -> str:
            return f"{n} {word}{'s' if n != 1 else ''}"

        return (f"<Capture {self.target.spec} {self.mode}: "
                f"{count(len(self.warnings), 'warning')}, {count(len(self.notes), 'note')}>")

    @property
    def eager(self) -> EagerRun | None:
        """What running the model's Python showed: the lines it executed, or what it raised
        (lint reads them); None when the Python did not run (no inputs, an archive, an
        already-scripted target) or a trace's lines were not asked for. A scripted capture
        runs the Python here, the first time this is read: its picture takes every shape
        from the compiled run (:attr:`compiled_run`) and needs no second forward."""
        if self._eager is None and self._run_python is not None:
            self._eager = self._run_python()
        return self._eager

    @property
    def scripted(self) -> Any:
        """The ScriptModule or ScriptFunction. A trace drawn from :attr:`trace_graph` makes
        its TracedModule here, once, the first time something runs the model (``run``,
        ``--measure``, lint's re-trace): a picture never pays for it."""
        if self.compiled is None and self._make_compiled is not None:
            self.compiled = self._make_compiled()
        return self.compiled

    def run(self, inputs: ExampleInputs | None = None) -> Any:
        """Run the compiled model on ``inputs`` (default: the capture's own). A trace takes
        the inputs the way it was traced: every one positionally."""
        inputs = inputs if inputs is not None else self.inputs
        if self.compiled is None and self.trace_graph is not None and inputs is not None:
            return self.trace_graph.run(inputs.flat)   # no TracedModule needed to run it
        run = entry_callable(self.scripted, self.entry)
        if inputs is None:
            return run()
        if self.adapter is not None:
            return run(*inputs.flat)
        return inputs.call(run)

    def run_python(self, inputs: ExampleInputs) -> Any:
        """Run the model's Python on ``inputs``, with its outputs as :meth:`run` gives them."""
        if self.adapter is not None:
            return self.adapter(inputs)
        obj = self.target.obj
        if isinstance(obj, torch.jit.ScriptModule):   # a scripted nn.LSTM has no forward
            obj = entry_callable(obj, self.entry)
        return inputs.call(obj)

    def graph_input_examples(self) -> list:
        """The example value of each graph input after ``self`` (None where unknown)."""
        if self.trace_graph is not None:
            n = self.trace_graph.n_inputs
        else:
            n = len(list(self.graph.inputs())) - (1 if isinstance(
                self.scripted, torch.jit.ScriptModule) else 0)
        if self.inputs is None:
            return [None] * n
        if self.adapter is not None or not self.inputs.kwargs:
            flat = self.inputs.flat if self.adapter is not None else self.inputs.args
            return [flat[i] if i < len(flat) else None for i in range(n)]
        names = [v.debugName().split(".")[0] for v in self.graph.inputs()][-n:] if n else []
        args = self.inputs.args
        return [args[i] if i < len(args) else self.inputs.kwargs.get(name)
                for i, name in enumerate(names)]

    @property
    def executed_lines(self) -> frozenset[tuple[str, int]] | None:
        """``(file, line)`` of the model's code that ran while capturing, or None when
        the model's Python did not run (no inputs, an archive, an already-scripted target)
        or a trace was made without recording them (:attr:`lines_skipped`)."""
        return None if self.eager is None else self.eager.executed_lines

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def graph(self) -> torch._C.Graph:
        """The entry graph (``forward`` for modules; for :attr:`trace_graph`, its inlined
        graph, whose inputs after the model's are its parameters and buffers)."""
        if self.trace_graph is not None:
            return self.trace_graph.graph
        return entry_graph(self.scripted, self.entry)


def _is_torch_frame(filename: str) -> bool:
    return _origin(filename) == "torch"


@functools.lru_cache(maxsize=4096)
def _origin_of_absolute(filename: str) -> str:
    if is_torch_file(filename) or "<frozen" in filename:
        return "torch"
    if is_stdlib_file(filename):
        return "stdlib"
    return "irviz" if is_inside(filename, IRVIZ_DIR) else "model"


def _origin(filename: str) -> str:
    """Whose file a frame runs: ``"torch"``, ``"stdlib"``, ``"irviz"`` or ``"model"``.
    Cached by absolute file name: a trace can raise a warning per op (146 on the traced
    LSTM ensemble), each walking a stack of ~40 frames."""
    if not os.path.isabs(filename):
        return _origin_of_absolute.__wrapped__(filename)
    return _origin_of_absolute(filename)


def _stack(skip: int = 1) -> list[traceback.FrameSummary]:
    """The running stack, outermost first, like ``traceback.extract_stack`` but without
    reading each frame's source line (nothing here shows it)."""
    frames = [(f.f_code.co_filename, lineno, f.f_code.co_name)
              for f, lineno in traceback.walk_stack(sys._getframe(skip + 1))]
    frames.reverse()
    return [traceback.FrameSummary(fn, ln, name, lookup_line=False) for fn, ln, name in frames]


def _user_frame(stack: list[traceback.FrameSummary], user_file: Path | None = None):
    """The innermost frame of the model's code: not torch's, not irviz's, not ``warnings``.

    An installed library's file (torchvision, transformers) *is* the model's code: its line
    is where the warning belongs, not the user's line that called into the library. With
    ``user_file`` a frame in that file is preferred (a failed trace names the user's line)."""
    if user_file is not None:
        wanted = str(user_file)
        for frame in reversed(stack):
            if frame.filename == wanted:
                return frame
    for frame in reversed(stack):  # innermost first
        origin = _origin(frame.filename)
        if origin in ("torch", "stdlib"):
            continue  # torch's, or the standard library's (warnings, ast) on torch's behalf
        if origin == "irviz":
            return None  # out of the model's code: torch was called by irviz itself
        return frame
    return None


def forward_source(target: Target) -> tuple[str, int] | None:
    """``(file, line)`` of the model's ``forward`` (or the function's ``def``)."""
    obj = target.obj
    fn = getattr(type(obj), "forward", None) if isinstance(obj, torch.nn.Module) else obj
    try:  # a decorated forward (transformers' ``can_return_tuple``): the function itself
        fn = inspect.unwrap(fn)
    except ValueError:
        pass
    try:
        _, start = inspect.getsourcelines(fn)
        return inspect.getsourcefile(fn), start
    except (TypeError, OSError):
        return None


_DEPRECATION = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


@contextlib.contextmanager
def recording_warnings(forward: tuple[str, int] | None = None, user_file: Path | None = None
                       ) -> Iterator[list[CapturedWarning]]:
    """Record every warning raised inside the block, attributed to the model's code: the
    innermost frame outside torch (a library the model comes from counts as its code; the
    compiled code's warnings come with their source line already); for one torch raised
    with none of the model's frames running (about the traced outputs, say), the model's
    ``forward``.

    A warning located in another file than ``user_file`` (the model file) while a line of
    ``user_file`` was running (a wrapper calling into a library) also names that line.

    ``simplefilter("always")`` goes in front of torch's filters (which hide
    TracerWarnings raised from modules named ``torch*``) and disables the
    once-per-location de-duplication; we de-duplicate ourselves.
    """
    recorded: list[CapturedWarning] = []
    seen: set[tuple] = set()
    wanted = str(user_file) if user_file is not None else None

    def called_from(filename: str, stack: list[traceback.FrameSummary]):
        if wanted is None or filename == wanted:
            return None
        frame = next((f for f in reversed(stack) if f.filename == wanted), None)
        return (frame.filename, int(frame.lineno)) if frame and frame.lineno else None

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, _DEPRECATION) and (
                _is_torch_frame(filename) or "TorchScript" in str(message)
                or "torch.jit" in str(message)):
            return
        text = str(message)
        whose = _origin(filename)
        in_user = whose == "model"
        origin = f"{torch_relative(filename)}:{lineno}" if whose == "torch" else None
        stack = _stack()
        if not in_user:
            frame = _user_frame(stack)
            if frame is not None and frame.lineno is not None:
                filename, lineno, in_user = frame.filename, frame.lineno, True
            elif forward is not None:
                (filename, lineno), in_user = forward, True
        key = (category.__name__, text, filename, lineno)
        if key in seen:
            return
        seen.add(key)
        recorded.append(CapturedWarning(category.__name__, text, filename, int(lineno),
                                        in_user, origin, called_from(filename, stack)))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = showwarning
        old_state = torch._C._jit_get_tracer_state_warn()
        torch._C._jit_set_tracer_state_warn(True)
        try:
            yield recorded
        finally:
            torch._C._jit_set_tracer_state_warn(old_state)


def _user_location(text: str) -> str | None:
    """The last ``File "x.py", line N`` in torch's message that is not torch's own file."""
    found = [(path, line) for path, line in stack_frames(text) if not _is_torch_frame(path)]
    if not found:
        return None
    path, line = found[-1] if len(found) == 1 else found[0]
    return f"{display_path(path)}:{line}"


_REMOVED_HINT = ("irviz reads TorchScript, which PyTorch deprecated in 2.5 and plans to turn "
                 "into an error; use torch < 2.15 (irviz's supported range) for this model, "
                 "or the variable torch names in its message to keep TorchScript working")


def _torchscript_removed(text: str) -> bool:
    """torch's own error when a release no longer runs TorchScript (pytorch#189705)."""
    lowered = text.lower()
    return "torchscript" in lowered and ("deprecated" in lowered or "removed" in lowered) \
        and ("torch.export" in lowered or "silence" in lowered)


def traced_instead(exc: CaptureError, target: Target) -> str:
    """The one-line note of ``auto`` mode when scripting failed and the trace was drawn."""
    why = exc.message.removeprefix(f"torch.jit.script failed on {target.spec}")
    return f"torch.jit.script failed ({why.strip(' :')}); traced with the example inputs instead"


def script_compiled(obj: Any) -> Any:
    """``torch.jit.script(obj)``. A module class that failed to compile once (another
    target of the same file holds it) is left half-defined in TorchScript's type store,
    and every later try says only "Can't redefine method": its entries are dropped and
    the compile tried again, so the error given is the compiler's own."""
    try:
        return torch.jit.script(obj)
    except Exception as exc:  # noqa: BLE001 - tried again below, or raised as it is
        if "Can't redefine method" not in str(exc) or not isinstance(obj, torch.nn.Module):
            raise
    store = getattr(getattr(torch.jit, "_recursive", None), "concrete_type_store", None)
    types = getattr(store, "type_store", None)
    if isinstance(types, dict):
        for m in obj.modules():
            types.pop(type(m), None)
    return torch.jit.script(obj)


def _script(target: Target) -> Any:
    obj = target.obj
    if isinstance(obj, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return obj
    try:
        return script_compiled(obj)
    except Exception as exc:  # torch raises many types for unsupported code
        text = str(exc).strip()
        if _torchscript_removed(text):
            raise CaptureError(f"this torch ({torch.__version__}) refuses torch.jit.script: "
                               f"{text.splitlines()[0]}", hint=_REMOVED_HINT) from None
        where = _user_location(text)
        # without the object's address (``<function f at 0x7f...>``): a note or an error
        # in a picture is the same in every run
        first = re.sub(r" at 0x[0-9a-fA-F]+>", ">", text.splitlines()[0]) if text \
            else type(exc).__name__
        raise CaptureError(
            f"torch.jit.script failed on {target.spec}"
            + (f" at {where}" if where else "") + f": {first}",
            hint="the model uses Python that TorchScript cannot compile; "
                 "try `--mode trace --inputs ...` (or `--mode auto`) to trace it instead",
            detail=f"{type(exc).__name__}: {text}") from None


def _trace(target: Target, inputs: ExampleInputs | None, lines: bool = True
           ) -> tuple[Any, EagerRun | None, CallAdapter | None]:
    """The traced module (or a :class:`~irviz.frontends.trace_graph.TraceGraph`), the lines
    of the model's code the trace's run executed (None unless ``lines``: Python's line
    tracing costs ~5 µs per traced op), and how the model was called (keyword inputs
    placed, outputs flattened)."""
    if inputs is None:
        raise InputsError(
            f"--mode trace needs example inputs for {target.spec}",
            hint='pass them with --inputs "torch.rand(3, 4), torch.rand(3, 4)" or define '
                 "`example_inputs` in the model file (see README: Example inputs)")
    obj = target.obj
    if isinstance(obj, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return obj, None, None
    adapter = CallAdapter(obj, inputs)
    recorder = LineRecorder() if lines else None
    strict = _strict(adapter)
    try:
        recording = recorder.around_forward(adapter.traceable) if recorder else \
            contextlib.nullcontext()
        with recording:
            traced = _trace_graph_or_module(adapter, strict)
        eager = EagerRun(executed_lines=recorder.executed()) if recorder else None
        return traced, eager, adapter
    except Exception as exc:
        text = str(exc).strip()
        if _torchscript_removed(text):
            raise CaptureError(f"this torch ({torch.__version__}) refuses torch.jit.trace: "
                               f"{text.splitlines()[0]}", hint=_REMOVED_HINT) from None
        first = text.splitlines()[0] if text else type(exc).__name__
        stack = traceback.extract_tb(exc.__traceback__)
        frame = _user_frame(stack)
        where = f" at {display_path(frame.filename)}:{frame.lineno}" if frame else ""
        caller = _user_frame(stack, target.source_file) if target.source_file else None
        if caller is not None and frame is not None and caller.filename != frame.filename:
            where += f" (called from {display_path(caller.filename)}:{caller.lineno})"
        elif frame is None and caller is not None:
            where = f" at {display_path(caller.filename)}:{caller.lineno}"
        raise CaptureError(
            f"torch.jit.trace failed on {target.spec}{where}: {type(exc).__name__}: {first}",
            hint=_trace_hint(text, frame is not None or caller is not None),
            detail=text if "\n" in text else None) from None


def _trace_graph_or_module(adapter: CallAdapter, strict: bool) -> Any:
    """The trace as a graph without the TracedModule when the model is a plain module tree;
    else (a ScriptModule or ScriptFunction inside: their calls, forks and control flow live
    only in the TracedModule's graphs; a plain function: it has no hierarchy to save) the
    TracedModule, as ``torch.jit.trace`` makes it."""
    traceable = adapter.traceable
    if trace_graph.supported(traceable):
        try:
            with gc_paused():   # see irviz.gc_pause: the trace's graph and run make few cycles
                return trace_graph.trace_graph(traceable, adapter.flat, strict)
        except trace_graph.Unsupported:
            pass  # traced a scripted call inlined: the TracedModule draws it as a call
    return _traced_module(adapter, strict)


def _strict(adapter: CallAdapter) -> bool:
    """Containers of tensors among the inputs are constant structure: strict mode refuses
    them."""
    return all(isinstance(v, torch.Tensor) or type(v) is tuple for v in adapter.flat)


def _traced_module(adapter: CallAdapter, strict: bool) -> Any:
    return torch.jit.trace(adapter.traceable, adapter.flat, check_trace=False, strict=strict)


def _lazy_traced_module(adapter: CallAdapter, strict: bool) -> Callable[[], Any]:
    """Makes the TracedModule of a capture drawn from its trace graph, with the warnings
    its second trace raises left unrecorded (the first trace recorded them)."""
    def make():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old_state = torch._C._jit_get_tracer_state_warn()
            torch._C._jit_set_tracer_state_warn(False)
            try:
                return _traced_module(adapter, strict)
            finally:
                torch._C._jit_set_tracer_state_warn(old_state)
    return functools.cache(make)   # made once, shared by copies of the Capture


def empty_input_notes(inputs: ExampleInputs | None, model: Any = None) -> list[str]:
    """``⚠ empty example input x (shape (0, 4)): ...``: torch traces an empty tensor, but
    what the trace records (shapes, the branches taken on no data) may not be what a real
    input does; a note, not a refusal. Inputs are named by ``model``'s forward arguments."""
    if inputs is None:
        return []
    names = inputs.names(model) if model is not None else _input_labels(inputs)
    empty = [f"{name} (shape {tuple(value.shape)})"
             for name, value in zip(names, inputs.flat)
             if isinstance(value, torch.Tensor) and value.numel() == 0]
    if not empty:
        return []
    return [f"⚠ empty example input{'s' if len(empty) > 1 else ''} {', '.join(empty)}: the "
            "trace records what the model does on no data; a real input may take other "
            "branches (give each input one element to be sure)"]


def _input_labels(inputs: ExampleInputs) -> list[str]:
    return [str(i) for i in range(len(inputs.args))] + list(inputs.kwargs)


def _trace_hint(text: str, in_model: bool) -> str:
    """What to do about a failed trace, from what torch said."""
    lowered = text.lower()
    if "only tensors" in lowered or "cannot be traced" in lowered or "got unsupported type" \
            in lowered:
        return ("the trace's inputs must be tensors (or tuples, lists and dicts of them); "
                "make other arguments constructor arguments, or give them as keyword inputs "
                "only when they are tensors (see README: Example inputs)")
    if in_model:
        return ("the model's own code raised while tracing (see the location above); "
                "check that the example inputs are what forward() expects, or try "
                "`--mode script`")
    return ("check that the example inputs match what forward() expects; "
            "`--mode script` needs no inputs")


def raised(exc: BaseException) -> tuple[str, str]:
    """``(exception name, message)`` of what the model's own code raised: TorchScript
    re-raises as ``torch.jit.Error`` with the user's exception on its last line."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    m = re.match(r"^(?:builtins\.)?(\w+(?:Error|Exception)): (.*)$", last)
    return (m.group(1), m.group(2)) if m else (type(exc).__name__, last)


def _run_once(target: Target, scripted: Any, inputs: ExampleInputs, entry: str = ENTRY) -> None:
    """Example inputs that the compiled model cannot run are a user error, found early."""
    try:
        with torch.no_grad():
            inputs.call(entry_callable(scripted, entry))
    except Exception as exc:  # the model's own error, reported in its terms
        text = str(exc).strip()
        where = _user_location(text)
        name, last = raised(exc)
        error = CaptureError(
            f"{target.spec} compiles, but running it on its example inputs raised "
            f"{name}" + (f" at {where}" if where else "") + f": {last}",
            hint="check that --inputs / example_inputs match what forward() expects "
                 "(shapes, dtypes, devices)",
            detail=("TorchScript traceback (your model's code):\n" + text)
            if "\n" in text else None)
        error.raised_on_inputs = True
        raise error from None


def _entry(target: Target, scripted: Any, inputs: ExampleInputs | None,
           notes: list[str]) -> str:
    """The method drawn: ``forward``, the overload the Workspace chose for this view
    (``Target.entry``), or the one the inputs select."""
    names = overload_names(scripted) if isinstance(scripted, torch.jit.ScriptModule) else []
    if not names:
        return ENTRY
    if target.entry in names:
        method, note = target.entry, overload_note(scripted, names, target.entry)
    else:
        method, note = select_overload(scripted, names, inputs, target.spec)
    notes.append(note)
    return method


def _runs_python(target: Target) -> bool:
    """The target is the model's Python (not already TorchScript): running it records the
    shapes and executed lines a scripted graph lacks."""
    return callable(target.obj) and not isinstance(
        target.obj, (torch.jit.ScriptModule, torch.jit.ScriptFunction))


def _eager_run_later(obj: Any, inputs: ExampleInputs) -> Callable[[], EagerRun]:
    """Runs ``obj``'s Python on ``inputs`` once, when first called (lint asks which lines
    ran); the warnings it raises were raised by the compiled run already, or are the
    Python's own, which the picture does not draw."""
    def run() -> EagerRun:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_eagerly(obj, inputs)
    return functools.cache(run)


def capture(target: Target, mode: str = "script",
            inputs: ExampleInputs | None = None, export_options=None,
            lines: bool = True) -> Capture:
    """Script or trace ``target`` (``mode`` in :data:`MODES`) and record what torch said;
    ``export`` (and a loaded ``.pt2``) goes to :mod:`irviz.frontends.export`
    (``export_options``: an ``ExportOptions``). Without ``lines`` a trace does not record
    the lines its run executed (only lint reads them).

    A :class:`CaptureError` carries the warnings torch raised before it failed."""
    if mode not in MODES:
        raise CaptureError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if inputs is not None and not isinstance(inputs, ExampleInputs):
        inputs = ExampleInputs(tuple(inputs))  # a tuple from Python: positional inputs
    if mode == "export" or target.kind == "exported":
        return _export_capture(target, mode, inputs, export_options)
    notes: list[str] = []
    eager: EagerRun | None = None
    adapter: CallAdapter | None = None
    compiled_run: CompiledRun | None = None
    run_python = None
    entry = ENTRY
    with recording_warnings(forward_source(target), target.source_file) as recorded:
        try:
            if target.kind == "archive":
                scripted, done = target.obj, "archive"
                if mode == "trace":
                    notes.append("a saved archive is already TorchScript; shown as loaded")
            elif mode == "trace":
                (scripted, eager, adapter), done = _trace(target, inputs, lines), "trace"
            elif mode == "script":
                scripted, done = _script(target), "script"
            else:  # auto
                try:
                    scripted, done = _script(target), "script"
                except CaptureError as exc:
                    if inputs is None:
                        raise
                    notes.append(traced_instead(exc, target))
                    (scripted, eager, adapter), done = _trace(target, inputs, lines), "trace"
            if isinstance(scripted, torch.jit.ScriptModule):
                # a trace of a scripted module is the module as it was: its overloads too
                entry = _entry(target, scripted, inputs, notes)
            if done in ("script", "archive") and inputs is not None:
                # one forward: an instrumented copy of the compiled code runs, and records
                # what every value of the picture was (the model's Python, when there is
                # one, runs only when lint asks what it executed, :attr:`Capture.eager`,
                # or the copy raised)
                compiled_run = run_compiled(scripted, inputs,
                                            getattr(target, "compilation_unit", None), entry)
                if done == "script" and _runs_python(target):
                    run_python = _eager_run_later(target.obj, inputs)
                if compiled_run.error:
                    # the model's Python decides: inputs it cannot take either are the
                    # user's error (told as the compiled model raises it); a model only
                    # TorchScript cannot run (an @torch.jit.unused call) gets a note
                    if run_python is None or run_python().error:
                        _run_once(target, scripted, inputs, entry)
                    notes.append(f"shapes not recorded: {compiled_run.error}")
                elif compiled_run.unshaped:
                    notes.append(compiled_run.unshaped_note())
        except CaptureError as exc:
            exc.warnings = list(recorded)
            raise
        if done == "trace":
            notes.extend(empty_input_notes(inputs, target.obj))
        if done == "trace" and isinstance(target.obj, (torch.jit.ScriptModule,
                                                        torch.jit.ScriptFunction)):
            notes.append("the target is already scripted; tracing it is a no-op")
    if adapter is not None:
        notes.extend(adapter.notes())
    graph = make = None
    if isinstance(scripted, trace_graph.TraceGraph):
        graph, scripted = scripted, None
        make = _lazy_traced_module(adapter, _strict(adapter))
    return Capture(target=target, mode=done, compiled=scripted, inputs=inputs,
                   warnings=list(recorded), notes=notes, _eager=eager, adapter=adapter,
                   trace_graph=graph, compiled_run=compiled_run, entry=entry,
                   lines_skipped=adapter is not None and eager is None, _make_compiled=make,
                   _run_python=run_python)


def _export_capture(target: Target, mode: str, inputs: ExampleInputs | None,
                    options) -> Capture:
    """``--mode export`` of a model, or a loaded ``.pt2`` (any mode: shown as loaded)."""
    from .export import export_target

    notes: list[str] = []
    if target.kind == "exported":
        if mode == "trace":
            notes.append("a saved torch.export program (.pt2) is shown as exported")
        return Capture(target=target, mode="export", compiled=None, inputs=inputs,
                       notes=notes, exported=target.obj)
    with recording_warnings(forward_source(target), target.source_file) as recorded:
        try:
            program, more = export_target(target, inputs, options)
        except CaptureError as exc:
            exc.warnings = list(recorded)
            raise
    return Capture(target=target, mode="export", compiled=None, inputs=inputs,
                   warnings=list(recorded), notes=notes + more, exported=program)
