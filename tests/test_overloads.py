"""Overloaded forwards: torch's recurrent layers script into forward__0 / forward__1 and no
``forward``; irviz draws the overload the inputs select, or each one without inputs."""
from __future__ import annotations

import json
import textwrap

import pytest
import torch
from click.testing import CliRunner
from torch.nn.utils.rnn import pack_padded_sequence

from irviz.api import visualize
from irviz.cli import main
from irviz.frontends.inputs import ExampleInputs
from irviz.frontends.overloads import overload_names, select_overload


@pytest.mark.parametrize("layer", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
def test_a_scripted_recurrent_layer_draws_the_overload_its_inputs_select(layer):
    scripted = torch.jit.script(layer(4, 8))
    with pytest.raises(RuntimeError, match="Method 'forward' is not defined"):
        scripted.graph   # what irviz used to report as an internal error
    [view] = visualize(scripted, inputs=(torch.rand(5, 2, 4),))
    assert view.capture.entry == "forward__0"
    assert any("the overload these inputs select" in n for n in view.capture.notes)
    G = view.graph
    kind = {"LSTM": "aten::lstm", "GRU": "aten::gru", "RNN": "aten::rnn_tanh"}[layer.__name__]
    ops = [d for _, d in G.nodes(data=True) if d["kind"] == kind]
    assert ops and [d["outputs"][0]["shape"] for d in ops] == [[5, 2, 8]]
    # the same layer as Python, scripted by irviz
    [view] = visualize(layer(4, 8), inputs=(torch.rand(5, 2, 4),))
    assert view.capture.entry == "forward__0" and view.graph.number_of_nodes() > 20


def test_a_packed_sequence_selects_the_other_overload():
    scripted = torch.jit.script(torch.nn.LSTM(4, 8))
    packed = pack_padded_sequence(torch.rand(5, 2, 4), torch.tensor([5, 3]))
    name, note = select_overload(scripted, overload_names(scripted),
                                 ExampleInputs((packed,)), "lstm")
    assert name == "forward__1" and "PackedSequence input" in note


def test_without_inputs_each_overload_is_a_view_and_bad_inputs_are_a_user_error(tmp_path):
    model = tmp_path / "rnns.py"
    model.write_text(textwrap.dedent("""
        import torch
        lstm = torch.jit.script(torch.nn.LSTM(4, 8))
    """))
    result = CliRunner().invoke(main, ["render", str(model), "-o", f"{tmp_path}/"])
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in tmp_path.glob("*.svg")) == [
        "rnns.lstm.forward__0.svg", "rnns.lstm.forward__1.svg"]
    assert "drawn: forward__1(PackedSequence input" in result.stderr
    assert "internal error" not in result.stderr
    result = CliRunner().invoke(main, ["render", f"{model}:lstm", "--inputs",
                                       "torch.rand(5, 2, 4), torch.rand(3)", "-o", "-"])
    assert result.exit_code == 2, result.output
    assert "no overload takes these inputs" in result.stderr
    assert "forward__0(Tensor input" in result.stderr


def test_an_archive_of_a_recurrent_layer_renders(tmp_path):
    path = tmp_path / "gru.pt"
    torch.jit.script(torch.nn.GRU(4, 8, batch_first=True)).save(str(path))
    [view] = visualize(str(path), inputs=(torch.rand(2, 5, 4),))
    gru = [d for _, d in view.graph.nodes(data=True) if d["kind"] == "aten::gru"]
    assert gru and gru[0]["outputs"][0]["shape"] == [2, 5, 8]
    assert len(visualize(str(path))) == 2


RNNS = textwrap.dedent("""
    import torch
    lstm = torch.jit.script(torch.nn.LSTM(4, 8))
""")


def test_a_trace_and_a_lint_of_a_scripted_recurrent_layer_run_its_overload(tmp_path):
    model = tmp_path / "rnns.py"
    model.write_text(RNNS)
    svg = tmp_path / "lstm.svg"
    result = CliRunner().invoke(main, ["render", f"{model}:lstm", "--mode", "trace",
                                       "--inputs", "torch.rand(5, 2, 4)", "-o", str(svg)])
    assert result.exit_code == 0, result.stderr   # was: Method 'forward' is not defined
    assert "the overload these inputs select" in result.stderr and svg.exists()
    # lint re-traces on grown inputs: the inputs' names come from the overload's schema
    result = CliRunner().invoke(main, ["lint", str(model), "--inputs", "torch.rand(5, 2, 4)"])
    assert result.exit_code == 0, result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.slow
