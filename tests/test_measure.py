"""Measured speed-up: real child processes, real TorchScript, small sizes."""
from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET

import pytest
import torch

from irviz.errors import InputsError, ModelLoadError, UsageError
from irviz import measure as M
from irviz.render.timeline import timeline_svg

from conftest import SAMPLES

SVG = "{http://www.w3.org/2000/svg}"


def _spec(name: str) -> str:
    return str(SAMPLES / name)


def _check_timed(result: dict, n_settings: int) -> None:
    assert len(result["settings"]) == n_settings
    for row in result["settings"]:
        assert row["error"] is None, row["error"]
        for variant in ("serial", "forked"):
            stats = row[variant]
            assert stats["median_s"] > 0 and stats["min_s"] > 0
            assert stats["min_s"] <= stats["median_s"] <= stats["max_s"]
            assert stats["spread_s"] >= 0 and len(stats["runs"]) == result["repeats"]
        assert row["speedup"] == pytest.approx(row["serial"]["median_s"] / row["forked"]["median_s"],
                                               rel=1e-3)
        assert row["speedup_paired"] > 0
        assert row["outputs_match"] is True
        assert row["intra_op"] >= 1 and row["inter_op"] >= 1 and row["cpu_count"] >= 1
        assert row["other_load"] is None or row["other_load"] >= 0
        # every variant sampled in the same rounds, the pair probe too
        assert row["calls_per_sample"] >= 1
        assert row["pair_s"] is None or row["pair_s"] > 0
    assert result["outputs_match"] is True
    assert isinstance(result["baseline"], str) and "fork" in result["baseline"]
    best = result["best_setting"]
    assert best["speedup"] == max(r["speedup"] for r in result["settings"])


@pytest.fixture(scope="module")
def example_result():
    return M.measure(_spec("fork_basics.py:example"), repeats=5, min_sample_s=0.02).to_dict()


@pytest.fixture(scope="module")
def ensemble_measured():
    return M.measure(_spec("lstm_ensemble.py:LSTMEnsemble"), settings=[(None, None), (1, 2)],
                     warmup=2, repeats=5, profile=True, min_sample_s=0.05)


@pytest.fixture(scope="module")
def ensemble_result(ensemble_measured):
    return ensemble_measured.to_dict()


def test_a_sample_is_enough_calls_to_last_min_sample_s(example_result, ensemble_result):
    """fork_basics' example takes microseconds: a sample is several calls; the ensemble's
    calls are longer, so its samples need fewer. How many, and how long a sample lasts,
    depends on the machine's load: only the order is checked (no timing in unit tests)."""
    assert example_result["min_sample_s"] == 0.02
    tiny = min(r["calls_per_sample"] for r in example_result["settings"])
    big = max(r["calls_per_sample"] for r in ensemble_result["settings"])
    assert tiny > big
    for row in example_result["settings"]:
        assert row["pair_s"] > 0        # the pair probe is sampled beside the model


def test_the_hand_off_probe_is_sized_to_the_model_and_fitted():
    """Each setting samples the hand-off probe beside the model: four fork/wait pairs
    whose serial run lasts about as long as the model's serial call; the calibrated
    prediction charges the per-start cost fitted to it; a model whose call takes
    microseconds gets no probe (the wake-up probe stands in)."""
    from irviz import api
    from irviz.analyses.prediction import calibrate_measured

    spec, inputs = _spec("lstm_ensemble.py:BiForkLSTMEnsemble(channels=64)"), \
        "torch.rand(60, 20, 64)"   # a serial call of ~10 ms: well over the probe's 0.2 ms
    result = M.measure(spec, "script", inputs, settings=[(1, 2)], repeats=3,
                       min_sample_s=0.02, profile=False)
    calibrate_measured(api.visualize(spec, inputs=inputs)[0].graph, result)
    for row in result.settings:
        probe = row.handoff
        assert probe["pairs"] == 4 and probe["steps"] >= 1
        assert probe["serial_s"] > 0 and probe["forked_s"] > 0
        assert 0.25 < probe["serial_s"] / row.serial.median_s < 4
        assert row.handoff_wake_us is not None and row.handoff_wake_us >= 0
        # the serial baseline also ran on a pool thread, in the same rounds
        assert 0.25 < row.pool_pair_s / row.serial.median_s < 8
        assert 1 <= row.pool_speed <= 3 and row.to_dict()["pool_speed"] == row.pool_speed
        assert row.to_dict()["handoff_wake_us"] == row.handoff_wake_us
        assert row.predicted_speedup > 0


