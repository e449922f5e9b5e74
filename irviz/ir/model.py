"""The IR graph's vocabulary: what irviz puts into its networkx DiGraph.

The graph is a ``networkx.DiGraph`` built by :mod:`irviz.ir.build`; one node
per TorchScript operation (every node of every block, method body and fork
subgraph, with method calls expanded in place), one edge per producer ->
consumer value use.

Node ids are stable and deterministic: they follow the position of the node
in its container, not TorchScript's ``%123`` debug names. ``n4`` is the fifth
node of the entry graph; ``n4/b1/n0`` the first node of block 1 of ``n4``
(a ``prim::If`` else-branch); ``n2/call/n3`` a node of the method that call
site ``n2`` invokes; ``n7/task/n0`` a node of the subgraph that fork ``n7``
runs. Graph inputs are ``in0, in1, ...``; the graph output is ``out``.

Node attributes (all JSON-serialisable):

``kind``         TorchScript kind (``aten::add``, ``prim::If``, ``prim::fork``);
                 graph inputs are ``prim::Param``, the graph output ``prim::Return``.
``label``        short display name (``add``, ``If``, ``x``).
``source``       ``file:line:col`` of the node (1-based column), or None.
``user_source``  innermost location outside torch's own files, or None.
``scope``        module path of the method the node is in (``""`` = root,
                 ``models.0.cell_f``); ``scope_class`` its class name.
``block``        id of the owning container (see below).
``subgraph_of``  id of the innermost ``prim::fork`` whose task contains the node.
``outputs``      list of ``{"name", "type", "shape", "dtype"}``, one per output; a compiled
                 run's record of a value in a loop adds ``runs`` (iterations) and, when
                 the shape changed, ``shapes_seen`` (``[shape, dtype, count]`` each).
``inputs``       producer ids of each input, in order (a list per input: an
                 ``If`` output has one producer per branch); module values
                 are ``"module:<path>"``.
``attributes``   TorchScript node attributes as strings (``value``, ``name``).
``captured``     for inputs produced by a ``prim::fork`` (a task's captured values): input
                 index (str) -> the caller's producers of that value.
``hidden``       True for nodes the picture folds into their consumers
                 (constants, ``prim::GetAttr`` of parameters, constant lists).
``code``         source line text for control-flow nodes (``if x.sum() > 0:``).
``trip_count``   for ``prim::Loop``: an int, or a description of the producer.
``task_returns`` for ``prim::fork``: producer ids of the task's result.
``carried``      for ``prim::Loop``: per carried value, ``{"init": producers before the
                 loop, "yield": producers at the end of the body}``.
``carried_from`` input index (str) -> ``[loop, carried index, "param" | "output"]`` for
                 inputs that are a loop-carried value (inside the body: the previous
                 iteration's; after the loop: the last one's). The graph stays a DAG; these
                 two keep the loop's back edge for the analyses that need it (fork/wait
                 pairing through loop-carried futures).
``output_names`` on ``out``, when a trace took the tensors out of a dict or ``ModelOutput``
                 (:mod:`irviz.frontends.adapters`): each returned tensor's name.
A call container's ``returns``: the producer ids of each value it returns; every
container's ``at``: how many nodes precede it in program order.

``torch.export`` graphs (``mode`` ``export``, :mod:`irviz.ir.build_export`) use the same
attributes: kinds are the OpOverload's name (``aten::add.Tensor``), the higher-order ops
``higher_order::cond`` / ``while_loop`` / ``scan`` / ``map`` own their bodies as containers
``cond.true`` / ``cond.false``, ``while.cond`` / ``while.body``, ``scan.body``, ``map.body``;
parameters are hidden ``prim::GetAttr`` nodes ``p0…``, literal arguments hidden
``prim::Constant`` s; module calls are ``method`` containers ``c0/call`` from the
``nn_module_stack``; a symbolic size is its symbol (``"s77"``) in ``shape``; the graph has
``range_constraints`` (symbol -> range).

Graph attributes: ``name``, ``mode`` (``script``/``trace``/``archive``/``export``),
``root_class``, ``source_file``, ``inputs`` / ``outputs`` (node ids) and
``blocks``: container id -> ``{"kind", "parent", "owner", "label", ...}``.
Container kinds: ``graph`` (the entry graph, id ``root``), ``method`` and
``function`` (an expanded call; ``module``, ``class``, ``method``,
``call_site``, ``depth``), ``if.then`` / ``if.else``, ``loop.body``,
``fork.task`` and ``await.task`` (owner = the If/Loop/fork node), and export's
higher-order bodies above (owner = the higher-order op's node).
"""
from __future__ import annotations

