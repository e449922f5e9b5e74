"""`irviz render --profile`: measured op times matched to IR nodes and drawn (issue 31)."""
from __future__ import annotations

import json
import re
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
            self.w = torch.nn.Parameter(torch.rand(1024, 1024))

        def forward(self, x):
            a = x + 1
            b = torch.relu(a)
            c = torch.matmul(b, self.w).matmul(self.w.t()).matmul(self.w)
            return c * 2 - a.sum()

    example_inputs = {"Dominant": lambda: (torch.rand(1024, 1024),)}
""")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["script", "trace"])
def test_the_dominant_op_is_the_hottest_node_by_its_line(tmp_path, mode):
    model = tmp_path / "dominant.py"
    model.write_text(MODEL)
    out = tmp_path / "graph.json"
    result = CliRunner().invoke(main, ["render", f"{model}:Dominant", "--mode", mode,
                                       "--profile", "--profile-runs", "5",
                                       "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["graph"]["irviz.profile_coverage"] >= 0.95
    timed = [n for n in data["nodes"] if "irviz.profile" in n]
    assert {"self_us", "total_us", "calls"} <= set(timed[0]["irviz.profile"])
    # an order, not a time: each 1024x1024 matmul is ~2 GFLOP, ~1000x the relu's work, and
    # the median of 5 runs is read, so a busy machine preempting one op cannot flip it
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
    # the slowest nodes' time is a label row, drawn as text, never as escaped markup
    assert re.search(r">[0-9.]+ (ms|µs) \([0-9]+%\)<", text) and "&lt;B&gt;" not in text


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


FORKED = textwrap.dedent("""
    import torch

    def heavy(x, w):
        return torch.matmul(torch.matmul(x, w), w)

    def light(x):              # one row: tiny beside the matmuls, so no thread contention
        return x[:1] * 2       # or preemption on a loaded machine makes it look hot

    class Forked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.rand(512, 512))

        def forward(self, x):
            a = torch.jit.fork(heavy, x, self.w)
            b = torch.jit.fork(light, x)
            c = torch.relu(x[:1])
            return torch.jit.wait(a) + torch.jit.wait(b) + c

    example_inputs = {"Forked": lambda: (torch.rand(512, 512),)}
""")


@pytest.mark.slow
def test_forked_tasks_get_their_measured_overlap_path_memory_and_trace_ids(tmp_path):
    """Each fork's task: its ops' time and how much of it ran beside other ops, read from
    the trace's threads; the critical path by measured times runs through the heavy task,
    not the light one; one run's measured peak holds at least one 512x512 result; every
    event of --trace-out names the node it was matched to, an op of the same kind."""
    model = tmp_path / "forked.py"
    model.write_text(FORKED)
    out, trace = tmp_path / "graph.json", tmp_path / "trace.json"
    result = CliRunner().invoke(main, ["render", f"{model}:Forked", "--profile",
                                       "--profile-runs", "3", "--trace-out", str(trace),
                                       "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    nodes = {n["id"]: n for n in data["nodes"]}
    forks = [n for n in nodes.values() if n["kind"] == "prim::fork"]
    assert len(forks) == 2
    tasks = {n["id"]: n["irviz.profile_task"] for n in forks}
    for t in tasks.values():
        assert 0 <= t["overlap_us"] <= t["busy_us"] * 1.001 and t["busy_us"] > 0
    critical = {i for i, n in nodes.items() if n.get("irviz.measured_critical")}
    matmuls = [i for i, n in nodes.items() if n["kind"] == "aten::matmul"]
    assert len(matmuls) == 2 and set(matmuls) <= critical
    assert not [i for i, n in nodes.items() if n["kind"] == "aten::mul" and i in critical]
    span = data["graph"]["irviz.measured_span_us"]
    assert span >= sum(nodes[m]["irviz.profile"]["total_us"] for m in matmuls) * 0.999
    assert data["graph"]["irviz.profile_memory"]["peak_bytes"] >= 512 * 512 * 4
    tagged = [e for e in json.loads(trace.read_text())["traceEvents"]
              if "irviz node" in (e.get("args") or {})]
    assert len(tagged) >= 3 * 4   # matmul x2, mul, relu, adds: per run
    for e in tagged:
        assert nodes[e["args"]["irviz node"]]["kind"] == e["name"]


def test_trace_out_without_profile_is_refused_before_any_capture(tmp_path):
    model = tmp_path / "forked.py"
    model.write_text(FORKED)
    result = CliRunner().invoke(main, ["render", f"{model}:Forked", "--trace-out",
                                       str(tmp_path / "t.json"), "-o", str(tmp_path / "g.svg")])
    assert result.exit_code == 2
    assert "--trace-out" in result.stderr and "--profile" in result.stderr
    assert not (tmp_path / "g.svg").exists() and not (tmp_path / "t.json").exists()


@pytest.mark.slow
def test_an_archive_is_matched_by_its_serialized_code(tmp_path):
    """A loaded .pt's ops run as the archive's serialized code, and the profiler names
    those frames (code/__torch__/forked.py(8)), forks included: every event still finds its
    node, and the forked matmuls are the hot ones."""
    import importlib.util

    import torch

    model = tmp_path / "forked.py"
    model.write_text(FORKED)
    spec = importlib.util.spec_from_file_location("forked", model)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    archive = tmp_path / "forked.pt"
    torch.jit.script(mod.Forked()).save(str(archive))
    out = tmp_path / "graph.json"
    result = CliRunner().invoke(main, ["render", str(archive), "--inputs",
                                       "torch.rand(512, 512)", "--profile", "--profile-runs",
                                       "5", "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["graph"]["irviz.profile_coverage"] == 1.0
    timed = sorted((n for n in data["nodes"] if "irviz.profile" in n),
                   key=lambda n: -n["irviz.profile"]["total_us"])
    assert [n["kind"] for n in timed[:2]] == ["aten::matmul", "aten::matmul"]
    assert all(n["serialized_source"].startswith("code/__torch__/") for n in timed)
    assert all("irviz.profile_task" in n for n in data["nodes"] if n["kind"] == "prim::fork")


ADDMM = textwrap.dedent("""
    import torch

    class Conv1DLike(torch.nn.Module):   # what GPT-2's Conv1D does
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.rand(256, 256))
            self.b = torch.nn.Parameter(torch.rand(256))

        def forward(self, x):
            h = torch.addmm(self.b, x.view(-1, 256), self.w)
            return torch.addmm(self.b, torch.relu(h), self.w).sum()

    example_inputs = {"Conv1DLike": lambda: (torch.rand(64, 256),)}
""")


@pytest.mark.slow
def test_an_addmm_torchscript_runs_as_mm_and_add_is_still_its_node(tmp_path):
    """TorchScript's optimizer runs addmm as mm + add compiled from a string: the
    profiler gives those only '<string>(3)' and the root module, so they are placed by
    order, each pair on the addmm after the op before it."""
    model = tmp_path / "conv1d.py"
    model.write_text(ADDMM)
    out = tmp_path / "graph.json"
    result = CliRunner().invoke(main, ["render", f"{model}:Conv1DLike", "--mode", "trace",
                                       "--profile", "--profile-runs", "3", "--format", "json",
                                       "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["graph"]["irviz.profile_coverage"] >= 0.99, data["graph"]["irviz.profile_unmatched"]
    addmms = [n for n in data["nodes"] if n["kind"] == "aten::addmm"]
    assert len(addmms) == 2 and all(n["irviz.profile"]["calls"] == 1 for n in addmms)