def test_no_hand_off_probe_for_a_model_of_microseconds(example_result):
    for row in example_result["settings"]:
        assert row["handoff"] is None and row["wake_us"] is not None


def test_calls_per_sample():
    from irviz.measure.child import calls_per_sample

    assert calls_per_sample(0.05, 0.2) == 4
    assert calls_per_sample(0.3, 0.2) == 1
    assert calls_per_sample(0.0, 0.2) == 1
    assert calls_per_sample(0.001, 0.0) == 1


def test_fork_basics_example_every_default_setting(example_result):
    _check_timed(example_result, len(M.default_settings()))
    assert example_result["baseline_info"] == {"method": "inline", "forks": 1, "inlined": 1,
                                               "completed": 0}
    assert example_result["settings"][0]["requested"] == [None, None]
    prof = example_result["profile"]
    assert prof["error"] is None
    labels = {t["label"] for t in prof["tasks"]}
    assert {"example", "foo"} <= labels, prof["tasks"]
    assert any(t["site"] == "fork_basics.py:18" for t in prof["tasks"])


def test_lstm_ensemble_futures_in_a_list(ensemble_result):
    _check_timed(ensemble_result, 2)
    info = ensemble_result["baseline_info"]
    # member forks go into a list (kept as completed futures); the nested cell_f forks inline
    assert info == {"method": "inline+completed", "forks": 8, "inlined": 4, "completed": 4}
    prof = ensemble_result["profile"]
    assert prof["error"] is None
    trace = prof["chrome_trace"]
    assert any(e.get("name") == "<forked function>" for e in trace["traceEvents"])
    tasks = prof["tasks"]
    assert tasks[0]["lane"] == 0 and tasks[0]["label"] == "LSTMEnsemble.forward"
    forked = [t for t in tasks if t["name"] == "<forked function>"]
    assert len(forked) == 8 and all(t["lane"] >= 1 for t in forked)
    assert sorted({t["label"] for t in forked}) == ["cell_f: LSTM",
                                                    "models.*: ForkedBidirectionalRecurrentLSTM"]


# --------------------------------------------------------------------------- the baseline in-process


@pytest.mark.parametrize("spec, mode, method", [
    ("fork_basics.py:example", "script", "inline"),
    ("fork_basics.py:example_loop", "script", "inline+completed"),
    ("fork_basics.py:example_loop", "trace", "inline"),
    ("lstm_ensemble.py:ForkedBidirectionalRecurrentLSTM", "script", "inline"),
    ("lstm_ensemble.py:BiForkLSTMEnsemble", "trace", "inline"),
    ("lstm_ensemble.py:LSTMEnsemble", "script", "inline+completed"),
    ("lstm_ensemble.py:LSTMEnsemble", "trace", "inline"),
    ("lstm_ensemble.py:SerialLSTMEnsemble", "script", "model-has-no-forks"),
])
def test_serial_baseline_matches_and_leaves_the_model_alone(spec, mode, method):
    from irviz.frontends.capture import capture
    from irviz.frontends.inputs import resolve_inputs
    from irviz.frontends.loader import load

    torch.manual_seed(0)
    [target] = load(_spec(spec)).targets
    example = resolve_inputs(target, None)
    inputs = example.flat  # the samples' inputs are positional
    model = capture(target, mode, example).scripted
    before = str(model.graph)
    baseline = M.build_serial_baseline(model)
    assert baseline.info["method"] == method
    with torch.no_grad():
        assert M.outputs_equal(model(*inputs), baseline(*inputs))
    assert str(model.graph) == before  # graphs are shared per type: never rewritten in place


def test_serial_baseline_of_a_saved_archive(tmp_path):
    import sys

    sys.path.insert(0, str(SAMPLES))
    try:
        import lstm_ensemble
    finally:
        sys.path.remove(str(SAMPLES))
    path = tmp_path / "ensemble.pt"
    torch.jit.script(lstm_ensemble.LSTMEnsemble().eval()).save(str(path))
    # mode "archive" is what Capture.mode says for a .pt file: accepted as "as loaded"
    result = M.measure(str(path), "archive", inputs="torch.rand(5, 2, 16)", settings=[(1, 2)],
                       warmup=1, repeats=3, profile=False).to_dict()
    _check_timed(result, 1)
    assert result["mode"] == "archive"
    assert result["baseline_info"]["method"] == "inline+completed"


# --------------------------------------------------------------------------- failures


