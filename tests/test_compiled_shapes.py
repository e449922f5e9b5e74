"""Shapes of compiled code from running an instrumented copy of it: archives, ScriptModules
and ScriptFunctions given example inputs (irviz.frontends.compiled_run)."""
from __future__ import annotations

import collections
import inspect
import json
from typing import Optional

import pytest
import torch
from click.testing import CliRunner
from torch.utils._python_dispatch import TorchDispatchMode

from irviz.api import visualize
from irviz.cli import main
from irviz.ir.model import format_shape, returned_shape
from conftest import sample_module

forked_example = sample_module("fork_basics").example
LSTMEnsemble = sample_module("lstm_ensemble").LSTMEnsemble
WrapRNN = sample_module("rnn_loop").WrapRNN


class _DispatchShapes(TorchDispatchMode):
    """What eager PyTorch ran: (aten op name, output shape, dtype) -> how many times. An
    oracle that shares no code with irviz."""

    def __init__(self):
        super().__init__()
        self.seen = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        first = out[0] if isinstance(out, (tuple, list)) and out else out  # lstm: output, h, c
        if isinstance(first, torch.Tensor):
            name = func._schema.name.split("::")[-1]
            self.seen[(name, tuple(first.shape), str(first.dtype).replace("torch.", ""))] += 1
        return out


def _eager(model, *inputs):
    with torch.no_grad(), _DispatchShapes() as mode:
        model(*inputs)
    return mode.seen


def _ran(G):
    """(op name, shape, dtype) -> runs, for every aten node with one recorded tensor."""
    ran = collections.Counter()
    for _, data in G.nodes(data=True):
        outs = data["outputs"]
        if not data["kind"].startswith("aten::") or len(outs) != 1 \
                or outs[0].get("shape") is None or None in outs[0]["shape"]:
            continue
        key = (data["kind"].split("::")[-1], tuple(outs[0]["shape"]), outs[0]["dtype"])
        ran[key] += outs[0].get("runs", 1)
    return ran


def _drawn_tensors(G):
    """(node, output) of every drawn node's tensor output."""
    return [(n, o) for n, d in G.nodes(data=True) if not d.get("hidden")
            and d["kind"] not in ("prim::Return",)
            for o in d["outputs"] if o["type"] == "Tensor"]


