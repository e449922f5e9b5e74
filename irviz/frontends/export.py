"""The torch.export frontend: ``--mode export`` and saved ``.pt2`` programs.

This is the only module that calls ``torch.export``. :func:`export_target` runs
``torch.export.export(model, args, kwargs)`` (non-strict unless ``strict``), with the
keyword inputs as keywords and ``--dynamic-dims NAME:DIM`` as ``Dim.AUTO`` entries of
``dynamic_shapes``. torch prints partial graphs and log lines on some failures: everything
written to stdout/stderr while exporting (Python objects and file descriptors alike) is
kept, never shown, and a failure becomes a :class:`~irviz.errors.CaptureError` naming the
model's line and quoting torch's reason.
"""
from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..errors import CaptureError, InputsError, UsageError
from ..location import stack_frames
from ..paths import IRVIZ_DIR, display_path, is_inside, is_stdlib_file, is_torch_file
from .archives import has_export
from .inputs import ExampleInputs, forward_arguments, parse_dynamic_dims
from .records import Target
from .user_code import quiet_output

__all__ = ["ExportOptions", "export_target", "STATIC_NOTE"]


@dataclass(frozen=True)
class ExportOptions:
    """How ``--mode export`` calls ``torch.export.export``."""

    strict: bool = False
    #: ``--dynamic-dims`` specs (``xs:0``), made ``Dim.AUTO`` in ``dynamic_shapes``
    dynamic_dims: tuple[str, ...] = ()


def _no_export() -> CaptureError:
    return CaptureError(
        f"this torch ({torch.__version__}) has no torch.export",
        hint="--mode export and .pt2 programs need torch >= 2.1 with torch.export; "
             "use --mode script or trace with this torch")


def dynamic_shapes(obj: Any, inputs: ExampleInputs, specs: tuple[str, ...]) -> dict | None:
    """``--dynamic-dims`` as torch.export's ``dynamic_shapes``: one entry per argument
    of ``forward`` the call passes (by name), ``{dim: Dim.AUTO}`` for the named ones."""
    if not specs:
        return None

    wanted = parse_dynamic_dims(list(specs))
    names = forward_arguments(obj)
    bound: dict[str, Any] = dict(zip(names, inputs.args))
    bound.update(inputs.kwargs)
    out: dict[str, Any] = {}
    for name, value in bound.items():
        dims = wanted.get(name)
        if dims is None:
            out[name] = None
            continue
        if not isinstance(value, torch.Tensor):
            raise UsageError(f"--dynamic-dims {name}: the input {name} is not a tensor",
                             hint="name a tensor argument of forward()")
        bad = [d for d in dims if not -value.dim() <= d < value.dim()]
        if bad:
            raise UsageError(f"--dynamic-dims {name}:{bad[0]}: {name} has {value.dim()} "
                             f"dimensions (shape {tuple(value.shape)})",
                             hint=f"use a dimension between 0 and {value.dim() - 1}")
        out[name] = {d % value.dim(): torch.export.Dim.AUTO for d in dims}
    unknown = sorted(set(wanted) - set(bound))
    if unknown:
        raise UsageError(f"--dynamic-dims {unknown[0]}: forward() of the model has no "
                         f"argument {unknown[0]} in this call",
                         hint="its arguments: " + (", ".join(bound) or "none"))
    return out


def _user_frame(frames: list[tuple[str, int]], user_file: Path | None) -> tuple[str, int] | None:
    """The model's line among ``(file, line)`` frames, innermost first: a frame of the
    model's own file, else the innermost outside torch, irviz and the standard library."""
    if user_file is not None:
        for frame in frames:
            if frame[0] == str(user_file):
                return frame
    for filename, line in frames:
        if filename.startswith("<") or is_torch_file(filename) or is_stdlib_file(filename):
            continue
        if is_inside(filename, IRVIZ_DIR):
            continue
        return filename, line
    return None