def _model_file(tmp_path, body: str):
    path = tmp_path / "bad_models.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_model_that_raises_gives_an_error(tmp_path):
    path = _model_file(tmp_path, """
        import torch

        def boom(x):
            fut = torch.jit.fork(torch.neg, x)
            if bool(x.sum() > -1.0):
                raise RuntimeError("boom from the model")
            return torch.jit.wait(fut)

        example_inputs = {"boom": lambda: (torch.rand(3),)}
    """)
    # a model that cannot run on its own example inputs is the user's input error, found
    # by the capture (which runs the compiled model once), before any timing
    from irviz.errors import CaptureError

    with pytest.raises(CaptureError) as err:
        M.measure(f"{path}:boom", settings=[(1, 2)], profile=True)
    assert "boom from the model" in err.value.message
    assert "running it on its example inputs" in err.value.message


def test_an_endless_model_times_out(tmp_path):
    path = _model_file(tmp_path, """
        import torch

        def spin(x):
            i = 0
            while i >= 0:
                x = x + 1
                i = i + 1
            return x

        example_inputs = {"spin": lambda: (torch.rand(3),)}
    """)
    result = M.measure(f"{path}:spin", timeout=5, profile=True).to_dict()
    first, *rest = result["settings"]
    # the words every child's timeout is told in (irviz.child.ending.explain)
    assert first["error"].startswith("the measuring process did not finish within "), \
        first["error"]
    assert "it may loop forever" in first["error"]
    assert all(r["error"] for r in rest)
    assert result["profile"]["error"].startswith("not run")


def test_a_crashing_child_is_an_error_not_a_crash(tmp_path):
    path = _model_file(tmp_path, """
        import os
        import signal
        import torch

        class Crash(torch.nn.Module):
            def forward(self, x):
                os.kill(os.getpid(), signal.SIGSEGV)  # while being traced, in the child
                return x

        example_inputs = {"Crash": lambda: (torch.rand(3),)}
    """)
    result = M.measure(f"{path}:Crash", mode="trace", settings=[(1, 2)],
                       profile=False).to_dict()
    [row] = result["settings"]
    assert "crashed (SIGSEGV" in row["error"] and "capture" in row["error"]


def test_profiling_five_times_in_a_row():
    spec = _spec("fork_basics.py:example")
    outcomes = []
    for _ in range(5):
        prof = M.profile(spec, intra_op=1, inter_op=2, warmup=1, timeout=60).to_dict()
        if prof["error"] is None:
            assert any(t["label"] == "foo" for t in prof["tasks"])
            outcomes.append("ok")
        else:  # a crashed child is a reported failure, never the parent's crash
            assert prof["error"].startswith("profiling failed")
            outcomes.append(prof["error"])
    assert "ok" in outcomes, outcomes


def test_user_errors_are_irviz_errors(tmp_path):
    with pytest.raises(ModelLoadError, match="has no attribute"):
        M.measure(_spec("fork_basics.py:exampel"), settings=[(1, 2)], profile=False)
    with pytest.raises(InputsError, match="--inputs"):
        M.measure(_spec("fork_basics.py:example"), inputs="torch.rand(", settings=[(1, 2)],
                  profile=False)
    with pytest.raises(UsageError, match="measure takes one"):
        M.measure(_spec("fork_basics.py"), settings=[(1, 2)], profile=False)
    with pytest.raises(UsageError, match="positive integers"):
        M.measure(_spec("fork_basics.py:example"), settings=[(0, 2)])
    with pytest.raises(UsageError, match="mode"):
        M.measure(_spec("fork_basics.py:example"), mode="jit")
    with pytest.raises(UsageError, match="min_sample_s must be"):
        M.measure(_spec("fork_basics.py:example"), min_sample_s=-1)


# --------------------------------------------------------------------------- timeline


def test_timeline_svg_is_xml_with_one_bar_per_task():
    tasks = [
        {"lane": 0, "name": "forward", "start_us": 0.0, "dur_us": 5000.0, "label": "Model.forward"},
        {"lane": 1, "name": "<forked function>", "start_us": 100.0, "dur_us": 4000.0,
         "label": "<script>alert(1)</script>", "site": "m.py:3"},
        {"lane": 1, "name": "<forked function>", "start_us": 200.0, "dur_us": 300.0,
         "label": "cell_f: LSTM"},  # overlaps the task above: a second row in lane 1
        {"lane": 2, "name": "<forked function>", "start_us": 4500.0, "dur_us": 20.0,
         "label": "<forked function>"},
    ]
    svg = timeline_svg(tasks, 'model.py:Model & "friends"')
    root = ET.fromstring(svg)
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "task"]
    assert len(bars) == len(tasks)
    assert "<script>" not in svg and "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert any(t.startswith("<script>alert(1)</script> · 4 ms") for t in texts), texts
    assert 'model.py:Model & "friends"' in texts
    assert "main thread" in texts and "pool thread 2" in texts
    ys = {float(b.get("y")) for b in bars}
    assert len(ys) == 4  # main, lane 1 row 1, lane 1 row 2, lane 2
    assert ET.fromstring(timeline_svg([], "empty")) is not None