import re

import torch

_MANGLE = re.compile(r"___torch_mangle_\d+\.")


def demangle(type_name: str) -> str:
    """Drop TorchScript's per-process ``___torch_mangle_N.`` (keeps output deterministic)."""
    return _MANGLE.sub("", type_name) if "___torch_mangle_" in type_name else type_name


#: torch.export's higher-order ops drawn with their bodies -> the bodies' container kinds
HIGHER_ORDER_BODIES = {
    "higher_order::cond": ("cond.true", "cond.false"),
    "higher_order::while_loop": ("while.cond", "while.body"),
    "higher_order::scan": ("scan.body",),
    "higher_order::map": ("map.body",),
}
CONTAINER_KINDS = ("graph", "method", "function", "if.then", "if.else",
                   "loop.body", "fork.task", "await.task",
                   *(k for kinds in HIGHER_ORDER_BODIES.values() for k in kinds))
CALL_KINDS = ("method", "function")
TASK_KINDS = ("fork.task", "await.task")
BRANCH_KINDS = ("if.then", "if.else")
LOOP_BODY = "loop.body"
#: every container that is one branch of a choice (TorchScript ``if``, export ``cond``), and
#: every body a loop runs again (``prim::Loop``; ``while_loop``, ``scan``, ``map``)
CHOICE_BODIES = ("if.then", "if.else", "cond.true", "cond.false")
LOOP_BODIES = ("loop.body", "while.cond", "while.body", "scan.body", "map.body")

#: op kinds that start an asynchronous task, and the ones that wait for its result
FORK_KINDS = ("prim::fork", "prim::awaitable")
WAIT_KINDS = ("aten::wait", "prim::awaitable_wait")
#: op kinds that own blocks
IF_KIND, LOOP_KIND = "prim::If", "prim::Loop"
#: op kinds that choose one of their blocks, and the ones that run a block repeatedly
CHOICE_KINDS = (IF_KIND, "higher_order::cond")
LOOP_KINDS = (LOOP_KIND, "higher_order::while_loop", "higher_order::scan", "higher_order::map")
#: node kinds that only carry a value into their consumers (``optimize_for_inference``
#: turns frozen weights into MKLDNN constants)
CONSTANT_KINDS = ("prim::Constant", "prim::ConstantMKLDNNTensor")

#: readable names of the ops freezing and the inference/mobile optimizations put in
OPTIMIZED_OP_LABELS = {
    "prim::mkldnn_convolution": "conv (mkldnn)",
    "aten::mkldnn_convolution": "conv (mkldnn)",
    "aten::to_mkldnn": "to mkldnn layout",
    "aten::to_dense": "to dense layout",
    "prim::BroadcastMKLDNNTensors": "broadcast (mkldnn)",
    "prim::MKLDNNGroup": "mkldnn group",
    "prim::MKLDNNHardSwish": "hardswish (mkldnn)",
    "prim::MKLDNNHardSigmoid": "hardsigmoid (mkldnn)",
    "prim::MKLDNNHardTanh": "hardtanh (mkldnn)",
    "prim::MKLDNNLayerNorm": "layer_norm (mkldnn)",
    "prim::MKLDNNScalarMul": "mul (mkldnn)",
    "prepacked::conv2d_clamp_run": "conv2d (prepacked, clamp)",
    "prepacked::conv2d_transpose_clamp_run": "conv_transpose2d (prepacked, clamp)",
    "prepacked::linear_clamp_run": "linear (prepacked, clamp)",
    "prepacked::conv2d_clamp_prepack": "prepack conv2d",
    "prepacked::linear_clamp_prepack": "prepack linear",
    "prim::linear_prepack": "prepack linear",
    "prim::conv2d_prepack": "prepack conv2d",
    "quantized::linear_dynamic": "linear (dynamic quantized)",
}


