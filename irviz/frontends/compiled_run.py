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
records nothing; an ``Optional[Tensor]`` that was ``None`` is recorded as such. Each block of
an ``if`` and each loop body starts with a second op, ``irviz_probe::enter(id)``: how many
times it ran, keyed by the builder's container id (``n3/b1``), so a value without a shape
can be told why (:meth:`CompiledRun.unshaped_note`): its branch did not run, its loop ran
zero times, or it was never a tensor.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..paths import is_torch_file

from .graph_walk import (MAX_CALL_DEPTH, child, find_function, function_units, ins,
                             method_graph, nodes_of, outs)
from .inputs import ExampleInputs

__all__ = ["CompiledRun", "Instrumented", "Seen", "instrument", "positional_inputs",
           "run_compiled"]

_OP = "irviz_probe::rec"
_ENTER = "irviz_probe::enter"
_LIBRARY = None
#: the run being recorded (forked tasks record from the interpreter's worker threads):
#: ``(id, shape, dtype)`` per value (shape None: the value was None), and the ids of the
#: blocks entered
_SINK: list | None = None
_ENTERED: list | None = None
#: one recorded run at a time in a process: the sink is global for the worker threads
_RUN_LOCK = threading.Lock()


def _record(x, id: int) -> None:  # noqa: A002 - the schema's argument name
    sink = _SINK
    if sink is not None:
        sink.append((id, None, None) if x is None else (id, tuple(x.shape), x.dtype))


def _enter(id: int) -> None:  # noqa: A002 - the schema's argument name
    entered = _ENTERED
    if entered is not None:
        entered.append(id)


def _define_op() -> None:
    """Declare ``irviz_probe::rec`` and ``irviz_probe::enter`` once per process."""
    global _LIBRARY
    if _LIBRARY is not None:
        return
    library = torch.library.Library("irviz_probe", "DEF")
    library.define("rec(Tensor? x, int id) -> ()", alias_analysis="CONSERVATIVE")
    library.define("enter(int id) -> ()", alias_analysis="CONSERVATIVE")
    # CompositeImplicitAutograd: one Python kernel for every backend and layout (dense,
    # mkldnn, quantized), above autograd (and the key an op without tensors runs under)
    library.impl("rec", _record, "CompositeImplicitAutograd")
    library.impl("enter", _enter, "CompositeImplicitAutograd")
    _LIBRARY = library


@dataclass
class Seen:
    """What one value took at run time: each distinct ``(shape, dtype)`` in the order first
    seen, with how many times (a loop's iterations); ``nones``: the times an
    ``Optional[Tensor]`` was None."""

    shapes: list[tuple[tuple[int, ...], str, int]] = field(default_factory=list)
    nones: int = 0

    @property
    def runs(self) -> int:
        return sum(count for _, _, count in self.shapes)


#: why a value has no shape, by the kind of the outermost block around it that did not run
_NOT_RUN = {"if": "in a branch that did not run", "loop": "in a loop that ran zero times"}