def test_a_scripted_recurrent_layer_is_profiled_and_measured(tmp_path):
    model = tmp_path / "rnns.py"
    model.write_text(RNNS)
    out = tmp_path / "lstm.json"
    result = CliRunner().invoke(main, ["render", f"{model}:lstm", "--inputs",
                                       "torch.rand(5, 2, 4)", "--profile", "--profile-runs",
                                       "2", "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "not profiled" not in result.stderr
    assert json.loads(out.read_text())["graph"]["irviz.profile_coverage"] >= 0.95
    result = CliRunner().invoke(main, ["report", f"{model}:lstm", "--inputs",
                                       "torch.rand(5, 2, 4)", "--measure", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    [target] = json.loads(result.stdout)["targets"]
    assert target["measured"]["outputs_match"] is True
    assert not any(s.get("error") for s in target["measured"]["settings"])


def test_a_diff_of_an_overloaded_forward_picks_the_overload_by_its_inputs(tmp_path):
    model = tmp_path / "rnns.py"
    model.write_text(RNNS)
    result = CliRunner().invoke(main, ["diff", f"{model}:lstm", f"{model}:lstm"])
    assert result.exit_code == 2 and "give --inputs" in result.stderr
    result = CliRunner().invoke(main, ["diff", f"{model}:lstm", f"{model}:lstm",
                                       "--inputs", "torch.rand(5, 2, 4)"])
    assert result.exit_code == 0, result.stderr
    assert "no difference" in result.stdout


def test_a_collapsed_call_of_another_method_of_self_names_the_method():
    [view] = visualize(torch.jit.script(torch.nn.LSTM(4, 8)), inputs=(torch.rand(5, 2, 4),))
    dot = view.dot()
    # nn.LSTM's forward calls self.check_forward_args and self.permute_hidden: boxes that
    # all read "<root>: LSTM" said nothing of which call they are
    assert ".check_forward_args()" in dot and ".permute_hidden()" in dot


def test_a_packed_sequence_given_as_inputs_draws_forward_1_with_its_shapes(tmp_path):
    model = tmp_path / "rnns.py"
    model.write_text(RNNS)
    packed = "torch.nn.utils.rnn.pack_padded_sequence(torch.rand(5, 2, 4), torch.tensor([5, 3]))"
    # a NamedTuple is one input (not four), its None fields Optional ones
    out = tmp_path / "lstm.json"
    result = CliRunner().invoke(main, ["render", f"{model}:lstm", "--inputs", packed,
                                       "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "drawn: forward__1(PackedSequence input" in result.stderr
    [lstm] = [n for n in json.loads(out.read_text())["nodes"] if n["kind"] == "aten::lstm"]
    assert lstm["outputs"][0]["shape"] == [8, 8]   # 5 + 3 packed steps
    path = tmp_path / "lstm.pt"
    torch.jit.script(torch.nn.LSTM(4, 8)).save(str(path))
    [view] = visualize(str(path), inputs=(pack_padded_sequence(torch.rand(5, 2, 4),
                                                               torch.tensor([5, 3])),))
    assert view.capture.entry == "forward__1"


class _Twice(torch.nn.Module):
    """One LSTM called twice with other shapes: its parent calls forward__0 both times."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(4, 8)

    def forward(self, x, y):
        a, _ = self.rnn(x)
        b, _ = self.rnn(y)
        return a.sum() + b.sum()


def test_each_call_of_an_overloaded_submodule_gets_its_own_shapes():
    inputs = (torch.rand(5, 2, 4), torch.rand(3, 1, 4))
    for model in (_Twice(), torch.jit.script(_Twice())):   # eager run, compiled run
        [view] = visualize(model, inputs=inputs)
        lstm = [d["outputs"][0]["shape"] for _, d in view.graph.nodes(data=True)
                if d["kind"] == "aten::lstm"]
        assert lstm == [[5, 2, 8], [3, 1, 8]], type(model)


def test_right_optimize_of_a_scripted_model_and_of_an_overloaded_forward(tmp_path):
    model = tmp_path / "rnns.py"
    model.write_text(RNNS + textwrap.dedent("""
        class Wrap(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = torch.nn.LSTM(4, 8)

            def forward(self, x):
                return self.rnn(x)[0].relu()

        wrap = torch.jit.script(Wrap())
    """))
    inputs = ["--inputs", "torch.rand(5, 2, 4)"]
    for spec in ("wrap", "lstm"):   # an already scripted module was an internal error
        result = CliRunner().invoke(main, ["diff", f"{model}:{spec}", "--right-optimize",
                                           "freeze", *inputs])
        assert result.exit_code == 1, result.stderr   # like diff(1): differences found
        # the overloads are frozen too (freeze keeps forward only), and a frozen list of
        # weights reads as their shapes, not as every number in them
        assert "_flat_weights → [tensor(32×4), tensor(32×8), tensor(32), tensor(32)]" \
            in result.stdout, result.stdout
    result = CliRunner().invoke(main, ["diff", f"{model}:lstm", "--right-optimize",
                                       "inference", *inputs])
    assert result.exit_code == 2 and "forward is overloaded" in result.stderr


def test_a_class_input_reads_as_its_class_name():
    packed = visualize(torch.jit.script(torch.nn.LSTM(4, 8)))[1]   # forward__1's view
    dot = packed.dot()
    [node] = [line for line in dot.splitlines() if line.lstrip().startswith('"in0" [')]
    label = node.split("label=", 1)[1].split(", tooltip=", 1)[0]
    assert ">PackedSequence<" in label and "__torch__" not in label   # hover: the full name
