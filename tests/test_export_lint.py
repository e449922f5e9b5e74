"""``irviz lint --mode export``: the TorchScript -> torch.export migration rules (IRV5xx).

Real torch.export, real scripting, real CLI runs. The seeds (the gate, the RNN loop, both
fork ensembles) get their findings at the right lines and exit 1; the export rewrites get
none. Where a rule states what torch's ``TS2EPConverter`` does without running it, a test
runs the real converter on the same model and checks it fails on that construct."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from conftest import ROOT, SAMPLES, shows_irviz_traceback
from irviz.cli import main

MIGRATION = ROOT / "tests" / "models" / "export_migration.py"
REWRITES = ROOT / "tests" / "models" / "export_rewrites.py"
ENSEMBLES = SAMPLES / "lstm_ensemble.py"


def lint(*args):
    torch.manual_seed(0)
    result = CliRunner().invoke(main, ["lint", *map(str, args), "--mode", "export",
                                       "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    assert not shows_irviz_traceback(result.stderr)
    return result, json.loads(result.stdout)


def at(found, code):
    """``{line: finding}`` of one rule."""
    return {d["line"]: d for d in found if d["code"] == code}


def codes(found):
    return sorted({d["code"] for d in found})


def _load(path: Path, name: str):
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def converter_failure(model, args) -> str:
    """What the real TS2EPConverter raises on ``model`` scripted (its whole cause chain)."""
    from torch._export.converter import TS2EPConverter

    from irviz.frontends.user_code import quiet_output

    try:
        with quiet_output():
            TS2EPConverter(torch.jit.script(model), args).convert()
    except Exception as exc:  # noqa: BLE001
        chain = []
        while exc is not None:
            chain.append(str(exc))
            exc = exc.__cause__ or exc.__context__
        return " | ".join(chain)
    return ""


# -- the gate: data-dependent control flow -------------------------------------------------

def test_the_gate_is_a_data_dependent_branch_at_its_if(capfd):
    result, found = lint(f"{SAMPLES / 'decision_gate.py'}:MyCell")
    assert result.exit_code == 1
    assert codes(found) == ["IRV501"]
    [d] = found
    assert d["path"].endswith("decision_gate.py") and d["line"] == 11
    assert d["message"].startswith("torch.export cannot branch on tensor data here: "
                                   "GuardOnDataDependentSymNode: Could not guard on "
                                   "data-dependent expression")
    assert "\n" not in d["message"]                  # torch's first line only
    assert "torch.cond" in d["hint"] and "torch.where" in d["hint"]
    assert d["layers"] == ["export"]
    printed = capfd.readouterr()
    for text in (result.stdout, result.stderr, printed.out, printed.err):
        assert "def forward(" not in text           # torch's partial graph is kept
        assert "symbolic_shapes.py" not in text


@pytest.mark.slow
def test_strict_export_gives_the_graph_break_ids():
    result, found = lint(f"{SAMPLES / 'decision_gate.py'}:MyCell", "--strict")
    assert at(found, "IRV501")[11]["message"].endswith(
        "Unsupported: Data-dependent branching (GB0170)")
    result, found = lint(f"{ENSEMBLES}:BiForkLSTMEnsemble", "--strict")
    assert result.exit_code == 1
    fork = at(found, "IRV504")[37]
    assert "strict export refuses it" in fork["message"] and "(GB0007)" in fork["message"]
    assert not at(found, "IRV500")        # the forks explain the failure


# -- the RNN loop: unrolled, specialised ---------------------------------------------------

def test_the_python_rnn_loop_is_unrolled_with_its_trip_count():
    result, found = lint(f"{MIGRATION}:MyRNNLoop")
    assert result.exit_code == 1
    assert codes(found) == ["IRV502", "IRV505"]
    loop = at(found, "IRV502")[28]
    assert loop["column"] == 9                    # the `for` itself
    assert "over `xs.size(0)`" in loop["message"]
    assert "10 copies of its body" in loop["message"]
    assert "only takes xs.size(0) == 10" in loop["message"]
    assert "scan" in loop["hint"]
    assert loop["layers"] == ["export-vs-script"]
    # what the finding says of the exported program is so: ten selects from line 29
    model = _load(MIGRATION, "export_migration_for_lint").MyRNNLoop()
    from irviz.frontends.user_code import quiet_output

    with quiet_output():
        program = torch.export.export(model, (torch.rand(10, 3, 4),))
    ops = [n for n in program.graph.nodes if n.op == "call_function"]
    assert sum(str(n.target) == "aten.select.int" for n in ops) == 10
    assert not any("loop" in str(n.target) or "scan" in str(n.target) for n in ops)


def test_a_loop_over_a_size_is_what_ts2epconverter_cannot_convert():
    _, found = lint(f"{MIGRATION}:MyRNNLoop")
    conv = at(found, "IRV505")[28]
    assert conv["message"].startswith("TS2EPConverter cannot convert this `prim::Loop`: "
                                      "its trip count `xs.size(0)` is not a constant")
    real = converter_failure(_load(MIGRATION, "export_migration_for_ts2ep").MyRNNLoop(),
                             (torch.rand(10, 3, 4),))
    assert "TS2EPConverter failed for node prim::Loop" in real
    assert "dynamic value of number of iterations" in real


def test_a_loop_over_a_list_converts_so_it_is_not_reported():
    result, found = lint(f"{MIGRATION}:LenLoop")
    assert result.exit_code == 0 and found == []
    model = _load(MIGRATION, "export_migration_for_len").LenLoop()
    assert converter_failure(model, (torch.rand(3, 4),)) == ""


def test_the_seed_rnn_loop_holding_torchscript():
    """samples/rnn_loop.py's MyRNNLoop holds a traced cell: export fails inside it, the
    loop finding comes from the scripted graph and the example's size."""
    result, found = lint(f"{SAMPLES / 'rnn_loop.py'}:MyRNNLoop")
    assert result.exit_code == 1
    assert codes(found) == ["IRV500", "IRV502", "IRV505"]
    loop = at(found, "IRV502")[37]
    assert "xs.size(0) == 10" in loop["message"] and "export itself failed" in loop["message"]
    assert "prim::Loop" in at(found, "IRV505")[37]["message"]
    failed = at(found, "IRV500")[38]
    assert "the model holds TorchScript (cell: scripted or traced)" in failed["message"]


