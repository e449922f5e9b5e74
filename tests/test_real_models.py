"""Regressions from real models (the torchvision corpus, benchmarks/torchvision_corpus.py):
each defect found there, on the smallest model of our own with the same shape.

The pictures are checked as a user sees them: shapes against what a forward hook records,
warnings against the file and line that raised them, the layout in the SVG dot drew.
"""
from __future__ import annotations

import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

from irviz import api
from irviz.ir.model import format_shape, returned_shape, tensor_info

from conftest import one

MODELS = Path(__file__).parent / "models"
REAL = str(MODELS / "real_shapes.py")
SVG = "{http://www.w3.org/2000/svg}"


def calls_by_module(G) -> dict[str, str]:
    """Module path -> its ``forward`` call container, for modules called once."""
    found: dict[str, list[str]] = {}
    for cid, info in G.graph["blocks"].items():
        if info["kind"] == "method" and info.get("module") and info.get("method") == "forward":
            found.setdefault(info["module"], []).append(cid)
    return {m: cids[0] for m, cids in found.items() if len(cids) == 1}


def hook_shapes(model: torch.nn.Module, inputs) -> dict[str, str]:
    """Module path -> the shape of the tensor its forward returned (modules run once)."""
    paths = {id(m): name for name, m in model.named_modules() if name}
    seen: dict[str, list[str]] = {}

    def hook(module, _args, out):
        if id(module) in paths and isinstance(out, torch.Tensor):
            seen.setdefault(paths[id(module)], []).append(format_shape(tensor_info(out)))

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        with torch.no_grad():
            inputs.call(model)
    finally:
        handle.remove()
    return {m: shapes[0] for m, shapes in seen.items() if len(shapes) == 1}


def cluster_tops(svg: bytes) -> dict[str, float]:
    """Cluster id (the container's id) -> the y of its top edge (SVG: larger is lower)."""
    tops = {}
    for g in ET.fromstring(svg).iter(f"{SVG}g"):
        gid = g.get("id") or ""
        if not gid.startswith("irviz:cluster:"):
            continue
        for el in g.iter():
            if el.tag in (f"{SVG}path", f"{SVG}polygon"):
                ys = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?",
                                                   el.get("d") or el.get("points"))][1::2]
                tops[gid.removeprefix("irviz:cluster:")] = min(ys)
                break
    return tops


def node_top(svg: bytes, drawn_id: str) -> float:
    for g in ET.fromstring(svg).iter(f"{SVG}g"):
        if g.get("id") == f"irviz:{drawn_id}":
            for el in g.iter():
                if el.tag in (f"{SVG}path", f"{SVG}polygon"):
                    return min(float(v) for v in re.findall(
                        r"-?\d+(?:\.\d+)?", el.get("d") or el.get("points"))[1::2])
    raise AssertionError(f"{drawn_id} not drawn")


# -- shapes -----------------------------------------------------------------------------

def test_an_untaken_library_branch_borrows_no_other_modules_shape():
    """nn.ReLU(inplace=True) runs relu_, its `else: relu` never runs; the only relu that
    runs is out_act's [1, 10]. Matched by op and line alone, the untaken relu got [1, 10]."""
    G = one(f"{REAL}:TwoReLUs", "script").graph
    by_scope = {}
    for _, d in G.nodes(data=True):
        if d["kind"] in ("aten::relu", "aten::relu_"):
            by_scope.setdefault((d.get("scope"), d["kind"]), []).append(d["outputs"][0]["shape"])
    assert by_scope[("act", "aten::relu")] == [None]            # never ran: no shape
    assert by_scope[("act", "aten::relu_")] == [[1, 8, 16, 16]]
    assert by_scope[("out_act", "aten::relu")] == [[1, 10]]
    calls = calls_by_module(G)
    assert returned_shape(G, calls["act"]) == "1×8×16×16 float32"
    assert returned_shape(G, calls["out_act"]) == "1×10 float32"