# --------------------------------------------------------------------------- the typed result


def test_typed_result_writes_the_json_the_report_had():
    from irviz.measure.result import (MeasureResult, ProfileResult, SettingResult, Stats,
                                      summarize)

    stats = {"median_s": 0.2, "min_s": 0.1, "max_s": 0.3, "spread_s": 0.1,
             "runs": [0.1, 0.2, 0.3], "cpu_median_s": 0.2, "cpu_per_wall": 1.0}
    assert Stats.from_dict(stats).to_dict() == stats
    assert list(summarize([0.3, 0.1, 0.2], [0.2, 0.2, 0.2]).to_dict()) == list(stats)
    child = {"error": None, "intra_op": 1, "inter_op": 2, "cpu_count": 2, "load_avg": None,
             "model": "m", "mode": "script", "baseline": "copy", "serial": stats,
             "forked": stats, "speedup": 1.0, "notes": ["aborted at exit"]}
    row = SettingResult(1, 2, (1, 2), cpu_count=2)
    row.take(child)
    assert row.serial.median_s == 0.2 and row.notes == ["aborted at exit"]
    assert list(row.to_dict()) == ["intra_op", "inter_op", "requested", "serial", "forked",
                                   "speedup", "speedup_paired", "outputs_match", "cpu_count",
                                   "load_avg", "other_load", "child_s", "error",
                                   "predicted_speedup", "static_predicted_speedup",
                                   "predicted_forked_s", "wake_us", "pair_s", "pool_pair_s",
                                   "calls_per_sample", "handoff", "handoff_wake_us",
                                   "pool_speed", "notes"]
    result = MeasureResult("m.py:m", None, None, "2.x", 2, 1, 3, settings=[row])
    result.take(child)
    assert (result.model, result.baseline, result.baseline_info) == ("m", "copy", None)
    assert "profile" not in result.to_dict()
    # a profile keeps the keys of its outcome; the report leaves out a recorded trace
    done = ProfileResult.from_child({**child, "chrome_trace": {"traceEvents": []},
                                     "tasks": [], "sites": {}})
    result.profile = done
    assert "chrome_trace" in result.to_dict()["profile"]
    assert "chrome_trace" not in result.to_dict(trace=False)["profile"]
    assert ProfileResult.not_run("profiling failed: x", (None, 2)).to_dict(trace=False) == {
        "intra_op": None, "inter_op": 2, "chrome_trace": None, "tasks": [],
        "error": "profiling failed: x"}
    assert list(ProfileResult.not_run("not run: none").to_dict()) == ["chrome_trace", "tasks",
                                                                      "error"]
    assert ProfileResult.from_child({"error": "cannot set the thread counts: x"}).to_dict() == {
        "error": "cannot set the thread counts: x"}


def test_the_pool_pair_forks_two_copies_before_waiting():
    """make_pool_pair's traced module forks the model twice, then waits for both: both
    copies are on the pool at once, and each returns the model's output."""
    from irviz.measure.child import make_pool_pair

    torch.manual_seed(0)
    model = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()))
    x = torch.rand(5, 3, 8)
    pooled = make_pool_pair(model, (x,))
    assert pooled is not None
    kinds = [n.kind() for n in pooled.graph.nodes()]
    forks = [i for i, k in enumerate(kinds) if k == "prim::fork"]
    waits = [i for i, k in enumerate(kinds) if k == "aten::wait"]
    assert len(forks) == len(waits) == 2 and max(forks) < min(waits)
    with torch.no_grad():
        a, b = pooled(x)
        assert torch.equal(a, model(x)) and torch.equal(b, model(x))


def test_the_pair_runs_its_caller_copy_before_the_wait():
    """make_pair's two copies overlap: the caller's copy runs between the fork and the
    wait (a wait first would time two copies one after another)."""
    from irviz.measure.child import make_pair

    model = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()))
    pair = make_pair(model, (torch.rand(5, 3, 8),))
    kinds = [n.kind() for n in pair.graph.nodes()]
    fork, wait = kinds.index("prim::fork"), kinds.index("aten::wait")
    assert fork < wait
    assert any(k not in ("prim::Constant", "prim::GetAttr") for k in kinds[fork + 1:wait]), \
        kinds