def test_a_dynamic_dim_that_came_out_static_is_a_finding_at_forward():
    result = CliRunner().invoke(main, ["lint", f"{REWRITES}:CondCell", "--mode", "export",
                                       "--dynamic-dims", "x:0", "--format", "json"])
    assert result.exit_code == 1, result.output
    [d] = json.loads(result.stdout)
    assert d["code"] == "IRV503" and d["line"] == 25      # CondCell.forward
    assert d["message"] == ("the dynamic dimension x:0 is not dynamic in the exported "
                            "program: Dim.AUTO came out static, specialised to 3")
    assert "came out static" not in result.stderr          # a finding, not also a note


def test_a_dynamic_dim_the_loop_specialises():
    result = CliRunner().invoke(main, ["lint", f"{MIGRATION}:MyRNNLoop", "--mode", "export",
                                       "--dynamic-dims", "xs:0", "--format", "json"])
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert "specialised to 10" in at(found, "IRV503")[26]["message"]
    assert 28 in at(found, "IRV502")


# -- the fork ensembles --------------------------------------------------------------------

def test_every_fork_of_the_ensemble_runs_serially_in_export():
    result, found = lint(f"{ENSEMBLES}:LSTMEnsemble")
    assert result.exit_code == 1
    forks = at(found, "IRV504")
    assert sorted(forks) == [37, 86]          # the member fork and the cell_f fork
    assert "torch.jit.fork(models.0.forward)" in forks[86]["message"]
    assert "cell_f" in forks[37]["message"]
    for d in forks.values():
        assert "inlined one after another in the exported program, which has no fork" \
            in d["message"]
        assert "lost: the TorchScript model's predicted speed-up from its forks, " \
            in d["message"] and "work/span" in d["message"]
    # the numbers are irviz report's: the parallelism facts of the scripted graph
    from irviz.analyses import parallelism as par
    from irviz.workspace import Workspace

    ws = Workspace()
    [target] = ws.targets(f"{ENSEMBLES}:LSTMEnsemble")
    facts = par.facts(ws.graph(ws.capture(target, "script"), ("parallelism",)))
    assert f"{facts.predicted_speedup:.2f}x here" in forks[86]["message"]
    assert f"work/span {facts.parallelism:.1f}" in forks[86]["message"]
    # 4 members x (cell_f, its flip, cell_b ...) : the 60 ops forked at line 86
    assert "the 60 ops its task runs from here" in forks[86]["message"]
    assert sorted(at(found, "IRV505")) == [37, 86]
    for d in at(found, "IRV505").values():
        assert "`prim::fork`" in d["message"]


def test_the_biforked_ensemble_forks_only_in_its_members():
    result, found = lint(f"{ENSEMBLES}:BiForkLSTMEnsemble")
    assert result.exit_code == 1
    assert sorted(at(found, "IRV504")) == [37] and sorted(at(found, "IRV505")) == [37]
    assert codes(found) == ["IRV504", "IRV505"]


def test_the_exported_ensemble_really_has_no_fork_and_the_converter_stops_at_it():
    mod = _load(ENSEMBLES, "lstm_ensemble_for_lint")
    from irviz.frontends.user_code import quiet_output

    with quiet_output():
        program = torch.export.export(mod.LSTMEnsemble(), (torch.rand(5, 2, 16),))
    targets = [str(n.target) for n in program.graph.nodes if n.op == "call_function"]
    assert targets.count("aten.lstm.input") == 8
    assert not any("fork" in t or "wait" in t for t in targets)
    real = converter_failure(mod.LSTMEnsemble(), (torch.rand(5, 2, 16),))
    assert "TS2EPConverter failed for node prim::fork" in real
    assert "lstm_ensemble.py:86" in real


