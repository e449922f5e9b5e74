"""What the picture says about a trace's verdicts: every call whose branch the trace froze
is marked, torch's overload names stay out of sight, lint findings carry their evidence
and their severity's colour, and a BatchNorm traced in training mode is named.

Real ``torch.jit.trace`` and real Graphviz (``dot``): the SVG is read as a user's browser
gets it (its text, its tooltips, its colours).
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import one, requires_dot
from irviz.analyses.traced_control_flow import is_batchnorm_check
from irviz.render.html import VIEWER_DIR, node_details

MODELS = Path(__file__).resolve().parent / "models"
LOOP_GATE = f"{MODELS / 'loop_gate.py'}:Model"

SVG = "{http://www.w3.org/2000/svg}"
XLINK_TITLE = "{http://www.w3.org/1999/xlink}title"
RED = "#c62828"


def _svg_items(svg: bytes) -> dict[str, dict]:
    """SVG id (without ``irviz:``) -> its drawn text (one string), tooltip and the
    stroke colours of its outline, as a browser shows them."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG}g"):
        gid = g.get("id") or ""
        if not gid.startswith("irviz:"):
            continue
        link = next(g.iter(f"{SVG}a"), None)
        out[gid[len("irviz:"):]] = {
            "text": " ".join(t.text or "" for t in g.iter(f"{SVG}text")),
            "tooltip": link.get(XLINK_TITLE) if link is not None else None,
            "strokes": {s.get("stroke") for s in g.iter() if s.tag in (
                f"{SVG}path", f"{SVG}polygon") and s.get("stroke")},
            "fills": {t.get("fill") for t in g.iter(f"{SVG}text")},
        }
    return out


def _gate_calls(view) -> list[str]:
    blocks = view.graph.graph["blocks"]
    calls = [cid for cid, info in blocks.items()
             if info["kind"] == "method" and info.get("module") == "gate"]
    return sorted(calls, key=lambda c: blocks[c]["at"])


# -- 1. every traced call whose branch froze is marked ---------------------------------
@pytest.fixture(scope="module")
def loop_gate():
    """tests/models/loop_gate.py traced: ``gate`` called three times in a Python loop, the
    third call on a negative input (it takes the other branch of line 8)."""
    return one(LOOP_GATE, "trace")


def test_every_call_of_a_frozen_module_carries_the_mark(loop_gate):
    blocks = loop_gate.graph.graph["blocks"]
    calls = _gate_calls(loop_gate)
    assert len(calls) == 3
    # the third call took the other branch: its ops are another line's
    kinds = [{d["kind"] for _, d in loop_gate.graph.nodes(data=True)
              if d["block"] == c and not d["hidden"]} for c in calls]
    assert kinds == [{"aten::mul", "aten::add"}] * 2 + [{"aten::mul", "aten::neg"}]
    for cid in calls:
        assert blocks[cid]["irviz.frozen"] == "⚠ trace froze line 8: if x.sum() > 0:"


@requires_dot
def test_the_mark_is_on_every_frame_in_the_svg(loop_gate):
    items = _svg_items(loop_gate.svg(engine="dot"))
    for cid in _gate_calls(loop_gate):
        frame = items[f"cluster:{cid}"]
        assert "⚠ trace froze line 8: if x.sum() > 0:" in frame["text"], frame
        assert RED in frame["strokes"], frame           # the red border
        assert "trace froze line 8" in frame["tooltip"]
        assert "the branch this call's input took" in frame["tooltip"]


@requires_dot
def test_the_mark_is_on_every_box_when_the_calls_are_collapsed(loop_gate):
    items = _svg_items(loop_gate.svg(engine="dot", depth=0))
    for cid in _gate_calls(loop_gate):
        box = items[f"box:{cid}"]
        assert "⚠ trace froze line 8: if x.sum() > 0:" in box["text"], box
        assert "trace froze line 8" in box["tooltip"]
        assert "(in gate)" not in box["text"]            # the box is that call


@requires_dot
def test_a_box_names_the_nested_call_that_froze(tmp_path):
    """A call drawn as a box whose frozen ``if`` is in a call inside it says which."""
    source = (MODELS / "loop_gate.py").read_text(encoding="utf-8")
    path = tmp_path / "nested_gate.py"
    path.write_text(source.replace('example_inputs = {', '''class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Model()

    def forward(self, xs):
        return self.inner(xs) * 2


example_inputs = {
    "Outer": lambda: ((torch.ones(2, 3), -torch.ones(2, 3), torch.ones(2, 3)),),'''),
                    encoding="utf-8")
    view = one(f"{path}:Outer", "trace")
    items = _svg_items(view.svg(engine="dot", depth=0))
    box = next(v for k, v in items.items() if k.startswith("box:") and "inner: Model" in v["text"])
    assert "⚠ trace froze line 8: if x.sum() > 0: (in inner.gate)" in box["text"], box
    assert "(in inner.gate)" in box["tooltip"]


