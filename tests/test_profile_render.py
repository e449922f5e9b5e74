"""`irviz render --profile`: measured op times matched to IR nodes and drawn (issue 31)."""
from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from irviz.cli import main
from irviz.measure.op_events import module_path, op_events

MODEL = textwrap.dedent("""
    import torch

    class Dominant(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.rand(384, 384))

        def forward(self, x):
            a = x + 1
            b = torch.relu(a)
            c = torch.matmul(b, self.w).matmul(self.w.t()).matmul(self.w)
            return c * 2 - a.sum()

    example_inputs = {"Dominant": lambda: (torch.rand(384, 384),)}
""")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["script", "trace"])
def test_the_dominant_op_is_the_hottest_node_by_its_line(tmp_path, mode):
    model = tmp_path / "dominant.py"
    model.write_text(MODEL)
    out = tmp_path / "graph.json"
    result = CliRunner().invoke(main, ["render", f"{model}:Dominant", "--mode", mode,
                                       "--profile", "--profile-runs", "3",
                                       "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["graph"]["irviz.profile_coverage"] >= 0.95
    timed = [n for n in data["nodes"] if "irviz.profile" in n]
    assert {"self_us", "total_us", "calls"} <= set(timed[0]["irviz.profile"])
    hottest = max(timed, key=lambda n: n["irviz.profile"]["total_us"])
    assert hottest["kind"] == "aten::matmul"
    assert hottest["source"].rsplit(":", 2)[1] == "12"     # the matmul line
    svg = tmp_path / "graph.svg"
    result = CliRunner().invoke(main, ["render", f"{model}:Dominant", "--mode", mode,
                                       "--profile", "--profile-runs", "2", "-o", str(svg)])
    assert result.exit_code == 0, result.stderr
    text = svg.read_text()
    assert "of the profiled aten time matched to nodes" in text
    assert 'fill="#ec7014"' in text     # the hottest node in the ramp's top colour


def test_profile_without_inputs_is_a_user_error(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("import torch\nclass M(torch.nn.Module):\n"
                     "    def forward(self, x):\n        return x + 1\n")
    result = CliRunner().invoke(main, ["render", f"{model}:M", "--profile", "-o",
                                       str(tmp_path / "m.svg")])
    assert result.exit_code == 2
    assert "--profile runs" in result.stderr and "needs example inputs" in result.stderr


def test_the_trace_events_are_read_as_top_level_ops_per_run():
    """A hand-made trace: aten::linear with its addmm child inside a run, a forked task's
    op on another thread, and an op outside every run (ignored)."""
    def ev(name, ts, dur, tid=1, stack=None, hierarchy=None, cat="cpu_op"):
        args = {}
        if stack:
            args["Call stack"] = stack
        if hierarchy:
            args["Module Hierarchy"] = hierarchy
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid,
                "args": args}

    trace = {"traceEvents": [
        ev("irviz::run", 0, 100, cat="user_annotation"),
        ev("aten::linear", 10, 50, stack="/x/linear.py(134): forward;/m/model.py(7): forward;",
           hierarchy="TOP(M)::forward.l1(Linear)::forward."),
        ev("aten::addmm", 15, 40),
        ev("aten::lstm", 20, 30, tid=2, stack="/x/rnn.py(1164): forward__0;"
           "/m/model.py(37): <forked function>;",
           hierarchy="TOP(LSTM)::<forked function>.SELF(LSTM)::forward__0."),
        ev("aten::relu", 200, 5),
    ]}
    events = op_events(trace, "irviz::run")
    assert [(e.name, e.file, e.line, e.module, e.forked) for e in events] == [
        ("aten::linear", "linear.py", 134, "l1", False),
        ("aten::lstm", "rnn.py", 1164, "", True)]
    assert events[0].total_us == 50 and events[0].self_us == 10
    assert events[1].fork_site == "model.py:37"
    assert module_path("TOP(M)::forward.stem(Conv2d)::forward.SELF(Conv2d)::_conv_forward.") \
        == ("stem", False)


def test_an_event_module_path_fits_the_scope_it_was_called_in():
    from irviz.analyses.profile_times import _fits

    # a ModuleList the profiler leaves out, at the top and inside
    assert _fits("encoder.layer.0.attention.self.query", "encoder.0.attention.self.query",
                 False)
    assert _fits("layers.0.attention.q_proj", "0.attention.q_proj", False)
    # a called module is never left out: attention.output.dense is not output.dense
    assert not _fits("encoder.layer.0.attention.output.dense", "encoder.0.output.dense", False)
    assert not _fits("encoder.layer.1.attention.self.query", "encoder.0.attention.self.query",
                     False)
    # a fork's task: relative to the forked module
    assert _fits("models.2.cell_b", "cell_b", True) and _fits("models.2.cell_f", "", True)
    assert not _fits("models.2.cell_f", "", False) and not _fits("block.l1", "l1", False)
