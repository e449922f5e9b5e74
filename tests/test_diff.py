"""`irviz diff`: the matcher on real scripted and traced graphs, each change class, the
outputs (text, JSON, SVG, HTML) and the exit codes, through click's runner and a real
process."""
from __future__ import annotations

import html
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from irviz.analyses.graph_match import DIFF, match_graphs, union_graph
from irviz.cli import main
from irviz.workspace import Workspace
from conftest import ROOT, SAMPLES, shows_irviz_traceback

MODELS = Path(__file__).resolve().parent / "models" / "diff"
CELL = f"{SAMPLES / 'decision_gate.py'}:MyCell"
V1, V2 = f"{MODELS / 'blocks_v1.py'}:Stack", f"{MODELS / 'blocks_v2.py'}:Stack"


def diff(*args):
    torch.manual_seed(0)
    return CliRunner().invoke(main, ["diff", *map(str, args)])


def match(left: str, right: str, left_mode="script", right_mode="script", inputs=None):
    torch.manual_seed(0)
    ws = Workspace(inputs=inputs)
    [a], [b] = ws.targets(left), ws.targets(right)
    return match_graphs(ws.graph(ws.capture(a, left_mode), needs=("compiled_shapes",)),
                        ws.graph(ws.capture(b, right_mode), needs=("compiled_shapes",)))


def pair_of_files(tmp_path: Path, before: str, after: str, header: str = "") -> tuple[str, str]:
    """Two versions of one model (class M, example inputs x: 3×4) as files a.py, b.py."""
    specs = []
    for name, body in (("a", before), ("b", after)):
        path = tmp_path / f"{name}.py"
        path.write_text("import torch\nfrom torch import nn\n" + textwrap.dedent(header)
                        + "\n\nclass M(nn.Module):\n" + textwrap.indent(
                            textwrap.dedent(body), "    ")
                        + "\n\nexample_inputs = {'M': lambda: (torch.rand(3, 4),)}\n")
        specs.append(f"{path}:M")
    return specs[0], specs[1]


# -- the seeds and the fixtures -------------------------------------------------------------
def test_script_vs_trace_of_mycell_loses_the_if_and_nothing_else():
    d = match(CELL, CELL, "script", "trace")
    removed = [e.kind for e in d.removed]
    assert "prim::If" in removed
    # the condition (dead in the trace) and the untaken branch's op; nothing else
    assert set(removed) <= {"aten::sum", "aten::gt", "aten::Bool", "prim::If", "aten::neg"}
    assert d.added == [] and d.changed == []
    [gate] = [e for e in d.removed if e.kind == "prim::If"]
    assert gate.scope == "dg" and gate.source == "decision_gate.py:11"
    assert gate.code == "if x.sum() > 0:"
    # a branch's op the trace kept is the same node, not removed + added
    traced_neg = any(data["kind"] == "aten::neg" for _, data in d.right.nodes(data=True))
    assert ("aten::neg" in removed) is not traced_neg
    for e in d.removed:
        if e.kind == "aten::neg":
            assert e.inside == gate.left   # listed inside the removed if
    assert d.same >= 6   # inputs, linear, add, tanh, the tuple


@pytest.mark.parametrize("mode", ["script", "trace"])
def test_one_activation_changed_in_every_block_reports_exactly_those_ops(mode):
    d = match(V1, V2, mode, mode)
    assert d.added == [] and d.removed == []
    assert [(c.scope, c.kind, c.right_kind, c.label) for c in d.changed] == [
        (f"blocks.{i}", "aten::relu", "aten::gelu", "relu → gelu") for i in range(4)]
    assert all(c.source == "blocks_v2.py:16" for c in d.changed)
    assert d.same == 19


def test_a_model_against_itself_is_equal_and_exits_0():
    result = diff(V1)
    assert result.exit_code == 0, result.output + result.stderr
    assert "no difference" in result.stdout
    result = diff(CELL, CELL, "--left-mode", "trace", "--right-mode", "trace")
    assert result.exit_code == 0, result.stderr


# -- each change class ----------------------------------------------------------------------
def test_added_and_removed_node(tmp_path):
    a, b = pair_of_files(tmp_path, """
        def forward(self, x):
            y = torch.tanh(x)
            return y + 1
        """, """
        def forward(self, x):
            y = torch.tanh(x)
            y = y * 2
            return y + 1
        """)
    d = match(a, b)
    assert [(e.status, e.kind, e.source) for e in d.added] == [("added", "aten::mul", "b.py:9")]
    assert d.removed == [] and d.changed == []
    back = match(b, a)
    assert [(e.status, e.kind, e.left) for e in back.removed] == [
        ("removed", "aten::mul", d.added[0].right)]
    assert back.added == [] and back.changed == []


