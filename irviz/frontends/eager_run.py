"""Running the model's Python once, to learn what only the Python can say: which lines of
the model's code ran (:class:`LineRecorder`; a lint finding on a line that never ran is not
evidence of anything), and what the Python raised on the example inputs.

A trace records the lines during its own run. A scripted capture runs the Python only when
lint asks (:attr:`irviz.frontends.capture.Capture.eager`): its shapes come from running the
compiled code itself (:mod:`irviz.frontends.compiled_run`), what the picture draws.
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Iterator

import torch

from ..paths import IRVIZ_DIR, TORCH_DIR, is_inside, is_stdlib_file

__all__ = ["EagerRun", "LineRecorder", "run_eagerly"]

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


@dataclass
class EagerRun:
    """What one eager run of the model showed."""

    #: ``(file, line)`` of the model's code that ran
    executed_lines: frozenset[tuple[str, int]] = frozenset()
    #: the model's own exception, when running it failed (the lines are then partial)
    error: str | None = None


def run_eagerly(obj, inputs) -> EagerRun:
    """Run ``obj`` once on ``inputs`` (an :class:`~irviz.frontends.inputs.ExampleInputs`)
    without gradients, recording the lines of the model's code that ran."""
    run = EagerRun()
    lines = LineRecorder()
    try:
        with torch.no_grad(), lines:
            inputs.call(obj)
    except Exception as exc:  # the model's own failure
        run.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    run.executed_lines = lines.executed()
    return run
