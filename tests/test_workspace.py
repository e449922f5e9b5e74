"""The one pipeline: each stage done once, shared by every command, one lint gate,
[tool.irviz] defaults for every command, the Python API on model objects."""
from __future__ import annotations

import json
import textwrap

import pytest
import torch
from click.testing import CliRunner

from conftest import SAMPLES
from irviz.cli import main
from irviz.lint.session import LintSession
from irviz.workspace import Workspace

CELL_INPUTS = "torch.rand(3, 4), torch.rand(3, 4)"
NOT_SCRIPTABLE = textwrap.dedent("""
    import torch

    class NoScript(torch.nn.Module):
        def forward(self, x):
            double = lambda v: v * 2   # TorchScript has no lambdas
            return double(x)
""")


def cli(*args, cwd=None, monkeypatch=None):
    torch.manual_seed(0)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def project(tmp_path):
    """A copy of the decision-gate sample in a project of its own (a .git marks the root,
    so no pyproject.toml above it is found)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "gate.py").write_text((SAMPLES / "decision_gate.py").read_text())
    return tmp_path


def _config(project, body: str) -> None:
    (project / "pyproject.toml").write_text("[tool.irviz]\n" + textwrap.dedent(body))


# -- each stage once -------------------------------------------------------------------

def test_a_model_is_captured_once_per_mode_and_its_graph_built_once():
    ws = Workspace(inputs=CELL_INPUTS)
    [target] = ws.load(str(SAMPLES / "decision_gate.py:MyCell")).targets
    assert ws.load(str(SAMPLES / "decision_gate.py:MyCell")).targets[0] is target
    run = LintSession(ws).target(target)
    # the picture drawn after the lint reuses the lint's capture and graph
    view = ws.view(target, "trace")
    assert view.capture is run.trace and view.graph is run.trace_graph
    assert ws.capture(target, "script") is run.script
    assert ws.inputs_for(target) is run.trace.inputs


def test_a_picture_traces_without_lines_and_lint_traces_again_for_them():
    ws = Workspace(inputs=CELL_INPUTS)
    [target] = ws.load(str(SAMPLES / "decision_gate.py:MyCell")).targets
    view = ws.view(target, "trace")
    assert view.capture.lines_skipped and view.capture.executed_lines is None
    assert ws.capture(target, "trace", lines=False) is view.capture   # cached
    traced = ws.capture(target, "trace")     # lint's: the lines its run executed
    assert not traced.lines_skipped and traced is not view.capture
    assert any(f.endswith("decision_gate.py") for f, _ in traced.executed_lines)
    assert ws.capture(target, "trace", lines=False) is traced


def test_analyses_run_only_when_needed_and_once():
    ws = Workspace()
    [target] = ws.load(str(SAMPLES / "lstm_ensemble.py:LSTMEnsemble")).targets
    cap = ws.capture(target, "script")
    G = ws.graph(cap, needs=("fork_waits",))
    assert any("irviz.fork" in d for _, d in G.nodes(data=True))
    assert "irviz.parallelism" not in G.graph       # not asked for
    assert ws.graph(cap) is G                          # the same graph, now complete
    assert "irviz.parallelism" in G.graph and "irviz.cost_model" in G.graph
    facts = G.graph["irviz.parallelism"]
    assert ws.graph(cap) is G and G.graph["irviz.parallelism"] is facts   # not recomputed


def test_a_failed_capture_is_remembered_not_repeated(tmp_path):
    from irviz.errors import CaptureError

    (tmp_path / "m.py").write_text(NOT_SCRIPTABLE)
    ws = Workspace()
    [target] = ws.load(str(tmp_path / "m.py:NoScript")).targets
    with pytest.raises(CaptureError) as first:
        ws.capture(target, "script")
    with pytest.raises(CaptureError) as second:
        ws.capture(target, "script")
    assert first.value is second.value


def test_auto_falls_back_to_the_cached_trace_with_a_note(tmp_path):
    (tmp_path / "m.py").write_text(NOT_SCRIPTABLE)
    ws = Workspace(inputs="torch.rand(2)")
    [target] = ws.load(str(tmp_path / "m.py:NoScript")).targets
    cap = ws.capture(target, "auto")
    assert cap.mode == "trace" and "traced with the example inputs instead" in cap.notes[0]
    assert cap.scripted is ws.capture(target, "trace").scripted


# -- one gate: render --lint, lint and the Sphinx child agree ----------------------------

def _lint_codes(result) -> list[str]:
    return sorted(d["code"] for d in json.loads(result.stdout))


def _render_lint_codes(result) -> list[str]:
    return sorted(line.split()[1] for line in result.stderr.splitlines()
                  if ": IRV" in line and line.split()[1].startswith("IRV"))


def _sphinx_codes(project) -> list[str]:
    from irviz.sphinxext import _child_capture

    out = _child_capture({"target": str(project / "gate.py:MyCell"), "mode": "trace",
                          "inputs": CELL_INPUTS, "depth": None, "max_nodes": 1000,
                          "lint": True, "parallelism": False, "source_url": None,
                          "source_root": str(project)})
    return sorted(f["code"] for f in out["views"][0]["findings"])


@pytest.mark.parametrize("config, expected", [
    ("", ["IRV101"]),
    ('ignore = ["IRV101"]\n', []),
    ('per-file-ignores = { "gate.py" = ["IRV1"] }\n', []),
])
def test_render_lint_sphinx_and_lint_report_the_same_findings(project, monkeypatch, config,
                                                              expected):
    if config:
        _config(project, config)
    linted = cli("lint", "gate.py:MyCell", "--inputs", CELL_INPUTS, "--format", "json",
                 "--exit-zero", cwd=project, monkeypatch=monkeypatch)
    assert linted.exit_code == 0, linted.stderr
    rendered = cli("render", "gate.py:MyCell", "--mode", "trace", "--inputs", CELL_INPUTS,
                   "--lint", "-o", "cell.svg", cwd=project, monkeypatch=monkeypatch)
    assert rendered.exit_code == 0, rendered.stderr
    assert _lint_codes(linted) == _render_lint_codes(rendered) == _sphinx_codes(project) \
        == expected
    svg = (project / "cell.svg").read_text()
    assert ("IRV101" in svg) == bool(expected)


def test_noqa_holds_in_render_lint_too(project, monkeypatch):
    text = (project / "gate.py").read_text().replace("if x.sum() > 0:",
                                                      "if x.sum() > 0:  # noqa: IRV101")
    (project / "gate.py").write_text(text)
    rendered = cli("render", "gate.py:MyCell", "--mode", "trace", "--inputs", CELL_INPUTS,
                   "--lint", "-o", "cell.svg", cwd=project, monkeypatch=monkeypatch)
    assert rendered.exit_code == 0 and _render_lint_codes(rendered) == []


# -- [tool.irviz] fills every command's defaults -------------------------------------------

def test_config_mode_makes_render_and_report_trace(project, monkeypatch):
    _config(project, 'mode = "trace"\n')
    rendered = cli("render", "gate.py:MyCell", "--inputs", CELL_INPUTS, "--format", "json",
                   cwd=project, monkeypatch=monkeypatch)
    assert rendered.exit_code == 0, rendered.stderr
    assert json.loads(rendered.stdout)["graph"]["mode"] == "trace"
    reported = cli("report", "gate.py:MyCell", "--inputs", CELL_INPUTS, "--format", "json",
                   cwd=project, monkeypatch=monkeypatch)
    assert reported.exit_code == 0, reported.stderr
    assert json.loads(reported.stdout)["targets"][0]["mode"] == "trace"
    # the command line wins over the file
    scripted = cli("render", "gate.py:MyCell", "--mode", "script", "--format", "json",
                   cwd=project, monkeypatch=monkeypatch)
    assert json.loads(scripted.stdout)["graph"]["mode"] == "script"


def test_config_depth_and_engine_reach_render(project, monkeypatch):
    plain = cli("render", "gate.py:MyCell", "--format", "dot", "--depth", "0",
                cwd=project, monkeypatch=monkeypatch)
    _config(project, 'depth = 0\nengine = "wasm"\n')
    configured = cli("render", "gate.py:MyCell", "--format", "dot", cwd=project,
                     monkeypatch=monkeypatch)
    assert configured.exit_code == 0, configured.stderr
    assert configured.stdout == plain.stdout and "box:" in configured.stdout
    timed = cli("render", "gate.py:MyCell", "-v", "-o", "cell.svg", cwd=project,
                monkeypatch=monkeypatch)
    assert timed.exit_code == 0, timed.stderr
    assert "wasm)" in timed.stderr and "dot)" not in timed.stderr


def test_a_bad_config_is_one_error_for_render_too(project, monkeypatch):
    _config(project, 'mode = "trce"\n')
    result = cli("render", "gate.py:MyCell", cwd=project, monkeypatch=monkeypatch)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: `mode` in [tool.irviz] of pyproject.toml")


# -- the Python API on objects and real tensors -------------------------------------------

class _Cell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        return torch.tanh(self.linear(x) + h)


def test_visualize_takes_a_model_object_and_tensors():
    import irviz.api as irviz

    x, h = torch.rand(3, 4), torch.rand(3, 4)
    [traced] = irviz.visualize(_Cell(), mode="trace", inputs=(x, h))
    assert traced.capture.mode == "trace" and traced.name == "_Cell"
    assert traced.title() == "test_workspace.py:_Cell"
    [by_name] = irviz.visualize(_Cell(), mode="trace", inputs={"x": x, "h": h})
    kinds = {d["kind"] for _, d in by_name.graph.nodes(data=True)}
    assert "aten::tanh" in kinds and "aten::linear" in kinds
    [scripted] = irviz.visualize(torch.jit.script(_Cell()))
    assert scripted.capture.mode == "script" and b"<svg" in scripted.svg(engine="wasm")


def test_visualize_says_what_is_wrong_with_inputs_by_name():
    import irviz.api as irviz
    from irviz.errors import InputsError, ModelLoadError

    with pytest.raises(InputsError, match="has no argument 'y'"):
        irviz.visualize(_Cell(), mode="trace", inputs={"x": torch.rand(3, 4), "y": 1})
    with pytest.raises(InputsError, match="missing a required argument: .x."):
        irviz.visualize(_Cell(), mode="trace", inputs={"h": torch.rand(3, 4)})
    with pytest.raises(ModelLoadError, match="not a model"):
        irviz.visualize(42)
