"""Runtime shapes of compiled code: an archive, a ScriptModule or a ScriptFunction run on its
example inputs, every tensor value recorded where it ran.

An archive has no Python to run eagerly, and TorchScript's own shape passes recover little
(the profiling executor mapped back 0-5 of 14-33 values on small models; complete shape
analysis fails on an LSTM: ``compiled-code-facts``). So irviz runs the code itself, on a copy:

* each graph is copied, and after every value of type ``Tensor`` / ``Optional[Tensor]`` a
  recording op ``irviz_probe::rec(x, id)`` is inserted. It is a ``torch.library`` op with
  *conservative* alias analysis: TorchScript treats it as having side effects, so no pass
  drops or moves it, and the values it reads stay as they were;
* the copy is walked in :mod:`irviz.frontends.graph_walk`'s order, the order the builder names
  nodes in (``n2/call/n3``), so record ``id`` is the slot ``(node id, output index)``. Calls
  are inlined by hand (``Graph.insertGraph`` of an instrumented copy of the callee), and a
  fork's subgraph gets its own instrumented copy: ``torch._C._jit_pass_inline`` would lose
  the positions, and leaves fork subgraphs untouched;
* the copy runs as a new function (``torch._C._create_function_from_graph``) with the
  user's module as ``self``, under ``no_grad``. The user's graphs are never edited, and the
  module is only read (a model that mutates its own state in ``forward`` would do so on any
  run, as irviz's input check does today).

A value inside a loop is recorded once per iteration: the run keeps, per slot, each distinct
``(shape, dtype)`` in the order first seen, with its count. A branch that did not run
records nothing.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from .graph_walk import (MAX_CALL_DEPTH, child, find_function, function_units, ins,
                             method_graph, nodes_of, outs)
from .inputs import ExampleInputs

__all__ = ["CompiledRun", "Instrumented", "Seen", "instrument", "positional_inputs",
           "run_compiled"]

_OP = "irviz_probe::rec"
_LIBRARY = None
#: the run being recorded (forked tasks record from the interpreter's worker threads)
_SINK: list | None = None
#: one recorded run at a time in a process: the sink is global for the worker threads
_RUN_LOCK = threading.Lock()


def _record(x, id: int) -> None:  # noqa: A002 - the schema's argument name
    sink = _SINK
    if sink is not None and x is not None:
        sink.append((id, tuple(x.shape), x.dtype))


def _define_op() -> None:
    """Declare ``irviz_probe::rec`` once per process."""
    global _LIBRARY
    if _LIBRARY is not None:
        return
    library = torch.library.Library("irviz_probe", "DEF")
    library.define("rec(Tensor? x, int id) -> ()", alias_analysis="CONSERVATIVE")
    # CompositeImplicitAutograd: one Python kernel for every backend and layout (dense,
    # mkldnn, quantized), above autograd
    library.impl("rec", _record, "CompositeImplicitAutograd")
    _LIBRARY = library


@dataclass
class Seen:
    """What one value took at run time: each distinct ``(shape, dtype)`` in the order first
    seen, with how many times (a loop's iterations)."""

    shapes: list[tuple[tuple[int, ...], str, int]] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return sum(count for _, _, count in self.shapes)


@dataclass
class CompiledRun:
    """The recorded run: ``values[(node id, output index)]`` for every tensor that ran."""

    values: dict[tuple[str, int], Seen] = field(default_factory=dict)
    #: how many tensor values the copy records at most (values in untaken branches included)
    slots: int = 0
    #: the instrumentation's one-off cost, and the recorded run's, in seconds
    instrument_s: float = 0.0
    run_s: float = 0.0
    #: why nothing was recorded (the instrumented copy did not run), or None
    error: str | None = None


def _is_tensor(value) -> bool:
    ty = value.type()
    kind = ty.kind()
    if kind == "TensorType":
        return True
    return kind == "OptionalType" and ty.getElementType().kind() == "TensorType"


def _may_be_uninitialized(value, depth: int = 0) -> bool:
    """A value TorchScript's early-exit rewrite leaves uninitialized on a path that returned
    or raised (``prim::Uninitialized``, or an ``if``/loop output one of whose blocks yields
    one): reading it from Python fails, so it is not recorded."""
    node = value.node()
    kind = node.kind()
    if kind == "prim::Uninitialized":
        return True
    if kind not in ("prim::If", "prim::Loop") or depth > 20:
        return False
    index = value.offset() + (1 if kind == "prim::Loop" else 0)   # a loop body yields cond first
    for block in node.blocks():
        yielded = block.returnNode().inputsAt(index)
        if _may_be_uninitialized(yielded, depth + 1):
            return True
    return False


class _Instrumenter:
    """Inserts the recording ops into copies of the graphs, in the builder's walk."""

    def __init__(self, archive_unit):
        self.units = function_units(archive_unit)
        #: record id -> (node id, output index)
        self.slots: list[tuple[str, int]] = []

    def graph(self, g, prefix: str, modules: dict, depth: int) -> None:
        self._nodes(g, nodes_of(g.return_node()), prefix, modules, depth)

    def _nodes(self, g, nodes: list, prefix: str, modules: dict, depth: int) -> None:
        for i, node in enumerate(nodes):  # listed before any insertion: positions hold
            self._node(g, node, f"{prefix}n{i}", modules, depth)

    def _node(self, g, node, nid: str, modules: dict, depth: int) -> None:
        kind = node.kind()
        if kind == "prim::GetAttr":  # a parameter's shape is known without running
            owner = modules.get(node.input().unique())
            if owner is not None:
                found = child(owner, node.s("name"))
                if isinstance(found, torch.jit.ScriptModule):
                    modules[node.output().unique()] = found
            return
        if kind == "prim::CallMethod":
            target = modules.get(node.inputsAt(0).unique())
            callee = method_graph(target, node.s("name")) if target is not None else None
            if callee is not None and depth < MAX_CALL_DEPTH:
                callee = callee.copy()
                self.graph(callee, f"{nid}/call/", {callee.param_node().outputsAt(0).unique():
                                                    target}, depth + 1)
                self._inline(g, node, callee, ins(node))
                return
        elif kind == "prim::CallFunction":
            callee = self._function(node.inputsAt(0))
            if callee is not None and depth < MAX_CALL_DEPTH:
                callee = callee.copy()
                self.graph(callee, f"{nid}/call/", {}, depth + 1)
                self._inline(g, node, callee, ins(node)[1:])
                return
        elif kind in ("prim::If", "prim::Loop"):
            for k, block in enumerate(node.blocks()):
                self._nodes(g, nodes_of(block.returnNode()), f"{nid}/b{k}/", modules, depth)
        elif kind in ("prim::fork", "prim::awaitable"):
            task = node.g("Subgraph").copy()
            task_modules = {param.unique(): modules[arg.unique()]
                            for param, arg in zip(outs(task.param_node()), ins(node))
                            if arg.unique() in modules}
            self.graph(task, f"{nid}/task/", task_modules, depth)
            node.g_("Subgraph", task)
        self._record_outputs(g, node, nid)

    def _function(self, value):
        if value.node().kind() != "prim::Constant" or value.type().kind() != "FunctionType":
            return None
        name = value.type().annotation_str
        for unit in self.units:
            fn = find_function(unit, name)
            if fn is not None:
                return fn.graph
        return None

    @staticmethod
    def _inline(g, call, callee, args: list) -> None:
        """Replace ``call`` by the (instrumented) body of its callee."""
        with g.insert_point_guard(call):
            results = g.insertGraph(callee, args)
        for old, new in zip(outs(call), results):
            old.replaceAllUsesWith(new)
        call.destroy()

    def _record_outputs(self, g, node, nid: str) -> None:
        anchor = node
        for index, value in enumerate(outs(node)):
            if not _is_tensor(value) or _may_be_uninitialized(value):
                continue
            const = g.create("prim::Constant")
            const.i_("value", len(self.slots))
            const.output().setType(torch._C.IntType.get())
            rec = g.create(_OP, [value, const.output()], 0)
            const.insertAfter(anchor)
            rec.insertAfter(const)
            anchor = rec
            self.slots.append((nid, index))


@dataclass
class Instrumented:
    """An instrumented copy of a compiled model's entry, ready to run (again: a benchmark
    times its warm runs)."""

    compiled: Any
    function: Any
    #: record id -> (node id, output index)
    slots: list[tuple[str, int]]
    instrument_s: float

    def run(self, args: list) -> CompiledRun:
        """One recorded run under ``no_grad``. The model's own errors come back as
        :attr:`CompiledRun.error`."""
        global _SINK
        sink: list = []
        start = time.perf_counter()
        with _RUN_LOCK:
            _SINK = sink
            try:
                with torch.no_grad():
                    if isinstance(self.compiled, torch.jit.ScriptModule):
                        self.function(self.compiled._c, *args)
                    else:
                        self.function(*args)
            except Exception as exc:  # noqa: BLE001 - the model's own error, told by the caller
                lines = str(exc).strip().splitlines()
                return CompiledRun(slots=len(self.slots),
                                   error=f"{type(exc).__name__}: {lines[-1] if lines else ''}")
            finally:
                _SINK = None
        ran = time.perf_counter() - start
        return CompiledRun(values=_collect(sink, self.slots), slots=len(self.slots),
                           instrument_s=self.instrument_s, run_s=ran)


def instrument(compiled: Any, archive_unit=None, entry: str = "forward") -> Instrumented:
    """An instrumented copy of ``compiled`` (a ScriptModule's ``forward`` or a
    ScriptFunction); ``archive_unit``: an archive's compilation unit, where its functions
    are. The user's graphs are only copied."""
    start = time.perf_counter()
    is_module = isinstance(compiled, torch.jit.ScriptModule)
    copy = (compiled.graph if entry == "forward" else compiled._c._get_method(entry).graph).copy()
    instrumenter = _Instrumenter(archive_unit)
    modules = {copy.param_node().outputsAt(0).unique(): compiled} if is_module else {}
    _define_op()
    instrumenter.graph(copy, "", modules, 0)
    function = torch._C._create_function_from_graph("irviz_recorded_forward", copy)
    return Instrumented(compiled, function, instrumenter.slots, time.perf_counter() - start)


def positional_inputs(compiled: Any, inputs: ExampleInputs, entry: str = "forward") -> list:
    """The example inputs in the graph's order, keyword inputs placed by name and the
    schema's defaults filled in (a function made from a graph has no defaults: nn.LSTM's
    ``hx=None``)."""
    is_module = isinstance(compiled, torch.jit.ScriptModule)
    schema = compiled._c._get_method(entry).schema if is_module else compiled.schema
    params = list(schema.arguments)[int(is_module):]
    args = list(inputs.args)
    for param in params[len(args):]:
        if param.name in inputs.kwargs:
            args.append(inputs.kwargs[param.name])
        elif param.has_default_value():
            args.append(param.default_value)
        else:
            break
    return args


def run_compiled(compiled: Any, inputs: ExampleInputs, archive_unit=None,
                 entry: str = "forward") -> CompiledRun:
    """Run an instrumented copy of ``compiled`` on ``inputs`` and return what every tensor
    value was. Never raises: what went wrong comes back as :attr:`CompiledRun.error` (the
    caller checks the inputs on the real model, to tell them in the model's terms)."""
    try:
        instrumented = instrument(compiled, archive_unit, entry)
    except Exception as exc:  # noqa: BLE001 - an IR form the instrumentation does not know
        return CompiledRun(error=f"the compiled code could not be instrumented "
                                 f"({type(exc).__name__}: {str(exc).strip().splitlines()[0]})")
    return instrumented.run(positional_inputs(compiled, inputs, entry))


def _collect(sink: list, slots: list[tuple[str, int]]) -> dict[tuple[str, int], Seen]:
    counts: dict[int, dict[tuple, int]] = {}
    for rid, shape, dtype in sink:
        seen = counts.setdefault(rid, {})
        key = (shape, str(dtype).replace("torch.", ""))
        seen[key] = seen.get(key, 0) + 1
    return {slots[rid]: Seen([(shape, dtype, n) for (shape, dtype), n in seen.items()])
            for rid, seen in counts.items()}