def test_each_call_of_a_reused_module_has_its_own_shape():
    G = one(f"{REAL}:ReusedReLU", "script").graph
    relu_calls = [cid for cid, info in G.graph["blocks"].items()
                  if info.get("module") == "relu" and info.get("method") == "forward"]
    assert [returned_shape(G, cid) for cid in relu_calls] == [
        "1×4×6×6 float32", "1×8×4×4 float32"]


SHAPE_TRUTH = ["TwoReLUs", "Stages", "TrainingBranch", "QuantizedConv", "Norms"]


@pytest.mark.parametrize("name", SHAPE_TRUTH)
def test_every_drawn_module_shape_is_the_forward_hooks_and_the_traces(name):
    """Shape truth: what a scripted picture says a module call returns is what a forward
    hook records for it (or ``?``), and what the traced picture says."""
    [script] = api.visualize(f"{REAL}:{name}", "script")
    [trace] = api.visualize(f"{REAL}:{name}", "trace")
    truth = hook_shapes(script.capture.target.obj, script.capture.inputs)
    assert truth, "the model has modules returning tensors"
    drawn = {}
    for view in (script, trace):
        G = view.graph
        drawn[view.capture.mode] = {m: returned_shape(G, cid)
                                    for m, cid in calls_by_module(G).items()}
    for module, shape in truth.items():
        s, t = drawn["script"].get(module), drawn["trace"].get(module)
        assert s in (shape, "?", None), (module, s, shape)
        assert t in (shape, "?", None), (module, t, shape)
    # and the scripted picture is not right by saying nothing: every module has its shape
    assert {m: drawn["script"].get(m) for m in truth} == truth


# -- warnings ---------------------------------------------------------------------------

