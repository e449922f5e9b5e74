"""Walk a ``torch.export`` program (an ``ExportedProgram``'s FX graph) into the irviz IR
graph: the same vocabulary as :mod:`irviz.ir.build` (see :mod:`irviz.ir.model`), with
``G.graph["mode"] == "export"``.

- every ``call_function`` node is a node of kind ``aten::add.Tensor`` (the OpOverload's
  name; the default overload reads ``aten::linear``); literal arguments are hidden
  ``prim::Constant`` nodes folded into their consumer's label (``other=0``), as a
  TorchScript constant is;
- user inputs are ``prim::Param`` nodes ``in0…``; parameters, buffers and lifted constants
  are hidden ``prim::GetAttr`` nodes ``p0…`` folded into their consumers (``weight: 4×4``),
  as TorchScript's parameter ``GetAttr`` s are; the user outputs go to ``out``;
- ``operator.getitem`` on a multi-output op draws nothing: its consumers read the op (or,
  for a higher-order op, the body values that make that output) directly;
- the higher-order ops ``cond``, ``while_loop``, ``scan`` and ``map`` are nodes
  ``higher_order::cond`` … owning their bodies (the ``get_attr`` submodules) as containers
  ``cond.true``/``cond.false``, ``while.cond``/``while.body``, ``scan.body``, ``map.body``,
  walked recursively (a ``cond`` in a ``scan`` body is nested there). A ``cond`` body's
  inputs are the operands themselves (like an ``if`` branch reading outer values); a loop
  body's carried inputs come from the loop node (like a ``prim::Loop`` body), its other
  operands (parameters) directly; a consumer of the op's output reads the body values
  that make it (one edge per ``cond`` branch, as for an ``if``);
- module calls are ``method`` containers from ``node.meta["nn_module_stack"]`` (path,
  class), source lines from ``node.meta["stack_trace"]`` (``source``: the innermost
  frame; ``user_source``: the innermost frame outside torch), shapes and dtypes from
  ``node.meta["val"]`` (a symbolic size is its symbol: ``s77×3×4``).

Node ids: ``n4`` (the fifth node of the entry graph), ``c2/call/n0`` (inside the third
module call opened), ``n4/b1/n0`` (body 1 of higher-order op ``n4``).
"""
from __future__ import annotations

import operator
import re
from typing import Any

import networkx as nx
import torch

from ..paths import IRVIZ_DIR, is_inside, is_stdlib_file, is_torch_file
from .model import HIGHER_ORDER_BODIES
from ..location import source_line, stack_frames

__all__ = ["build_export_graph", "export_kind"]

#: the FX name of each higher-order op irviz draws with its bodies -> our op kind
_HOP_NAMES = {"cond": "higher_order::cond", "while_loop": "higher_order::while_loop",
              "scan": "higher_order::scan", "map_impl": "higher_order::map",
              "map": "higher_order::map"}

#: how each body's frame is titled
_BODY_LABELS = {"cond.true": "true", "cond.false": "false", "while.cond": "condition",
                "while.body": "body", "scan.body": "body (each step)",
                "map.body": "body (each element)"}

def export_kind(target: Any) -> str:
    """``aten::add.Tensor``, ``higher_order::cond``, ``operator::mul`` for an FX target."""
    if isinstance(target, torch._ops.OpOverload):
        return target.name()
    if isinstance(target, torch._ops.HigherOrderOperator):
        name = target.name()
        return _HOP_NAMES.get(name, f"higher_order::{name}")
    module = (getattr(target, "__module__", None) or "python").rsplit(".", 1)[-1].strip("_")
    return f"{module}::{getattr(target, '__name__', str(target))}"