def constant_name(debug_name: str) -> str:
    """A frozen weight's label from its value name: ``self.layer1.conv1.weight_fused_bn.1``
    -> ``layer1.conv1.weight (bn folded)``; ``..._mkldnn`` -> ``(mkldnn)``."""
    name = debug_name.removeprefix("self.")
    notes = []
    if name.endswith("_mkldnn"):
        name, notes = name[:-len("_mkldnn")], ["mkldnn"]
    while "." in name and name.rsplit(".", 1)[-1].isdigit():  # TorchScript's .1 suffixes
        name = name.rsplit(".", 1)[0]
    if "_fused_bn" in name:
        name = name.replace("_fused_bn", "")
        notes.insert(0, "bn folded")
    if not name or name.isdigit():   # a weight a pass made (linear's transposed weight)
        name = "constant"
    return name + (f" ({', '.join(notes)})" if notes else "")

def object_constant_label(debug_name: str, type_name: str) -> str:
    """A constant object's label: what freezing a quantized model or ``optimize_for_mobile``
    folds (packed weights, an XNNPACK op context) is named by its attribute
    (``fc1._packed_params``; the consumer's argument says it is packed: ``W_prepack=``), an
    unnamed one by its class (``Conv2dOpContext``), never by its address in memory."""
    cls = type_name.rsplit(".", 1)[-1]
    name = constant_name(debug_name) if not debug_name.split(".")[0].isdigit() else ""
    parts = name.split(".")
    if len(parts) > 1 and parts[-1] == parts[-2]:   # fc1._packed_params._packed_params
        parts.pop()
    name = ".".join(parts)
    return name if name and name != "constant" else cls


_DTYPES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
    "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
}


def value_info(value: torch._C.Value) -> dict:
    """Type, shape and dtype of a TorchScript value (shape/dtype None when unknown)."""
    ty = value.type()
    shape = dtype = None
    if ty.kind() == "TensorType":
        try:
            sizes = ty.sizes()
        except RuntimeError:
            sizes = None
        shape = list(sizes) if sizes is not None else None
        scalar = ty.scalarType()
        dtype = _DTYPES.get(scalar, scalar.lower()) if scalar else None
        text = "Tensor"  # its annotation_str, whatever it knows (not asked: a C++ call)
    else:
        text = getattr(ty, "annotation_str", None)  # a property: computed on every read
        text = demangle(str(ty) if text is None else text)
    name = value.debugName()
    return {"name": name.split(".")[0] if name and not name[0].isdigit() else None,
            "type": text, "shape": shape, "dtype": dtype}


#: the packages whose modules are torch's own layers
_LIBRARY_MODULES = ("torch.nn.", "torch.ao.nn.")   # torch.ao.nn: quantized, intrinsic, qat


def is_library_call(info: dict) -> bool:
    """A call container (``G.graph["blocks"][cid]``) of a module torch itself defines
    (``torch.nn``, and ``torch.ao.nn``'s quantized and fused modules; a ``torch.nn.functional``
    function too), drawn as one box by default and reported as one entry by a diff - but
    not the containers (Sequential, ModuleList, ModuleDict), which hold the user's own
    modules."""
    qual = (info.get("qualified_type") or "").removeprefix("__torch__.")
    if qual.startswith("torch.nn.modules.container."):
        return False
    return qual.startswith(_LIBRARY_MODULES)


def is_folded(data: dict, show_checks: bool = False) -> bool:
    """True for nodes the pictures fold into their consumers instead of drawing: the
    builder's ``hidden`` constants, the integer shape arithmetic that
    :mod:`irviz.analyses.shape_arithmetic` marks with ``irviz.shape_expr`` and, unless
    ``show_checks``, the validation :mod:`irviz.analyses.validation` marks with
    ``irviz.check_part``."""
    return bool(data.get("hidden")) or "irviz.shape_expr" in data or (
        not show_checks and "irviz.check_part" in data)


