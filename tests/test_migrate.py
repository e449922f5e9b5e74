"""`irviz migrate`: TorchScript archives to torch.export, checked on outputs (real CLI runs,
real TS2EPConverter)."""
from __future__ import annotations

import json
from typing import List

import torch
from click.testing import CliRunner

from irviz.cli import main
from conftest import sample_module, shows_irviz_traceback

decision_gate = sample_module("decision_gate")
fork_basics = sample_module("fork_basics")
lstm_ensemble = sample_module("lstm_ensemble")
rnn_loop = sample_module("rnn_loop")


def migrate(*args):
    return CliRunner().invoke(main, ["migrate", *map(str, args)])


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))


class Branches(torch.nn.Module):
    """An if whose branches both compute: the converter makes it a torch.cond."""

    def forward(self, x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x.exp() - 1
        return y + 1


class Heads(torch.nn.Module):
    """A list filled by one append per head, then looped over: its length is the program's."""

    def __init__(self):
        super().__init__()
        self.heads = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        outs: List[torch.Tensor] = []
        for head in self.heads:
            outs.append(head(x))
        total = torch.zeros_like(x)
        for out in outs:
            total = total + out
        return total


class Rows(torch.nn.Module):
    """A list filled in a loop over a size: its length is the input's, never fixed."""

    def forward(self, x):
        rows: List[torch.Tensor] = []
        for i in range(x.size(0)):
            rows.append(x[i] * 2)
        total = torch.zeros_like(x[0])
        for row in rows:
            total = total + row
        return total


class AlwaysThen(torch.nn.Module):
    """An if no input can take the else-branch of: its outputs are never compared."""

    def forward(self, x):
        if x.abs().sum() >= 0:
            return x * 2
        return x - 1


class PassThrough(torch.nn.Module):
    """An if whose branches return the inputs themselves: torch.cond refuses the aliasing
    when torch.export re-traces the converted graph (after TS2EPConverter's own pass)."""

    def forward(self, x, h):
        if x.sum() > 0:
            return x, h
        return -x, h


def test_a_traced_conv_net_archive_migrates_checked_on_other_batch_sizes(tmp_path):
    torch.manual_seed(0)
    archive = tmp_path / "convnet.pt"
    torch.jit.trace(ConvNet(), torch.rand(2, 3, 8, 8)).save(str(archive))
    out = tmp_path / "out" / "convnet.pt2"
    out.parent.mkdir()
    result = migrate(archive, "--inputs", "torch.rand(2, 3, 8, 8)", "-o", out,
                     "--format", "json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    assert report["migrated"] and report["method"] == "TS2EPConverter"
    assert [c["check"] for c in report["checks"]] == ["runs", "converts", "same outputs",
                                                      "saved"]
    assert all(c["ok"] for c in report["checks"])
    labels = [c["inputs"] for c in report["comparisons"]]
    assert any("dim 0" in label for label in labels), labels   # another batch size
    assert all(c["same"] and max(c["max_diff"]) < 1e-5 for c in report["comparisons"])
    program = torch.export.load(str(out))
    x = torch.rand(5, 3, 8, 8)
    assert torch.allclose(program.module()(x), torch.jit.load(str(archive))(x), atol=1e-6)
    assert (tmp_path / "out" / "convnet.svg").exists()
    assert (tmp_path / "out" / "convnet.original.svg").exists()


def test_an_if_whose_branches_compute_converts_to_a_cond_checked_on_both_branches(tmp_path):
    archive = tmp_path / "branches.pt"
    torch.jit.script(Branches()).save(str(archive))
    out = tmp_path / "branches.pt2"
    result = migrate(archive, "--inputs", "torch.rand(3, 4) + 0.1", "-o", out, "--format",
                     "json", "--no-pictures")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    program = torch.export.load(str(out))
    [cond] = [n for n in program.graph.nodes if "cond" in str(n.target)]
    # the cond keeps the line of the scripted if (the converter writes none): the exported
    # program's picture draws it at the user's code
    import inspect

    line = inspect.getsourcelines(Branches.forward)[1] + 1
    assert f'test_migrate.py", line {line}, in' in cond.meta["stack_trace"]
    # the example takes the then-branch; its negation the else-branch
    labels = [c["inputs"] for c in report["comparisons"] if c["same"]]
    assert "the example inputs" in labels and any("negated" in label for label in labels)
    x = -torch.rand(3, 4) - 0.1
    assert torch.allclose(program.module()(x), Branches()(x))
    [branches] = report["branches"]          # each side ran on an input that matched
    assert branches["then"] >= 1 and branches["else"] >= 1, branches
    assert "both branches compared" in report["checks"][2]["detail"]
    assert not (tmp_path / "branches.svg").exists()


def test_the_seed_cell_s_gate_after_a_layer_is_compared_on_both_branches(tmp_path):
    """Negating x does not flip `linear(x).sum() > 0` (the bias dominates); irviz scales the
    inputs until the other side runs, and says which side each input took."""
    torch.manual_seed(0)
    archive = tmp_path / "cell.pt"
    cell = decision_gate.MyCell()
    with torch.no_grad():   # sum(linear(x)) = sum(x) + 1.2: > 0 unless x is ×-100
        cell.linear.weight.copy_(torch.eye(4))
        cell.linear.bias.fill_(0.1)
    torch.jit.script(cell).save(str(archive))
    result = migrate(archive, "--inputs",
                     "torch.linspace(0.001, 0.012, 12).reshape(3, 4), torch.zeros(3, 4)",
                     "-o", tmp_path / "cell.pt2", "--format", "json", "--no-pictures")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    [branches] = report["branches"]
    assert branches["location"].endswith("decision_gate.py:11:9"), branches
    assert branches["then"] >= 1 and branches["else"] >= 1, report["comparisons"]
    assert any(c["inputs"].startswith("float inputs ×") and c["same"]
               for c in report["comparisons"])
    assert [c["inputs"] for c in report["comparisons"]][1].startswith("x, h")  # named


def test_a_branch_no_input_takes_is_said_not_compared(tmp_path):
    archive = tmp_path / "always.pt"
    torch.jit.script(AlwaysThen()).save(str(archive))
    result = migrate(archive, "--inputs", "torch.rand(3, 4)", "-o", tmp_path / "a.pt2",
                     "--no-pictures")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "only the then-branch ran; the else-branch's outputs were not compared" \
        in result.stdout


def test_the_seed_rnn_loop_is_blocked_at_its_line_with_the_export_hint(tmp_path):
    archive = tmp_path / "rnn.pt"
    torch.jit.script(rnn_loop.WrapRNN()).save(str(archive))
    result = migrate(archive, "--inputs", "torch.rand(10, 3, 4)", "-o", tmp_path / "rnn.pt2")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    out = result.stdout
    assert "✗ converts" in out and "– saved" in out
    assert "rnn_loop.py:37:9: prim::Loop" in out
    assert "export the Python model with torch.export.export" in out
    assert "never replace the size by a constant" in out
    assert "IndexError" not in out and "Traceback" not in out + result.stderr
    assert not (tmp_path / "rnn.pt2").exists()


def test_a_failure_in_the_re_trace_is_told_at_the_if_with_the_clone_rewrite(tmp_path):
    import inspect

    archive = tmp_path / "pass.pt"
    torch.jit.script(PassThrough()).save(str(archive))
    result = migrate(archive, "--inputs", "torch.rand(3, 4), torch.rand(3, 4)", "-o",
                     tmp_path / "pass.pt2", "--format", "json", "--no-pictures")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    line = inspect.getsourcelines(PassThrough.forward)[1] + 1
    [blocker] = report["blockers"]
    assert blocker["kind"] == "prim::If"
    assert blocker["location"].endswith(f"test_migrate.py:{line}:9"), blocker
    assert "return x.clone()" in blocker["hint"] and "torch.cond" in blocker["hint"]
    converts = report["checks"][1]
    assert not converts["ok"] and "aliasing" in converts["detail"]
    assert "Got graph break" not in converts["detail"]
    assert "Traceback" not in result.stdout + result.stderr
    assert not (tmp_path / "pass.pt2").exists()


def test_the_seed_gate_archive_converts_on_this_torch(tmp_path):
    """The gate whose then-branch returns its input: TS2EPConverter of torch 2.13 makes a
    cond of it (it raised IndexError on other versions); both branches compared."""
    archive = tmp_path / "gate.pt"
    torch.jit.script(decision_gate.MyDecisionGate()).save(str(archive))
    result = migrate(archive, "--inputs", "torch.rand(3, 4)", "-o", tmp_path / "gate.pt2",
                     "--format", "markdown", "--no-pictures")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "| same outputs | ✓ |" in result.stdout
    assert "negated" in result.stdout and "**migrated**" in result.stdout


def test_the_seed_ensemble_stops_at_its_forks_and_inline_forks_says_what_is_lost(tmp_path):
    archive = tmp_path / "ensemble.pt"
    torch.jit.script(lstm_ensemble.LSTMEnsemble()).save(str(archive))
    result = migrate(archive, "--inputs", "torch.rand(5, 2, 16)", "-o", tmp_path / "e.pt2")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    out = result.stdout
    assert "lstm_ensemble.py:86:28: prim::fork" in out
    assert "run again with --inline-forks" in out and "parallelism is lost" in out
    # serially: the forks are gone, and the loop over the futures' list (4 appends in
    # straight-line code: its length is the program's) has a known trip count
    result = migrate(archive, "--inputs", "torch.rand(5, 2, 16)", "-o", tmp_path / "e.pt2",
                     "--inline-forks", "--format", "json", "--no-pictures")
    report = json.loads(result.stdout)
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["converts"]["ok"] and report["blockers"] == [], report
    assert any("8 fork(s) inlined" in n and "parallelism is lost" in n
               for n in report["notes"])
    assert any("lstm_ensemble.py:86" in n and "4 values" in n for n in report["notes"])
    # the example matches; TS2EPConverter of a scripted nn.LSTM specialises T and B, which
    # the other sizes show (a verdict about torch's converter, told as such: exit 1)
    assert report["comparisons"][0]["same"]
    assert "the conversion specialised it to the example's size" in \
        checks["same outputs"]["detail"]
    assert result.exit_code == 1


def test_a_list_of_fixed_length_converts_and_a_list_as_long_as_an_input_does_not(tmp_path):
    archive = tmp_path / "heads.pt"
    torch.jit.script(Heads()).save(str(archive))
    result = migrate(archive, "--inputs", "torch.rand(2, 4)", "-o", tmp_path / "heads.pt2",
                     "--no-pictures")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "gets its 3 values from appends in straight-line code" in result.stdout
    assert "✓ same outputs" in result.stdout
    archive = tmp_path / "rows.pt"
    torch.jit.script(Rows()).save(str(archive))
    result = migrate(archive, "--inputs", "torch.rand(3, 4)", "-o", tmp_path / "rows.pt2",
                     "--no-pictures")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert ": prim::Loop" in result.stdout and "straight-line" not in result.stdout


def test_a_fork_converts_serially_with_inline_forks(tmp_path):
    archive = tmp_path / "fork.pt"
    torch.jit.script(fork_basics.example).save(str(archive))
    result = migrate(archive, "--inputs", "torch.rand(3, 4)", "-o", tmp_path / "fork.pt2",
                     "--no-pictures")
    assert result.exit_code == 1 and "--inline-forks" in result.stdout
    result = migrate(archive, "--inputs", "torch.rand(3, 4)", "-o", tmp_path / "fork.pt2",
                     "--inline-forks", "--no-pictures")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "1 fork(s) inlined into a serial copy" in result.stdout
    original = torch.jit.load(str(archive))
    assert original.graph.findNode("prim::fork", True) is not None   # the archive untouched


def test_user_errors_exit_2_and_leave_nothing(tmp_path):
    archive = tmp_path / "convnet.pt"
    torch.jit.trace(ConvNet(), torch.rand(2, 3, 8, 8)).save(str(archive))
    good = ["--inputs", "torch.rand(2, 3, 8, 8)"]
    for args, fragment in (
            ([*good, "-o", tmp_path / "missing" / "x.pt2"], "missing"),
            ([*good, "-o", tmp_path / "x.onnx"], ".pt2"),
            (["--inputs", "torch.rand(2, 3)", "-o", tmp_path / "x.pt2"],
             "Expected 4-dimensional input"),
            (["--inputs", "torch.rand(", "-o", tmp_path / "x.pt2"],
             "--inputs is not a valid Python expression"),
            ([*good, "--format", "yaml", "-o", tmp_path / "x.pt2"], "yaml"),
            ([], "needs example inputs")):
        result = migrate(archive, *args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert fragment in result.stderr and not shows_irviz_traceback(result.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["convnet.pt"]


def test_a_python_model_goes_through_torch_export(tmp_path):
    model = tmp_path / "small.py"
    model.write_text("import torch\n"
                     "class Small(torch.nn.Module):\n"
                     "    def __init__(self):\n"
                     "        super().__init__()\n"
                     "        self.fc = torch.nn.Linear(4, 3)\n"
                     "    def forward(self, x):\n"
                     "        return torch.relu(self.fc(x))\n"
                     "example_inputs = {'Small': lambda: (torch.rand(2, 4),)}\n")
    result = migrate(f"{model}:Small", "-o", tmp_path / "small.pt2", "--no-pictures")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "torch.export (strict=False)" in result.stdout
    assert "✓ same outputs" in result.stdout


def test_a_python_model_s_forks_are_said_serial_and_a_function_exports(tmp_path):
    model = tmp_path / "forks.py"
    model.write_text("import torch\n"
                     "class Two(torch.nn.Module):\n"
                     "    def __init__(self):\n"
                     "        super().__init__()\n"
                     "        self.a = torch.nn.Linear(4, 4)\n"
                     "        self.b = torch.nn.Linear(4, 4)\n"
                     "    def forward(self, x):\n"
                     "        fut = torch.jit.fork(self.a, x)\n"
                     "        return self.b(x) + torch.jit.wait(fut)\n"
                     "def double(x):\n"
                     "    return torch.relu(x) * 2\n"
                     "example_inputs = {'Two': lambda: (torch.rand(2, 4),),\n"
                     "                  'double': lambda: (torch.rand(3, 4),)}\n")
    result = migrate(f"{model}:Two", "-o", tmp_path / "two.pt2", "--no-pictures")
    assert "1 fork site(s) (" in result.stdout and "forks.py:8)" in result.stdout
    assert "the parallelism is lost (IRV504)" in result.stdout
    # a plain function: its wrapper's forward(*args) takes the dynamic dims by position
    # (torch refused them by the function's argument names)
    result = migrate(f"{model}:double", "-o", tmp_path / "double.pt2", "--no-pictures")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "✓ same outputs" in result.stdout


HF_BERT = '''import transformers as T


def bert():
    return T.BertModel(T.BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=128,
                                    max_position_embeddings=64)).eval()
'''


def test_a_transformers_bert_migrates_with_both_pictures(tmp_path):
    """A model that only traces: the program's picture (its dynamic dims are symbols such as
    s0, which the cost estimate once multiplied into a string) and the original's, traced
    (it does not script) and saying so; an internal error is not turned into a note."""
    (tmp_path / "hfm.py").write_text(HF_BERT)
    result = migrate(f"{tmp_path / 'hfm.py'}:bert()", "--inputs",
                     "torch.randint(0, 1000, (2, 16))", "-o", tmp_path / "bert.pt2")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "✓ same outputs" in result.stdout and "no picture" not in result.stdout
    program = (tmp_path / "bert.svg").read_text(encoding="utf-8")
    original = (tmp_path / "bert.original.svg").read_text(encoding="utf-8")
    assert f"wrote {tmp_path / 'bert.svg'}" in result.stdout
    assert f"wrote {tmp_path / 'bert.original.svg'}" in result.stdout
    assert "(export)" in program and "(trace)" in original
    assert "traced with the example inputs instead" in original
    # what torch.export unrolled is said as such, never as the trace's doing
    assert "the trace unrolled" not in program and "unrolled by the trace" not in program
    assert "torch.export unrolled" in program