def test_changed_kind(tmp_path):
    a, b = pair_of_files(tmp_path, """
        def forward(self, x):
            return torch.sigmoid(torch.relu(x) + 1)
        """, """
        def forward(self, x):
            return torch.sigmoid(torch.tanh(x) + 1)
        """)
    d = match(a, b)
    [c] = d.changed
    assert (c.kind, c.right_kind, c.label, c.what) == (
        "aten::relu", "aten::tanh", "relu → tanh", ("aten::relu → aten::tanh",))
    assert d.added == d.removed == []


def test_changed_constant(tmp_path):
    a, b = pair_of_files(tmp_path, """
        def forward(self, x):
            return torch.softmax(x * 3, dim=1)
        """, """
        def forward(self, x):
            return torch.softmax(x * 3, dim=0)
        """)
    d = match(a, b)
    [c] = d.changed
    assert c.kind == c.right_kind == "aten::softmax"
    assert c.what == ("dim: 1 → 0",)
    assert d.added == d.removed == []


def test_changed_shape(tmp_path):
    a, b = pair_of_files(tmp_path, """
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            return torch.relu(self.fc(x))
        """, """
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 6)
        def forward(self, x):
            return torch.relu(self.fc(x))
        """)
    d = match(a, b)
    by_kind = {c.kind: c for c in d.changed}
    assert set(by_kind) == {"aten::linear", "aten::relu"}
    assert "weight: 4×4 float32 → 6×4 float32" in by_kind["aten::linear"].what
    assert "shape: 3×4 float32 → 3×6 float32" in by_kind["aten::linear"].what
    assert by_kind["aten::relu"].what == ("shape: 3×4 float32 → 3×6 float32",)
    assert d.added == d.removed == []


# -- containers -----------------------------------------------------------------------------
def test_an_added_module_call_is_one_entry_with_its_contents(tmp_path):
    header = """
        class Extra(nn.Module):
            def forward(self, x):
                return torch.tanh(x) * 2
        """
    a, b = pair_of_files(tmp_path, """
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            return torch.relu(self.fc(x))
        """, """
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.extra = Extra()
        def forward(self, x):
            return torch.relu(self.extra(self.fc(x)))
        """, header)
    d = match(a, b)
    call, *inside = d.added
    assert (call.kind, call.label, call.ops, call.scope) == (
        "prim::CallMethod", "extra: Extra", 2, "")
    assert [(e.kind, e.scope, e.inside) for e in inside] == [
        ("aten::tanh", "extra", call.right), ("aten::mul", "extra", call.right)]
    assert d.removed == [] and d.changed == []
    assert d.counts()["added"] == 2     # ops; the call is their container


def test_a_removed_if_is_one_entry_with_its_branches(tmp_path):
    a, b = pair_of_files(tmp_path, """
        def forward(self, x):
            if bool(x.sum() > 0):
                x = x * 2
            else:
                x = x - 1
            return torch.relu(x)
        """, """
        def forward(self, x):
            return torch.relu(x)
        """)
    d = match(a, b)
    [gate] = [e for e in d.removed if e.kind == "prim::If"]
    inside = [e.kind for e in d.removed if e.inside == gate.left]
    assert inside == ["aten::mul", "aten::sub"]
    assert d.added == [] and d.changed == []
    text = diff(a, b).stdout
    assert "- prim::If  a.py:8  if bool(x.sum() > 0):" in text
    assert "-     aten::mul  a.py:9" in text and "-     aten::sub  a.py:11" in text


def test_union_graph_marks_every_node_and_keeps_both_sides():
    d = match(CELL, CELL, "script", "trace")
    U = union_graph(d)
    statuses = {n: data[DIFF]["status"] for n, data in U.nodes(data=True)}
    assert statuses[[e.left for e in d.removed if e.kind == "prim::If"][0]] == "removed"
    assert set(statuses.values()) <= {"same", "removed", "added", "changed"}
    assert U.number_of_nodes() == d.left.number_of_nodes() + sum(
        1 for n in d.right if n not in set(d.pairs.values()))
    for cid, info in U.graph["blocks"].items():
        assert info["parent"] is None or info["parent"] in U.graph["blocks"], cid
    for _, data in U.nodes(data=True):
        assert data["block"] in U.graph["blocks"]