@pytest.fixture
def wrapped_rnn(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "wrapped_rnn.pt"
    torch.jit.trace(WrapRNN(), (torch.rand(10, 3, 4),)).save(str(path))
    return path


def test_an_archive_gets_a_shape_on_every_tensor_that_ran_and_eager_agrees(wrapped_rnn):
    x = torch.rand(10, 3, 4)
    G = visualize(str(wrapped_rnn), inputs=(x,))[0].graph
    drawn = _drawn_tensors(G)
    assert len(drawn) >= 15
    missing = [n for n, o in drawn if o.get("shape") is None]
    assert not missing, missing  # the branch not taken here returns its input: no node
    # each op eager PyTorch dispatches under the same name ran as often, with that shape
    eager = _eager(WrapRNN(), x)
    checked = {k: n for k, n in _ran(G).items() if any(e[0] == k[0] for e in eager)}
    assert len(checked) >= 6, checked
    for key, runs in checked.items():
        assert eager[key] >= runs, (key, runs, eager[key])
    # the loop body ran ten times: its values say so
    select = next(d for _, d in G.nodes(data=True) if d["kind"] == "aten::select")
    assert format_shape(select["outputs"][0]) == "3×4 float32 ×10"


def test_a_script_function_loop_shows_every_shape_it_took():
    @torch.jit.script
    def grow(x):
        y = x
        for _ in range(x.size(0)):
            y = torch.cat([y, x])
        return y

    G = visualize(grow, inputs=(torch.rand(3, 2),))[0].graph
    cat = next(d for _, d in G.nodes(data=True) if d["kind"] == "aten::cat")
    out = cat["outputs"][0]
    assert out["runs"] == 3
    assert [s for s, _, _ in out["shapes_seen"]] == [[6, 2], [9, 2], [12, 2]]
    assert out["shape"] == [None, 2]
    assert format_shape(out) == "6×2…12×2 float32 ×3"


class _Gate(torch.nn.Module):
    def forward(self, x):
        if bool(x.sum() > 0):
            y = x * 2
        else:
            y = x.neg().exp()
        return y + 1


def test_the_branch_not_taken_has_no_shape_and_the_model_is_untouched():
    scripted = torch.jit.script(_Gate())
    graph_before, code_before = str(scripted.graph), scripted.code
    G = visualize(scripted, inputs=(torch.ones(2, 5),))[0].graph
    shape_of = {d["kind"]: d["outputs"][0].get("shape") for _, d in G.nodes(data=True)
                if d["kind"] in ("aten::mul", "aten::neg", "aten::exp", "aten::add")}
    assert shape_of == {"aten::mul": [2, 5], "aten::neg": None, "aten::exp": None,
                        "aten::add": [2, 5]}
    # the other input takes the other branch
    G = visualize(scripted, inputs=(-torch.ones(4, 1),))[0].graph
    shape_of = {d["kind"]: d["outputs"][0].get("shape") for _, d in G.nodes(data=True)
                if d["kind"] in ("aten::mul", "aten::neg")}
    assert shape_of == {"aten::mul": None, "aten::neg": [4, 1]}
    assert str(scripted.graph) == graph_before and scripted.code == code_before
    assert "irviz_probe" not in str(scripted.graph)


def test_a_forked_task_gets_its_shapes():
    scripted = torch.jit.script(forked_example)
    G = visualize(scripted, inputs=(torch.rand(3, 4),))[0].graph
    in_task = [d for _, d in G.nodes(data=True) if d.get("subgraph_of")
               and d["kind"].startswith("aten::")]
    assert in_task, "the fork's task is drawn"
    assert all(d["outputs"][0].get("shape") == [3, 4] for d in in_task), in_task


def test_the_seed_ensemble_archive_gets_lstm_shapes_inside_its_forks(tmp_path):
    torch.manual_seed(0)
    model = LSTMEnsemble()
    path = tmp_path / "ensemble.pt"
    torch.jit.script(model).save(str(path))
    before = {k: v.clone() for k, v in torch.jit.load(str(path)).state_dict().items()}
    x = torch.rand(5, 2, 16)
    view = visualize(str(path), inputs=(x,))[0]
    G = view.graph
    lstm = [d for _, d in G.nodes(data=True) if d["kind"] == "aten::lstm"]
    assert lstm and all(d.get("subgraph_of") for d in lstm)
    returned = []   # aten::lstm is decomposed below the dispatcher: the modules' hooks tell
    for module in model.modules():
        if isinstance(module, torch.nn.LSTM):
            module.register_forward_hook(lambda m, i, o: returned.append(tuple(o[0].shape)))
    with torch.no_grad():
        model(x)
    assert len(returned) == len(lstm)
    assert sorted(tuple(d["outputs"][0]["shape"]) for d in lstm) == sorted(returned)
    assert view.capture.compiled_run.values and not view.capture.compiled_run.error
    after = view.capture.scripted.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_no_inputs_no_run_and_a_bad_input_is_a_user_error(wrapped_rnn):
    view = visualize(str(wrapped_rnn))[0]
    assert view.capture.compiled_run is None
    result = CliRunner().invoke(main, ["render", str(wrapped_rnn), "--inputs",
                                       "torch.rand(10, 3, 5)", "-o", "-"])
    assert result.exit_code == 2, result.output
    assert "running it on its example inputs raised" in result.stderr


def test_the_cli_draws_archive_shapes_in_json_and_svg(wrapped_rnn, tmp_path):
    out = tmp_path / "rnn.json"
    result = CliRunner().invoke(main, ["render", str(wrapped_rnn), "--inputs",
                                       "torch.rand(10,3,4)", "--format", "json", "-o",
                                       str(out)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    tanh = [n for n in data["nodes"] if n["kind"] == "aten::tanh"]
    assert tanh and tanh[0]["outputs"][0]["shape"] == [3, 4] \
        and tanh[0]["outputs"][0]["runs"] == 10
    svg = tmp_path / "rnn.svg"
    result = CliRunner().invoke(main, ["render", str(wrapped_rnn), "--inputs",
                                       "torch.rand(10,3,4)", "-o", str(svg)])
    assert result.exit_code == 0, result.stderr
    assert "3×4 float32 ×10" in svg.read_text()


# -- a Python model in script mode: the same compiled run ----------------------------------

@pytest.mark.parametrize("module,x,op,shape", [
    (torch.nn.MaxPool2d(2), torch.rand(1, 3, 8, 8), "aten::max_pool2d", [1, 3, 4, 4]),
    (torch.nn.Softmax(1), torch.rand(2, 3), "aten::softmax", [2, 3]),
    (torch.nn.InstanceNorm2d(3), torch.rand(1, 3, 4, 4), "aten::instance_norm", [1, 3, 4, 4]),
    (torch.nn.SELU(), torch.rand(2, 3), "aten::selu", [2, 3]),
])
def test_a_python_library_module_scripted_gets_the_shape_its_compiled_code_ran(module, x, op,
                                                                               shape):
    """The eager run mapped onto the IR by op and line left these blank (boolean_dispatch,
    ``if inplace`` on one line); the compiled run records the node that ran, and only it."""
    view = visualize(torch.nn.Sequential(module), mode="script", inputs=(x,))[0]
    G = view.graph
    shapes = [d["outputs"][0].get("shape") for _, d in G.nodes(data=True) if d["kind"] == op]
    assert shape in shapes, shapes
    assert view.capture.compiled_run is not None and not view.capture.compiled_run.error
    # the library call drawn as one box shows it too, on the box and on its out-edge
    [box] = [cid for cid, info in G.graph["blocks"].items()
             if info["kind"] == "method" and info.get("module") == "0"
             and info.get("method") == "forward"]
    text = format_shape({"shape": shape, "dtype": "float32"})
    assert returned_shape(G, box) == text
    dot = view.dot()
    assert f'"box:{box}" -> "out" [color="#546e7a", tooltip="Tensor [{text}]"]' in dot, dot
    assert f" → {text}</FONT>" in dot


class _Explained(torch.nn.Module):
    def forward(self, x, bias: Optional[torch.Tensor] = None):
        if bias is not None:
            x = x + bias
        for _ in range(x.size(0) - 2):
            x = x * 2
        if bool(x.sum() > 0):
            y = x.relu()
        else:
            y = x.neg()
        return y


def test_every_value_without_a_shape_is_explained_once_in_the_notes():
    view = visualize(_Explained(), mode="script", inputs=(torch.rand(2, 3),))[0]
    G = view.graph
    shape_of = {d["kind"]: d["outputs"][0].get("shape") for _, d in G.nodes(data=True)
                if d["kind"] in ("aten::add", "aten::mul", "aten::relu", "aten::neg")}
    assert shape_of == {"aten::add": None, "aten::mul": None, "aten::relu": [2, 3],
                        "aten::neg": None}
    [note] = [n for n in view.notes if n.startswith("no shape")]
    first = inspect.getsourcelines(_Explained.forward)[1]
    here = "test_compiled_shapes.py"
    assert note == (f"no shape on 3 values of the model: 2 in a branch that did not run "
                    f"({here}:{first + 1}, {here}:{first + 5}); 1 in a loop that ran zero "
                    f"times ({here}:{first + 3})"), note
    # each if block and loop body says how often it ran
    runs = {info["kind"]: [] for info in G.graph["blocks"].values()}
    for info in G.graph["blocks"].values():
        runs[info["kind"]].append(info.get("runs"))
    assert runs["loop.body"] == [0] and sorted(runs["if.then"]) == [0, 1]
    # another input: the bias and the loop ran; one of the last branches never does
    view = visualize(_Explained(), mode="script",
                     inputs=(torch.rand(4, 3), torch.rand(3)))[0]
    assert [n for n in view.notes if n.startswith("no shape")] == [
        f"no shape on 1 value of the model, in a branch that did not run ({here}:{first + 5})"]
    muls = [d for _, d in view.graph.nodes(data=True) if d["kind"] == "aten::mul"]
    assert muls[0]["outputs"][0]["runs"] == 2


_PYTHON_RUNS: list = []


class _Counted(torch.nn.Module):
    def forward(self, x):
        if not torch.jit.is_scripting():   # not compiled: counts the Python's runs
            _PYTHON_RUNS.append(1)
        return x + 1


def test_the_python_runs_only_when_lint_asks_for_its_lines():
    _PYTHON_RUNS.clear()
    view = visualize(_Counted(), mode="script", inputs=(torch.rand(2),))[0]
    [add] = [d for _, d in view.graph.nodes(data=True) if d["kind"] == "aten::add"]
    assert add["outputs"][0]["shape"] == [2]
    assert _PYTHON_RUNS == []        # the picture ran the compiled copy only
    assert view.capture.eager.error is None and view.capture.executed_lines
    assert _PYTHON_RUNS == [1]       # lint's question ran the Python, once
    assert view.capture.eager.executed_lines and _PYTHON_RUNS == [1]


class _Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x, pre_logits: bool = False):
        return x if pre_logits else self.fc(x)


class _WithHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = _Head()

    def forward(self, x):
        return self.head(x).relu()


def test_a_value_an_if_returns_has_the_shape_of_the_branch_that_ran():
    """timm's ``x if pre_logits else self.fc(x)``: both branches' producers feed the
    reader, and ``x`` ran before the ``if`` with a shape of its own."""
    G = visualize(_WithHead(), mode="script", inputs=(torch.rand(3, 4),))[0].graph
    [head] = [cid for cid, info in G.graph["blocks"].items() if info.get("module") == "head"
              and info["kind"] == "method"]
    assert returned_shape(G, head) == "3×2 float32"
    [relu] = [n for n, d in G.nodes(data=True) if d["kind"] == "aten::relu"]
    assert len(list(G.predecessors(relu))) == 2
    assert [e["shape"] for _, _, e in G.in_edges(relu, data=True)] == [[3, 2], [3, 2]]


class _Unused(torch.nn.Module):
    @torch.jit.unused
    def slow_path(self, x):
        return x * 2

    def forward(self, x):
        return self.slow_path(x) + 1


def test_a_model_only_torchscript_cannot_run_is_drawn_with_a_note_not_refused():
    """The compiled copy raises (an ``@torch.jit.unused`` call), the Python runs: not the
    inputs' fault, so a note; inputs neither can take stay an error (test_bad_input)."""
    view = visualize(_Unused(), mode="script", inputs=(torch.rand(2),))[0]
    assert [n for n in view.notes if n.startswith("shapes not recorded:")
            and "annotated to be ignored" in n]
    assert view.capture.eager.error is None