def test_a_scripted_archive_gets_only_the_converter_check(tmp_path):
    mod = _load(ENSEMBLES, "lstm_ensemble_for_archive")
    archive = tmp_path / "bifork.pt"
    torch.jit.script(mod.BiForkLSTMEnsemble()).save(str(archive))
    result, found = lint(archive)
    assert result.exit_code == 1
    assert codes(found) == ["IRV505"]
    [d] = found
    assert d["path"].endswith("lstm_ensemble.py") and d["line"] == 37


# -- the rewrites: nothing ------------------------------------------------------------------

def test_the_export_rewrites_have_no_findings():
    result, found = lint(REWRITES)
    assert result.exit_code == 0 and found == []
    assert "All checks passed for 7 models" in result.stderr


# -- the default mode is untouched; bad input ---------------------------------------------

def test_the_default_mode_reports_no_migration_rule():
    result = CliRunner().invoke(main, ["lint", str(SAMPLES / "decision_gate.py"),
                                       "--format", "json"])
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert {(d["code"], d["line"]) for d in found} == {("IRV101", 11)}


def test_a_bad_dynamic_dim_is_an_error_naming_the_option():
    result = CliRunner().invoke(main, ["lint", f"{MIGRATION}:MyRNNLoop", "--mode", "export",
                                       "--dynamic-dims", "ys:0"])
    assert result.exit_code == 2
    assert "error: --dynamic-dims ys: forward() of the model has no argument ys" \
        in result.stderr
    assert not shows_irviz_traceback(result.stderr)


def test_without_inputs_only_the_converter_is_checked(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("import torch\n\nclass M(torch.nn.Module):\n"
                     "    def forward(self, x):\n"
                     "        for i in range(x.size(0)):\n"
                     "            x = x + 1\n"
                     "        return x\n")
    result = CliRunner().invoke(main, ["lint", f"{model}:M", "--mode", "export",
                                       "--format", "json"])
    assert result.exit_code == 1, result.output
    [d] = json.loads(result.stdout)
    assert (d["code"], d["line"]) == ("IRV505", 5)
    assert "--mode export needs example inputs" in result.stderr
    assert "only TS2EPConverter was checked" in result.stderr


def test_a_torch_without_export_gets_a_clear_message():
    # no torch can be made to lack torch.export without mocking it: the message itself
    from irviz.frontends.export import _no_export

    err = _no_export()
    assert err.message == f"this torch ({torch.__version__}) has no torch.export"
    assert "torch >= 2.1" in err.hint and "--mode script or trace" in err.hint
    assert err.format().startswith("error: this torch (")


def test_render_export_lint_draws_the_migration_findings(tmp_path):
    """`irviz render --mode export --lint` runs the export lint, not the default mode's:
    the picture of the exported Python RNN carries IRV502 (unrolled), not IRV103."""
    torch.manual_seed(0)
    out = tmp_path / "rnn.svg"
    result = CliRunner().invoke(main, ["render", f"{MIGRATION}:MyRNNLoop", "--mode", "export",
                                       "--lint", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "IRV502" in result.stderr and "IRV103" not in result.stderr
    assert "IRV502" in out.read_text(encoding="utf-8")


def test_report_export_sets_the_dataflow_bound_beside_the_torchscript_forks(tmp_path):
    """`irviz report --mode export`: the exported ensemble runs serially, its independent
    branches bound what a parallel executor could gain, and the scripted model's forks
    (and their predicted speed-up) are named as what export loses."""
    torch.manual_seed(0)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["report", f"{ENSEMBLES}:LSTMEnsemble", "--mode",
                                       "export", "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    [t] = json.loads(out.read_text())["targets"]
    e = t["export"]
    assert t["mode"] == "export" and not t["forks"] and t["predicted_speedup"] == 1.0
    # eight LSTMs that read only the input: the dataflow span is far below the work
    assert e["span"] < e["work"] / 4 and e["parallelism"] == pytest.approx(
        e["work"] / e["span"], rel=1e-3)
    ts = e["torchscript"]
    assert ts["forks"] == 8 and ts["predicted_speedup"] > 1.0
    md = CliRunner().invoke(main, ["report", f"{ENSEMBLES}:LSTMEnsemble", "--mode", "export"])
    assert "### Exported program" in md.stdout and "IRV504" in md.stdout


def test_report_export_of_a_model_that_does_not_script_says_so(tmp_path):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["report", f"{REWRITES}:CondCell", "--mode", "export",
                                       "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    [t] = json.loads(out.read_text())["targets"]
    assert t["export"]["torchscript"] is None
    assert "Lambda" in t["export"]["torchscript_error"]
