"""Draw a :class:`~irviz.frontends.trace_graph.TraceGraph` as :mod:`irviz.ir.build` draws
the TracedModule of the same trace: same ids, containers, glue nodes and edge records.

The TracedModule's method graphs are reconstructed from the flat graph, as torch's
``FixupTraceScopeBlocks`` makes them (checked node for node against the TracedModule
route by tests/test_trace_graph_capture.py):

* each call's method starts with the ``prim::GetAttr`` chains it reads: the parameters'
  chains, then the called submodules', each group latest-first-used first;
* a call is one position in its caller (``prim::CallMethod``); the values it defines
  and something after it reads are its results, in the order they are first read: none
  is a ``None`` constant in the callee, several a ``prim::TupleConstruct`` in the callee
  and a ``prim::TupleUnpack`` right after the call; a result read through one call has
  the call's unshaped type, as ``prim::CallMethod``'s output has;
* the k-th call of one module is its method ``forward{k}`` (``forward`` for the first).

Known differences (tests/test_trace_graph_capture.py checks the models that have none):
the flat graph has no dead code, so an ``aten::Int`` the TracedModule keeps unused (Swin)
is not drawn and the ids after it in its method shift; the GetAttr order of a weight tied
across calls (T5, BART) and of a parametrized weight (wav2vec2's weight norm) may differ;
debug names of values are the flat graph's, so a tooltip may name a value another way.
"""
from __future__ import annotations

import functools
from itertools import groupby

import networkx as nx
import torch

from ..frontends.capture import Capture
from ..frontends.trace_graph import CONVERSIONS as _CONVERSIONS
from ..frontends.graph_walk import ins as _ins
from .build_common import attr_repr, class_name, constant_label, join_path, node_arg_names
from .build_script import ScriptBuilder
from .model import demangle, tensor_info, value_info
from ..location import node_locations




def _qualified(module) -> str:
    try:
        return demangle(torch._jit_internal._qualified_name(type(module)))
    except Exception:  # noqa: BLE001 - a class torch cannot name
        return type(module).__qualname__


def _plain(cls: type) -> bool:
    """Whether modules of class ``cls`` are named by their class unless they hold an
    ``original_name`` themselves (:func:`_named_itself`): plain ``nn.Module`` s, whose
    lookup of ``original_name`` (a scripted module's name) raises, 4 µs a call."""
    return not hasattr(cls, "original_name") \
        and getattr(cls, "__getattr__", None) is torch.nn.Module.__getattr__ \
        and cls.__getattribute__ is object.__getattribute__


def _named_itself(module) -> bool:
    """Whether a module of a :func:`_plain` class holds an ``original_name`` itself."""
    own = vars(module)
    return "original_name" in own or "original_name" in own.get("_parameters", ()) \
        or "original_name" in own.get("_buffers", ()) \
        or "original_name" in own.get("_modules", ())


def _unshaped(info: dict) -> dict:
    """The record of a value read through a call: its type without the traced shape (a
    tensor's type is ``Tensor`` either way)."""
    return {"name": None, "type": info["type"], "shape": None, "dtype": None}


@functools.lru_cache(maxsize=None)
def _short(kind: str) -> str:
    """An op's label: its kind without the namespace (``aten::add`` -> ``add``)."""
    return kind.split("::")[-1]


def _common(a: tuple, b: tuple) -> int:
    """How many calls two call stacks share from the outermost (most nodes share all)."""
    if a == b:
        return len(a)
    n, i = min(len(a), len(b)), 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _Method:
    """One method being drawn: the root's forward or a call's."""

    def __init__(self, call: int | None, prefix: str, block: str, scope: tuple, depth: int,
                 chain: tuple):
        self.call, self.prefix, self.block, self.scope, self.depth = call, prefix, block, \
            scope, depth
        self.chain = chain  # the calls from the outermost down to this one
        self.next = 0
        #: state input index -> the id of its GetAttr node here
        self.params: dict[int, str] = {}

    def take(self, n: int = 1) -> str:
        nid = f"{self.prefix}n{self.next}"
        self.next += n
        return nid


