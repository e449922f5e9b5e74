"""Trace mode without the TracedModule (issue 16): a plain module tree is drawn from the
traced graph with its module calls from the call boundaries noted while tracing, node for
node as the
TracedModule route draws it; models holding TorchScript keep the TracedModule route."""
from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch import nn

from irviz.analyses.pipeline import graph_of
from irviz.frontends import trace_graph
from irviz.frontends.capture import capture
from irviz.frontends.inputs import ExampleInputs
from irviz.frontends.loader import target_of
from irviz.ir.build_script import ScriptBuilder
from irviz.ir.invariants import assert_invariants
from irviz.workspace import Workspace

CORPUS = Path(__file__).resolve().parent / "corpus" / "transformers_models.py"


class Inner(nn.Module):
    """Three results (a TupleConstruct / TupleUnpack pair), a parameter and a
    non-persistent buffer read after a submodule call."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.ones(4))
        self.register_buffer("nb", torch.ones(4), persistent=False)

    def forward(self, x):
        y = self.lin(x) * self.scale + self.nb
        return y, y.size(0), x + 1


class Outer(nn.Module):
    """Two calls of one submodule, a call that records no op, a parameter read through a
    submodule."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.id, self.act = Inner(), Inner(), nn.Identity(), nn.ReLU()

    def forward(self, x):
        y, n, z = self.a(x)
        y2 = self.act(self.act(y))
        w, _, _ = self.b(self.id(z) * n)
        return w + self.a.lin.weight.sum() + y2


def _capture(model, *inputs):
    target = target_of(model)
    return capture(target, "trace", ExampleInputs(tuple(inputs)))


def _differences(old, new) -> list[str]:
    found = [f"node {n}" for n in set(old.nodes) ^ set(new.nodes)]
    found += [f"{n}.{k}" for n in set(old.nodes) & set(new.nodes)
              for k in set(old.nodes[n]) | set(new.nodes[n])
              if old.nodes[n].get(k) != new.nodes[n].get(k)]
    found += [f"edge {e}" for e in set(old.edges) ^ set(new.edges)]
    found += [f"edge {e} data" for e in set(old.edges) & set(new.edges)
              if old.edges[e] != new.edges[e]]
    found += [f"block {c}" for c in set(old.graph["blocks"]) | set(new.graph["blocks"])
              if old.graph["blocks"].get(c) != new.graph["blocks"].get(c)]
    return found


def test_a_plain_module_tree_is_drawn_without_the_traced_module_as_the_traced_module_is():
    torch.manual_seed(0)
    cap = _capture(Outer().eval(), torch.rand(3, 4))
    assert cap.trace_graph is not None
    new = graph_of(cap)
    assert_invariants(new)
    assert cap.compiled is None  # drawing it made no TracedModule
    old = ScriptBuilder(replace(cap, trace_graph=None)).build()  # makes it: the old route
    assert isinstance(cap.scripted, torch.jit.ScriptModule)
    assert old.number_of_nodes() == new.number_of_nodes() > 30
    assert _differences(old, new) == []


def test_two_calls_of_one_submodule_are_two_calls():
    cap = _capture(Outer().eval(), torch.rand(3, 4))
    G = graph_of(cap)
    calls = [b for b in G.graph["blocks"].values() if b.get("module") == "act"]
    assert [c["method"] for c in calls] == ["forward", "forward1"]
    relus = [n for n, d in G.nodes(data=True) if d["kind"] == "aten::relu"]
    assert sorted(G.nodes[n]["block"] for n in relus) == sorted(
        c for c, b in G.graph["blocks"].items() if b.get("module") == "act")
    assert [b["module"] for b in G.graph["blocks"].values()].count("id") == 1  # no op


def test_render_does_not_build_the_traced_module_and_running_builds_it_once():
    ws = Workspace()
    [target] = ws.load("samples/decision_gate.py:MyCell").targets
    assert b"<svg" in ws.view(target, "trace").svg()
    cap = ws.capture(target, "trace")
    assert cap.trace_graph is not None and cap.compiled is None
    warned = list(cap.warnings)
    assert any(w.category == "TracerWarning" for w in warned)
    x, h = cap.inputs.args
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        out = cap.run()
    assert not [w for w in shown if "TracerWarning" in str(w.category)]
    traced = cap.scripted
    assert isinstance(traced, torch.jit.ScriptModule) and cap.scripted is traced
    assert cap.warnings == warned  # the second trace's warnings are not recorded again
    assert torch.equal(out[0], torch.tanh(target.obj.dg(target.obj.linear(x)) + h))


