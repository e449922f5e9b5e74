"""What the script and the trace builders share: how a node's attributes, constants and
argument names are written, and a module path joined. (The walk order itself, shared with
the compiled run, is :mod:`irviz.frontends.graph_walk`.)"""
from __future__ import annotations

import torch

from ..frontends.graph_walk import schema_arg_names
from .model import constant_name, object_constant_label, tensor_info

__all__ = ["attr_repr", "class_name", "constant_label", "join_path", "node_arg_names"]


def class_name(obj) -> str:
    name = getattr(obj, "original_name", None)
    return name or type(obj).__name__


def join_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def attr_repr(node: torch._C.Node, name: str, limit: int | None = 80) -> str:
    """A node attribute as text, cut to ``limit`` characters (labels); ``None`` keeps it
    whole (the ``attributes`` data, written to JSON)."""
    kind = node.kindOf(name)
    if kind == "g":
        return "<subgraph>"
    try:
        value = getattr(node, kind)(name)
    except Exception:
        return f"<{kind}>"
    return _cut(value if isinstance(value, str) else _value_repr(value), limit)


def _cut(text: str, limit: int | None = 80) -> str:
    """``text`` cut to ``limit`` characters (None: whole)."""
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."


def _value_repr(value) -> str:
    """A constant's value on one line: a tensor of more than one element as its shape, in
    a list too (a frozen ``nn.LSTM``'s ``_flat_weights``; repr printed every weight)."""
    if isinstance(value, torch.Tensor):
        if value.numel() == 1:
            return repr(value.item())
        return f"tensor({'×'.join(map(str, value.shape))})"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        inner = ", ".join(_value_repr(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


#: the types of constants that are neither objects nor tensors: :func:`constant_label` of
#: one needs only its text
_PLAIN_CONSTANT_TYPES = frozenset({"int", "float", "bool", "str", "NoneType", "Device",
                                   "List[int]", "List[float]", "List[bool]", "List[str]"})


def constant_label(node: torch._C.Node, out=None, attributes: dict | None = None,
                   type_text: str | None = None) -> tuple[str, dict | None]:
    """A constant's label, and for a tensor of more than one element (a frozen weight, a
    trace's mask) its value record: named after its value (``layer1.conv1.weight (bn
    folded)``), shape and dtype from the tensor itself. Both builders use it; the trace
    builder passes what it read from torch already: ``out``, the node's output,
    ``attributes``, the node's attributes as whole texts (:func:`attr_repr`), and
    ``type_text``, the output's type as its record has it (most constants are numbers:
    torch is not asked again)."""
    if type_text in _PLAIN_CONSTANT_TYPES and attributes is not None:
        whole = attributes.get("value")
        return "None" if whole is None else _cut(whole), None
    out = node.output() if out is None else out
    if out.type().kind() == "ClassType":   # packed params, a prepacked context
        return object_constant_label(out.debugName(), out.type().annotation_str), None
    if attributes is None:
        whole = attr_repr(node, "value", None) if node.hasAttribute("value") else None
    else:
        whole = attributes.get("value")
    tensor = node.t("value") if whole is not None and node.kindOf("value") == "t" else None
    text = "None" if whole is None else _cut(whole)
    if tensor is None or tensor.numel() == 1:
        return text, None
    name = out.debugName()
    # a weight freezing made keeps its parameter's name; an unnamed tensor (a trace's
    # constant) reads as its shape, ``tensor(3×4)``, as before
    label = constant_name(name) if not name.split(".")[0].isdigit() else text
    return label, {**tensor_info(tensor), "type": "Tensor"}


def node_arg_names(node: torch._C.Node) -> list[str] | None:
    """Argument names from the operator schema, to label folded constants."""
    try:
        schema = node.schema()
    except RuntimeError:
        return None
    if schema == "(no schema)":
        return None
    return schema_arg_names(schema)