class _TraceBuilder(ScriptBuilder):
    def __init__(self, capture: Capture):
        super().__init__(capture)
        self.tg = capture.trace_graph

    # -- what each call is -------------------------------------------------------
    def _analyse(self) -> None:
        tg = self.tg
        # each node's kind, the uniques of its inputs and outputs and its outputs' records,
        # read from torch once (every pass needs them; each read is a C++ call)
        kinds = tg.kinds
        in_u: list[list[int]] = []
        out_u: list[list[int]] = []
        #: value unique -> a graph input (its record is read from torch when first needed)
        value_of: dict[int, torch._C.Value] = {}
        #: value unique -> the index of its node (graph inputs: none)
        made_by: dict[int, int] = {}
        #: value unique -> its record (:func:`value_info`; graph inputs: see :meth:`_info`)
        infos: dict[int, dict] = {}
        for i, node in enumerate(tg.nodes):
            if kinds[i] == "prim::Constant":  # no inputs, one output (near half the nodes)
                value = node.outputsAt(0)
                u = value.unique()
                infos[u] = value_info(value)
                made_by[u] = i
                in_u.append([])
                out_u.append([u])
                continue
            in_u.append([node.inputsAt(j).unique() for j in range(node.inputsSize())])
            outs = []
            for j in range(node.outputsSize()):  # (iterating outputs() costs 10 µs a node)
                value = node.outputsAt(j)
                u = value.unique()
                infos[u] = value_info(value)
                made_by[u] = i
                outs.append(u)
            out_u.append(outs)
        self.kinds, self.in_u, self.out_u = kinds, in_u, out_u
        self.value_of, self.made_by, self.infos = value_of, made_by, infos
        self.stack_of: dict[int, tuple] = {}  # value unique -> calls it was defined in
        inputs = list(tg.graph.inputs())
        self.state_of = {v.unique(): i - tg.n_inputs for i, v in enumerate(inputs)
                         if i >= tg.n_inputs}
        for v in inputs:
            self.value_of[v.unique()] = v
            self.stack_of[v.unique()] = ()
        n = len(tg.calls)
        self.escapes: list[list[int]] = [[] for _ in range(n)]   # uniques, in order
        self._escaped: list[set[int]] = [set() for _ in range(n)]
        self.children: list[list[int]] = [[] for _ in range(n + 1)]  # n: the root
        #: per call: how many calls of its module come before it (its method ``forward{k}``)
        self._nth: list[int] = []
        calls_of: dict[int, int] = {}   # id of a module -> its calls so far
        for call in tg.calls:
            self._nth.append(calls_of.get(id(call.module), 0))
            calls_of[id(call.module)] = self._nth[-1] + 1
        self._chains: dict[int | None, tuple] = {}
        for k, call in enumerate(tg.calls):
            self.children[n if call.parent is None else call.parent].append(k)
        #: per method (call index, n for the root): the state inputs it reads (``("s", i)``)
        #: and the modules it calls (``("c", first call)``), by where it first does
        self.attrs: list[dict] = [{} for _ in range(n + 1)]
        first_node: dict[int, int] = {}
        self.node_stack = self._placed(first_node)
        self.ret_u = [v.unique() for v in _ins(tg.graph.return_node())]
        self._uses(self.ret_u, (), n, len(tg.nodes))
        where: dict[int, float] = {}
        #: per method: each module it calls -> the attrs key of that module's first call
        #: (a dict, not a scan of the method's attrs: the root of N blocks made it N^2)
        first_call: list[dict[int, tuple]] = [{} for _ in range(n + 1)]
        #: calls that recorded no op: placed by their anchors (the others by their ops:
        #: torch may put a node of the caller between a call's start and its first op)
        self.empty = [k not in first_node for k in range(n)]
        for k, call in enumerate(tg.calls):
            kind, at = call.anchor
            if not self.empty[k]:
                where[k] = first_node[k] - 0.5 + k * 1e-9
            elif kind == "node":
                where[k] = at + 0.5 + k * 1e-9
            elif kind == "call":
                where[k] = where.get(at, -1.0) + (k - at) * 1e-9
            else:  # "start"
                where[k] = -1.0 + k * 1e-9
            owner = n if call.parent is None else call.parent
            key = first_call[owner].setdefault(id(call.module), ("c", k))
            self.attrs[owner].setdefault(key, where[k])

    def _placed(self, first_node: dict[int, int]) -> list[tuple]:
        """Each node's calls, where the node sits in the TracedModule: the calls open when
        it was recorded (:attr:`TraceGraph.stacks`, torch's scopes as they would be), except
        for a node the tracer inserted after the value it reads (``aten::Int`` of a size
        read later, in another call), which sits in that value's call. On the way (one
        pass over the nodes): each call's first node (``first_node``), the calls each
        value is made in (:attr:`stack_of`) and what each node reads from outside its
        method (:meth:`_uses`)."""
        tg, ins, kinds, outs = self.tg, self.in_u, self.kinds, self.out_u
        made_by, stack_of, state_of, root = self.made_by, self.stack_of, self.state_of, \
            len(tg.calls)
        raw = tg.stacks
        last: dict[int, int] = {}   # call -> its last node
        end = 0
        for stack, run in groupby(raw):   # runs of nodes in the same calls
            end += len(list(run))
            for k in stack:
                last[k] = end - 1
        begun: set[int] = set()
        by_node: dict[int, list[int]] = {}
        by_call: dict[int | None, list[int]] = {}
        for k, call in enumerate(tg.calls):
            kind, at = call.anchor
            (by_node if kind == "node" else by_call).setdefault(at, []).append(k)

        def begin(keys):
            todo = list(keys)   # not recursive: a self-referring closure is a cycle
            while todo:
                k = todo.pop()
                if k not in begun:   # else its anchored calls are begun already
                    begun.add(k)
                    todo.extend(by_call.get(k, ()))

        begin(by_call.get(None, ()))
        placed: list[tuple] = []
        here: tuple = ()
        for i, stack in enumerate(raw):
            inputs = ins[i]
            if kinds[i] in _CONVERSIONS and len(inputs) == 1 and inputs[0] in made_by \
                    and all(kinds[j] in _CONVERSIONS and ins[j] == inputs
                            for j in range(made_by[inputs[0]] + 1, i)):
                stack = stack_of[inputs[0]]  # put right after the value it converts
            if stack is not here:   # most nodes are in their previous node's calls
                common = _common(stack, here)
                if any(last.get(k, -1) > i for k in here[common:]) or any(
                        k not in begun for k in stack[common:]):
                    producers = [stack_of[u] for u in inputs if u in made_by]
                    stack = producers[0] if producers else here
                if stack is not here:   # else its calls are begun already
                    begin(stack)
                    for k in stack:
                        first_node.setdefault(k, i)
            placed.append(stack)
            for u in inputs:  # most nodes read only values made in their own method
                if stack_of.get(u, ()) is not stack or u in state_of:
                    self._uses(inputs, stack, root, i)
                    break
            for u in outs[i]:
                stack_of[u] = stack
            here = stack
            anchored = by_node.get(i)
            if anchored:
                begin(anchored)
        return placed

    def _reader(self, state: int, stack: tuple) -> int | None:
        """The call (None: the root) whose method reads state input ``state`` for a node
        in calls ``stack``: the innermost one that owns it by its first name (a tied
        weight is read where its first owner is reachable and passed down)."""
        path = self.tg.state[state][0]
        for k in reversed(stack):
            if path.startswith(self.tg.calls[k].path + "."):
                return k
        return None

    def _uses(self, inputs: list[int], stack: tuple, root: int, at: int) -> None:
        """Note what a node in calls ``stack`` reads (value uniques ``inputs``): the state
        inputs its method reads, and the values that escape the calls they were made in."""
        for pos, u in enumerate(inputs):
            s = self.state_of.get(u)
            if s is not None:
                reader = self._reader(s, stack)
                attrs = self.attrs[root if reader is None else reader]
                attrs.setdefault(("s", s), at + pos * 1e-6)
                continue
            defined = self.stack_of.get(u, ())
            if defined is stack:   # read where it was made (most reads)
                continue
            for k in defined[_common(defined, stack):]:
                if u not in self._escaped[k]:
                    self._escaped[k].add(u)
                    self.escapes[k].append(u)

    # -- entry -------------------------------------------------------------------
    def build(self) -> nx.DiGraph:
        tg = self.tg
        self._analyse()
        root_class = class_name(tg.root)
        self._container("root", "graph", None, owner=None, label=root_class,
                        module="", **{"class": root_class}, depth=0)
        self.refs: dict[int, tuple] = {}  # value unique -> (ref, calls it came through)
        #: value unique -> its record as its producer holds it (what a read in the same
        #: method sees)
        self.seen_as: dict[int, dict] = {}
        #: (kind, the types of its inputs) -> the argument names of an op's schema, which
        #: torch chooses by them (asking costs 1-2 µs a node)
        self._arg_names_of: dict[tuple, list[str] | None] = {}
        self.nodes = self.G._node   # the node records (networkx's view costs a call each)
        self._names_of: dict[type, tuple[str, str] | None] = {}  # see _names
        values = list(tg.graph.inputs())[:tg.n_inputs]
        input_ids = self._add_inputs(values, root_class)
        for nid, value in zip(input_ids, values):
            self.refs[value.unique()] = (nid,)
            self.seen_as[value.unique()] = self.nodes[nid]["outputs"][0]
        n = len(tg.calls)
        self.opened = [False] * n
        self.methods: dict[int | None, _Method] = {}
        self.after_node: dict[int, list[int]] = {}
        self.after_call: dict[int | None, list[int]] = {}
        for k, call in enumerate(tg.calls):
            if not self.empty[k]:
                continue
            where, at = call.anchor
            if where == "node":
                self.after_node.setdefault(at, []).append(k)
            else:
                self.after_call.setdefault(at, []).append(k)
        root = _Method(None, "", "root", ("", root_class), 0, ())
        self.methods[None] = root
        self._getattrs(root, n)
        self.open: list[int] = []
        for k in self.after_call.get(None, []):
            self._open_call(k)
        here = None  # the calls of the previous node, while no other call was opened since
        for i, node in enumerate(tg.nodes):
            stack = self.node_stack[i]
            if stack is not here:  # else its calls are open (most nodes: their previous's)
                self._close_to(stack)
                for k in stack:
                    if not self.opened[k]:
                        self._open_call(k)
                self._close_to(stack)
                method = self.methods[stack[-1] if stack else None]
                here = stack
            self._op(node, i, method, stack)
            after = self.after_node.get(i)
            if after:
                for k in after:
                    self._open_call(k)
                here = None
        self._close_to(())
        for k in range(n):  # calls torch left no trace of (their ops were dead code)
            if not self.opened[k] and tg.calls[k].parent is None:
                self._open_call(k)
                self._close_to(())
        outs = [self._ref(u, ()) for u in self.ret_u]
        self._add_return([list(r) for r, _ in outs], root_class)
        for (ref, info) in outs:
            self._link(ref, "out", info)
        return self._finish(root_class, input_ids)

    # -- methods -----------------------------------------------------------------
    def _getattrs(self, method: _Method, key: int) -> None:
        """The method's GetAttr chains: parameters' (hidden nodes), then submodules'."""
        tg = self.tg
        base, scope_class = method.scope
        inside = base + "."
        attrs = self.attrs[key]
        for kind, i in sorted(attrs, key=attrs.__getitem__, reverse=True):
            path = tg.state[i][0] if kind == "s" else tg.calls[i].path
            rel = path[len(inside):] if base and path.startswith(inside) else path
            method.next += rel.count(".") + 1  # one GetAttr a name
            if kind != "s":
                continue
            nid = f"{method.prefix}n{method.next - 1}"
            owner, _, name = rel.rpartition(".")
            self._add_node(nid, {
                "kind": "prim::GetAttr", "label": name, "source": None, "arg_names": None,
                "user_source": None, "scope": base, "scope_class": scope_class,
                "block": method.block, "subgraph_of": None,
                "outputs": [tensor_info(tg.state[i][1], name)],
                "inputs": [[f"module:{join_path(base, owner) if owner else base}"]],
                "attributes": {"name": name}, "hidden": True, "target": join_path(base, rel)})
            method.params[i] = nid

    def _open_call(self, k: int) -> None:
        tg = self.tg
        call = tg.calls[k]
        if self.opened[k]:
            return
        if call.parent is not None and not self.opened[call.parent]:
            self._open_call(call.parent)
        outer = self._chain(call.parent)
        self._close_to(outer)
        self.opened[k] = True
        parent = self.methods[call.parent]
        nid = parent.take(2 if len(self.escapes[k]) > 1 else 1)
        cls, qualified = self._names(call.module)
        nth = self._nth[k]
        cid = f"{nid}/call"
        self.blocks[cid] = {  # what _container writes, without its keywords' dicts
            "kind": "method", "parent": parent.block, "at": len(self.nodes), "owner": None,
            "call_site": nid, "module": call.path,
            "method": "forward" + (str(nth) if nth else ""),
            "label": f"{call.path or '<root>'}: {cls}", "depth": parent.depth + 1,
            "qualified_type": qualified, "source": None, "user_source": None, "class": cls}
        method = _Method(k, f"{cid}/", cid, (call.path, cls), parent.depth + 1,
                         self._chains.setdefault(k, outer + (k,)))
        method.site = nid
        self.methods[k] = method
        self._getattrs(method, k)
        self.open.append(k)
        for j in self.after_call.get(k, []):
            self._open_call(j)

    def _names(self, module) -> tuple[str, str]:
        """A called module's class name and qualified type, once per class for plain
        modules (their repeated layers)."""
        cls = type(module)
        names = self._names_of.get(cls, False)
        if names is False:  # the first module of its class
            names = self._names_of[cls] = (cls.__name__, _qualified(module)) \
                if _plain(cls) else None
        if names is None or _named_itself(module):
            return class_name(module), _qualified(module)
        return names

    def _chain(self, k: int | None) -> tuple:
        """The calls from the outermost down to ``k`` (memoised: asked for every call
        opened and closed)."""
        found = self._chains.get(k)
        if found is None:
            chain, j = [], k
            while j is not None:
                chain.append(j)
                j = self.tg.calls[j].parent
            found = self._chains[k] = tuple(reversed(chain))
        return found

    def _close_to(self, stack: tuple) -> None:
        """Close the open calls that are not in ``stack``, innermost first."""
        while self.open and (len(self.open) > len(stack)
                             or self.open[len(self.open) - 1] != stack[len(self.open) - 1]):
            self._close(self.open.pop())

    def _close(self, k: int) -> None:
        tg = self.tg
        for j in self.children[k]:  # children torch left no trace of
            if not self.opened[j]:
                self.open.append(k)
                self._open_call(j)
                self._close_to(self._chain(k))
                self.open.pop()
        method = self.methods[k]
        escapes = self.escapes[k]
        inside = self._chain(k)
        if not escapes:
            nid = method.take()
            self.G.add_node(nid, kind="prim::Constant", label="None", source=None,
                            arg_names=None, user_source=None, scope=method.scope[0],
                            scope_class=method.scope[1], block=method.block,
                            subgraph_of=None, outputs=[{"name": None, "type": "NoneType",
                                                        "shape": None, "dtype": None}],
                            inputs=[], attributes={}, hidden=True)
            returns = [[nid]]
        elif len(escapes) == 1:
            ref, _ = self._ref(escapes[0], inside)
            returns = [list(ref)]
        else:
            nid = method.take()
            seen = [self._ref(u, inside) for u in escapes]
            types = ", ".join(self._info(u)["type"] for u in escapes)
            hidden = all(self.nodes[r[0]]["kind"] == "prim::Constant"
                         for r, _ in seen if len(r) == 1)
            self.G.add_node(nid, kind="prim::TupleConstruct", label="TupleConstruct",
                            source=None, arg_names=None, user_source=None,
                            scope=method.scope[0], scope_class=method.scope[1],
                            block=method.block, subgraph_of=None,
                            outputs=[{"name": None, "type": f"Tuple[{types}]", "shape": None,
                                      "dtype": None}],
                            inputs=[list(r) for r, _ in seen], attributes={}, hidden=hidden)
            for ref, info in seen:
                self._link(ref, nid, info)
            returns = [[nid]]
        self.blocks[f"{method.site}/call"]["returns"] = returns
        if len(escapes) > 1:
            parent = self.methods[tg.calls[k].parent]
            unpack = f"{parent.prefix}n{int(method.site.rsplit('n', 1)[1]) + 1}"
            self.G.add_node(unpack, kind="prim::TupleUnpack", label="TupleUnpack",
                            source=None, arg_names=["tup"], user_source=None,
                            scope=parent.scope[0], scope_class=parent.scope[1],
                            block=parent.block, subgraph_of=None,
                            outputs=[{**self._info(u), "name": None} for u in escapes],
                            inputs=[[nid]], attributes={}, hidden=False)
            self._link((nid,), unpack, self.nodes[nid]["outputs"][0])
            method.unpack = unpack

    # -- values ------------------------------------------------------------------
    def _info(self, u: int) -> dict:
        """The record of value ``u`` (:func:`value_info`; a graph input's is read from torch
        when first needed): a value is read by its node and its consumers (shared: who
        keeps it copies it)."""
        info = self.infos.get(u)
        if info is None:
            info = self.infos[u] = value_info(self.value_of[u])
        return info

    def _ref(self, u: int, stack: tuple) -> tuple:
        """The producers of value ``u`` as a node in calls ``stack`` sees them, and the
        record of the value there."""
        ref = self.refs[u]
        defined = self.stack_of.get(u, ())
        common = len(stack) if defined is stack else _common(defined, stack)
        inner = defined[common:]  # the calls it is returned from, outermost first
        for k in inner:  # through the outermost call that returns a tuple: its unpack
            if len(self.escapes[k]) > 1:
                ref = (self.methods[k].unpack,)
                break
        if len(stack) > common or inner and len(self.escapes[inner[0]]) > 1:
            # read inside a call: its parameter has the traced type; from a tuple: the
            # unpack's output has
            info = self._info(u)
        elif inner:  # the call's output has its type unshaped
            info = _unshaped(self._info(u))
        else:
            data = self.nodes.get(ref[0]) if len(ref) == 1 else None
            info = data["outputs"][0] if data is not None and len(data["outputs"]) == 1 \
                else self._info(u)
        return ref, info

    def _op(self, node, i: int, method: _Method, stack: tuple) -> None:
        """Node ``i``, in calls ``stack``: the one loop over every node, so its common case
        (a value read in the method that made it) is written out here, and each input is
        read, recorded and linked in one pass."""
        nid = f"{method.prefix}n{method.next}"
        method.next += 1
        kind, inputs = self.kinds[i], self.in_u[i]
        refs, seen_as, stack_of = self.refs, self.seen_as, self.stack_of
        # G.add_node and G.add_edge without their per-call overhead (see _add_node, _link)
        succ = self.G._succ
        succ[nid] = {}
        self.G._pred[nid] = pred = {}
        ins, types = [], [kind]
        for u in inputs:
            info = seen_as.get(u)
            if info is not None and stack_of[u] is stack:  # read where it was made
                ref = refs[u]
            else:
                s = self.state_of.get(u)
                if s is not None:
                    reader = self._reader(s, stack)
                    pid = self.methods[reader].params[s]
                    ref = (pid,)
                    info = self.nodes[pid]["outputs"][0] if reader == method.call \
                        else self._info(u)
                else:
                    ref, info = self._ref(u, stack)
            ins.append(list(ref))
            types.append(info["type"])
            for producer in ref:
                out = succ.get(producer)
                if out is None:
                    self._link((producer,), nid, info)
                    continue
                edge = out.get(nid)
                if edge is not None:
                    edge["count"] += 1
                    continue
                out[nid] = pred[producer] = {"type": info["type"], "shape": info["shape"],
                                             "dtype": info["dtype"], "count": 1}
        label, hidden, weight, arg_names = None, False, None, None
        names = node.attributeNames()
        attributes = {name: attr_repr(node, name, None) for name in names} if names else {}
        outs = self.out_u[i]
        if kind == "prim::Constant":  # no schema (asking torch takes 2 µs)
            label, weight = constant_label(node, None, attributes, self.infos[outs[0]]["type"])
            hidden = True
        else:
            key = tuple(types)
            arg_names = self._arg_names_of.get(key, False)
            if arg_names is False:
                arg_names = self._arg_names_of[key] = node_arg_names(node)
            if kind == "prim::Uninitialized":
                hidden = True
            elif kind in ("prim::ListConstruct", "prim::TupleConstruct") and inputs:
                made_by, kinds = self.made_by, self.kinds
                hidden = all(u in made_by and kinds[made_by[u]] == "prim::Constant"
                             for u in inputs)
        source, user_source = node_locations(node)
        outputs = [weight] if weight is not None else [self.infos[u] for u in outs]
        self.nodes[nid] = {
            "kind": kind, "label": label or _short(kind), "source": source,
            "arg_names": arg_names, "user_source": user_source,
            "scope": method.scope[0], "scope_class": method.scope[1], "block": method.block,
            "subgraph_of": None, "outputs": outputs, "inputs": ins,
            "attributes": attributes, "hidden": hidden}
        for u, info in zip(outs, outputs):
            refs[u] = (nid,)
            seen_as[u] = info


def build_trace_graph(capture: Capture) -> nx.DiGraph:
    """The IR graph of a capture traced without the TracedModule (see the docstring)."""
    return _TraceBuilder(capture).build()