# -- 2. torch's overload names are never shown -------------------------------------------
def _overload_names(text: str) -> list[str]:
    return re.findall(r"forward\d+|forward__\d+", text)


@requires_dot
def test_the_calls_of_a_traced_module_say_which_call_they_are(loop_gate):
    blocks = loop_gate.graph.graph["blocks"]
    calls = _gate_calls(loop_gate)
    # the trace names them forward, forward1, forward2: the picture never does
    assert [blocks[c]["method"] for c in calls] == ["forward", "forward1", "forward2"]
    svg = loop_gate.svg(engine="dot")
    assert _overload_names(svg.decode("utf-8")) == []
    items = _svg_items(svg)
    for k, cid in enumerate(calls, 1):
        frame = items[f"cluster:{cid}"]
        assert f"call {k} of 3" in frame["text"], frame
        assert f"call {k} of 3 of gate.forward()" in frame["tooltip"]
    assert _overload_names(loop_gate.dot(depth=0)) == []
    assert "call 3 of 3 of gate.forward()" in loop_gate.dot(depth=0)   # a box's tooltip


def test_the_viewer_details_name_forward_and_the_call(loop_gate):
    loop_gate.dot()
    details = node_details(loop_gate)
    assert _overload_names(json.dumps(details)) == []
    for k, cid in enumerate(_gate_calls(loop_gate), 1):
        for key in (f"cluster:{cid}", f"box:{cid}"):
            entry = details[key]
            assert entry["method"] == "forward" and entry["call"] == f"{k} of 3", entry
            assert entry["frozen"] == "⚠ trace froze line 8: if x.sum() > 0:"


@requires_dot
def test_a_run_of_calls_of_one_traced_module_is_rolled_and_numbered():
    """Twelve calls of ``gate`` in a traced loop: forward, forward1 ... forward11 are one
    method, so over the budget the run rolls up, named by its calls."""
    view = one(LOOP_GATE, "trace", inputs="(tuple(torch.ones(2, 3) for _ in range(12)),)")
    svg = view.svg(engine="dot", max_nodes=12)
    assert _overload_names(svg.decode("utf-8")) == []
    roll = next(v for k, v in _svg_items(svg).items() if k.startswith("roll:"))
    assert "gate calls 2–11 of 12" in roll["text"], roll
    assert "(same as call 1)" in roll["text"]
    assert "⚠ trace froze line 8: if x.sum() > 0:" in roll["text"]
    assert "calls 2–11 of 12 of gate.forward()" in roll["tooltip"]
    assert "between call 1 and call 12" in roll["tooltip"]
    details = node_details(view)
    rid = next(k for k in details if k.startswith("roll:"))
    assert details[rid]["label"] == "gate calls 2–11 of 12"
    assert details[rid]["call"] == "2–11 of 12"
    assert _overload_names(json.dumps(details)) == []


def test_a_forked_overload_is_named_as_the_user_calls_it():
    """``torch.jit.fork(self.cell_f, x)`` on an ``nn.LSTM``: torch runs its overload
    ``forward__0``; the fork's label and details say ``models.0.cell_f``."""
    view = one("lstm_ensemble.py:LSTMEnsemble")
    dot = view.dot()
    assert "→ models.0.cell_f<" in dot and _overload_names(dot) == []
    assert _overload_names(json.dumps(node_details(view))) == []


def test_a_scripted_method_named_forward1_keeps_its_name(tmp_path):
    """In a scripted graph ``forward1`` is the user's own method, not torch's name."""
    path = tmp_path / "own_method.py"
    path.write_text('''import torch


class Two(torch.nn.Module):
    def forward1(self, x):
        return x * 2

    def forward(self, x):
        return x + 1


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.two = Two()

    def forward(self, x):
        return self.two.forward1(x) + self.two(x) + self.two(x)
''', encoding="utf-8")
    view = one(f"{path}:M", "script")
    dot = view.dot()
    assert ".forward1()" in dot
    assert "call 1 of 2" in dot and "call 2 of 2" in dot     # the two calls of forward


# -- 3. findings carry their evidence; info findings and notes are not red -----------------
INFO_COLOR = "#3949ab"      # style.TEXT_COLOR["info"]
INFO_BORDER = "#5c6bc0"     # style.FINDING_INFO
NOTE_COLOR = "#455a64"      # style.TEXT_COLOR["note"]
COUNTEREXAMPLE = "x negated: the trace returns another value than the model (max |diff| 1.2)"


