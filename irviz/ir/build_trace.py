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

import networkx as nx
import torch

from ..frontends.capture import Capture
from .build import (_arg_names, _attr_repr, _Builder, _class_name, _ins, _join, _outs,
                    constant_label)
from .model import demangle, tensor_info, value_info
from .source import node_locations


#: what the tracer inserts right after a value it later reads as a number (in whichever
#: call reads it): the node sits where the value is made, whatever its scope says
_CONVERSIONS = frozenset({"aten::Int", "aten::Float", "aten::Bool", "aten::ScalarImplicit",
                          "aten::IntImplicit", "aten::FloatImplicit"})


def _qualified(module) -> str:
    try:
        return demangle(torch._jit_internal._qualified_name(type(module)))
    except Exception:  # noqa: BLE001 - a class torch cannot name
        return type(module).__qualname__


def _unshaped(value) -> dict:
    ty = value.type()
    text = "Tensor" if ty.kind() == "TensorType" else demangle(
        ty.annotation_str if hasattr(ty, "annotation_str") else str(ty))
    return {"name": None, "type": text, "shape": None, "dtype": None}


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

    def __init__(self, call: int | None, prefix: str, block: str, scope: tuple, depth: int):
        self.call, self.prefix, self.block, self.scope, self.depth = call, prefix, block, \
            scope, depth
        self.next = 0
        #: state input index -> the id of its GetAttr node here
        self.params: dict[int, str] = {}

    def take(self, n: int = 1) -> str:
        nid = f"{self.prefix}n{self.next}"
        self.next += n
        return nid