class Sizes(nn.Module):
    """Sizes read as numbers in a later call than the one that made them: the tracer puts
    their ``aten::Int`` right after the size, in the reading call's scope."""

    class Make(nn.Module):
        def forward(self, x):
            return x * 2, x.size(0), x.size(1)

    class Read(nn.Module):
        def forward(self, x, n, m):
            return x.view(n, -1) + m, x.reshape(m, n)

    def __init__(self):
        super().__init__()
        self.make, self.id, self.read = Sizes.Make(), nn.Identity(), Sizes.Read()

    def forward(self, x):
        y, n, m = self.make(x)
        w, v = self.read(self.id(y), n, m)
        return w.view(n, m) + v.sum() * n + torch.zeros(m, n).sum()


class DeadCode(nn.Module):
    """Ops torch removes as dead code right before a call's entry and as a call's last op:
    the boundaries noted after them still fall between the ops around them."""

    class Tail(nn.Module):
        def forward(self, x):
            y = x + 1
            y.sum()   # dead, the call's last op
            return y

    def __init__(self):
        super().__init__()
        self.tail, self.lin, self.act = DeadCode.Tail(), nn.Linear(4, 4), nn.ReLU()

    def forward(self, x):
        y = x * 2
        x.mean()      # dead, right before lin's entry
        z = self.lin(y) + 1
        z.sum()       # dead, right before tail's entry
        return self.act(self.tail(z))


def test_a_call_right_after_dead_code_is_anchored_on_the_node_left_before_it():
    tg = trace_graph.trace_graph(DeadCode().eval(), (torch.rand(3, 4),), True)
    assert [tg.nodes[i].kind() for i in (1, 5, 8)] == ["aten::mul", "aten::add", "aten::add"]
    # lin after the mul (x.mean() removed), tail after the add (z.sum() removed), act
    # after tail's add (its y.sum() removed)
    assert [(c.path, c.anchor) for c in tg.calls] == [
        ("lin", ("node", 1)), ("tail", ("node", 5)), ("act", ("node", 8))]
    assert tg.stacks == [(), (), (0,), (), (), (), (1,), (1,), (1,), (2,)]


class EmptyCalls(nn.Module):
    """A call that records no op right after an op torch renames after the trace
    (``aten::subtract`` becomes ``aten::sub``: the node noted at the boundary is replaced)
    and right after dead code."""

    def __init__(self):
        super().__init__()
        self.a, self.id, self.id2, self.b = nn.Linear(4, 4), nn.Identity(), nn.Identity(), \
            nn.Linear(4, 4)

    def forward(self, x):
        z = torch.subtract(self.a(x), 1)
        z = self.id(z) * 2
        z.sum()       # dead, right before id2's entry
        return self.b(self.id2(z))


def test_a_call_after_a_renamed_or_dead_node_sits_where_the_traced_module_has_it():
    """Both Identity calls used to be anchored nowhere and drawn after ``b``."""
    cap = _capture(EmptyCalls().eval(), torch.rand(3, 4))
    tg = cap.trace_graph
    sub = [n.kind() for n in tg.nodes].index("aten::sub")
    assert tg.calls[1].path == "id" and tg.calls[1].anchor == ("node", sub)
    new = graph_of(cap)
    old = ScriptBuilder(replace(cap, trace_graph=None)).build()
    assert _differences(old, new) == []
    modules = [b.get("module") for b in new.graph["blocks"].values()]
    assert modules.index("id") < modules.index("id2") < modules.index("b")


@pytest.mark.parametrize("model", [Outer, Sizes, DeadCode])
def test_each_node_runs_in_the_calls_torchs_scopes_say(model, monkeypatch):
    torch.manual_seed(0)
    module, x = model().eval(), torch.rand(3, 4)
    tg = trace_graph.trace_graph(module, (x,), True)
    assert not any(n.scopeName() for n in tg.nodes)
    assert list(tg.graph.nodes()) == tg.nodes  # nothing left in the graph, nothing inserted
    # torch's own scope blocks: each call's index is its scope name
    monkeypatch.setattr(trace_graph, "_slow_forward", lambda names, real: real)
    scoped = trace_graph.trace_graph(module, (x,), True)
    assert [n.kind() for n in tg.nodes] == [n.kind() for n in scoped.nodes]
    assert tg.stacks == [tuple(int(k) for k in n.scopeName().split("/")) if n.scopeName()
                         else () for n in scoped.nodes]
    assert [c.path for c in tg.calls] == [c.path for c in scoped.calls]