def _finding(path: str, line: int, code: str, severity: str, evidence=..., **more) -> dict:
    """A finding as ``Diagnostic.to_dict()`` gives it; ``evidence=...`` leaves the key out
    (a lint from before the evidence layer)."""
    out = {"code": code, "name": f"rule-{code.lower()}", "message": f"what {code} says",
           "path": path, "line": line, "column": 1, "severity": severity, "layers": [],
           "hint": None, "related": [], **more}
    if evidence is not ...:
        out["evidence"] = evidence
    return out


@pytest.fixture(scope="module")
def gate_findings():
    """The scripted MyCell and four findings: a counterexample (warning) on the gate's
    ``if``, an info finding held on two variants on line 24, an info finding with no
    evidence key on no drawn line, and a certain error on no drawn line."""
    view = one("decision_gate.py:MyCell", "script")
    path = view.graph.graph["source_file"]
    findings = [
        _finding(path, 11, "IRV101", "warning", {
            "verdict": "counterexample", "summary": COUNTEREXAMPLE, "variant": "x negated",
            "output": "output 0", "difference": "max |diff| 1.2", "compared": "values",
            "held_on": [], "reason": None}),
        _finding(path, 24, "IRV203", "info", {
            "verdict": "held", "summary": "x negated, batch 2", "variant": None,
            "output": None, "difference": None, "compared": None,
            "held_on": ["x negated", "batch 2"], "reason": None}),
        _finding(path, 999, "IRV301", "info"),                  # no "evidence" key
        _finding(path, 998, "IRV302", "error", {
            "verdict": "certain", "summary": "torch.jit.trace refuses the model",
            "reason": "the trace raised"}),
    ]
    return view, findings


def _node_of_line(view, line: int) -> str:
    return next(n for n, d in view.graph.nodes(data=True)
                if (d.get("user_source") or "").split(":")[-2:-1] == [str(line)]
                and view.plan.representative[n] == n)


@requires_dot
def test_a_findings_evidence_is_in_its_nodes_tooltip(gate_findings):
    view, findings = gate_findings
    items = _svg_items(view.svg(engine="dot", findings=findings))
    warned = items[_node_of_line(view, 11)]
    assert "IRV101 rule-irv101 (warning): what IRV101 says" in warned["tooltip"]
    assert f"counterexample: {COUNTEREXAMPLE}" in warned["tooltip"]
    assert "⚠ IRV101" in warned["text"] and RED in warned["strokes"] and RED in warned["fills"]
    noted = items[_node_of_line(view, 24)]
    assert "IRV203 rule-irv203 (info): what IRV203 says" in noted["tooltip"]
    assert "held on: x negated, batch 2" in noted["tooltip"]
    assert "ℹ IRV203" in noted["text"]
    assert INFO_BORDER in noted["strokes"] and INFO_COLOR in noted["fills"]
    assert RED not in noted["strokes"] | noted["fills"], noted      # info is never red


def _title_rows(svg: bytes) -> list[tuple[str, str | None]]:
    """(text, fill colour of its first piece) of each line of the title block: the texts
    of the graph's own label (``<g id="a_graph0"><a>``), grouped by line."""
    root = ET.fromstring(svg)
    title = next(g for g in root.iter(f"{SVG}g") if g.get("id") == "a_graph0")
    rows: dict[str, list] = {}
    for t in title.iter(f"{SVG}text"):
        if t.text and t.text.strip():
            rows.setdefault(t.get("y"), []).append((t.text, t.get("fill")))
    return [(" ".join(x for x, _ in parts), parts[0][1]) for parts in rows.values()]


@requires_dot
def test_title_notes_and_unplaced_findings_take_their_severitys_colour(gate_findings):
    view, findings = gate_findings
    svg = view.svg(engine="dot", findings=findings)
    rows = _title_rows(svg)
    colour = {text.split(":")[0]: fill for text, fill in rows}
    assert colour["ℹ IRV301 decision_gate.py"] == INFO_COLOR
    assert colour["⚠ IRV302 decision_gate.py"] == RED
    text = " ".join(t for t, _ in rows)
    assert "IRV302 decision_gate.py:998: what IRV302 says (certain: torch.jit.trace " in text
    # the legend says what the two badges mean, only when there are findings
    assert "⚠ lint error / warning" in text and "ℹ lint note (info)" in text
    assert "lint note (info)" not in " ".join(t for t, _ in _title_rows(view.svg(engine="dot")))


def test_the_viewer_details_carry_the_evidence(gate_findings):
    view, findings = gate_findings
    view.dot(findings=findings)
    details = node_details(view, findings=findings)
    [warned] = details[_node_of_line(view, 11)]["findings"]
    assert warned["severity"] == "warning" and warned["verdict"] == "counterexample"
    assert warned["evidence"] == f"counterexample: {COUNTEREXAMPLE}"
    [noted] = details[_node_of_line(view, 24)]["findings"]
    assert noted["severity"] == "info" and noted["evidence"] == "held on: x negated, batch 2"
    # a finding whose evidence is None, or missing, has none to show
    bare = [dict(findings[0], evidence=None), {k: v for k, v in findings[1].items()
                                               if k != "evidence"}]
    details = node_details(view, findings=bare)
    assert details[_node_of_line(view, 11)]["findings"][0]["evidence"] is None
    assert details[_node_of_line(view, 24)]["findings"][0]["evidence"] is None
    assert "irviz-finding-info" in (VIEWER_DIR / "viewer.js").read_text(encoding="utf-8")


