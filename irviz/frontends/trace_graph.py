"""A trace without the TracedModule: the traced graph with the module calls each op ran in.

``torch.jit.trace`` turns every submodule call into a TracedModule method (an eighth of a
BERT capture's time, most of it on models with thousands of ops); a picture only needs the
graph and which call each op ran in. This traces the way TensorBoard's ``add_graph`` and
torch.onnx do (``_create_graph_by_tracing`` with the parameters and buffers as extra
inputs), numbering every submodule call in call order through
``torch.jit._trace._trace_module_map``. Where torch would open a scope block for a call,
its entry and exit are noted against the nodes recorded so far instead (torch's blocks are
lifted and inlined after the trace, a quarter of its time); read after the trace, they give
each op the chain of calls it ran in (:attr:`TraceGraph.stacks`), so two calls of one
submodule stay two, and a call that records no op still has its place
(:attr:`TracedCall.anchor`). :mod:`irviz.ir.build_trace` draws it in the vocabulary
:mod:`irviz.ir.build` draws a TracedModule with.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

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
    #: beginning (when torch removed or replaced that node after the trace: the node it
    #: left before the call); set for every call by the walk after the trace
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
    #: the graph as a function (:meth:`run`), made the first time it runs
    _function: Any = field(default=None, repr=False)

    def run(self, flat: tuple) -> Any:
        """Run the traced graph on ``flat`` (the model's inputs, as traced) with the
        model's parameters and buffers, as its TracedModule would: lint runs the trace on
        every variant without making the TracedModule, a second ``torch.jit.trace`` (3.0 of
        lint's 36 s under cProfile on the transformers corpus; the outputs are equal bit
        for bit). The function runs a copy of the graph, so what draws the picture may
        annotate the graph itself."""
        if self._function is None:
            self._function = torch._C._create_function_from_graph("forward", self.graph.copy())
        return self._function(*flat, *(tensor for _, tensor in self.state))


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
    as torch's ``_trace_module_map`` is read), and the boundaries of the calls
    (:func:`_slow_forward`): per boundary the node recorded right before it, and per node
    the tracer appended the boundaries before it, read after the trace by :func:`_walk`."""

    def __init__(self, modules: list[tuple[str, torch.nn.Module]]):
        super().__init__()
        for name, module in modules:
            if name:
                dict.__setitem__(self, module, name)
        self.calls: list[TracedCall] = []
        self._open: list[int] = []
        #: per boundary, in order: the node recorded last before it (the graph's param node
        #: before any node) and the calls it stands for: the call entered, or None for an
        #: exit (boundaries with nothing recorded between them share one)
        self.boundaries: list[tuple[Any, list[int | None]]] = []
        #: each node appended while tracing: how many boundaries came before it
        self.segment: dict = {}
        self.param = None
        self._end = None
        self._last = None

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

    def close(self, result):
        """The traced function returns ``result``: number the nodes after the last
        boundary."""
        self._number(self._graph_end().prev())
        return result

    def _graph_end(self):
        """The traced graph's return node (the tracer appends before it)."""
        if self._end is None:
            graph = torch._C._get_tracing_state().graph()
            self._end, self.param = graph.return_node(), graph.param_node()
            self._last = self.param
        return self._end

    def _mark(self, call: int | None) -> None:
        """Record a boundary after the node recorded last; on the previous boundary when
        the tracer recorded nothing since. No node is inserted: marker nodes (a
        ``prim::Print`` a boundary, 45% more nodes on a stack of small blocks) went through
        all of torch's post-trace passes (dead code, tuples, lint): 7 us per IR node at
        100k nodes, as much as all of irviz's capture work beside the trace."""
        last = self._graph_end().prev()
        if last is self._last and self.boundaries:
            self.boundaries[-1][1].append(call)
            return
        self._number(last)
        self.boundaries.append((last, [call]))
        self._last = last

    def _number(self, node) -> None:
        """Number the nodes from ``node`` back to the previous boundary's node with the
        count of boundaries so far: after the trace, a boundary whose node torch removed
        as dead code still falls between the nodes recorded before and after it."""
        count, stop, param, segment = len(self.boundaries), self._last, self.param, self.segment
        while node is not stop and node is not param:
            segment[node] = count
            node = node.prev()


def _slow_forward(names: _CallNames, real):
    """Stands in for ``Module._slow_forward`` (what ``Module.__call__`` runs while tracing)
    while tracing here: the call's entry and exit are noted (:class:`_CallNames`) instead
    of the scope torch would push. torch's scope blocks (a ``prim::TracedModuleForward``
    node a call, lifted and inlined after the trace) made this trace of 25k IR nodes
    1.27 s instead of 0.97 s.
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


def _walk(names: _CallNames, graph) -> tuple[list, list[tuple], list[str]]:
    """The graph's nodes, each one's stack of open calls and each one's kind; each call
    gets its anchor (see :attr:`TracedCall.anchor`). A boundary falls right after its node
    and the conversions the tracer put after that node since (they ran before it, in the
    reading op's call: see :func:`_in_readers`); when torch removed that node (dead code),
    before the first node recorded after it. Nodes torch made after the trace (a tuple of
    the results, an op renamed to its canonical name) take the boundaries around them.
    Only the boundaries are visited one by one: the nodes are listed and their kinds read
    in comprehensions, the stacks filled a run of nodes at a time (a Python loop over
    every node: 1.70 us per IR node at 100k, this 1.37)."""
    nodes = list(graph.nodes())
    kinds = [node.kind() for node in nodes]
    _refuse_scripted(nodes, kinds)
    position = {node: i for i, node in enumerate(nodes)}
    segment, calls, param = names.segment, names.calls, names.param
    end = len(nodes)
    # past the last node numbered while tracing, the unnumbered ones were made after it
    last = end - 1
    while last >= 0 and (kinds[last] in CONVERSIONS or nodes[last] not in segment):
        last -= 1
    stacks: list[tuple] = []
    stack: tuple = ()
    for j, (node, entries) in enumerate(names.boundaries):
        at = -1 if node is param else position.get(node)
        if at is None:   # removed as dead code, or replaced (an op renamed after the trace)
            at = len(stacks)
            while at < end and (kinds[at] in CONVERSIONS or not (
                    at > last or segment.get(nodes[at], -1) > j)):
                at += 1
            here = ("node", at - 1) if at else ("start", None)
        else:
            here = ("node", at) if at >= 0 else ("start", None)
            at += 1
            while at < end and kinds[at] in CONVERSIONS \
                    and nodes[at].inputsAt(0).node() is node:
                at += 1
        if at > len(stacks):
            stacks.extend([stack] * (at - len(stacks)))
        for call in entries:
            if call is None:
                stack = stack[:-1]
            else:
                calls[call].anchor = here
                stack = stack + (call,)
                here = ("call", call)
    stacks.extend([stack] * (end - len(stacks)))
    return nodes, stacks, kinds


def _refuse_scripted(nodes: list, kinds: list[str]) -> None:
    """:class:`Unsupported` for scripted code inside the model: a scripted kind, or a node
    holding blocks (only prim:: nodes hold blocks: an aten op never does, so the blocks
    iterator is asked only there)."""
    present = set(kinds)
    for kind in present & _SCRIPTED_KINDS:
        raise Unsupported(kind)
    asked = {kind for kind in present if kind.startswith("prim::") and kind not in _BLOCKLESS}
    if not asked:   # most traces: no node to ask (a loop over every node for nothing)
        return
    for node, kind in zip(nodes, kinds):
        if kind in asked and any(True for _ in node.blocks()):
            raise Unsupported(f"{kind} with blocks")


def _in_readers(nodes: list, stacks: list[tuple], kinds: list[str]) -> None:
    """A conversion the tracer put right after the value it converts, when an op read that
    value as a number, ran in that op's call (torch's scope said so), wherever it sits: it
    takes its reader's stack."""
    index = {id(node): i for i, node in enumerate(nodes)}
    for i in (i for i, kind in enumerate(kinds) if kind in CONVERSIONS):
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
            lambda *args: names.close(traceable(*args[:len(flat)])),
            list(flat) + [t for _, t in state],
            _create_interpreter_name_lookup_fn(0), strict, False, None,
            list(arg_names) + [n for n, _ in state])
    finally:
        torch.jit._trace._trace_module_map = previous
        torch.jit.fork, torch.nn.Module._slow_forward = fork, slow_forward
    nodes, stacks, kinds = _walk(names, graph)
    if not CONVERSIONS.isdisjoint(kinds):
        _in_readers(nodes, stacks, kinds)
    return TraceGraph(graph, names.calls, len(flat), state, traceable, nodes, stacks, kinds)
