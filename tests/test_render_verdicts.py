"""What the picture says about a trace's verdicts: every call whose branch the trace froze
is marked, torch's overload names stay out of sight, lint findings carry their evidence
and their severity's colour, and a BatchNorm traced in training mode is named.

Real ``torch.jit.trace`` and real Graphviz (``dot``): the SVG is read as a user's browser
gets it (its text, its tooltips, its colours).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import one, requires_dot

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
