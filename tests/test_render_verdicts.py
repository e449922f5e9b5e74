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
from irviz.render.html import node_details

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
