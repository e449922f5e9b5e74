"""``--mode export`` and ``.pt2`` programs (issue 14): real torch.export, real CLI runs.

The fixtures are the seed models rewritten for export (``tests/models/export_rewrites.py``):
every higher-order op's body must be in the graph and in the picture, nested where it is
nested; the seed gate, which export cannot take, must fail with torch's reason at the
user's line and nothing torch printed."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from conftest import ROOT, SAMPLES, shows_irviz_traceback
from irviz.cli import main
from irviz.ir.invariants import assert_invariants
from irviz.ir.model import CONTAINER_KINDS
from irviz.render.dot import RenderOptions, to_dot
from irviz.workspace import Workspace

REWRITES = ROOT / "tests" / "models" / "export_rewrites.py"


def cli(*args):
    torch.manual_seed(0)
    return CliRunner().invoke(main, [*map(str, args)])


@pytest.fixture(scope="module")
def ws():
    return Workspace()


def exported(ws, name):
    [target] = ws.targets(f"{REWRITES}:{name}")
    cap = ws.capture(target, "export")
    G = ws.graph(cap)
    assert_invariants(G)
    return cap, G


def blocks_of(G, kind):
    return {cid: info for cid, info in G.graph["blocks"].items() if info["kind"] == kind}


def kinds_in(G, block):
    return [d["kind"] for _, d in G.nodes(data=True) if d["block"] == block and not d["hidden"]]


def test_container_kinds_are_in_the_vocabulary():
    for kind in ("cond.true", "cond.false", "while.cond", "while.body", "scan.body", "map.body"):
        assert kind in CONTAINER_KINDS


def test_cond_branches_are_nested_in_the_gate_module(ws):
    cap, G = exported(ws, "CondCell")
    assert cap.mode == G.graph["mode"] == "export" and cap.scripted is None
    [cond] = [n for n, d in G.nodes(data=True) if d["kind"] == "higher_order::cond"]
    [true] = blocks_of(G, "cond.true")
    [false] = blocks_of(G, "cond.false")
    for cid in (true, false):
        assert G.graph["blocks"][cid]["owner"] == cond
    assert kinds_in(G, true) == ["aten::clone"]
    assert kinds_in(G, false) == ["aten::neg"]
    # module clusters from nn_module_stack: the cond lives in dg's call
    calls = {info["label"]: cid for cid, info in blocks_of(G, "method").items()}
    assert set(calls) == {"dg: CondGate", "linear: Linear"}
    assert G.nodes[cond]["block"] == calls["dg: CondGate"]
    assert G.graph["blocks"][calls["linear: Linear"]]["qualified_type"] == \
        "torch.nn.modules.linear.Linear"
    # the add after the gate reads one value per branch, like an if's consumer
    [add] = [n for n, d in G.nodes(data=True) if d["kind"] == "aten::add.Tensor"]
    assert sorted(G.nodes[add]["inputs"][0]) == sorted(
        [n for n in G if G.nodes[n]["block"] in (true, false)])
    # kinds from the OpOverload, lines from the stack trace, shapes from meta["val"]
    [gt] = [n for n, d in G.nodes(data=True) if d["kind"] == "aten::gt.Scalar"]
    assert G.nodes[gt]["user_source"] == f"{REWRITES}:16:1"
    assert G.nodes[add]["outputs"][0]["shape"] == [3, 4]
    assert G.nodes[add]["outputs"][0]["dtype"] == "float32"
    # parameters are folded (hidden), user inputs are prim::Param
    params = [d["label"] for _, d in G.nodes(data=True) if d["kind"] == "prim::Param"]
    assert params == ["x", "h"]
    assert {d["label"] for _, d in G.nodes(data=True)
            if d["kind"] == "prim::GetAttr" and d["hidden"]} == {"weight", "bias"}


def test_scan_body_holds_the_nested_cond(ws):
    _, G = exported(ws, "ScanRNN")
    [scan] = [n for n, d in G.nodes(data=True) if d["kind"] == "higher_order::scan"]
    [body] = blocks_of(G, "scan.body")
    assert G.graph["blocks"][body]["owner"] == scan
    [cond] = [n for n, d in G.nodes(data=True) if d["kind"] == "higher_order::cond"]
    assert G.nodes[cond]["block"] == body     # the cond is inside the scan body
    for kind in ("cond.true", "cond.false"):
        [cid] = blocks_of(G, kind)
        assert G.graph["blocks"][cid]["parent"] == body
        assert cid.startswith(f"{body}/")
    assert "aten::linear" in kinds_in(G, body) and "aten::tanh" in kinds_in(G, body)
    # the scan's outputs are the body's values; the stacked ys are 10×3×4
    assert G.nodes[scan]["outputs"][1]["shape"] == [10, 3, 4]
    out_producers = {p for ps in G.nodes["out"]["inputs"] for p in ps}
    assert out_producers <= {n for n in G if G.nodes[n]["block"] == body}


def test_while_loop_has_condition_and_body(ws):
    _, G = exported(ws, "WhileCount")
    [loop] = [n for n, d in G.nodes(data=True) if d["kind"] == "higher_order::while_loop"]
    [cond] = blocks_of(G, "while.cond")
    [body] = blocks_of(G, "while.body")
    assert G.graph["blocks"][cond]["owner"] == G.graph["blocks"][body]["owner"] == loop
    assert kinds_in(G, cond) == ["aten::lt.Scalar"]
    assert kinds_in(G, body) == ["aten::add.Tensor", "aten::mul.Tensor"]
    # the carried values come from the loop node, as a prim::Loop body's parameters do
    [mul] = [n for n in G if G.nodes[n]["kind"] == "aten::mul.Tensor"]
    assert G.nodes[mul]["inputs"][0] == [loop]


def test_map_body_reads_the_closed_over_parameters(ws):
    _, G = exported(ws, "MapRows")
    [body] = blocks_of(G, "map.body")
    assert kinds_in(G, body) == ["aten::linear", "aten::relu"]
    [linear] = [n for n in G if G.nodes[n]["kind"] == "aten::linear"]
    weight = G.nodes[linear]["inputs"][1]
    assert G.nodes[weight[0]]["kind"] == "prim::GetAttr" and G.nodes[weight[0]]["hidden"]


def test_the_picture_draws_every_body_nested(ws):
    _, G = exported(ws, "ScanRNN")
    dot = to_dot(G, RenderOptions())
    body = next(iter(blocks_of(G, "scan.body")))
    true = next(iter(blocks_of(G, "cond.true")))
    # the cond's frame (and its branches) is inside the scan body's cluster
    start = dot.index(f'subgraph "cluster_{body}"')
    assert dot.index(f'subgraph "cluster_{true}"') > start
    assert "body (each step)" in dot and "h, ys = scan(step, h, xs)" in dot
    assert "torch.cond" in dot
    assert 'label="true"' in dot or ">true<" in dot or '"true"' in dot


def test_render_cli_each_rewrite_and_its_pt2(tmp_path):
    for name in ("CondCell", "ScanRNN", "WhileCount", "MapRows"):
        out = tmp_path / f"{name}.svg"
        result = cli("render", f"{REWRITES}:{name}", "--mode", "export", "-o", out)
        assert result.exit_code == 0, result.output
        svg = out.read_text()
        assert "(export)" in svg
        for kind in ("b0",):
            assert re.search(rf'id="irviz:cluster:[^"]*/{kind}"', svg), name
    # a .pt2 saved by torch.export.save renders the same bodies
    program = torch.export.export(_load(REWRITES).ScanRNN(), (torch.rand(10, 3, 4),))
    pt2 = tmp_path / "scan_rnn.pt2"
    torch.export.save(program, pt2)
    result = cli("render", pt2, "-o", tmp_path / "pt2.svg")
    assert result.exit_code == 0, result.output
    result = cli("render", pt2, "--format", "json")
    data = json.loads(result.stdout)
    assert data["graph"]["mode"] == "export"
    kinds = {info["kind"] for info in data["graph"]["blocks"].values()}
    assert {"scan.body", "cond.true", "cond.false"} <= kinds


def _load(path: Path):
    import importlib.util

    import sys

    spec = importlib.util.spec_from_file_location("export_rewrites_for_pt2", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # torch.export looks the model's module up
    spec.loader.exec_module(module)
    return module


def test_pt2_of_each_rewrite_renders(tmp_path):
    R = _load(REWRITES)
    for name in ("CondCell", "WhileCount", "MapRows"):
        args = R.example_inputs[name]()
        program = torch.export.export(getattr(R, name)(), args)
        pt2 = tmp_path / f"{name}.pt2"
        torch.export.save(program, pt2)
        result = cli("render", pt2, "--format", "json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        kinds = {info["kind"] for info in data["graph"]["blocks"].values()}
        wanted = {"CondCell": {"cond.true", "cond.false", "method"},
                  "WhileCount": {"while.cond", "while.body"}, "MapRows": {"map.body"}}[name]
        assert wanted <= kinds, (name, kinds)


def test_symbolic_shapes_print_their_symbol():
    result = cli("render", f"{REWRITES}:ScanRNN", "--mode", "export", "--dynamic-dims", "xs:0",
                 "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [xs] = [n for n in data["nodes"] if n["kind"] == "prim::Param"]
    symbol, three, four = xs["outputs"][0]["shape"]
    assert re.fullmatch(r"s\d+", symbol) and (three, four) == (3, 4)
    assert symbol in data["graph"]["range_constraints"]
    dot = cli("render", f"{REWRITES}:ScanRNN", "--mode", "export", "--dynamic-dims", "xs:0",
              "--format", "dot").stdout
    assert f"{symbol}×3×4 float32" in dot
    assert f"guard: {symbol} ∈ " in dot     # its range, on the input that holds it


def test_a_dynamic_dim_export_specialises_is_said():
    # the seed RNN loop's cell: nothing in CondCell depends on x's first size except h
    result = cli("render", f"{REWRITES}:CondCell", "--mode", "export", "--dynamic-dims", "x:0",
                 "--format", "json")
    assert result.exit_code == 0, result.output
    assert "--dynamic-dims x:0 came out static: export specialised it to 3" in result.stderr


def test_runtime_asserts_are_badges_on_what_they_constrain(ws):
    _, G = exported(ws, "Guarded")
    [item] = [n for n, d in G.nodes(data=True) if d["kind"] == "aten::item"]
    guards = G.nodes[item]["guards"]
    assert "assert u0 >= 1" in guards and any(g.startswith("u0 ∈ 1..") for g in guards)
    asserts = [n for n, d in G.nodes(data=True) if d["kind"] == "aten::_assert_scalar"]
    assert asserts and all(G.nodes[n]["hidden"] for n in asserts)
    dot = to_dot(G, RenderOptions())
    assert "assert u0 &gt;= 1" in dot or "assert u0 >= 1" in dot


def test_keyword_inputs_are_passed_as_keywords(ws):
    cap, G = exported(ws, "KeywordScale")
    assert cap.inputs.kwargs and not cap.inputs.args
    params = [d["label"] for _, d in G.nodes(data=True) if d["kind"] == "prim::Param"]
    assert params == ["x", "scale"]
    [mul] = [n for n in G if G.nodes[n]["kind"] == "aten::mul.Tensor"]
    assert G.nodes[mul]["inputs"][1] == [G.graph["inputs"][1]]
    assert G.nodes[mul]["outputs"][0]["shape"] == [2, 8]


def test_the_seed_gate_cannot_be_exported(capfd):
    result = cli("render", f"{SAMPLES / 'decision_gate.py'}:MyCell", "--mode", "export",
                 "-o", "-")
    assert result.exit_code == 2, result.output
    err = result.stderr
    assert err.startswith("error: torch.export failed on ")
    assert "decision_gate.py:11: GuardOnDataDependentSymNode: Could not guard on " \
           "data-dependent expression" in err
    assert "torch.cond" in err     # the hint
    assert not shows_irviz_traceback(err)
    printed = capfd.readouterr()
    for text in (result.stdout, err, printed.out, printed.err):
        assert "def forward(" not in text      # torch's partial graph is never shown
        assert "symbolic_shapes.py" not in text   # nor its log lines


@pytest.mark.slow
def test_strict_export_names_the_graph_break():
    result = cli("render", f"{SAMPLES / 'decision_gate.py'}:MyCell", "--mode", "export",
                 "--strict", "-o", "-")
    assert result.exit_code == 2, result.output
    assert "decision_gate.py:11: Unsupported: Data-dependent branching (GB0170)" in result.stderr


def test_export_needs_inputs_and_real_dims(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("import torch\n\nclass M(torch.nn.Module):\n"
                     "    def forward(self, x):\n        return x + 1\n")
    result = cli("render", f"{model}:M", "--mode", "export")
    assert result.exit_code == 2 and "--mode export needs example inputs" in result.stderr
    result = cli("render", f"{model}:M", "--mode", "export", "--inputs", "torch.rand(2)",
                 "--dynamic-dims", "y:0")
    assert result.exit_code == 2
    assert "--dynamic-dims y: forward() of the model has no argument y" in result.stderr
    result = cli("render", f"{model}:M", "--mode", "export", "--inputs", "torch.rand(2)",
                 "--dynamic-dims", "x:3")
    assert result.exit_code == 2 and "x has 1 dimensions" in result.stderr
    result = cli("render", f"{model}:M", "--strict", "--inputs", "torch.rand(2)", "-o",
                 tmp_path / "m.svg")
    assert result.exit_code == 0 and "--strict only apply with --mode export" in result.stderr


def test_a_broken_pt2_is_a_load_error(tmp_path):
    import zipfile

    bad = tmp_path / "bad.pt2"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("bad/serialized_exported_program.json", "{not json")
    result = cli("render", bad)
    assert result.exit_code == 2
    assert "could not be read as a torch.export program" in result.stderr
    assert not shows_irviz_traceback(result.stderr)


def test_report_and_lint_take_export_mode():
    result = cli("report", f"{REWRITES}:WhileCount", "--mode", "export", "--format", "json")
    assert result.exit_code == 0, result.output
    [target] = json.loads(result.stdout)["targets"]
    assert target["mode"] == "export" and target["forks"] == []
    result = cli("lint", f"{SAMPLES / 'decision_gate.py'}:MyCell", "--mode", "export")
    assert result.exit_code == 1, result.output      # IRV501 (tests/test_export_lint.py)
    assert "decision_gate.py:11:1: IRV501 " in result.stdout


def test_exported_op_kinds_get_the_same_costs_as_torchscripts():
    """`aten::lstm.input` is `aten::lstm` with its overload: costed as one (not as an
    element-wise op), so the report's work of an exported program means what it says."""
    from irviz.analyses.cost import cost_of, op_name

    assert op_name("aten::lstm.input") == "aten::lstm"
    assert op_name("aten::add.Tensor") == "aten::add" and op_name("prim::If") == "prim::If"
    torch.manual_seed(0)
    work = Workspace()
    [target] = work.targets(f"{SAMPLES / 'lstm_ensemble.py'}:LSTMEnsemble")
    costs = {}
    for mode in ("script", "export"):
        G = work.graph(work.capture(target, mode))
        costs[mode] = sorted(cost_of(d) for _, d in G.nodes(data=True)
                             if op_name(d["kind"]) == "aten::lstm")
    assert len(costs["export"]) == len(costs["script"]) == 8
    assert costs["export"] == pytest.approx(costs["script"], rel=0.1)
    assert min(costs["export"]) > 10  # microseconds: far above one element-wise op's 2