def _locations(stack_trace: str | None) -> tuple[str | None, str | None]:
    """``(source, user_source)`` as ``file:line:1`` from an FX node's stack trace
    (outermost frame first): the innermost real file, and the innermost outside torch."""
    if not stack_trace:
        return None, None
    frames = [f for f in stack_frames(stack_trace) if not f[0].startswith("<")]   # FX's generated code
    source = f"{frames[-1][0]}:{frames[-1][1]}:1" if frames else None
    for path, line in reversed(frames):
        if is_torch_file(path) or is_stdlib_file(path) or is_inside(path, IRVIZ_DIR):
            continue
        return source, f"{path}:{line}:1"
    return source, None


def _dim(d: Any) -> int | str:
    if isinstance(d, torch.SymInt):
        node = d.node
        hint = node.maybe_as_int() if hasattr(node, "maybe_as_int") else None
        return hint if hint is not None else str(d)
    return int(d)


def _value_info(value: Any, name: str | None = None) -> dict:
    if isinstance(value, torch.Tensor):
        return {"name": name, "type": "Tensor", "shape": [_dim(d) for d in value.shape],
                "dtype": str(value.dtype).replace("torch.", "")}
    if isinstance(value, (torch.SymInt, torch.SymBool)):   # named by its symbol (u0, s77)
        return {"name": str(value), "type": type(value).__name__, "shape": None,
                "dtype": None}
    if isinstance(value, (int, float, bool)):
        return {"name": name, "type": type(value).__name__, "shape": None, "dtype": None}
    return {"name": name, "type": type(value).__name__ if value is not None else "None",
            "shape": None, "dtype": None}


def _outputs(node: torch.fx.Node) -> list[dict]:
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        return [_value_info(v) for v in val]
    if val is None and node.op == "call_function":
        return []
    return [_value_info(val, node.name)]


def _short_class(qualname: str) -> str:
    return qualname.rsplit(".", 1)[-1]


def _const_text(value: Any) -> str:
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return str(value).replace("torch.", "")
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Refs(tuple):
    """The producers of one value (a tuple of node ids)."""


