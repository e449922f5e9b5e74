"""A trace without the TracedModule: the traced graph with the module calls each op ran in.

``torch.jit.trace`` turns every submodule call into a TracedModule method (an eighth of a
BERT capture's time, most of it on models with thousands of ops); a picture only needs the
graph and which call each op ran in. This traces the way TensorBoard's ``add_graph`` and
torch.onnx do (``_create_graph_by_tracing`` with the parameters and buffers as extra
inputs), numbering every submodule call in call order through
``torch.jit._trace._trace_module_map``. Where torch would open a scope block for a call,
a marker node records its entry and exit instead (torch's blocks are lifted and inlined
after the trace, a quarter of its time); read and removed after the trace, the markers give
each op the chain of calls it ran in (:attr:`TraceGraph.stacks`), so two calls of one
submodule stay two, and a call that records no op still has its place
(:attr:`TracedCall.anchor`). :mod:`irviz.ir.build_trace` draws it in the vocabulary
:mod:`irviz.ir.build` draws a TracedModule with.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

#: the attribute on the node recorded right before a marker of calls' boundaries (removed
#: once read)
_BEFORE = "irviz_before"

#: what the tracer inserts right after a value an op reads as a number, in that op's scope
#: (the graph build puts such a node where the value is made)
CONVERSIONS = frozenset({"aten::Int", "aten::Float", "aten::Bool", "aten::ScalarImplicit",
                         "aten::IntImplicit", "aten::FloatImplicit"})
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
    #: per node of :attr:`nodes`: the calls it ran in, outermost first (indices of
    #: :attr:`calls`)
    stacks: list[tuple[int, ...]] = field(default_factory=list)
    #: per node of :attr:`nodes`: its kind (read from torch once, here; the graph build
    #: reads them too)
    kinds: list[str] = field(default_factory=list)


def supported(obj: Any) -> bool:
    """An ``nn.Module`` that is not TorchScript itself; a ScriptModule (scripted or
    traced) inside it is refused by :func:`trace_graph` (:class:`Unsupported`), in the
    one walk of the module tree it makes: those keep their graphs (control flow, calls)
    only in the TracedModule route."""
    return isinstance(obj, torch.nn.Module) and not isinstance(obj, torch.jit.ScriptModule)


def _modules(root: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """``root.named_modules()`` as a list, walked without its recursive generators, and
    refusing a ScriptModule inside: the tree is walked once, for the calls' names and the
    state inputs (``named_modules``, ``named_parameters`` and ``named_buffers`` walked it
    three times, ~1 us per IR node of a stack of small blocks)."""
    found: list[tuple[str, torch.nn.Module]] = []
    seen: set[int] = set()
    todo = [("", root)]
    while todo:
        path, module = todo.pop()
        if id(module) in seen:
            continue
        if isinstance(module, torch.jit.ScriptModule):
            raise Unsupported(f"ScriptModule {path}")
        seen.add(id(module))
        found.append((path, module))
        prefix = f"{path}." if path else ""
        todo.extend(reversed([(prefix + name, child) for name, child
                              in module._modules.items() if child is not None]))
    return found


def _state(modules: list[tuple[str, torch.nn.Module]]) -> list[tuple[str, torch.Tensor]]:
    """``named_parameters()`` then ``named_buffers()`` (non-persistent buffers too: the
    TracedModule has them), each tensor once."""
    state: list[tuple[str, torch.Tensor]] = []
    seen: set[int] = set()
    for members in ("_parameters", "_buffers"):
        for path, module in modules:
            prefix = f"{path}." if path else ""
            for name, tensor in getattr(module, members).items():
                if tensor is not None and id(tensor) not in seen:
                    seen.add(id(tensor))
                    state.append((prefix + name, tensor))
    return state


class _CallNames(dict):
    """Each module call's index, handed out in call order (``get(module)``, once per call,
    as torch's ``_trace_module_map`` is read), and the markers of each call's entry and
    exit (:func:`_slow_forward`)."""

    def __init__(self, modules: list[tuple[str, torch.nn.Module]]):
        super().__init__()
        for name, module in modules:
            if name:
                dict.__setitem__(self, module, name)
        self.calls: list[TracedCall] = []
        self._open: list[int] = []
        #: per marker, in graph order: its node, whether the model's node before it was
        #: tagged (else it is the first node), and the boundaries it stands for: the call
        #: entered, or None for an exit
        self.markers: list[tuple[Any, bool, list[int | None]]] = []
        self.graph: torch._C.Graph | None = None
        self._end = None

    def get(self, module, default=None):
        path = dict.get(self, module)
        if path is None:
            return default
        index = len(self.calls)
        self.calls.append(TracedCall(path, module, self._open[-1] if self._open else None))
        return str(index)

    def enter(self, name: str) -> None:
        """Call ``name`` (its index) starts."""
        index = int(name)
        self._open.append(index)
        self._mark(index)

    def exit(self) -> None:
        """The innermost open call returns."""
        self._open.pop()
        self._mark(None)

    def _mark(self, call: int | None) -> None:
        """Record a boundary: on the last marker when the tracer recorded nothing since,
        else on a new ``prim::Print`` node (torch's passes keep it: it has an effect), with
        the node before it tagged (kept unless torch removes it as dead code)."""
        if self._end is None:
            self.graph = torch._C._get_tracing_state().graph()
            self._end = self.graph.return_node()
        last = self._end.prev()
        if self.markers and last is self.markers[-1][0]:
            self.markers[-1][2].append(call)
            return
        tagged = last.kind() != "prim::Param"
        if tagged:
            last.i_(_BEFORE, 1)
        marker = self.graph.create("prim::Print", 0)
        self.graph.insertNode(marker)
        self.markers.append((marker, tagged, [call]))


def _slow_forward(names: _CallNames, real):
    """Stands in for ``Module._slow_forward`` (what ``Module.__call__`` runs while tracing)
    while tracing here: the call's entry and exit leave markers instead of the scope torch
    would push. torch's scope blocks (a ``prim::TracedModuleForward`` node a call, lifted
    and inlined after the trace) made this trace of 25k IR nodes 1.27 s instead of 0.97 s.
    The method is replaced, not ``torch._C._get_tracing_state``: whatever torch imports
    during the trace sees a patched ``torch._C`` (dynamo's trace rules resolve that name
    once and then refuse the real function: a later ``torch.export`` of a cond failed)."""
    def slow_forward(module, *args, **kwargs):
        name = None if isinstance(module.forward, torch._C.ScriptMethod) else names.get(module)
        if name is None:
            return module.forward(*args, **kwargs)
        names.enter(name)
        try:
            return module.forward(*args, **kwargs)
        finally:
            names.exit()
    return slow_forward


def _read_markers(names: _CallNames, nodes: list) -> tuple[list, list[tuple]]:
    """The graph's nodes without the markers (destroyed), each one's stack of open calls,
    and each call's anchor (see :attr:`TracedCall.anchor`)."""
    markers = names.markers
    kept: list = []
    stacks: list[tuple] = []
    stack: tuple = ()
    m = 0
    start = 0   # where the nodes after the last marker start in ``kept``
    for node in nodes:
        if m < len(markers) and node is markers[m][0]:
            _, tagged, boundaries = markers[m]
            # the tagged node, unless torch removed it as dead code (None)
            here = _tagged(kept, start) if tagged else ("start", None)
            for call in boundaries:
                if call is None:
                    stack = stack[:-1]
                else:
                    names.calls[call].anchor = here
                    stack = stack + (call,)
                    here = ("call", call)
            node.destroy()
            start = len(kept)
            m += 1
            continue
        kept.append(node)
        stacks.append(stack)
    return kept, stacks