@dataclass
class CompiledRun:
    """The recorded run: ``values[(node id, output index)]`` for every tensor that ran, and
    ``blocks[container id]``: how many times each ``if`` block and loop body ran."""

    values: dict[tuple[str, int], Seen] = field(default_factory=dict)
    blocks: dict[str, int] = field(default_factory=dict)
    #: how many tensor values the copy records at most (values in untaken branches included)
    slots: int = 0
    #: the instrumentation's one-off cost, and the recorded run's, in seconds
    instrument_s: float = 0.0
    run_s: float = 0.0
    #: why nothing was recorded (the instrumented copy did not run), or None
    error: str | None = None
    #: ``(values in the model's code left without a shape, why, where)`` per reason and
    #: place: see :meth:`unshaped_note`
    unshaped: list[tuple[int, str, str]] = field(default_factory=list)

    def unshaped_note(self) -> str | None:
        """``no shape on 3 values of the model: 2 in a branch that did not run (model.py:12),
        1 that was None every time it ran (model.py:20)``, or None when every value of the
        model's code that could have one has one. Only what the run showed: values in
        torch's own code (a library call's untaken checks) are not counted."""
        if not self.unshaped:
            return None
        by_reason: dict[str, tuple[int, list[str]]] = {}
        for count, why, where in self.unshaped:
            n, places = by_reason.get(why, (0, []))
            by_reason[why] = (n + count, places + [where] if where not in places else places)
        total = sum(n for n, _ in by_reason.values())
        parts = []
        for why, (n, places) in by_reason.items():
            shown = ", ".join(places[:3]) + (f" and {len(places) - 3} more"
                                             if len(places) > 3 else "")
            parts.append(f"{why} ({shown})" if len(by_reason) == 1 else f"{n} {why} ({shown})")
        head = f"no shape on {total} value{'s' if total != 1 else ''} of the model"
        return f"{head}, {parts[0]}" if len(parts) == 1 else f"{head}: {'; '.join(parts)}"


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
        #: record id -> (the innermost if block or loop body around it, its node)
        self.slot_places: list[tuple[str | None, Any]] = []
        #: probe id -> the container id of an if block or loop body
        self.block_ids: list[str] = []
        #: container id -> ("if" or "loop", the if/loop node, the block around it)
        self.blocks: dict[str, tuple[str, Any, str | None]] = {}
        #: the instrumented callees, whose copies were inlined: their nodes are the ones
        #: above, read for their source lines after the run
        self.callees: list = []

    def graph(self, g, prefix: str, modules: dict, depth: int, block: str | None) -> None:
        self._nodes(g, nodes_of(g.return_node()), prefix, modules, depth, block)

    def _nodes(self, g, nodes: list, prefix: str, modules: dict, depth: int,
               block: str | None) -> None:
        for i, node in enumerate(nodes):  # listed before any insertion: positions hold
            self._node(g, node, f"{prefix}n{i}", modules, depth, block)

    def _node(self, g, node, nid: str, modules: dict, depth: int, block: str | None) -> None:
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
                                                    target}, depth + 1, block)
                self._inline(g, node, callee, ins(node))
                return
        elif kind == "prim::CallFunction":
            callee = self._function(node.inputsAt(0))
            if callee is not None and depth < MAX_CALL_DEPTH:
                callee = callee.copy()
                self.graph(callee, f"{nid}/call/", {}, depth + 1, block)
                self._inline(g, node, callee, ins(node)[1:])
                return
        elif kind in ("prim::If", "prim::Loop"):
            what = "if" if kind == "prim::If" else "loop"
            for k, sub in enumerate(node.blocks()):
                cid = f"{nid}/b{k}"
                self.blocks[cid] = (what, node, block)
                inner = nodes_of(sub.returnNode())
                self._probe_entry(g, inner[0] if inner else sub.returnNode(), cid)
                self._nodes(g, inner, f"{cid}/", modules, depth, cid)
        elif kind in ("prim::fork", "prim::awaitable"):
            task = node.g("Subgraph").copy()
            task_modules = {param.unique(): modules[arg.unique()]
                            for param, arg in zip(outs(task.param_node()), ins(node))
                            if arg.unique() in modules}
            self.graph(task, f"{nid}/task/", task_modules, depth, block)
            node.g_("Subgraph", task)
        self._record_outputs(g, node, nid, block)

    def _function(self, value):
        if value.node().kind() != "prim::Constant" or value.type().kind() != "FunctionType":
            return None
        name = value.type().annotation_str
        for unit in self.units:
            fn = find_function(unit, name)
            if fn is not None:
                return fn.graph
        return None

    def _inline(self, g, call, callee, args: list) -> None:
        """Replace ``call`` by the (instrumented) body of its callee."""
        self.callees.append(callee)
        with g.insert_point_guard(call):
            results = g.insertGraph(callee, args)
        for old, new in zip(outs(call), results):
            old.replaceAllUsesWith(new)
        call.destroy()

    @staticmethod
    def _int(g, value: int):
        const = g.create("prim::Constant")
        const.i_("value", value)
        const.output().setType(torch._C.IntType.get())
        return const

    def _probe_entry(self, g, first, cid: str) -> None:
        """``irviz_probe::enter(id)`` before ``first``, the block's first node (or its
        return)."""
        const = self._int(g, len(self.block_ids))
        const.insertBefore(first)
        g.create(_ENTER, [const.output()], 0).insertBefore(first)
        self.block_ids.append(cid)

    def _record_outputs(self, g, node, nid: str, block: str | None) -> None:
        anchor = node
        for index, value in enumerate(outs(node)):
            if not _is_tensor(value) or _may_be_uninitialized(value):
                continue
            const = self._int(g, len(self.slots))
            rec = g.create(_OP, [value, const.output()], 0)
            const.insertAfter(anchor)
            rec.insertAfter(const)
            anchor = rec
            self.slots.append((nid, index))
            self.slot_places.append((block, node))