class _ExportBuilder:
    def __init__(self, capture):
        self.capture = capture
        self.program = capture.exported
        self.G = nx.DiGraph()
        self.blocks: dict[str, dict] = {}
        self._calls = 0

    def _container(self, cid: str, kind: str, parent: str | None, **meta) -> str:
        self.blocks[cid] = {"kind": kind, "parent": parent, "at": self.G.number_of_nodes(),
                            **meta}
        return cid

    # -- entry -------------------------------------------------------------------
    def build(self) -> nx.DiGraph:
        program, cap = self.program, self.capture
        gm = program.graph_module
        root_class = self._root_class(gm)
        self._container("root", "graph", None, owner=None, label=root_class, module="",
                        depth=0, **{"class": root_class})
        self.root_class = root_class
        sig = program.graph_signature
        user_inputs = set(sig.user_inputs)
        targets = {}
        for spec in sig.input_specs:
            name = getattr(spec.arg, "name", None)
            if name is not None:
                targets[name] = spec.target
        env: dict[torch.fx.Node, Any] = {}
        inputs, n_in, n_param = [], 0, 0
        for node in gm.graph.nodes:
            if node.op != "placeholder":
                continue
            info = _value_info(node.meta.get("val"), node.name)
            if node.name in user_inputs:
                nid = f"in{n_in}"
                n_in += 1
                self._add(nid, kind="prim::Param", label=node.name, block="root",
                          scope=("", root_class), outputs=[info])
                inputs.append(nid)
            else:   # a parameter, buffer or lifted constant: folded into its consumers
                nid = f"p{n_param}"
                n_param += 1
                target = targets.get(node.name) or node.name
                self._add(nid, kind="prim::GetAttr", label=str(target).rsplit(".", 1)[-1],
                          block="root", scope=("", root_class),
                          outputs=[{**info, "name": str(target)}], hidden=True,
                          extra={"target": str(target)})
            env[node] = _Refs((nid,))
        outs = self._walk(gm, env, "", "root", ("", root_class), top=True)
        user_outputs = self._user_outputs(outs)
        self._add("out", kind="prim::Return", label="return", block="root",
                  scope=("", root_class), outputs=[],
                  inputs=[(list(r), info) for r, info in user_outputs])
        self._returns()
        ranges = {str(k): _range_text(v) for k, v in
                  getattr(program, "range_constraints", {}).items()}
        self._guards(ranges)
        self.G.graph.update(
            name=cap.name, mode="export", root_class=root_class,
            source_file=str(cap.target.source_file) if cap.target.source_file else None,
            inputs=inputs, outputs=["out"], blocks=self.blocks,
            range_constraints=ranges)
        return self.G

    # -- runtime asserts and range constraints -------------------------------------
    def _guards(self, ranges: dict[str, str]) -> None:
        """Badges (``guards``: a list of texts) on the nodes the program's guards
        constrain: each symbol's range (``s77 ∈ 2..∞``) on the input whose shape holds it
        or the op that makes it (``item`` -> ``u0``), and each runtime assert
        (``aten::_assert_scalar``: ``u0 <= s77``) on the nodes making its symbols; the
        assert and the comparison feeding only it are folded away."""
        G = self.G
        makers: dict[str, str] = {}
        for node, data in G.nodes(data=True):
            if data.get("hidden"):
                continue
            for out in data["outputs"]:
                if out.get("type") in ("SymInt", "SymBool") and _SYMBOL.fullmatch(
                        out.get("name") or ""):
                    makers.setdefault(out["name"], node)
                for d in out.get("shape") or ():
                    if isinstance(d, str) and _SYMBOL.fullmatch(d):
                        makers.setdefault(d, node)
        for symbol, node in makers.items():
            if symbol in ranges:
                G.nodes[node].setdefault("guards", []).append(f"{symbol} ∈ {ranges[symbol]}")
        for node, data in list(G.nodes(data=True)):
            if data["kind"] != "aten::_assert_scalar" or not data["inputs"]:
                continue
            checked = data["inputs"][0]
            expr = None
            for producer in checked:
                outs = G.nodes[producer]["outputs"]
                if outs and outs[0].get("type") == "SymBool":
                    expr = outs[0].get("name")
            if not expr:
                continue
            data["hidden"] = True
            data["guard"] = expr
            for producer in checked:
                if all(G.nodes[c]["kind"] == "aten::_assert_scalar" for c in G.successors(producer)):
                    G.nodes[producer]["hidden"] = True
            for symbol in dict.fromkeys(_SYMBOL.findall(expr)):
                if symbol in makers:
                    guards = G.nodes[makers[symbol]].setdefault("guards", [])
                    if f"assert {expr}" not in guards:
                        guards.append(f"assert {expr}")

    def _root_class(self, gm) -> str:
        for node in gm.graph.nodes:
            for path, cls in (node.meta.get("nn_module_stack") or {}).values():
                if path == "":
                    return _short_class(cls)
        obj = self.capture.target.obj
        if isinstance(obj, torch.nn.Module) and self.capture.target.kind != "exported":
            return type(obj).__name__
        return self.capture.target.name

    def _user_outputs(self, outs: list) -> list:
        """The returned values that are the user's (not buffer mutations)."""
        specs = self.program.graph_signature.output_specs
        kinds = [getattr(s.kind, "name", str(s.kind)) for s in specs]
        if len(kinds) == len(outs):
            return [o for o, k in zip(outs, kinds) if k == "USER_OUTPUT"]
        return outs

    # -- nodes -------------------------------------------------------------------
    def _add(self, nid, *, kind, label, block, scope, outputs, inputs=(), hidden=False,
             node=None, extra=None, arg_names=None):
        source, user_source = _locations(node.meta.get("stack_trace")) if node is not None \
            else (None, None)
        if node is not None and user_source is None:
            user_source = self._inherited_source.get(block)
        self.G.add_node(nid, kind=kind, label=label, source=source, user_source=user_source,
                        scope=scope[0], scope_class=scope[1], block=block, subgraph_of=None,
                        outputs=outputs, inputs=[list(p) for p, _ in inputs], attributes={},
                        hidden=hidden, arg_names=arg_names, **(extra or {}))
        for producers, info in inputs:
            for producer in producers:
                if self.G.has_edge(producer, nid):
                    self.G.edges[producer, nid]["count"] += 1
                    continue
                info = info or {}
                self.G.add_edge(producer, nid, type=info.get("type"), shape=info.get("shape"),
                                dtype=info.get("dtype"), count=1)

    _inherited_source: dict[str, str] = {}

    def _walk(self, gm, env, prefix, block, scope, top=False) -> list:
        """Walk the nodes of ``gm``'s graph into ``block``; the values it returns (one
        ``(_Refs, info)`` per output leaf)."""
        opened: list[tuple[str, str]] = []   # the module calls open now: (stack key, cid)
        count: dict[str, int] = {}            # nodes placed per container so far
        outs: list = []
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "get_attr":
                env[node] = getattr(gm, node.target, None)
                continue
            if node.op == "output":
                outs = [(self._refs(env, a), self._info(a)) for a in _leaves(node.args[0])]
                continue
            here, here_scope = block, scope
            if top:
                here, here_scope = self._enter_calls(node, opened, prefix, block, scope)
            if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
                source = env.get(node.args[0])
                if isinstance(source, list):   # a multi-output op: its i-th value
                    env[node] = source[node.args[1]] if node.args[1] < len(source) else _Refs()
                else:
                    env[node] = source if isinstance(source, _Refs) else _Refs()
                continue
            i = count.get(here, 0)
            count[here] = i + 1
            nid = f"{'' if here == 'root' else here + '/'}n{i}"
            self._op(node, nid, env, here, here_scope)
        return outs

    def _enter_calls(self, node, opened, prefix, block, scope):
        """The module call container ``node`` belongs in, opening and closing calls as
        its ``nn_module_stack`` differs from the previous node's."""
        recorded = node.meta.get("nn_module_stack")
        if not recorded:   # none recorded (an op export added): where the previous node was
            return (opened[-1][1], self.blocks[opened[-1][1]]["scope"]) if opened \
                else (block, scope)
        stack = [(key, path, cls) for key, (path, cls) in recorded.items()
                 if path != "" and not key.startswith("_empty_nn_module_stack")]
        common = 0
        while common < min(len(opened), len(stack)) and opened[common][0] == stack[common][0]:
            common += 1
        del opened[common:]
        for key, path, cls in stack[common:]:
            parent = opened[-1][1] if opened else block
            cid = f"c{self._calls}/call"
            self._calls += 1
            source, user_source = _locations(node.meta.get("stack_trace"))
            self._container(cid, "method", parent, owner=None, call_site=f"c{self._calls - 1}",
                            module=path, method="forward", label=f"{path}: {_short_class(cls)}",
                            depth=len(opened) + 1, qualified_type=cls, source=None,
                            user_source=None, scope=(path, _short_class(cls)),
                            **{"class": _short_class(cls)})
            opened.append((key, cid))
        if opened:
            return opened[-1][1], self.blocks[opened[-1][1]]["scope"]
        return block, scope

    def _refs(self, env, value) -> _Refs:
        if isinstance(value, torch.fx.Node):
            found = env.get(value)
            return found if isinstance(found, _Refs) else _Refs()
        return _Refs()

    @staticmethod
    def _info(value) -> dict | None:
        if isinstance(value, torch.fx.Node):
            val = value.meta.get("val")
            return _value_info(val) if not isinstance(val, (list, tuple)) else None
        return None

    def _op(self, node, nid, env, block, scope) -> None:
        kind = export_kind(node.target)
        if node.target in _HOP_TARGETS() and kind in HIGHER_ORDER_BODIES:
            self._hop(node, nid, kind, env, block, scope)
            return
        inputs, names = [], []
        schema = getattr(node.target, "_schema", None)
        arg_names = [a.name for a in schema.arguments] if schema is not None else []
        values = list(node.args) + list(node.kwargs.values())
        value_names = arg_names[:len(node.args)] + list(node.kwargs)
        prefix = nid.rsplit("/", 1)[0] + "/" if "/" in nid else ""
        local = nid.rsplit("/", 1)[-1]
        for j, (value, name) in enumerate(zip(values, value_names + [None] * len(values))):
            nodes = [v for v in _leaves(value) if isinstance(v, torch.fx.Node)]
            if nodes:
                producers: list[str] = []
                for v in nodes:
                    producers += [p for p in self._refs(env, v) if p not in producers]
                inputs.append((_Refs(producers), self._info(nodes[0]) if len(nodes) == 1
                               else None))
            elif value is None:
                continue
            else:   # a literal argument: a folded constant, as TorchScript's
                cid = f"{prefix}{local}_a{j}"
                self._add(cid, kind="prim::Constant", label=_const_text(value), block=block,
                          scope=scope, outputs=[_value_info(value)], hidden=True)
                inputs.append((_Refs((cid,)), None))
            names.append(name)
        label = kind.split("::")[-1].split(".")[0]
        self._add(nid, kind=kind, label=label, block=block, scope=scope,
                  outputs=_outputs(node), inputs=inputs, node=node, arg_names=names)
        val = node.meta.get("val")
        if isinstance(val, (list, tuple)):
            env[node] = [_Refs((nid,)) for _ in val]
        else:
            env[node] = _Refs((nid,))

    # -- higher-order ops ----------------------------------------------------------
    def _hop(self, node, nid, kind, env, block, scope) -> None:
        """A ``cond``/``while_loop``/``scan``/``map`` node and its bodies."""
        args = node.args
        bodies: list = []
        if kind == "higher_order::cond":
            pred, true_gm, false_gm, operands = args[:4]
            shown = [pred, *_leaves(operands)]
            bodies = [(true_gm, [("operand", o) for o in _leaves(operands)]),
                      (false_gm, [("operand", o) for o in _leaves(operands)])]
        elif kind == "higher_order::while_loop":
            cond_gm, body_gm, carried = args[:3]
            extra = list(_leaves(args[3])) if len(args) > 3 else []
            mapping = [("loop", o) for o in _leaves(carried)] + [("operand", o) for o in extra]
            shown = [*_leaves(carried), *extra]
            bodies = [(cond_gm, mapping), (body_gm, mapping)]
        elif kind == "higher_order::scan":
            body_gm, init, xs = args[:3]
            extra = list(_leaves(args[3])) if len(args) > 3 else []
            shown = [*_leaves(init), *_leaves(xs), *extra]
            bodies = [(body_gm, [("loop", o) for o in (*_leaves(init), *_leaves(xs))]
                       + [("operand", o) for o in extra])]
        else:   # map_impl(body, xs, args)
            body_gm, xs = args[:2]
            extra = list(_leaves(args[2])) if len(args) > 2 else []
            shown = [*_leaves(xs), *extra]
            bodies = [(body_gm, [("loop", o) for o in _leaves(xs)]
                       + [("operand", o) for o in extra])]
        inputs = [(self._refs(env, v), self._info(v)) for v in shown
                  if isinstance(v, torch.fx.Node)]
        _, user_source = _locations(node.meta.get("stack_trace"))
        # inside a body torch records the outer op's line for every node: not this op's
        outer = self.blocks[block].get("owner")
        inherited = outer is not None and self.G.nodes[outer]["user_source"] == user_source
        self._add(nid, kind=kind, label=kind.split("::")[-1], block=block, scope=scope,
                  outputs=_outputs(node), inputs=inputs, node=node,
                  extra={"code": None if inherited else source_line(user_source)})
        yields: list[list] = []
        for k, ((gm, mapping), body_kind) in enumerate(zip(bodies, HIGHER_ORDER_BODIES[kind])):
            gm = env.get(gm) if isinstance(gm, torch.fx.Node) else gm
            cid = self._container(f"{nid}/b{k}", body_kind, block, owner=nid,
                                  label=_BODY_LABELS[body_kind])
            if not isinstance(gm, torch.fx.GraphModule):
                yields.append([])
                continue
            self._inherited_source[cid] = self.G.nodes[nid]["user_source"]
            body_env: dict = {}
            placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
            for ph, (how, outer) in zip(placeholders, mapping):
                body_env[ph] = self._refs(env, outer) if how == "operand" else _Refs((nid,))
            for ph in placeholders[len(mapping):]:
                body_env[ph] = _Refs((nid,))
            outs = self._walk(gm, body_env, f"{cid}/", cid, scope)
            if body_kind != "while.cond":
                yields.append([r for r, _ in outs])
        n_out = len(node.meta.get("val") or ()) if isinstance(node.meta.get("val"),
                                                                   (list, tuple)) else 1
        results = []
        for i in range(n_out):
            producers: list[str] = []
            for branch in yields:
                if i < len(branch):
                    producers += [p for p in branch[i] if p not in producers]
            results.append(_Refs(producers or (nid,)))
        env[node] = results

    # -- call containers' returned values ----------------------------------------
    def _returns(self) -> None:
        """Each call container's ``returns``: its values used outside it, in order."""
        calls = [cid for cid, info in self.blocks.items() if info["kind"] == "method"]
        if not calls:
            return
        chain_of: dict[str, set[str]] = {}

        def chain(block: str) -> set[str]:
            if block not in chain_of:
                out, b = set(), block
                while b is not None:
                    out.add(b)
                    b = self.blocks[b]["parent"]
                chain_of[block] = out
            return chain_of[block]

        returns: dict[str, list[str]] = {cid: [] for cid in calls}
        for u, v in self.G.edges:
            inside_u = chain(self.G.nodes[u]["block"])
            inside_v = chain(self.G.nodes[v]["block"])
            for cid in calls:
                if cid in inside_u and cid not in inside_v and [u] not in returns[cid]:
                    returns[cid].append([u])
        for cid in calls:
            self.blocks[cid]["returns"] = returns[cid]
            self.blocks[cid].pop("scope", None)