def _in_readers(nodes: list, stacks: list[tuple], conversions: list[int]) -> None:
    """A conversion the tracer put right after the value it converts, when an op read that
    value as a number, ran in that op's call (torch's scope said so), wherever it sits: it
    takes its reader's stack."""
    index = {id(node): i for i, node in enumerate(nodes)}
    for i in conversions:
        node = nodes[i]
        uses = node.output().uses()
        reader = index.get(id(uses[0].user)) if uses else None
        if reader is not None and _after_its_value(node):
            stacks[i] = stacks[reader]


def _after_its_value(node) -> bool:
    """The node follows its input's definition, or other conversions of that input."""
    value = node.inputsAt(0)
    made, before = value.node(), node.prev()
    while before is not made:
        if before.kind() not in CONVERSIONS or before.inputsAt(0).unique() != value.unique():
            return False
        before = before.prev()
    return True


def _tagged(kept: list, start: int) -> tuple | None:
    """``("node", i)`` of the node tagged before a marker, found from the marker back to
    the previous one: the tracer may have put a conversion after it since (an ``aten::Int``
    of a size read later), and torch may have removed it (dead code: None)."""
    for i in range(len(kept) - 1, start - 1, -1):
        if kept[i].hasAttribute(_BEFORE):
            kept[i].removeAttribute(_BEFORE)
            return ("node", i)
    return None


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

    modules = _modules(traceable)
    state = _state(modules)
    names = _CallNames(modules)
    forward = getattr(traceable, "forward")
    arg_names = torch.jit._trace.get_callable_argument_names(forward)
    previous = torch.jit._trace._trace_module_map
    torch.jit._trace._trace_module_map = names
    fork, slow_forward = torch.jit.fork, torch.nn.Module._slow_forward
    torch.jit.fork = _refuse_fork
    torch.nn.Module._slow_forward = _slow_forward(names, slow_forward)
    try:
        graph, _ = _create_graph_by_tracing(
            lambda *args: traceable(*args[:len(flat)]), list(flat) + [t for _, t in state],
            _create_interpreter_name_lookup_fn(0), strict, False, None,
            list(arg_names) + [n for n, _ in state])
    finally:
        torch.jit._trace._trace_module_map = previous
        torch.jit.fork, torch.nn.Module._slow_forward = fork, slow_forward
    nodes, stacks = _read_markers(names, list(graph.nodes()))
    conversions = []
    kinds = [node.kind() for node in nodes]
    for i, (node, kind) in enumerate(zip(nodes, kinds)):
        if kind in CONVERSIONS:
            conversions.append(i)
        if kind in _SCRIPTED_KINDS:
            raise Unsupported(kind)
        # only prim:: nodes hold blocks (an aten op never does): skip the iterator there
        if kind.startswith("prim::") and kind not in _BLOCKLESS \
                and any(True for _ in node.blocks()):
            raise Unsupported(f"{kind} with blocks")
    if conversions:
        _in_readers(nodes, stacks, conversions)
    return TraceGraph(graph, names.calls, len(flat), state, traceable, nodes, stacks, kinds)
