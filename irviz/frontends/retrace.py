"""Trace again with differently shaped inputs, to expose shapes baked into a trace.

``torch.jit.trace`` records the path and the sizes one example took; a loop
over ``range(x.size(0))``, a branch on ``x.dim()`` or a size turned into a
Python int leaves no warning. Tracing again with perturbed inputs and
comparing the two graphs (and running the first trace on the new inputs
against eager execution) reveals them.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import UsageError
from .capture import Capture, capture
from .inputs import ExampleInputs, forward_arguments
from .variants import grown_by_one


@dataclass
class Retrace:
    """A second trace of the same target on perturbed inputs."""

    inputs: ExampleInputs
    #: what changed, e.g. "x: (3, 4) -> (4, 4)"
    change: str
    capture: Capture | None
    #: why the second trace (or running the first trace on the new inputs) failed
    error: str | None
    #: the first trace's outputs on the new inputs differ from eager execution
    outputs_differ: bool


def _grow(t: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """``t`` one larger along ``dims``: its own values with the last slice repeated, so the
    second trace sees a new shape and the same data. Fresh random values would let a
    branch on the data (``if x.sum() > 0`` on a linear layer's output) flip, and the
    difference would be reported as a shape baked into the trace (seen on the seed
    MyCell in one run of eight). An empty dimension gets random values."""
    dims = [d % t.dim() for d in dims if -t.dim() <= d < t.dim()]
    if dims and all(t.shape[d] > 0 for d in dims):
        return grown_by_one(t, dims)
    shape = list(t.shape)
    for d in dims:
        shape[d] += 1
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return torch.rand(shape, dtype=t.dtype, device=t.device)
    if t.dtype == torch.bool:
        return torch.rand(shape, device=t.device) > 0.5
    high = int(t.max().item()) + 1 if t.numel() else 2
    return torch.randint(0, max(high, 1), shape, dtype=t.dtype, device=t.device)


def perturbed_inputs(obj, inputs: ExampleInputs, dynamic: dict[str, list[int]]
                     ) -> tuple[ExampleInputs, str]:
    """Inputs with the declared dynamic dims (default: dim 0 of every tensor) one larger.

    A dimension named in ``dynamic`` is a size other inputs share: an ``attention_mask``
    as long as ``input_ids``. Every dimension of another input with the size a named one
    had grows with it, so the second trace sees a valid call, not a mismatch of lengths."""
    params = forward_arguments(obj)
    names = inputs.names(obj)
    unknown = sorted(set(dynamic) - set(names) - set(params))
    if unknown and (params or inputs.kwargs):
        raise UsageError(f"--dynamic-dims names {', '.join(unknown)}, which forward() does "
                         f"not take", hint=f"forward's arguments: {', '.join(params or names)}")
    values = inputs.flat
    grow: dict[int, list[int]] = {}
    shared: set[int] = set()  # sizes of the named dimensions
    for i, (name, value) in enumerate(zip(names, values)):
        dims = dynamic.get(name, [] if dynamic else [0])
        if isinstance(value, torch.Tensor) and value.dim() > 0 and dims:
            grow[i] = [d % value.dim() for d in dims if -value.dim() <= d < value.dim()]
            if dynamic:
                shared |= {value.shape[d] for d in grow[i]}
    for i, value in enumerate(values):
        if i in grow or not shared or not isinstance(value, torch.Tensor):
            continue
        same = [d for d in range(value.dim()) if value.shape[d] in shared]
        if same:
            grow[i] = same
    changed, out = [], []
    for i, (name, value) in enumerate(zip(names, values)):
        if grow.get(i):
            new = _grow(value, grow[i])
            changed.append(f"{name}: {tuple(value.shape)} -> {tuple(new.shape)}")
            out.append(new)
        else:
            out.append(value)
    return inputs.replaced(tuple(out)), "; ".join(changed)


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.allclose(a, b, atol=1e-5, rtol=1e-4, equal_nan=True)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def retrace(first: Capture, dynamic: dict[str, list[int]] | None = None,
            threads: int | None = None) -> Retrace | None:
    """Trace ``first.target`` again on perturbed inputs; None when nothing can be perturbed.
    The model's Python state is put back afterwards (:class:`~.verification.Preserved`).
    ``threads``: torch's intra-op threads meanwhile (None: as they are)."""
    from .verification import Preserved, intra_op_threads

    obj = first.target.obj
    if first.inputs is None or not callable(obj):
        return None
    new_inputs, change = perturbed_inputs(obj, first.inputs, dynamic or {})
    if not change:
        return None
    with Preserved(obj), intra_op_threads(threads):
        return _retrace(first, new_inputs, change)


def _retrace(first: Capture, new_inputs: ExampleInputs, change: str) -> Retrace:
    try:
        with torch.no_grad():
            expected = first.run_python(new_inputs)
    except Exception as exc:  # the model itself does not take other shapes: nothing to tell
        error = f"running on {change} raised {type(exc).__name__}: {_first(exc)}"
        return Retrace(new_inputs, change, None, error, False)
    try:
        with torch.no_grad():
            differ = not _same(expected, first.run(new_inputs))
    except Exception:  # the Python model runs, the first trace breaks: a shape was baked in
        differ = True
    try:
        # only its graph is read: not the lines its run executed (a line tracer's cost)
        second = capture(first.target, "trace", new_inputs, lines=False)
    except Exception as exc:
        return Retrace(new_inputs, change, None, f"tracing on {change} failed: {exc}", differ)
    return Retrace(new_inputs, change, second, None, differ)
