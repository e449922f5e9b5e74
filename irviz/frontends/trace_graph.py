"""A trace without the TracedModule: the traced graph with each op's module call in its scope.

``torch.jit.trace`` turns every submodule call into a TracedModule method (an eighth of a
BERT capture's time, most of it on models with thousands of ops); a picture only needs the
graph and which call each op ran in. This traces the way TensorBoard's ``add_graph`` and
torch.onnx do (``_create_graph_by_tracing`` with the parameters and buffers as extra
inputs), naming every submodule call by its position in the call order through
``torch.jit._trace._trace_module_map``: an op's ``scopeName()`` is then the chain of calls
it ran in (``"0/3"``), so two calls of one submodule stay two, and a call that records no
op still has its place (:attr:`TracedCall.anchor`). :mod:`irviz.ir.build_trace` draws it in
the vocabulary :mod:`irviz.ir.build` draws a TracedModule with.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

#: the attribute a call's anchor is written on (removed once read)
_ANCHOR = "irviz_calls"

#: node kinds a trace of plain Python modules never has: scripted code inside the model
#: (a ScriptFunction called, a fork, control flow) is drawn by the TracedModule route
_SCRIPTED_KINDS = frozenset({"prim::CallFunction", "prim::CallMethod", "prim::fork",
                             "prim::awaitable", "prim::If", "prim::Loop",
                             "prim::TracedFork", "prim::TracedModuleForward"})
#: the prim:: kinds a trace is made of, none of which ever holds a block: the blocks check
#: skips them (asking torch costs ~8 us a node: its iterator ends in an exception; on
#: GPT-2's 1,528 prim nodes the check took 12.4 ms, now 0.3 ms)
_BLOCKLESS = frozenset({"prim::Constant", "prim::ListConstruct", "prim::ListUnpack",
                        "prim::TupleConstruct", "prim::TupleUnpack", "prim::NumToTensor",
                        "prim::GetAttr", "prim::device", "prim::dtype"})


class Unsupported(Exception):
    """The model holds something this route cannot draw as the TracedModule route would."""


@dataclass
class TracedCall:
    """One call of a submodule while tracing, in call order."""

    path: str
    module: Any
    #: the enclosing call's index, None for a call from the root's forward
    parent: int | None
    #: what ran last before the call: ``("node", i)`` the i-th node of the flat graph,
    #: ``("call", j)`` call j opened and recorded nothing since, ``("start", None)`` the
    #: beginning, None when torch removed that node (dead code)
    anchor: tuple | None = None


@dataclass
class TraceGraph:
    """The inlined traced graph, its calls, and which graph inputs are the model's state."""

    graph: torch._C.Graph
    calls: list[TracedCall]
    #: graph inputs that are the model's own (the rest are its parameters and buffers)
    n_inputs: int
    #: ``(path, tensor)`` of each state input, in graph order
    state: list[tuple[str, torch.Tensor]]
    #: the traced module (the adapter's stand-in when inputs needed adapting)
    root: Any
    nodes: list = field(default_factory=list)


def supported(obj: Any) -> bool:
    """A plain ``nn.Module`` tree: no ScriptModule (scripted or traced) anywhere in it;
    those keep their graphs (control flow, calls) only in the TracedModule route."""
    if not isinstance(obj, torch.nn.Module) or isinstance(obj, torch.jit.ScriptModule):
        return False
    return not any(isinstance(m, torch.jit.ScriptModule) for m in obj.modules())


class _CallNames(dict):
    """``_trace_module_map`` handing out each call's index as its scope name: the tracer
    reads ``get(module)`` once per call (``Module._slow_forward``)."""

    def __init__(self, root: torch.nn.Module):
        super().__init__()
        for name, module in root.named_modules(remove_duplicate=False):
            if name and module not in self:
                dict.__setitem__(self, module, name)
        self.calls: list[TracedCall] = []
        self._open: list[int] = []

    def get(self, module, default=None):
        path = dict.get(self, module)
        if path is None:
            return default
        state = torch._C._get_tracing_state()
        index = len(self.calls)
        call = TracedCall(path, module, None, None)
        call.anchor = _mark_last(state.graph(), index)
        scope = state.current_scope() if hasattr(state, "current_scope") else None
        call.parent = _parent_of(scope)
        self.calls.append(call)
        return str(index)