@requires_dot
def test_findings_without_evidence_draw_as_before(gate_findings):
    view, findings = gate_findings
    bare = [{k: v for k, v in f.items() if k != "evidence"} for f in findings]
    items = _svg_items(view.svg(engine="dot", findings=bare))
    warned = items[_node_of_line(view, 11)]
    assert RED in warned["strokes"] and "counterexample" not in warned["tooltip"]


@requires_dot
def test_an_informational_note_under_the_title_is_not_red(tmp_path):
    """``the dict output is traced as its tensors`` tells how to read the picture: the note
    colour; a TracerWarning stays red."""
    path = tmp_path / "dict_out.py"
    path.write_text('''import torch


class Net(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return {"y": x + 1, "z": x - 1}


example_inputs = {"Net": lambda: (torch.ones(2, 3),)}
''', encoding="utf-8")
    view = one(f"{path}:Net", "trace")
    rows = _title_rows(view.svg(engine="dot"))
    dict_note = next(fill for text, fill in rows if "output is traced as its tensors" in text)
    warning = next(fill for text, fill in rows if text.startswith("⚠ TracerWarning"))
    assert dict_note == NOTE_COLOR and warning == RED


# -- 4. a BatchNorm traced in training mode is named, with what to do ---------------------
BATCHNORM = MODELS / "batchnorm_training.py"
EVAL_HINT = "call .eval() before tracing"


@requires_dot
def test_a_batchnorm_in_training_mode_is_named_with_the_fix():
    """``Sequential(Conv2d, BatchNorm2d)`` not put in eval mode, traced: torch's warning
    comes from its batch-size check, put on the ``Sequential``'s ``forward``; the note
    names the BatchNorm and says to call ``.eval()``."""
    view = one(f"{BATCHNORM}:net", "trace")
    [warning] = [w for w in view.capture.warnings if w.category == "TracerWarning"]
    assert warning.origin and warning.origin.startswith("nn/functional.py")   # torch's
    notes = view.notes
    assert notes == [f"⚠ 1: BatchNorm2d is in training mode: {EVAL_HINT} (the trace "
                     "normalises by each batch's statistics)"], notes
    assert not any("container.py" in n for n in notes)   # not the line torch blamed
    svg = view.svg(engine="dot")
    rows = _title_rows(svg)
    assert (notes[0], RED) in rows, rows
    blocks = view.graph.graph["blocks"]
    [bn] = [c for c, i in blocks.items() if i.get("module") == "1"]
    assert not any(i.get("irviz.frozen") for i in blocks.values())  # no frozen `if` of its own
    box = _svg_items(svg)[f"box:{bn}"]
    assert f"⚠ training mode: {EVAL_HINT}" in box["text"], box
    assert "normalises by each batch's statistics" in box["tooltip"]


def test_every_batchnorm_in_training_mode_is_counted():
    view = one(f"{BATCHNORM}:Net", "trace")
    [note] = [n for n in view.notes if "BatchNorm" in n]
    assert note.startswith("⚠ bn: BatchNorm2d and 1 more BatchNorm are in training mode: "
                           f"{EVAL_HINT} (")
    marked = {i["module"] for i in view.graph.graph["blocks"].values()
              if i.get("irviz.training")}
    assert marked == {"bn", "head.1"}


@pytest.mark.parametrize("name", ["group_norm", "standardized", "untracked"])
def test_a_norm_that_uses_batch_statistics_in_either_mode_has_no_training_note(name):
    """torch's batch-size check warns for GroupNorm and for a ``batch_norm`` with no
    running statistics too; those compute the same in eval mode, so no note or mark says
    a BatchNorm ran in training mode."""
    view = one(f"{MODELS / 'batch_statistics_free_norms.py'}:{name}", "trace")
    assert [w for w in view.capture.warnings if is_batchnorm_check(w)]   # the same warning
    assert not [n for n in view.notes if "training mode" in n], view.notes
    assert not any(i.get("irviz.training") for i in view.graph.graph["blocks"].values())
    assert EVAL_HINT not in view.dot()


def test_a_batchnorm_in_eval_mode_has_no_note():
    view = one(f"{BATCHNORM}:net_eval", "trace")
    assert not [w for w in view.capture.warnings if w.category == "TracerWarning"]
    assert view.notes == []
    assert EVAL_HINT not in view.dot()