def _failure(target: Target, exc: BaseException, strict: bool, printed: str) -> CaptureError:
    text = str(exc).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    stack = [(f.filename, f.lineno or 0) for f in reversed(traceback.extract_tb(exc.__traceback__))]
    where = _user_frame(stack, target.source_file)
    if where is None:  # strict mode: Dynamo names the model's frames in its message
        frames = text.split("from user code:", 1)[-1]
        named = stack_frames(frames)
        where = _user_frame(named[::-1], target.source_file)
    at = f" at {display_path(where[0])}:{where[1]}" if where else ""
    gb = re.search(r"/gb/(gb\d{4})\.html", text)
    reason = f"{type(exc).__name__}: {first}" + (f" ({gb.group(1).upper()})" if gb else "")
    lowered = text.lower()
    scripted = [name for name, m in getattr(target.obj, "named_modules", lambda: ())()
                if isinstance(m, (torch.jit.ScriptModule, torch.jit.ScriptFunction))]
    if scripted:
        hint = (f"the model holds TorchScript ({scripted[0] or 'itself'}: scripted or traced), "
                "which torch.export cannot take: build it from the Python modules for export")
    elif "data-dependent" in lowered or "guardondatadependent" in type(exc).__name__.lower():
        hint = ("export cannot branch on tensor data: write the branch as torch.cond "
                "(or torch.where for elementwise choices); --mode script keeps the `if`")
    elif "constraints violated" in lowered:
        hint = ("a dimension named in --dynamic-dims is specialised by the model's code; "
                "leave it out, or make the code shape-generic")
    elif strict:
        hint = "strict export (Dynamo) refused the code; try without --strict"
    else:
        hint = "check that the example inputs are what forward() expects; --debug shows " \
               "torch's whole message"
    if printed.strip() and hasattr(exc, "add_note"):   # for --debug, never by default
        exc.add_note("torch printed while exporting:\n" + printed.strip()[-4000:])
    return CaptureError(f"torch.export failed on {target.spec}{at}: {reason}", hint=hint)


def export_target(target: Target, inputs: ExampleInputs | None,
                  options: ExportOptions | None = None) -> tuple[Any, list[str]]:
    """``torch.export.export`` of ``target`` on ``inputs``: the ExportedProgram and notes."""
    options = options or ExportOptions()
    if not has_export():
        raise _no_export()
    obj = target.obj
    if isinstance(obj, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        raise CaptureError(
            f"{target.spec} is TorchScript: torch.export takes the Python model",
            hint="convert it with `irviz migrate TARGET --inputs ...` (TS2EPConverter, "
                 "checked on outputs), or give irviz the .py file that defines the model")
    if inputs is None:
        raise InputsError(
            f"--mode export needs example inputs for {target.spec}",
            hint='pass them with --inputs "torch.rand(3, 4), torch.rand(3, 4)" or define '
                 "`example_inputs` in the model file (see README: Example inputs)")
    module = obj
    if not isinstance(obj, torch.nn.Module):   # a plain function: export a module calling it
        module = _FunctionModule(obj)
    shapes = dynamic_shapes(obj, inputs, options.dynamic_dims)
    notes: list[str] = []
    with quiet_output() as printed:
        try:
            program = torch.export.export(module, tuple(inputs.args), dict(inputs.kwargs),
                                          dynamic_shapes=_for_export(module, shapes, inputs),
                                          strict=options.strict)
        except Exception as exc:  # torch raises many types
            failure = exc
        else:
            failure = None
    if failure is not None:
        raise _failure(target, failure, options.strict, printed.getvalue()) from failure
    if shapes:
        notes += _static_notes(program, shapes)
    return program, notes


def _for_export(module: Any, shapes: dict | None, inputs: ExampleInputs) -> Any:
    """``shapes`` as torch.export takes them for ``module``: a plain function's wrapper has
    ``forward(*args)``, so its shapes go by position (torch refuses the function's names)."""
    if shapes is None or not isinstance(module, _FunctionModule) or inputs.kwargs:
        return shapes
    return {"args": tuple(shapes.values())}


class _FunctionModule(torch.nn.Module):
    """A plain function as a module (torch.export takes modules)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


#: the note :func:`_static_notes` writes (lint's IRV503 reads it back)
STATIC_NOTE = re.compile(r"--dynamic-dims (?P<name>[^\s:]+):(?P<dim>\d+) came out static: "
                         r"export specialised it to (?P<size>-?\d+)")


def _static_notes(program, shapes: dict) -> list[str]:
    """A dynamic dim export specialised (``Dim.AUTO`` says nothing): one note each."""
    vals = {}
    for node in program.graph.nodes:
        if node.op == "placeholder":
            vals[node.name] = node.meta.get("val")
    notes = []
    for name, dims in shapes.items():
        value = vals.get(name)
        if not dims or not isinstance(value, torch.Tensor):
            continue
        for dim in dims:
            size = value.shape[dim]
            if isinstance(size, torch.SymInt):   # a symbol, unless export fixed its value
                fixed = size.node.maybe_as_int() if hasattr(size.node, "maybe_as_int") else None
                if fixed is None:
                    continue
                size = fixed
            notes.append(f"--dynamic-dims {name}:{dim} came out static: export "
                         f"specialised it to {int(size)}")
    return notes