@dataclass
class Instrumented:
    """An instrumented copy of a compiled model's entry, ready to run (again: a benchmark
    times its warm runs)."""

    compiled: Any
    function: Any
    #: record id -> (node id, output index)
    slots: list[tuple[str, int]]
    instrument_s: float
    #: what :class:`_Instrumenter` knows of where each value and block is
    places: _Instrumenter = field(repr=False, default=None)

    def run(self, args: list) -> CompiledRun:
        """One recorded run under ``no_grad``. The model's own errors come back as
        :attr:`CompiledRun.error`."""
        global _SINK, _ENTERED
        sink: list = []
        entered: list = []
        start = time.perf_counter()
        with _RUN_LOCK:
            _SINK, _ENTERED = sink, entered
            try:
                # one run of a copy made for it: the profiling executor's passes (profile
                # the first runs, then optimize) would be paid and never used
                with torch.no_grad(), torch.jit.optimized_execution(False):
                    if isinstance(self.compiled, torch.jit.ScriptModule):
                        self.function(self.compiled._c, *args)
                    else:
                        self.function(*args)
            except Exception as exc:  # noqa: BLE001 - the model's own error, told by the caller
                lines = str(exc).strip().splitlines()
                return CompiledRun(slots=len(self.slots),
                                   error=f"{type(exc).__name__}: {lines[-1] if lines else ''}")
            finally:
                _SINK = _ENTERED = None
        ran = time.perf_counter() - start
        values = _collect(sink, self.slots)
        blocks = {cid: 0 for cid in self.places.block_ids}
        for probe in entered:
            blocks[self.places.block_ids[probe]] += 1
        return CompiledRun(values=values, blocks=blocks, slots=len(self.slots),
                           instrument_s=self.instrument_s, run_s=ran,
                           unshaped=_unshaped(self.places, values, blocks))


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
    instrumenter.graph(copy, "", modules, 0, None)
    function = torch._C._create_function_from_graph("irviz_recorded_forward", copy)
    return Instrumented(compiled, function, instrumenter.slots, time.perf_counter() - start,
                        instrumenter)


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
    value was. The model's own error comes back as :attr:`CompiledRun.error` (the caller
    runs the real model, to tell it in the model's terms); an IR form the instrumentation
    does not know raises (an irviz bug, not the model's)."""
    instrumented = instrument(compiled, archive_unit, entry)
    return instrumented.run(positional_inputs(compiled, inputs, entry))


def _collect(sink: list, slots: list[tuple[str, int]]) -> dict[tuple[str, int], Seen]:
    counts: dict[int, dict[tuple, int]] = {}
    nones: dict[int, int] = {}
    for rid, shape, dtype in sink:
        if shape is None:
            nones[rid] = nones.get(rid, 0) + 1
            continue
        seen = counts.setdefault(rid, {})
        key = (shape, str(dtype).replace("torch.", ""))
        seen[key] = seen.get(key, 0) + 1
    return {slots[rid]: Seen([(shape, dtype, n) for (shape, dtype), n in
                              counts.get(rid, {}).items()], nones.get(rid, 0))
            for rid in counts.keys() | nones.keys()}


_FILE_LINE = re.compile(r'File "(.+?)", line (\d+)')


def _location(node) -> tuple[str, int] | None:
    """``(file, line)`` of a node of the compiled code, or None."""
    found = _FILE_LINE.search(node.sourceRange())
    return (found.group(1), int(found.group(2))) if found else None


def _unshaped(places: _Instrumenter, values: dict, blocks: dict[str, int]
              ) -> list[tuple[int, str, str]]:
    """``(count, why, "file.py:line")`` of the values of the model's ops (not ``prim::``
    plumbing) the run left without a shape, grouped by why and where: the outermost ``if`` block or loop body
    around them that did not run, or the value was None every time it ran. A value of
    torch's own code is not counted (a library call's untaken checks are drawn inside its
    box, and are no news), nor one whose blocks all ran (none is expected: the coverage
    benchmark looks for them)."""
    grouped: dict[tuple[str, Any], int] = {}
    for slot, (block, node) in zip(places.slots, places.slot_places):
        if node.kind().startswith("prim::"):   # an op's values: what the picture labels
            continue
        seen = values.get(slot)
        if seen is not None:
            if not seen.shapes:
                key = ("that was None every time it ran", node)
                grouped[key] = grouped.get(key, 0) + 1
            continue
        outermost = None
        while block is not None:
            what, owner, parent = places.blocks[block]
            if not blocks[block]:
                outermost = (_NOT_RUN[what], owner)
            block = parent
        if outermost is not None:
            grouped[outermost] = grouped.get(outermost, 0) + 1
    found = []
    for (why, node), count in grouped.items():
        where = _location(node)
        if where is not None and not is_torch_file(where[0]):
            found.append((count, why, f"{Path(where[0]).name}:{where[1]}"))
    return found