def test_a_warning_in_an_installed_library_stays_on_the_librarys_line(tmp_path, monkeypatch):
    """A model from a package outside torch (torchvision, transformers): torch's warning
    belongs on the package's line, not on the user's call line or the CLI's frames."""
    package = tmp_path / "torchlike_blocks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "gate.py").write_text(textwrap.dedent('''\
        import torch


        class Gate(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x * 2
                return x
        '''))
    user = tmp_path / "mine.py"
    user.write_text(textwrap.dedent('''\
        import torch
        from torchlike_blocks.gate import Gate


        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gate = Gate()

            def forward(self, x):
                return self.gate(x) + 1


        example_inputs = {"Wrapped": lambda: (torch.rand(2, 3),)}
        '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    [view] = api.visualize(f"{user}:Wrapped", "trace")
    [warning] = [w for w in view.capture.warnings if w.category == "TracerWarning"]
    assert Path(warning.filename) == package / "gate.py" and warning.lineno == 6
    assert warning.in_user_code and warning.origin is None
    assert any("trace froze" in n or "gate.py:6" in n for n in view.notes), view.notes


def test_a_warning_the_compiled_code_raised_keeps_its_source_line():
    """TorchScript's interpreter raises it with the aten::warn's source line, while the
    only Python frames running are irviz's: the line must not be moved to a caller."""
    view = one(f"{REAL}:WarnsWhenCompiled", "script")
    [warning] = [w for w in view.capture.warnings if "always warns" in w.message]
    source = MODELS / "real_shapes.py"
    line = next(i for i, text in enumerate(source.read_text().splitlines(), 1)
                if 'warnings.warn("Warner' in text)
    assert (Path(warning.filename), warning.lineno) == (source, line)


def test_a_warning_raised_through_the_standard_library_lands_in_the_model():
    """torch's checker walks the model's source with ``ast``: the warning must not be put
    on ``ast.py`` (Inception v3 did); it goes to the model's code (its forward)."""
    view = one(f"{REAL}:AnnotatedInit", "script", inputs="torch.rand(2)")
    [warning] = [w for w in view.capture.warnings if "annotations" in w.message]
    assert Path(warning.filename) == MODELS / "real_shapes.py", warning


# -- quantized modules --------------------------------------------------------------------

def test_quantized_modules_are_drawn_as_one_box_like_torch_nn():
    """torch.ao.nn.quantized / intrinsic modules are torch's own: one box each, scripted
    as traced (scripted, their forwards hold padding checks and loops: 400-1000 nodes per
    torchvision quantized model before)."""
    script = one(f"{REAL}:QuantizedConv", "script")
    trace = one(f"{REAL}:QuantizedConv", "trace")
    drawn, traced = script.drawing(), trace.drawing()
    dot = drawn.text
    assert "conv: ConvReLU2d" in dot and "conv2: Conv2d" in dot
    assert drawn.drawn_nodes <= traced.drawn_nodes + 2, (drawn.drawn_nodes, traced.drawn_nodes)
    assert "relu: Identity" not in dot   # fused away: a call with no node is no stray box


# -- layout -------------------------------------------------------------------------------

def test_a_stage_is_drawn_below_the_stage_it_follows():
    """The head's first op reads only the input; left alone, dot puts it on the top rank
    and the head's cluster beside the encoder's (Faster R-CNN: roi_heads beside backbone)."""
    view = one(f"{REAL}:Stages", "script")
    calls = calls_by_module(view.graph)
    tops = cluster_tops(view.svg(engine="dot"))
    assert tops[calls["head"]] > tops[calls["encoder"]] + 10, tops


def test_an_attribute_only_if_stays_below_what_ran_before_it():
    """`if self.training: raise ...` reads an attribute and nothing flows into the raise;
    unanchored, they sit on the top rank and the frame stretches over the whole picture."""
    view = one(f"{REAL}:EvalOnly", "script")
    G = view.graph
    [if_node] = [n for n, d in G.nodes(data=True) if d["kind"] == "prim::If"]
    svg = view.svg(engine="dot", show_checks=True)  # by default the check is folded
    frame_top = cluster_tops(svg)[f"ctl:{if_node}"]
    box_c = f"box:{calls_by_module(G)['c']}"
    assert frame_top > node_top(svg, box_c), "the if frame starts above the last Linear"


# -- what ran -----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["trace", "script"])
def test_the_capture_knows_which_lines_of_the_model_ran(mode):
    """The evidence lint asks of a finding: the training branch of an eval model never
    ran (traced: the trace's own run; scripted: the one eager run), the ops before it did.
    (A picture's trace records none: its ``executed_lines`` is None, unknown.)"""
    [target] = api.load(f"{REAL}:TrainingBranch").targets
    target.obj.eval()
    cap = api.capture(target, mode, (torch.rand(2, 8),))
    source = MODELS / "real_shapes.py"
    lines = source.read_text().splitlines()
    start = next(i for i, text in enumerate(lines, 1) if text.startswith("class TrainingBranch"))
    number: dict[str, int] = {}
    for i, text in enumerate(lines[start:], start + 1):   # TrainingBranch's own lines
        number.setdefault(text.strip(), i)
    ran = {line for path, line in cap.executed_lines if Path(path) == source}
    assert number["x = torch.relu(self.c(x))"] in ran
    assert number["if self.training:"] in ran
    assert number["x = x * 0.5"] not in ran


def test_a_model_that_did_not_run_has_no_line_evidence():
    view = one("my_cell.py:MyCell", "script")
    assert view.capture.executed_lines is not None   # the sample has example_inputs
    [bare] = api.visualize(torch.jit.script(torch.nn.Linear(2, 2)), "script")
    assert bare.capture.executed_lines is None       # already scripted: no Python ran


def test_an_installed_library_is_model_code_even_inside_a_venv():
    """In a venv, Python's ``platstdlib`` is the venv's ``lib/python3.X``, which also holds
    site-packages: transformers' files must still count as model code (lines recorded,
    warnings kept on them), the standard library's not."""
    import ast

    import transformers

    from irviz.frontends.eager_run import LineRecorder
    from irviz.paths import is_stdlib_file

    assert not is_stdlib_file(transformers.__file__) and is_stdlib_file(ast.__file__)
    assert LineRecorder.watches(transformers.__file__) and not LineRecorder.watches(ast.__file__)
