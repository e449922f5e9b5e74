"""``irviz.trace(model, inputs)``: the verified archive and its checklist from Python, and
the remedies on ``irviz.lint``'s findings (real traces, scripts, saves and loads)."""
from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

import irviz
from conftest import ROOT, sample_module
from irviz.cli import main
from irviz.errors import UsageError

decision_gate = sample_module("decision_gate")
PITFALLS = ROOT / "tests" / "lint_models" / "pitfalls"


def test_trace_a_module_object_gives_the_verified_module():
    model = decision_gate.MyCell()
    with torch.no_grad():   # the gate's condition then flips with x's sign, whatever the weights
        model.linear.bias.zero_()
    x, h = torch.rand(3, 4), torch.rand(3, 4)
    result = irviz.trace(model, (x, h))
    assert isinstance(result, irviz.TraceResult) and result.ok
    assert [c.name for c in result.checks] == ["runs", "remedies", "traces", "same outputs",
                                               "saved"]
    assert "no output file given" in result.checks[-1].detail
    (remedy,) = result.remedies
    assert (remedy.kind, remedy.module) == ("script-submodule", "dg")
    assert result.written == [] and result.blocking == []
    archive = result.module
    assert isinstance(archive, torch.jit.ScriptModule)
    for c in (x, -x, 10 * x, -10 * x):   # both sides of the gate
        assert torch.allclose(archive(c, h)[0], model(c, h)[0], atol=1e-6)
    # the user's model is as it was: its gate still Python, its mode unchanged
    assert type(model.dg) is decision_gate.MyDecisionGate and model.training


def test_trace_with_an_output_writes_what_the_cli_writes(tmp_path):
    result = irviz.trace("samples/decision_gate.py:MyCell", output=tmp_path / "api.pt")
    assert result.ok and result.written == [str(tmp_path / "api.pt")]
    cli = CliRunner().invoke(main, ["trace", "samples/decision_gate.py:MyCell", "-o",
                                    str(tmp_path / "cli.pt"), "--format", "json",
                                    "--no-picture"])
    data = json.loads(cli.stdout)
    assert [c["check"] for c in data["checks"]] == [c.name for c in result.checks]
    assert data["remedies"] == [r.to_dict() for r in result.remedies]
    x = torch.rand(3, 4)
    api, made = torch.jit.load(str(tmp_path / "api.pt")), torch.jit.load(str(tmp_path / "cli.pt"))
    assert torch.equal(api(-x, x)[0], made(-x, x)[0])   # the same weights (seeded) and code


def test_trace_where_no_remedy_verifies_says_so(tmp_path):
    from test_trace_command import NO_FIX, sample_module_at

    (tmp_path / "nofix.py").write_text(NO_FIX)
    module = sample_module_at(tmp_path / "nofix.py")
    result = irviz.trace(module.Cell(), torch.rand(3, 4))
    assert not result.ok and result.module is None and result.remedies == []
    (blocking,) = result.blocking
    assert blocking.code == "IRV101" and blocking.remedy is None
    assert any("does not compile" in a.why for a in blocking.remedy_tried)
    checks = {c.name: c.ok for c in result.checks}
    assert checks["remedies"] is False and checks["saved"] is None


def test_trace_refuses_an_output_that_is_not_an_archive(tmp_path):
    with pytest.raises(UsageError, match="saved as .pt"):
        irviz.trace("samples/decision_gate.py:MyCell", output=tmp_path / "cell.txt")
    assert list(tmp_path.iterdir()) == []


def test_lint_findings_carry_their_remedy():
    found = irviz.lint(str(PITFALLS / "p04_training_flag.py"),
                       str(PITFALLS / "p05_optional_bias.py"))
    remedies = {d.code: d.remedy for d in found}
    assert remedies["IRV131"].kind == "eval" and remedies["IRV131"].verified_on > 1
    assert remedies["IRV122"].kind == "pass-argument"
    assert remedies["IRV122"].arguments == ("bias",)


def test_trace_is_a_top_level_name():
    assert {"trace", "TraceResult"} <= set(irviz.__all__)
    assert irviz.trace is irviz.api.trace and irviz.TraceResult is irviz.api.TraceResult
