"""Call adapters: the model as ``torch.jit.trace`` can take it, for the models people bring.

A trace takes positional tensors and returns tensors or tuples of them. Library models
are called with keywords (``input_ids=..., attention_mask=...``) and return dicts,
``ModelOutput``\\ s, dataclasses or named tuples, often holding a cache object or None:
``torch.jit.trace`` refuses them (strict mode) or fails on the non-tensor leaves.

:class:`CallAdapter` gives the trace a stand-in for the model that

* takes every input positionally, keyword inputs after the positional ones, under their
  own names (so the graph's inputs read ``input_ids``, ``attention_mask``), and
* returns the tensor leaves of what the model returned, in order, remembering their
  names (``last_hidden_state``, ``pooler_output``) and the non-tensor leaves it dropped.

The stand-in is an instance of a subclass of the model's class named like it, sharing
the model's ``__dict__`` (its submodules, parameters, buffers and flags): the trace sees
the same module hierarchy, class names and source lines, and the user's object is never
changed. Every adaptation is said in :meth:`CallAdapter.notes`; a model that needs none is
traced as it is.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

import torch

from .inputs import ExampleInputs

__all__ = ["CallAdapter", "OutputLeaves", "flatten_output"]


@dataclasses.dataclass
class OutputLeaves:
    """What the model returned, as the trace's tensor outputs."""

    #: each tensor leaf's name: ``last_hidden_state``, ``hidden_states.0``, or ``0`` for
    #: a plain tuple's first element
    names: list[str]
    #: ``(name, type)`` of each non-tensor leaf left out (a cache object, None, an int)
    dropped: list[tuple[str, str]]
    #: the container types that were opened (``BaseModelOutput``, ``dict``)
    containers: list[str]
    #: whether the tensors had to be taken out of their containers for the trace
    flattened: bool


def _children(value: Any) -> list[tuple[str, Any]] | None:
    """The named parts of a container the trace cannot return as it is, else None."""
    if isinstance(value, dict) or (hasattr(value, "keys") and hasattr(value, "__getitem__")
                                   and not isinstance(value, torch.Tensor)):
        try:  # a ModelOutput lists only the fields that are not None
            return [(str(k), value[k]) for k in value.keys()]
        except Exception:  # noqa: BLE001 - a mapping-like object that is not one
            pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return [(k, getattr(value, k)) for k in value._fields]
    if isinstance(value, (tuple, list)):
        return [(str(i), v) for i, v in enumerate(value)]
    return None


def _traceable(value: Any) -> bool:
    """A tensor, or plain tuples of tensors: what a strict trace returns unchanged."""
    if isinstance(value, torch.Tensor):
        return True
    return type(value) is tuple and all(_traceable(v) for v in value)


def flatten_output(value: Any) -> tuple[Any, OutputLeaves]:
    """``value`` as the trace can return it, and what was done to it."""
    if _traceable(value):
        n = len(value) if isinstance(value, tuple) else 1
        return value, OutputLeaves([str(i) for i in range(n)], [], [], False)
    leaves: list[tuple[str, torch.Tensor]] = []
    dropped: list[tuple[str, str]] = []
    containers: list[str] = []

    def walk(item: Any, name: str) -> None:
        if isinstance(item, torch.Tensor):
            leaves.append((name, item))
            return
        parts = _children(item)
        if parts is None:
            dropped.append((name or "the output", type(item).__name__))
            return
        if type(item).__name__ not in containers:
            containers.append(type(item).__name__)
        for key, part in parts:
            walk(part, f"{name}.{key}" if name else key)

    walk(value, "")
    tensors = tuple(t for _, t in leaves)
    out = tensors[0] if len(tensors) == 1 else tensors
    return out, OutputLeaves([n for n, _ in leaves], dropped, containers, True)


class CallAdapter:
    """The model called with one :class:`ExampleInputs`, as a trace can take it.

    ``traceable`` is what ``torch.jit.trace`` gets (the model itself when nothing needs
    adapting), ``flat`` its positional inputs; after a call, ``outputs`` says what the
    model returned."""

    def __init__(self, obj: Any, inputs: ExampleInputs):
        self.obj = obj
        self.inputs = inputs
        self.flat = inputs.flat
        self.outputs: OutputLeaves | None = None
        self.traceable = self._make()

    @property
    def input_names(self) -> list[str]:
        """The names of the positional inputs' parameters, then the keywords."""
        return self.inputs.names(self.obj)

    def _forward(self) -> Callable:
        """The body of the stand-in ``forward``: unpack, call, flatten."""
        n_args = len(self.inputs.args)
        keys = list(self.inputs.kwargs)
        adapter = self

        def call(original: Callable, *flat):
            out = original(*flat[:n_args], **dict(zip(keys, flat[n_args:])))
            result, adapter.outputs = flatten_output(out)
            return result

        return call

    def _signature(self, with_self: bool) -> inspect.Signature:
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        names = (["self"] if with_self else []) + self.input_names
        return inspect.Signature([inspect.Parameter(n, kind) for n in names])

    def _make(self) -> Any:
        obj = self.obj
        call = self._forward()
        if isinstance(obj, torch.nn.Module):
            base = type(obj)

            def forward(self, *flat):
                return call(lambda *a, **k: base.forward(self, *a, **k), *flat)

            forward.__signature__ = self._signature(with_self=True)
            forward.__name__ = forward.__qualname__ = "forward"
            cls = type(base.__name__, (base,), {
                "forward": forward, "__module__": base.__module__,
                "__qualname__": base.__qualname__, "__doc__": base.__doc__})
            stand_in = object.__new__(cls)
            stand_in.__dict__ = obj.__dict__  # the same submodules, parameters and flags
            return stand_in

        def function(*flat):
            return call(obj, *flat)

        function.__signature__ = self._signature(with_self=False)
        for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
            if hasattr(obj, attr):
                setattr(function, attr, getattr(obj, attr))
        return function

    def __call__(self, inputs: ExampleInputs | None = None) -> Any:
        """Run the Python model on ``inputs`` (default: its own), outputs flattened."""
        flat = self.flat if inputs is None else inputs.flat
        return self.traceable(*flat)

    def notes(self) -> list[str]:
        """What was adapted, in words (nothing when nothing was)."""
        out = []
        if self.inputs.kwargs:
            out.append("keyword inputs " + ", ".join(self.inputs.kwargs)
                       + " are the trace's inputs "
                       + (f"{len(self.inputs.args) + 1}..{len(self.flat)}"
                          if self.inputs.args else "in that order")
                       + " (a trace takes positional inputs only)")
        leaves = self.outputs
        if leaves is not None and leaves.flattened:
            kinds = "/".join(leaves.containers) or "output"
            text = (f"the {kinds} output is traced as its tensors: "
                    + (", ".join(leaves.names) if leaves.names else "(none)"))
            if leaves.dropped:
                text += "; left out (not tensors): " + ", ".join(
                    f"{name} ({kind})" for name, kind in leaves.dropped)
            out.append(text)
        return out

