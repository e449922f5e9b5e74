"""Walk a captured TorchScript program into the irviz IR graph.

Walks everything: top-level nodes, nested blocks of ``prim::If`` and
``prim::Loop``, the targets of ``prim::CallMethod`` / ``prim::CallFunction``
(recursively, keeping the module hierarchy) and the subgraphs of
``prim::fork`` (which ``inlined_graph`` leaves alone). See
:mod:`irviz.ir.model` for the vocabulary of the result.

Dataflow across boundaries is connected directly: a callee's parameters are
the caller's arguments, a call's results are the callee's returned values, a
branch's yielded values flow to the consumers of the ``prim::If`` outputs, a
loop's body parameters are produced by the ``prim::Loop`` node, and a fork
task's inputs are produced by the ``prim::fork`` node. So the graph stays a
DAG and every use has a definition.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import torch

from ..errors import GraphBuildError
from ..frontends.capture import Capture
from .build_common import attr_repr, class_name, constant_label, join_path, node_arg_names
from .model import CONSTANT_KINDS, OPTIMIZED_OP_LABELS, demangle, tensor_info, value_info
from ..frontends.graph_walk import (MAX_CALL_DEPTH, blocks as _blocks, child as _child,
                                    find_function as _find_function, function_units,
                                    ins as _ins, method_graph as _method_graph,
                                    nodes_of as _nodes_of, outs as _outs)
from ..location import ArchiveDebugInfo, node_locations, serialized_location, source_line

@dataclass(frozen=True)
class _ModuleRef:
    """A value that is a submodule: calls on it are expanded, not drawn as nodes."""

    path: str
    obj: object

    @property
    def ref(self) -> str:
        return f"module:{self.path}"


class _Captured(tuple):
    """A task input: produced by the ``prim::fork`` (``(fork,)``), captured from ``origin``
    (the caller's producers), which consumers record in their ``captured`` attribute."""

    origin: tuple = ()


def _captured(fork: str, origin: tuple) -> _Captured:
    ref = _Captured((fork,))
    ref.origin = origin
    return ref


class _Carried(tuple):
    """A loop-carried value as its consumers see it: the producers, and which ``loop``'s
    carried value ``index`` it is, ``where`` ``"param"`` (inside the body: the value of the
    previous iteration) or ``"output"`` (after the loop). Consumers record it in their
    ``carried_from`` attribute: the IR stays a DAG, and the loop's back edge stays known."""

    loop: str = ""
    index: int = -1
    where: str = ""


def _carried(ref: tuple, loop: str, index: int, where: str) -> tuple:
    if isinstance(ref, _Captured):  # a task input keeps its own record
        return ref
    out = _Carried(ref)
    out.loop, out.index, out.where = loop, index, where
    return out


def _merge(refs: list) -> tuple:
    """The producers of a value that comes from one of several branches."""
    merged: list[str] = []
    origin: list[str] = []
    for ref in refs:
        for p in ref if isinstance(ref, tuple) else ():
            if p not in merged:
                merged.append(p)
        origin += [o for o in getattr(ref, "origin", ()) if o not in origin]
    if not origin:
        return tuple(merged)
    out = _Captured(merged)
    out.origin = tuple(origin)
    return out


@dataclass(frozen=True)
class _FunctionRef:
    qualname: str


def _qualified_type(obj) -> str:
    try:
        return demangle(obj._c._type().qualified_name())
    except Exception:  # not a ScriptModule
        return type(obj).__qualname__


class ScriptBuilder:
    #: node kinds that open a container (a call, a block, a task), and their walkers
    _STRUCTURAL = {"prim::CallMethod": "_call_method", "prim::CallFunction": "_call_function",
                   "prim::If": "_if", "prim::Loop": "_loop", "prim::fork": "_fork",
                   "prim::awaitable": "_fork"}

    def __init__(self, capture: Capture):
        self.capture = capture
        self.G = nx.DiGraph()
        self.blocks: dict[str, dict] = {}
        target = capture.target
        #: an archive's own functions, and its debug info for the lines torch cannot name
        self._archive_cu = getattr(target, "compilation_unit", None)
        self._debug = (ArchiveDebugInfo(target.source_file)
                       if target.kind == "archive" and target.source_file else None)

    def _node_locations(self, node) -> tuple[str | None, str | None]:
        """:func:`~irviz.location.node_locations`, an archive's debug info consulted."""
        return node_locations(node, self._debug)

    # -- containers --------------------------------------------------------------
    def _container(self, cid: str, kind: str, parent: str | None, **meta) -> str:
        # ``at``: how many nodes came before it in program order (a call that records no
        # node still has a place in the picture's order)
        self.blocks[cid] = {"kind": kind, "parent": parent, "at": self.G.number_of_nodes(),
                            **meta}
        return cid

    # -- entry -------------------------------------------------------------------
    def build(self) -> nx.DiGraph:
        cap = self.capture
        root = cap.scripted
        graph = cap.graph
        is_module = isinstance(root, torch.jit.ScriptModule)
        env: dict[int, object] = {}
        params = _outs(graph.param_node())
        root_class = class_name(root) if is_module else getattr(root, "name", cap.name)
        self._container("root", "graph", None, owner=None, label=root_class,
                        module="", **{"class": root_class}, depth=0)
        if is_module:
            env[params[0].unique()] = _ModuleRef("", root)
            params = params[1:]
        input_ids = self._add_inputs(params, root_class)
        for nid, value in zip(input_ids, params):
            env[value.unique()] = (nid,)
        outs = self._walk_graph_body(graph, env, "", "root", ("", root_class), None, depth=0)
        self._add_return([self._ref_list(r) for r in outs], root_class)
        for value, ref in zip(_ins(graph.return_node()), outs):
            self._connect(ref, "out", value)
        return self._finish(root_class, input_ids)

    def _add_inputs(self, values: list, root_class: str) -> list[str]:
        """The graph's input nodes ``in0…`` (shapes from the example inputs where the
        graph has none), in order."""
        examples = self.capture.graph_input_examples()
        input_ids = []
        for i, value in enumerate(values):
            nid = f"in{i}"
            info = value_info(value)
            example = examples[i] if i < len(examples) else None
            if isinstance(example, torch.Tensor) and info["shape"] is None:
                info = {**tensor_info(example), "type": info["type"]}
            info["name"] = value.debugName().split(".")[0]
            self.G.add_node(nid, kind="prim::Param", label=info["name"], source=None,
                            user_source=None, scope="", scope_class=root_class, block="root",
                            subgraph_of=None, outputs=[info], inputs=[], attributes={},
                            hidden=False)
            input_ids.append(nid)
        return input_ids

    def _add_return(self, inputs: list[list[str]], root_class: str) -> None:
        """The ``out`` node, named by the model's output names when a trace flattened them."""
        self.G.add_node("out", kind="prim::Return", label="return", source=None,
                        user_source=None, scope="", scope_class=root_class, block="root",
                        subgraph_of=None, outputs=[], attributes={}, hidden=False,
                        inputs=inputs)
        cap = self.capture
        leaves = cap.adapter.outputs if cap.adapter is not None else None
        if leaves is not None and leaves.flattened:  # what the model returned, by name
            self.G.nodes["out"]["output_names"] = list(leaves.names)

    def _finish(self, root_class: str, input_ids: list[str]) -> nx.DiGraph:
        cap = self.capture
        self.G.graph.update(
            name=cap.name, mode=cap.mode, root_class=root_class,
            source_file=str(cap.target.source_file) if cap.target.source_file else None,
            inputs=input_ids, outputs=["out"], blocks=self.blocks)
        return self.G

    # -- walking -----------------------------------------------------------------
    def _walk_graph_body(self, graph, env, prefix, block, scope, fork, depth):
        self._walk_nodes(_nodes_of(graph.return_node()), env, prefix, block, scope, fork, depth)
        return [self._lookup(env, v) for v in _ins(graph.return_node())]

    def _walk_nodes(self, nodes, env, prefix, block, scope, fork, depth):
        for i, node in enumerate(nodes):
            self._walk_node(node, f"{prefix}n{i}", env, block, scope, fork, depth)

    def _lookup(self, env, value):
        try:
            return env[value.unique()]
        except KeyError:
            raise GraphBuildError(
                f"value %{value.debugName()} is used before irviz saw its definition "
                f"(produced by {value.node().kind()})",
                hint="this is an irviz bug or an IR form it does not know; please report "
                     "it with the model") from None

    @staticmethod
    def _ref_list(ref) -> list[str]:
        if isinstance(ref, _ModuleRef):
            return [ref.ref]
        if isinstance(ref, _FunctionRef):
            return [f"function:{ref.qualname}"]
        return list(ref)

    def _connect(self, ref, consumer: str, value) -> None:
        if not isinstance(ref, tuple):
            return
        info = None
        if type(ref) is tuple and len(ref) == 1:  # the producer's own record of the value
            data = self.G.nodes[ref[0]]
            if len(data["outputs"]) == 1 and value.node().kind() == data["kind"]:
                info = data["outputs"][0]
        self._link(ref, consumer, info or value_info(value))

    def _add_node(self, nid: str, data: dict) -> None:
        """``G.add_node(nid, **data)``, keeping ``data`` as the node's record: networkx
        copies the keywords into a new dict and clears the graph's cache (empty while it
        is built) on every call (3 µs a node against 2 µs, measured)."""
        G = self.G
        if nid in G._succ:  # an id seen again: networkx's update
            G.add_node(nid, **data)
            return
        G._succ[nid] = {}
        G._pred[nid] = {}
        G._node[nid] = data

    def _link(self, ref: tuple, consumer: str, info: dict) -> None:
        """A data edge from each producer in ``ref`` to ``consumer`` (counted when the
        consumer reads the same producer twice), written into networkx's adjacency as
        ``G.add_edge`` does, without its per-call overhead (see :meth:`_add_node`)."""
        succ, pred = self.G._succ, self.G._pred
        for producer in ref:
            out = succ.get(producer)
            if out is None or consumer not in pred:  # a new node: networkx adds it
                self.G.add_edge(producer, consumer, type=info["type"], shape=info["shape"],
                                dtype=info["dtype"], count=1)
                continue
            data = out.get(consumer)
            if data is not None:
                data["count"] += 1
                continue
            out[consumer] = pred[consumer][producer] = {
                "type": info["type"], "shape": info["shape"], "dtype": info["dtype"],
                "count": 1}

    def _add_op(self, node, nid, env, block, scope, fork, *, label=None, hidden=False,
                extra=None, inputs=None, locations=None):
        """``locations``: the node's ``node_locations``, when the caller read them already
        (torch formats a scripted node's source range anew on every call)."""
        source, user_source = self._node_locations(node) if locations is None else locations
        inputs = _ins(node) if inputs is None else inputs
        refs = [self._lookup(env, v) for v in inputs]
        outputs = _outs(node)
        kind = node.kind()
        attrs = {name: attr_repr(node, name, None) for name in node.attributeNames()}
        scope_path, scope_class = scope
        if self._debug is not None and (not kind.startswith("prim::") or kind == "prim::fork"):
            # where the profiler will say it ran: the archive's serialized code (a fork's
            # frame is its forked closure's body, the line before the fork)
            ranges = ([n.sourceRange() for n in node.g("Subgraph").nodes()]
                      if kind == "prim::fork" else [node.sourceRange()])
            where = next(filter(None, map(serialized_location, ranges)), None)
            extra = {**(extra or {}), "serialized_source": where}
        self.G.add_node(
            nid, kind=kind, label=label or OPTIMIZED_OP_LABELS.get(kind) or kind.split("::")[-1],
            source=source,
            arg_names=node_arg_names(node),
            user_source=user_source, scope=scope_path, scope_class=scope_class, block=block,
            subgraph_of=fork, outputs=[value_info(o) for o in outputs],
            inputs=[self._ref_list(r) for r in refs], attributes=attrs, hidden=hidden,
            **(extra or {}))
        captured = {str(i): list(r.origin) for i, r in enumerate(refs)
                    if isinstance(r, _Captured) and r.origin}
        if captured:
            self.G.nodes[nid]["captured"] = captured
        carried = {str(i): [r.loop, r.index, r.where] for i, r in enumerate(refs)
                   if isinstance(r, _Carried)}
        if carried:
            self.G.nodes[nid]["carried_from"] = carried
        for value, ref in zip(inputs, refs):
            self._connect(ref, nid, value)
        for out in outputs:
            env[out.unique()] = (nid,)
        return refs

    def _walk_node(self, node, nid, env, block, scope, fork, depth):
        kind = node.kind()
        scope_t = scope  # (module path, class name)
        if kind in CONSTANT_KINDS:
            out = node.output()
            if out.type().kind() == "FunctionType":
                env[out.unique()] = _FunctionRef(out.type().annotation_str)  # exact name: looked up
                return
            label, weight = constant_label(node)
            self._add_op(node, nid, env, block, scope_t, fork, label=label, hidden=True)
            if weight is not None:
                self.G.nodes[nid]["outputs"] = [weight]
            return
        if kind == "prim::GetAttr":
            owner = self._lookup(env, node.input())
            name = node.s("name")
            if isinstance(owner, _ModuleRef):
                child = _child(owner.obj, name)
                if isinstance(child, torch.jit.ScriptModule):
                    env[node.output().unique()] = _ModuleRef(join_path(owner.path, name), child)
                    return
                extra = {"target": join_path(owner.path, name)}
                self._add_op(node, nid, env, block, scope_t, fork, label=name, hidden=True,
                             extra=extra)
                if isinstance(child, torch.Tensor):
                    self.G.nodes[nid]["outputs"] = [{**tensor_info(child, name),
                                                     "type": "Tensor"}]
                return
            self._add_op(node, nid, env, block, scope_t, fork, label=name, hidden=True)
            return
        structural = self._STRUCTURAL.get(kind)
        if structural is not None:
            getattr(self, structural)(node, nid, env, block, scope_t, fork, depth)
            return
        # prim::Uninitialized: the value TorchScript's early-exit rewrite puts on a path
        # that never reads it; drawing it tells the user nothing
        hidden = kind == "prim::Uninitialized" or (
            kind in ("prim::ListConstruct", "prim::TupleConstruct") and all(
                i.node().kind() == "prim::Constant" for i in _ins(node))
            and node.inputsSize() > 0)
        self._add_op(node, nid, env, block, scope_t, fork, hidden=hidden)

    # -- calls -------------------------------------------------------------------
    def _call_method(self, node, nid, env, block, scope, fork, depth):
        args = _ins(node)
        target = self._lookup(env, args[0])
        name = node.s("name")
        graph = _method_graph(target.obj, name) if isinstance(target, _ModuleRef) else None
        if graph is None or depth >= MAX_CALL_DEPTH:
            self._add_op(node, nid, env, block, scope, fork, label=f"{name}()")
            return
        cls = class_name(target.obj)
        source, user_source = self._node_locations(node)
        cid = self._container(
            f"{nid}/call", "method", block, owner=None, call_site=nid, module=target.path,
            method=name, label=f"{target.path or '<root>'}: {cls}", depth=depth + 1,
            qualified_type=_qualified_type(target.obj), source=source,
            user_source=user_source, **{"class": cls})
        callee_env: dict[int, object] = {}
        params = _outs(graph.param_node())
        callee_env[params[0].unique()] = target
        for param, arg in zip(params[1:], args[1:]):
            callee_env[param.unique()] = self._lookup(env, arg)
        outs = self._walk_graph_body(graph, callee_env, f"{cid}/", cid, (target.path, cls),
                                     fork, depth + 1)
        self.blocks[cid]["returns"] = [self._ref_list(r) for r in outs]
        self._bind_results(node, outs, env)

    def _call_function(self, node, nid, env, block, scope, fork, depth):
        args = _ins(node)
        fn_ref = self._lookup(env, args[0])
        fn = None
        if isinstance(fn_ref, _FunctionRef):  # an archive's function is in its own unit
            for unit in function_units(self._archive_cu):
                fn = _find_function(unit, fn_ref.qualname)
                if fn is not None:
                    break
        short = fn_ref.qualname.rsplit(".", 1)[-1] if isinstance(fn_ref, _FunctionRef) else "fn"
        if fn is None or depth >= MAX_CALL_DEPTH:
            self._add_op(node, nid, env, block, scope, fork, label=f"{short}()",
                         inputs=args[1:])
            return
        source, user_source = self._node_locations(node)
        cid = self._container(
            f"{nid}/call", "function", block, owner=None, call_site=nid, module=scope[0],
            method=short, label=f"{short}()", depth=depth + 1,
            qualified_type=demangle(fn_ref.qualname), source=source, user_source=user_source,
            **{"class": None})
        callee_env: dict[int, object] = {}
        for param, arg in zip(_outs(fn.graph.param_node()), args[1:]):
            callee_env[param.unique()] = self._lookup(env, arg)
        outs = self._walk_graph_body(fn.graph, callee_env, f"{cid}/", cid, scope, fork,
                                     depth + 1)
        self.blocks[cid]["returns"] = [self._ref_list(r) for r in outs]
        self._bind_results(node, outs, env)

    def _bind_results(self, node, outs, env):
        outputs = _outs(node)
        if len(outs) == len(outputs):
            for value, ref in zip(outputs, outs):
                env[value.unique()] = ref
        else:  # a traced call that returns nothing useful (e.g. NoneType)
            for value in outputs:
                env[value.unique()] = ()

    # -- control flow ------------------------------------------------------------
    def _if(self, node, nid, env, block, scope, fork, depth):
        locations = self._node_locations(node)
        self._add_op(node, nid, env, block, scope, fork, label="if",
                     extra={"code": source_line(locations[0])}, locations=locations)
        yields = []
        for k, (sub, kind) in enumerate(zip(_blocks(node, 2), ("if.then", "if.else"))):
            cid = self._container(f"{nid}/b{k}", kind, block, owner=nid,
                                  label="then" if k == 0 else "else")
            self._walk_nodes(_nodes_of(sub.returnNode()), env, f"{cid}/", cid, scope, fork, depth)
            yields.append([self._lookup(env, v) for v in _ins(sub.returnNode())])
        for i, value in enumerate(_outs(node)):
            env[value.unique()] = _merge([branch[i] for branch in yields])
        self.G.nodes[nid]["branch_yields"] = [[self._ref_list(r) for r in b] for b in yields]

    def _loop(self, node, nid, env, block, scope, fork, depth):
        locations = self._node_locations(node)
        trip = node.inputsAt(0)
        trip_node = trip.node()
        if trip_node.kind() == "prim::Constant":
            try:
                trip_count = int(trip.toIValue())
            except Exception:
                trip_count = None
            if trip_count == 9223372036854775807:
                trip_count = "while"
        else:
            trip_count = trip_node.kind().split("::")[-1]
        self._add_op(node, nid, env, block, scope, fork, label="loop",
                     extra={"code": source_line(locations[0]), "trip_count": trip_count},
                     locations=locations)
        body = next(iter(node.blocks()))
        cid = self._container(f"{nid}/b0", "loop.body", block, owner=nid, label="body")
        for j, param in enumerate(_outs(body.paramNode())):  # 0: the iteration count
            env[param.unique()] = _carried((nid,), nid, j - 1, "param") if j else (nid,)
        self._walk_nodes(_nodes_of(body.returnNode()), env, f"{cid}/", cid, scope, fork, depth)
        carried = [self._lookup(env, v) for v in _ins(body.returnNode())[1:]]
        initial = [self._lookup(env, v) for v in _ins(node)[2:]]
        self.G.nodes[nid]["carried"] = [
            {"init": self._ref_list(i) if isinstance(i, tuple) else [],
             "yield": self._ref_list(y) if isinstance(y, tuple) else []}
            for i, y in zip(initial, carried)]
        for j, (value, ref) in enumerate(zip(_outs(node), carried)):
            base = ref if isinstance(ref, tuple) and ref else (nid,)
            env[value.unique()] = _carried(base, nid, j, "output")

    def _fork(self, node, nid, env, block, scope, fork, depth):
        args = _ins(node)
        refs = [self._lookup(env, v) for v in args]
        value_args = [v for v, r in zip(args, refs) if isinstance(r, tuple)]
        source, user_source = self._node_locations(node)
        self._add_op(node, nid, env, block, scope, fork, label="fork", inputs=value_args,
                     extra={"code": source_line(source)}, locations=(source, user_source))
        # module arguments are recorded too, so the callee is known
        self.G.nodes[nid]["inputs"] = [self._ref_list(r) for r in refs]
        kind = "fork.task" if node.kind() == "prim::fork" else "await.task"
        sub = node.g("Subgraph")
        cid = self._container(f"{nid}/task", kind, block, owner=nid, label="task",
                              source=source, user_source=user_source)
        task_env: dict[int, object] = {}
        for param, ref in zip(_outs(sub.param_node()), refs):
            if isinstance(ref, _ModuleRef):
                task_env[param.unique()] = ref
            else:  # a nested task's origin is its parent task's origin
                origin = getattr(ref, "origin", None) or (tuple(ref) if isinstance(ref, tuple)
                                                          else ())
                task_env[param.unique()] = _captured(nid, tuple(origin))
        outs = self._walk_graph_body(sub, task_env, f"{cid}/", cid, scope, nid, depth)
        self.G.nodes[nid]["task_returns"] = [p for r in outs for p in self._ref_list(r)]