def _HOP_TARGETS() -> set:
    """The higher-order operators drawn with their bodies (looked up once)."""
    global _HOPS
    if _HOPS is None:
        found = set()
        ops = torch.ops.higher_order
        for name in ("cond", "while_loop", "scan", "map_impl"):
            try:
                found.add(getattr(ops, name))
            except (AttributeError, RuntimeError):
                pass
        _HOPS = found
    return _HOPS


_HOPS = None


_SYMBOL = re.compile(r"\b[su]\d+\b")


def _range_text(vr) -> str:
    """``VR[2, int_oo]`` -> ``2..∞``."""
    lower, upper = getattr(vr, "lower", None), getattr(vr, "upper", None)
    if lower is None:
        return str(vr)

    def bound(b) -> str:
        text = str(b)
        return {"int_oo": "∞", "-int_oo": "-∞", "oo": "∞", "-oo": "-∞"}.get(text, text)
    return f"{bound(lower)}..{bound(upper)}"


def _leaves(value) -> list:
    """The leaves of a nested list/tuple of FX arguments."""
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out += _leaves(v)
        return out
    return [value]


def build_export_graph(capture) -> nx.DiGraph:
    """The IR graph of an export capture (``capture.exported``)."""
    builder = _ExportBuilder(capture)
    builder._inherited_source = {}
    return builder.build()
