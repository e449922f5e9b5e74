"""`irviz trace`: the archive to deploy, traced with the verified remedies applied, checked
(real CLI runs, real torch.jit.trace / script / save / load, the archive compared with the
Python model on inputs that take the other branch)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from irviz.cli import main
from conftest import sample_module, shows_irviz_traceback

decision_gate = sample_module("decision_gate")
rnn_loop = sample_module("rnn_loop")
PITFALLS = Path(__file__).parent / "lint_models" / "pitfalls"


def trace(*args):
    return CliRunner().invoke(main, ["trace", *map(str, args)])


def _passed(result) -> None:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "traced: every check passed" in result.stdout
    for check in ("runs", "remedies", "traces", "same outputs", "saved"):
        assert f"✓ {check}" in result.stdout, check


def test_my_cell_scripts_its_gate_and_the_archive_keeps_both_branches(tmp_path):
    out = tmp_path / "cell.pt"
    result = trace("samples/decision_gate.py:MyCell", "-o", out)
    _passed(result)
    assert "model.dg = torch.jit.script(model.dg)" in result.stdout
    assert "torch.jit.trace with dg scripted in place" in result.stdout
    assert f"wrote {out}" in result.stdout and f"wrote {tmp_path / 'cell.svg'}" in result.stdout
    archive = torch.jit.load(str(out))
    model = decision_gate.MyCell()
    model.load_state_dict(archive.state_dict())
    x, h = torch.rand(3, 4), torch.rand(3, 4)
    cases = [x * s for s in (1, -1, 10, -10)]
    # the gate's condition goes both ways on these: a plain trace would get one side wrong
    assert {bool(model.linear(c).sum() > 0) for c in cases} == {True, False}
    for c in cases:
        assert torch.allclose(archive(c, h)[0], model(c, h)[0], atol=1e-6)
    assert isinstance(archive.dg, torch.jit.ScriptModule)
    svg = (tmp_path / "cell.svg").read_text(encoding="utf-8")
    assert "if x.sum() &gt; 0" in svg and "(archive)" in svg


def test_rnn_loop_is_scripted_whole_and_takes_other_lengths(tmp_path):
    out = tmp_path / "loop.pt"
    result = trace("samples/rnn_loop.py:MyRNNLoop", "-o", out)
    _passed(result)
    assert "torch.jit.script(model): the whole model scripted" in result.stdout
    archive = torch.jit.load(str(out))
    model = rnn_loop.MyRNNLoop()
    model.load_state_dict(archive.state_dict())
    for steps in (10, 3, 17):   # a trace unrolls the loop to the example's 10 steps
        xs = torch.randn(steps, 3, 4)
        for got, want in zip(archive(xs), model(xs)):
            assert torch.allclose(got, want, atol=1e-6)
    svg = (tmp_path / "loop.svg").read_text(encoding="utf-8")
    assert "for i in range(xs.size(0))" in svg


def test_lstm_ensemble_needs_no_remedy(tmp_path):
    result = trace("samples/lstm_ensemble.py:LSTMEnsemble", "-o", tmp_path / "e.pt",
                   "--no-picture")
    _passed(result)
    assert "none needed: no error finding" in result.stdout
    assert "torch.jit.trace, no remedy needed" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.pt"]
    # the forks survived the trace
    assert "prim::fork" in str(torch.jit.load(str(tmp_path / "e.pt")).graph)


def test_training_flag_is_traced_in_eval_mode(tmp_path):
    pitfall = sample_module_at(PITFALLS / "p04_training_flag.py")
    out = tmp_path / "jitter.pt"
    result = trace(PITFALLS / "p04_training_flag.py", "-o", out, "--no-picture")
    _passed(result)
    assert "model.eval()" in result.stdout and "the model in eval mode" in result.stdout
    archive = torch.jit.load(str(out))
    model = pitfall.Jitter()
    model.load_state_dict(archive.state_dict())
    model.eval()   # deployed in eval mode: the trace took the eval branch
    x = torch.rand(5, 3)
    assert torch.allclose(archive(x), model(x), atol=1e-6)
    model.train()
    assert not torch.allclose(archive(x), model(x), atol=1e-6)


def test_the_left_out_argument_is_passed(tmp_path):
    pitfall = sample_module_at(PITFALLS / "p05_optional_bias.py")
    out = tmp_path / "shift.pt"
    result = trace(f"{PITFALLS / 'p05_optional_bias.py'}:Shift", "-o", out)
    _passed(result)
    assert "with bias passed" in result.stdout
    archive = torch.jit.load(str(out))
    x, bias = torch.randn(4, 2), torch.randn(4, 2)
    assert torch.allclose(archive(x, bias), pitfall.Shift()(x, bias))
    assert torch.allclose(archive(x, -bias), pitfall.Shift()(x, -bias))
    svg = (tmp_path / "shift.svg").read_text(encoding="utf-8")
    assert ">bias<" in svg   # the archive's second input


NO_FIX = '''import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        try:   # TorchScript compiles no try: neither the gate nor the model scripts
            scale = 2.0
        except ValueError:
            scale = 1.0
        if x.sum() > 0:
            return x * scale
        return -x


class Cell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()

    def forward(self, x):
        return self.gate(x) + 1


example_inputs = {"Cell": lambda: (torch.rand(3, 4),)}
'''


def test_no_verified_remedy_fails_with_why_and_writes_nothing(tmp_path):
    (tmp_path / "nofix.py").write_text(NO_FIX)
    out = tmp_path / "out"
    out.mkdir()
    result = trace(f"{tmp_path / 'nofix.py'}:Cell", "-o", out / "cell.pt")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "✗ remedies      1 of 1 error finding has no verified remedy" in result.stdout
    assert "nofix.py:10 IRV101" in result.stdout and "no verified remedy:" in result.stdout
    tried = [line for line in result.stdout.splitlines() if line.lstrip().startswith("tried")]
    assert len(tried) == 2, result.stdout   # the gate scripted, then the whole model
    assert "model.gate = torch.jit.script(model.gate)" in tried[0]
    assert "model = torch.jit.script(model)" in tried[1]
    assert all("does not compile" in line for line in tried)
    assert "✗ same outputs  differs from the Python model" in result.stdout
    assert "x negated" in result.stdout
    assert "– saved         not written: a check above failed" in result.stdout
    assert result.stdout.rstrip().endswith("not traced")
    assert list(out.iterdir()) == []   # no archive, no picture, no temporary file
    assert not shows_irviz_traceback(result.stdout + result.stderr)


def test_json_and_markdown_checklists(tmp_path):
    result = trace("samples/decision_gate.py:MyCell", "-o", tmp_path / "c.pt", "--format",
                   "json", "--no-picture")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["blocking"] == []
    assert [c["check"] for c in data["checks"]] == ["runs", "remedies", "traces",
                                                    "same outputs", "saved"]
    assert data["remedies"][0]["kind"] == "script-submodule"
    assert data["remedies"][0]["module"] == "dg"
    assert data["findings"][0]["remedy"]["code"] == "model.dg = torch.jit.script(model.dg)"
    assert data["written"] == [str(tmp_path / "c.pt")]
    (tmp_path / "nofix.py").write_text(NO_FIX)
    result = trace(f"{tmp_path / 'nofix.py'}:Cell", "-o", tmp_path / "n.pt", "--format",
                   "markdown")
    assert result.exit_code == 1
    assert "| remedies | ✗ |" in result.stdout and "### No verified remedy" in result.stdout
    assert "  - tried `model.gate = torch.jit.script(model.gate)`: does not compile" \
        in result.stdout
    assert "**not traced**" in result.stdout


@pytest.mark.parametrize("args, words", [
    (["samples/no_such_file.py:M"], "no_such_file.py"),
    (["samples/lstm_ensemble.py"], "trace takes one"),
    (["samples/decision_gate.py:MyCell", "--inputs", "torch.rand(3,"], "--inputs"),
    (["samples/decision_gate.py:MyCell", "-o", "cell.txt"], "-o cell.txt"),
    (["samples/decision_gate.py:MyCell", "-o", "no/such/dir/cell.pt"], "-o/--output"),
])
def test_user_errors_exit_2_without_traceback(args, words, tmp_path, monkeypatch):
    monkeypatch.chdir(Path(__file__).parent.parent)
    result = trace(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    text = result.stdout + result.stderr
    assert words in text, text
    assert not shows_irviz_traceback(text)
    assert not Path("cell.txt").exists() and not Path("MyCell.pt").exists()


def test_bad_inputs_name_the_option_and_exit_2(tmp_path):
    result = trace("samples/decision_gate.py:MyCell", "--inputs", "torch.rand(3,", "-o",
                   tmp_path / "c.pt")
    assert result.exit_code == 2
    assert "--inputs" in result.stderr and not shows_irviz_traceback(result.stderr)
    assert list(tmp_path.iterdir()) == []


def test_inputs_the_model_refuses_fail_the_runs_check(tmp_path):
    result = trace("samples/decision_gate.py:MyCell", "--inputs",
                   "torch.rand(3, 5), torch.rand(3, 4)", "-o", tmp_path / "c.pt")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "✗ runs          the Python model raised RuntimeError" in result.stdout
    assert "on 3×5 float32, 3×4 float32" in result.stdout
    assert "– remedies      not reached" in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_an_archive_is_not_traced_again(tmp_path):
    scripted = torch.jit.script(decision_gate.MyCell())
    scripted.save(str(tmp_path / "cell.pt"))
    result = trace(tmp_path / "cell.pt", "-o", tmp_path / "again.pt")
    assert result.exit_code == 2
    assert "already compiled" in result.stderr and not shows_irviz_traceback(result.stderr)


HF_BERT = '''import transformers as T


def bert():
    return T.BertModel(T.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=64,
                                    max_position_embeddings=64)).eval()
'''


@pytest.mark.slow
def test_a_transformers_model_that_traces_cleanly_needs_no_remedy(tmp_path):
    (tmp_path / "hfm.py").write_text(HF_BERT)
    out = tmp_path / "bert.pt"
    result = trace(f"{tmp_path / 'hfm.py'}:bert()", "--inputs",
                   "torch.randint(0, 100, (2, 16))", "-o", out)
    _passed(result)
    assert "torch.jit.trace, no remedy needed" in result.stdout
    ids = torch.randint(0, 100, (2, 9))   # another length than the example's
    assert torch.jit.load(str(out))(ids)[0].shape == (2, 9, 32)
    assert "(archive)" in (tmp_path / "bert.svg").read_text(encoding="utf-8")


def sample_module_at(path: Path):
    """A model file imported under a private name (its classes, fresh weights)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_trace_test_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