class _TraceBuilder(_Builder):
    def __init__(self, capture: Capture):
        super().__init__(capture)
        self.tg = capture.trace_graph

    # -- what each call is -------------------------------------------------------
    def _analyse(self) -> None:
        tg = self.tg
        # each node's inputs, outputs and kind, read from torch once (every pass needs them)
        self.ins = [_ins(node) for node in tg.nodes]
        self.outs = [_outs(node) for node in tg.nodes]
        self.kinds = [node.kind() for node in tg.nodes]
        self.stack_of: dict[int, tuple] = {}  # value unique -> calls it was defined in
        self.node_stack: list[tuple] = []
        inputs = list(tg.graph.inputs())
        self.state_of = {v.unique(): i - tg.n_inputs for i, v in enumerate(inputs)
                         if i >= tg.n_inputs}
        for v in inputs:
            self.stack_of[v.unique()] = ()
        n = len(tg.calls)
        self.escapes: list[list] = [[] for _ in range(n)]
        self._escaped: list[set[int]] = [set() for _ in range(n)]   # their uniques
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
        for i, stack in enumerate(self._placed()):
            self.node_stack.append(stack)
            for k in stack:
                first_node.setdefault(k, i)
            self._uses(self.ins[i], stack, n, i)
            for out in self.outs[i]:
                self.stack_of[out.unique()] = stack
        self._uses(_ins(tg.graph.return_node()), (), n, len(tg.nodes))
        where: dict[int, float] = {}
        #: per method: each module it calls -> the attrs key of that module's first call
        #: (a dict, not a scan of the method's attrs: the root of N blocks made it N^2)
        first_call: list[dict[int, tuple]] = [{} for _ in range(n + 1)]
        #: calls that recorded no op: placed by their anchors (the others by their ops:
        #: torch may put a node of the caller between a call's start and its first op)
        self.empty = [k not in first_node for k in range(n)]
        for k, call in enumerate(tg.calls):
            kind, at = call.anchor or (None, None)
            if not self.empty[k]:
                where[k] = first_node[k] - 0.5 + k * 1e-9
            elif kind == "node":
                where[k] = at + 0.5 + k * 1e-9
            elif kind == "call":
                where[k] = where.get(at, -1.0) + (k - at) * 1e-9
            elif kind == "start":
                where[k] = -1.0 + k * 1e-9
            else:  # its anchor was dead code: just before its first node
                where[k] = first_node.get(k, len(tg.nodes)) - 0.25 + k * 1e-9
            owner = n if call.parent is None else call.parent
            key = first_call[owner].setdefault(id(call.module), ("c", k))
            self.attrs[owner].setdefault(key, where[k])

    def _placed(self) -> list[tuple]:
        """Each node's calls, where the node sits in the TracedModule: its scope, except
        for a node the tracer inserted after the value it reads (``aten::Int`` of a size
        read later, in another call), which sits in that value's call."""
        tg, ins, kinds = self.tg, self.ins, self.kinds
        raw = tg.stacks
        last: dict[int, int] = {}
        for i, stack in enumerate(raw):
            for k in stack:
                last[k] = i
        begun: set[int] = set()
        unknown: list[int] = []
        by_node: dict[int, list[int]] = {}
        by_call: dict[int | None, list[int]] = {}
        for k, call in enumerate(tg.calls):
            kind, at = call.anchor or (None, None)
            if kind == "node":
                by_node.setdefault(at, []).append(k)
            elif kind in ("call", "start"):
                by_call.setdefault(at, []).append(k)
            else:
                unknown.append(k)  # its anchor was dead code: trust its scope

        def begin(keys):
            for k in keys:
                if k not in begun:   # else its anchored calls are begun already
                    begun.add(k)
                    begin(by_call.get(k, ()))

        begin(by_call.get(None, ()))
        begin(unknown)
        placed: list[tuple] = []
        defined: dict[int, tuple] = {}
        made_by: dict[int, int] = {}  # value unique -> index of its node
        here: tuple = ()
        for i, stack in enumerate(raw):
            read = ins[i][0].unique() if len(ins[i]) == 1 else None
            if kinds[i] in _CONVERSIONS and read in made_by and all(
                    kinds[j] in _CONVERSIONS and len(ins[j]) == 1
                    and ins[j][0].unique() == read
                    for j in range(made_by[read] + 1, i)):
                stack = defined[read]  # put right after the value it converts
            common = _common(stack, here)
            if any(last.get(k, -1) > i for k in here[common:]) or any(
                    k not in begun for k in stack[common:]):
                producers = [defined[v.unique()] for v in ins[i] if v.unique() in defined]
                stack = producers[0] if producers else here
            placed.append(stack)
            begin(stack)
            for out in self.outs[i]:
                defined[out.unique()] = stack
                made_by[out.unique()] = i
            here = stack
            begin(by_node.get(i, ()))
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

    def _uses(self, inputs: list, stack: tuple, root: int, at: int) -> None:
        for pos, v in enumerate(inputs):
            u = v.unique()
            if u in self.state_of:
                reader = self._reader(self.state_of[u], stack)
                attrs = self.attrs[root if reader is None else reader]
                attrs.setdefault(("s", self.state_of[u]), at + pos * 1e-6)
                continue
            defined = self.stack_of.get(u, ())
            for k in defined[_common(defined, stack):]:
                if u not in self._escaped[k]:
                    self._escaped[k].add(u)
                    self.escapes[k].append(v)

    # -- entry -------------------------------------------------------------------
    def build(self) -> nx.DiGraph:
        tg = self.tg
        self._analyse()
        root_class = _class_name(tg.root)
        self._container("root", "graph", None, owner=None, label=root_class,
                        module="", **{"class": root_class}, depth=0)
        self.refs: dict[int, tuple] = {}  # value unique -> (ref, calls it came through)
        values = list(tg.graph.inputs())[:tg.n_inputs]
        input_ids = self._add_inputs(values, root_class)
        for nid, value in zip(input_ids, values):
            self.refs[value.unique()] = (nid,)
        n = len(tg.calls)
        self.opened = [False] * n
        self.methods: dict[int | None, _Method] = {}
        self.after_node: dict[int, list[int]] = {}
        self.after_call: dict[int | None, list[int]] = {}
        for k, call in enumerate(tg.calls):
            if call.anchor is None or not self.empty[k]:
                continue
            where, at = call.anchor
            if where == "node":
                self.after_node.setdefault(at, []).append(k)
            else:
                self.after_call.setdefault(at, []).append(k)
        root = _Method(None, "", "root", ("", root_class), 0)
        self.methods[None] = root
        self._getattrs(root, n)
        self.open: list[int] = []
        for k in self.after_call.get(None, []):
            self._open_call(k)
        for i, node in enumerate(tg.nodes):
            stack = self.node_stack[i]
            self._close_to(stack)
            for k in stack:
                if not self.opened[k]:
                    self._open_call(k)
            self._close_to(stack)
            method = self.methods[stack[-1] if stack else None]
            self._op(node, self.ins[i], self.outs[i], method)
            for k in self.after_node.get(i, []):
                self._open_call(k)
        self._close_to(())
        for k in range(n):  # calls torch left no trace of (their ops were dead code)
            if not self.opened[k] and tg.calls[k].parent is None:
                self._open_call(k)
                self._close_to(())
        ret = tg.graph.return_node()
        outs = [self._ref(v, ()) for v in _ins(ret)]
        self._add_return([list(r) for r, _ in outs], root_class)
        for (ref, info) in outs:
            self._link(ref, "out", info)
        return self._finish(root_class, input_ids)

    # -- methods -----------------------------------------------------------------
    def _getattrs(self, method: _Method, key: int) -> None:
        """The method's GetAttr chains: parameters' (hidden nodes), then submodules'."""
        tg = self.tg
        base = method.scope[0]
        chains: list[tuple[int | None, list[str]]] = []
        attrs = self.attrs[key]
        for kind, i in sorted(attrs, key=attrs.__getitem__, reverse=True):
            path = tg.state[i][0] if kind == "s" else tg.calls[i].path
            rel = path[len(base) + 1:] if base and path.startswith(base + ".") else path
            chains.append((i if kind == "s" else None, rel.split(".")))
        for s, parts in chains:
            first = method.next
            method.next += len(parts)
            if s is None:
                continue
            nid = f"{method.prefix}n{first + len(parts) - 1}"
            name = parts[-1]
            tensor = tg.state[s][1]
            self.G.add_node(
                nid, kind="prim::GetAttr", label=name, source=None, arg_names=None,
                user_source=None, scope=method.scope[0], scope_class=method.scope[1],
                block=method.block, subgraph_of=None,
                outputs=[{**tensor_info(tensor, name), "type": "Tensor"}], inputs=[[
                    f"module:{_join(base, '.'.join(parts[:-1])) if parts[:-1] else base}"]],
                attributes={"name": name}, hidden=True,
                target=_join(base, ".".join(parts)))
            method.params[s] = nid

    def _open_call(self, k: int) -> None:
        tg = self.tg
        call = tg.calls[k]
        if self.opened[k]:
            return
        if call.parent is not None and not self.opened[call.parent]:
            self._open_call(call.parent)
        self._close_to(self._chain(call.parent))
        self.opened[k] = True
        parent = self.methods[call.parent]
        nid = parent.take(2 if len(self.escapes[k]) > 1 else 1)
        module = call.module
        cls = _class_name(module)
        nth = self._nth[k]
        cid = self._container(
            f"{nid}/call", "method", parent.block, owner=None, call_site=nid,
            module=call.path, method="forward" + (str(nth) if nth else ""),
            label=f"{call.path or '<root>'}: {cls}", depth=parent.depth + 1,
            qualified_type=_qualified(module), source=None, user_source=None,
            **{"class": cls})
        method = _Method(k, f"{cid}/", cid, (call.path, cls), parent.depth + 1)
        method.site = nid
        self.methods[k] = method
        self._getattrs(method, k)
        self.open.append(k)
        for j in self.after_call.get(k, []):
            self._open_call(j)

    def _chain(self, k: int | None) -> tuple:
        """The calls from the outermost down to ``k`` (memoised: asked for every op)."""
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
            seen = [self._ref(v, inside) for v in escapes]
            types = ", ".join(_unshaped(v)["type"] for v in escapes)
            hidden = all(self.G.nodes[r[0]]["kind"] == "prim::Constant"
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
                            outputs=[{**value_info(v), "name": None} for v in escapes],
                            inputs=[[nid]], attributes={}, hidden=False)
            self._link((nid,), unpack, self.G.nodes[nid]["outputs"][0])
            method.unpack = unpack

    # -- values ------------------------------------------------------------------
    def _ref(self, value, stack: tuple) -> tuple:
        """The producers of ``value`` as a node in calls ``stack`` sees them, and the
        record of the value there."""
        u = value.unique()
        ref = self.refs[u]
        defined = self.stack_of.get(u, ())
        common = _common(defined, stack)
        info = None
        for k in reversed(defined[common:]):  # innermost call first
            if len(self.escapes[k]) > 1:
                ref = (self.methods[k].unpack,)
                info = {**value_info(value), "name": None}
            else:
                info = _unshaped(value)
        if len(stack) > common:  # read inside a call: its parameter has the traced type
            info = value_info(value)
        elif info is None:
            if len(ref) == 1 and ref[0] in self.G and len(self.G.nodes[ref[0]]["outputs"]) == 1:
                info = self.G.nodes[ref[0]]["outputs"][0]
            else:
                info = value_info(value)
        return ref, info

    def _op(self, node, inputs: list, outputs: list, method: _Method) -> None:
        nid = method.take()
        kind = node.kind()
        here = self._chain(method.call)
        seen = []
        for v in inputs:
            s = self.state_of.get(v.unique())
            if s is not None:
                reader = self._reader(s, here)
                pid = self.methods[reader].params[s]
                seen.append(((pid,), self.G.nodes[pid]["outputs"][0] if reader == method.call
                             else value_info(v)))
            else:
                seen.append(self._ref(v, here))
        label, hidden, weight = None, False, None
        if kind == "prim::Constant":
            label, weight = constant_label(node)
            hidden = True
        elif kind == "prim::Uninitialized":
            hidden = True
        elif kind in ("prim::ListConstruct", "prim::TupleConstruct") and inputs:
            hidden = all(i.node().kind() == "prim::Constant" for i in inputs)
        source, user_source = node_locations(node)
        self.G.add_node(
            nid, kind=kind, label=label or kind.split("::")[-1], source=source,
            arg_names=_arg_names(node), user_source=user_source, scope=method.scope[0],
            scope_class=method.scope[1], block=method.block, subgraph_of=None,
            outputs=[weight] if weight is not None else [value_info(o) for o in outputs],
            inputs=[list(r) for r, _ in seen],
            attributes={name: _attr_repr(node, name, None) for name in node.attributeNames()},
            hidden=hidden)
        for ref, info in seen:
            self._link(ref, nid, info)
        for out in outputs:
            self.refs[out.unique()] = (nid,)


def build_trace_graph(capture: Capture) -> nx.DiGraph:
    """The IR graph of a capture traced without the TracedModule (see the docstring)."""
    return _TraceBuilder(capture).build()