def _parent_of(scope) -> int | None:
    text = scope if isinstance(scope, str) else ""
    last = text.rsplit("/", 1)[-1]
    return int(last) if last.isdigit() else None


def _mark_last(graph: torch._C.Graph, index: int) -> tuple:
    """Where call ``index`` starts: after the last node recorded so far (marked with an
    attribute that inlining copies), or right after an enclosing or earlier call that
    recorded nothing yet."""
    node = graph.return_node().prev()
    while True:
        if node.kind() == "prim::Param":
            owner = node.owningBlock().owningNode()
            if owner is None:
                return ("start", None)
            return ("call", int(owner.s("scope").rsplit("/", 1)[-1]))
        if node.kind() == "prim::TracedModuleForward":
            block = next(iter(node.blocks()))
            node = block.returnNode().prev()
            continue
        marks = node.s(_ANCHOR) if node.hasAttribute(_ANCHOR) else ""
        node.s_(_ANCHOR, f"{marks},{index}" if marks else str(index))
        return ("pending", None)


def _create_graph_by_tracing(*args):
    """torch's tracer; a TorchScript object the model holds (quantized packed weights) is
    traceable only as a TracedModule attribute: that model takes the TracedModule route."""
    try:
        return torch._C._create_graph_by_tracing(*args)
    except RuntimeError as exc:
        if "not part of the active trace" in str(exc):
            raise Unsupported(str(exc).splitlines()[0]) from None
        raise


def _refuse_fork(*args, **kwargs):
    """``torch.jit.fork`` while tracing here: a traced fork is drawn by the TracedModule
    route, so the trace stops at the first one instead of running the whole model for a
    graph that would be refused (the traced LSTM ensemble traced twice: 150 ms)."""
    raise Unsupported("prim::fork")


def trace_graph(traceable: Any, flat: tuple, strict: bool) -> TraceGraph:
    """Trace ``traceable(*flat)`` into one inlined graph (see the module docstring)."""
    from torch.jit._trace import _create_interpreter_name_lookup_fn

    state: list[tuple[str, torch.Tensor]] = []
    seen: set[int] = set()
    for name, tensor in list(traceable.named_parameters()) + list(traceable.named_buffers()):
        if id(tensor) not in seen:  # non-persistent buffers too: the TracedModule has them
            seen.add(id(tensor))
            state.append((name, tensor))
    names = _CallNames(traceable)
    forward = getattr(traceable, "forward")
    arg_names = torch.jit._trace.get_callable_argument_names(forward)
    previous = torch.jit._trace._trace_module_map
    torch.jit._trace._trace_module_map = names
    fork = torch.jit.fork
    torch.jit.fork = _refuse_fork
    try:
        graph, _ = _create_graph_by_tracing(
            lambda *args: traceable(*args[:len(flat)]), list(flat) + [t for _, t in state],
            _create_interpreter_name_lookup_fn(0), strict, False, None,
            list(arg_names) + [n for n, _ in state])
    finally:
        torch.jit._trace._trace_module_map = previous
        torch.jit.fork = fork
    nodes = list(graph.nodes())
    for i, node in enumerate(nodes):
        kind = node.kind()
        if kind in _SCRIPTED_KINDS:
            raise Unsupported(kind)
        # only prim:: nodes hold blocks (an aten op never does): skip the iterator there
        if kind.startswith("prim::") and kind not in _BLOCKLESS \
                and any(True for _ in node.blocks()):
            raise Unsupported(f"{kind} with blocks")
        if node.hasAttribute(_ANCHOR):
            for index in node.s(_ANCHOR).split(","):
                names.calls[int(index)].anchor = ("node", i)
            node.removeAttribute(_ANCHOR)
    for call in names.calls:
        if call.anchor == ("pending", None):
            call.anchor = None  # its node was removed as dead code
    return TraceGraph(graph, names.calls, len(flat), state, traceable, nodes)