# -- outputs and exit codes -----------------------------------------------------------------
def test_json_shape():
    result = diff(V1, V2, "--format", "json")
    assert result.exit_code == 1, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"left", "right", "added", "removed", "changed", "same"}
    assert data["left"]["model"] == data["right"]["model"] == "Stack"
    assert data["left"]["mode"] == "script" and data["same"] == 19
    assert data["added"] == data["removed"] == []
    assert len(data["changed"]) == 4
    first = data["changed"][0]
    assert set(first) >= {"left", "right", "kind", "right_kind", "scope", "source", "what"}
    assert (first["kind"], first["right_kind"], first["scope"]) == (
        "aten::relu", "aten::gelu", "blocks.0")
    removed = json.loads(diff(CELL, "--right-mode", "trace", "--format", "json").stdout)
    [gate] = [e for e in removed["removed"] if e["kind"] == "prim::If"]
    assert set(gate) >= {"kind", "scope", "source", "left", "right"}
    assert gate["right"] is None and gate["left"].startswith("n")


def test_text_groups_by_module_and_counts():
    result = diff(V1, V2)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("--- ") and lines[0].endswith("blocks_v1.py:Stack (script)")
    assert lines[1].startswith("+++ ")
    assert lines[2:4] == ["@@ blocks.0: Block @@", "~ aten::relu → aten::gelu  blocks_v2.py:16"]
    assert lines[-1] == "0 removed, 0 added, 4 changed, 19 same"


def test_svg_draws_the_change_and_boxes_what_did_not_change(tmp_path):
    out = tmp_path / "d.svg"
    result = diff(V1, V2, "--format", "svg", "-o", out)
    assert result.exit_code == 1, result.stderr
    svg = html.unescape(out.read_text())
    assert svg.count("relu → gelu") == 4
    assert svg.count('class="node irviz-op irviz-diff-changed"') == 4
    assert "irviz-diff-same" in svg
    # unchanged library calls stay boxes; the blocks holding a change are open
    assert "cluster_n7/call" in svg or "irviz:cluster:n7/call" in svg
    assert "irviz:box:n7/call/n3/call" in svg   # blocks.0.fc1, unchanged


def test_html_has_the_left_right_both_toggle(tmp_path):
    out = tmp_path / "d.html"
    result = diff(CELL, "--right-mode", "trace", "--format", "html", "-o", out)
    assert result.exit_code == 1, result.stderr
    page = out.read_text()
    for side in ("left", "right", "both"):
        assert f'data-action="diff-{side}"' in page
    assert "irviz-diff-removed" in page
    assert '[data-diff="left"] .irviz-diff-added' in page


@pytest.mark.parametrize("args, fragment", [
    (["nope.py:X"], "nope.py"),
    ([f"{SAMPLES / 'decision_gate.py'}"], "names 2 models"),
    ([V1, V2, "--format", "svg", "-o", "x.html"], "ends in .html but --format is svg"),
    ([CELL, "--left-mode", "trace", "--inputs", "torch.rand("], "--inputs"),
])
def test_errors_exit_2_with_a_message(args, fragment):
    result = diff(*args)
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stderr.startswith("error: "), result.stderr
    assert fragment in result.stderr, result.stderr
    assert not shows_irviz_traceback(result.stderr)


def test_real_cli_process(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "irviz", "diff", "samples/decision_gate.py:MyCell",
         "--left-mode", "script", "--right-mode", "trace"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("--- samples/decision_gate.py:MyCell (script)\n"
                                  "+++ samples/decision_gate.py:MyCell (trace)\n")
    assert "@@ dg: MyDecisionGate @@" in proc.stdout
    assert "- prim::If  decision_gate.py:11  if x.sum() > 0:" in proc.stdout
    assert not shows_irviz_traceback(proc.stderr)


def test_lint_script_vs_trace_layer_reads_the_same_matcher():
    from irviz.analyses.divergence import script_trace_divergence

    d = match(CELL, CELL, "script", "trace")
    [found] = script_trace_divergence(d.left, d.right, d)
    [gate] = [e for e in d.removed if e.kind == "prim::If"]
    assert (found["node"], found["kind"], found["why"]) == (gate.left, "prim::If", "aten::Bool")
    assert script_trace_divergence(d.left, d.right) == [found]   # it matches by itself too