def constant_label(G, producers: list[str]) -> str | None:
    """The text of an input fed by one ``prim::Constant`` (``3``, ``True``), else None."""
    if len(producers) != 1 or producers[0] not in G:
        return None
    data = G.nodes[producers[0]]
    return data["label"] if data["kind"] in CONSTANT_KINDS else None


def returned_shape(G, call: str) -> str | None:
    """``1×256×200×200 float32``: what a method/function call returns (its first value),
    from the shapes of the nodes that produce it; ``?`` when it returns a tensor whose
    shape is unknown although the picture has shapes (its inputs'); None when the picture
    has none (no example inputs) or the call returns no tensor.

    A value returned from an ``if`` has one producer per branch: the branch that ran has
    a shape, the other none, so the known shapes must agree; a recorded run says what the
    ``if`` returned (``returned``), whichever producers ran, and a call inside an ``if``
    block or loop body that did not run returns nothing (None: an ``nn.Identity`` there
    would show the shape of its input, which ran before)."""
    blocks = G.graph["blocks"]
    info = blocks.get(call, {})
    block = info.get("parent")
    while block is not None:   # a call in a branch the recorded run did not take
        if blocks[block].get("runs") == 0:
            return None
        block = blocks[block]["parent"]
    if info.get("returned") is not None:
        return format_shape(info["returned"])
    returns = info.get("returns")
    if not returns or not returns[0]:
        return None
    shapes, tensor = set(), False
    for producer in returns[0]:
        outputs = G.nodes[producer]["outputs"] if producer in G else []
        if len(outputs) != 1:
            # which output is returned is not kept; when every one is a tensor of one
            # shape (``q, k, v = qkv.unbind(0)``), it is that shape
            texts = {format_shape(o) if o.get("shape") is not None else None
                     for o in outputs}
            if outputs and len(texts) == 1 and None not in texts \
                    and all(o.get("type") == "Tensor" for o in outputs):
                tensor = True
                shapes |= texts
            continue
        tensor |= outputs[0].get("type") == "Tensor"
        text = format_shape(outputs[0]) if outputs[0].get("shape") is not None else None
        if text:
            shapes.add(text)
    if len(shapes) == 1:
        return shapes.pop()
    known = any(o.get("shape") is not None for n in G.graph.get("inputs", ()) if n in G
                for o in G.nodes[n]["outputs"])
    return "?" if tensor and (shapes or known) else None


def tensor_info(tensor: torch.Tensor, name: str | None = None) -> dict:
    """The same record for a real tensor (example inputs, parameters)."""
    dtype = _DTYPE_NAMES.get(tensor.dtype)
    if dtype is None:
        dtype = _DTYPE_NAMES[tensor.dtype] = str(tensor.dtype).replace("torch.", "")
    return {"name": name, "type": "Tensor", "shape": list(tensor.shape), "dtype": dtype}


#: torch dtype -> its name in a record (``float32``), as it is first met (a parameter each)
_DTYPE_NAMES: dict[torch.dtype, str] = {}


def format_shape(info: dict) -> str | None:
    """``3×4 float32`` style text for a value record, or None if unknown. A value a loop
    computed once per iteration (a compiled run's record): ``3×4 float32 ×10``, and when its
    shape changed, the first and the last: ``1×4…10×4 float32 ×10``."""
    shape, dtype = info.get("shape"), info.get("dtype")
    if shape is None and dtype is None and not info.get("shapes_seen"):
        return None
    seen = info.get("shapes_seen")
    if seen and len(seen) > 1:
        dims = f"{_dims(seen[0][0])}…{_dims(seen[-1][0])}"
    else:
        dims = _dims(shape)
    text = f"{dims} {dtype}" if dtype else dims
    runs = info.get("runs")
    return f"{text} ×{runs}" if runs and runs > 1 else text


def _dims(shape: list | None) -> str:
    if shape is None:
        return "?"
    if shape == []:
        return "scalar"
    return "×".join("?" if d is None else str(d) for d in shape)