class SeesTorch(nn.Module):
    def __init__(self, fail: bool = False):
        super().__init__()
        self.inner, self.fail, self.seen = nn.Linear(4, 4), fail, []

    def forward(self, x):
        # what code torch imports while tracing would see (dynamo's trace rules resolve
        # torch._C._get_tracing_state by name once, and refused torch's own function later)
        self.seen.append(torch._C._get_tracing_state)
        y = self.inner(x)
        if self.fail:
            raise ValueError("the model raised")
        return y


def test_the_trace_patches_nothing_in_torch_C_and_puts_slow_forward_back():
    real, slow = torch._C._get_tracing_state, nn.Module._slow_forward
    model = SeesTorch()
    tg = trace_graph.trace_graph(model, (torch.rand(2, 4),), True)
    assert model.seen == [real] and [c.path for c in tg.calls] == ["inner"]
    assert nn.Module._slow_forward is slow
    with pytest.raises(ValueError):
        trace_graph.trace_graph(SeesTorch(fail=True), (torch.rand(2, 4),), True)
    assert nn.Module._slow_forward is slow and torch._C._get_tracing_state is real
    assert torch._C._get_tracing_state() is None


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = torch.jit.script(nn.Linear(4, 4))

    def forward(self, x):
        return self.cell(x).relu()


@torch.jit.script
def _scripted_gate(x):
    if bool(x.sum() > 0):
        return x
    return -x


class CallsScripted(nn.Module):
    def forward(self, x):
        return _scripted_gate(x) * 2


class Shared(nn.Module):
    """One submodule under two names, a tied parameter, buffers (one non-persistent)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
        self.b = self.a
        self.c = nn.Linear(4, 4)
        self.c.weight = self.a[0].weight
        self.register_buffer("scale", torch.ones(4), persistent=False)
        self.empty = None


def test_one_walk_names_the_modules_and_state_as_torch_does():
    model = nn.Sequential(Shared(), nn.Sequential(nn.ReLU(), Shared()))
    modules = trace_graph._modules(model)
    assert modules == list(model.named_modules())
    state = [(n, id(t)) for n, t in trace_graph._state(modules)]
    expected, seen = [], set()
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        if id(t) not in seen:
            seen.add(id(t))
            expected.append((name, id(t)))
    assert state == expected
    with pytest.raises(trace_graph.Unsupported):
        trace_graph._modules(Holder())


def test_a_model_holding_a_script_module_takes_the_traced_module_route():
    cap = _capture(Holder().eval(), torch.rand(3, 4))
    assert cap.trace_graph is None and isinstance(cap.compiled, torch.jit.ScriptModule)
    G = graph_of(cap)
    assert any(b.get("module") == "cell" for b in G.graph["blocks"].values())


def test_a_model_calling_a_script_function_keeps_its_branches():
    cap = _capture(CallsScripted().eval(), torch.rand(3, 4))
    assert cap.trace_graph is None
    G = graph_of(cap)
    assert any(d["kind"] == "prim::If" for _, d in G.nodes(data=True))


#: library models whose trace graph is drawn node for node as their TracedModule (T5,
#: BART, Swin and wav2vec2 differ in places: see irviz/ir/build_trace.py)
SAME_AS_TRACED_MODULE = ["bert()", "distilbert()", "gpt2()", "llama()", "vit()", "resnet()",
                         "convnext()", "whisper()", "clip()"]


@pytest.mark.slow
@pytest.mark.parametrize("factory", SAME_AS_TRACED_MODULE)
def test_library_models_are_drawn_node_for_node_as_their_traced_module(factory):
    pytest.importorskip("transformers")
    ws = Workspace()
    [target] = ws.load(str(CORPUS) + ":" + factory).targets
    cap = ws.capture(target, "trace")
    assert cap.trace_graph is not None
    new = graph_of(cap)
    old = ScriptBuilder(replace(cap, trace_graph=None)).build()
    assert _differences(old, new) == []
