"""The checks analysis: validation folded into a badge, nothing else, and lint sees all."""
from __future__ import annotations

from pathlib import Path

import torch

from irviz import api
from irviz.analyses.validation import CHECK, PART, checks_at

MODELS = Path(__file__).resolve().parent / "models" / "checks.py"
DETECTOR = Path(__file__).resolve().parent / "corpus" / "detection_style.py"


def _line(path: Path, marker: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if marker in t)


def _view(spec: str, mode: str = "script"):
    torch.manual_seed(0)
    [view] = api.visualize(spec, mode)
    return view


def _at_line(G, kind: str, line: int) -> list[str]:
    return [n for n, d in G.nodes(data=True) if d["kind"] == kind
            and (d.get("user_source") or d.get("source") or "").split(":")[-2:-1] == [str(line)]]


def test_raise_only_branches_loops_asserts_and_helpers_are_checks():
    view = _view(f"{MODELS}:Checked")
    G = view.graph
    checks = {n: d[CHECK] for n, d in G.nodes(data=True) if CHECK in d}
    texts = " | ".join(checks.values())
    assert "x.dim() != 2 → raise ValueError: expected a matrix" in texts
    assert "x.size(1) != 4 → raise ValueError: expected 4 columns" in texts
    assert "for b in boxes → checks in a loop" in texts
    # torch._assert's body is compiled from a string: described by the user's call
    assert 'torch._assert(x.shape[0] > 0, "empty batch") → raise AssertionError: empty batch' \
        in texts
    # the helper that only validates is a check as a whole
    [call] = [c for c, info in G.graph["blocks"].items() if info.get("label") == "validate()"]
    assert G.graph["blocks"][call].get(CHECK)
    # not checks: a branch whose other side computes, an if whose value is used
    real = _at_line(G, "prim::If", _line(MODELS, "if y.sum() > -1000:"))
    used = _at_line(G, "prim::If", _line(MODELS, "scale = 2.0 if"))
    assert real and used and not any(CHECK in G.nodes[n] or PART in G.nodes[n]
                                     for n in real + used)
    # the linear and what it feeds are the model's dataflow
    assert not any(PART in d for _, d in G.nodes(data=True) if d["kind"] == "aten::linear")


def test_the_picture_folds_them_into_a_badge_on_the_next_node():
    view = _view(f"{MODELS}:Checked")
    dot = view.dot()
    assert "expected a matrix" not in dot.split("tooltip")[0]
    assert "validate()" not in dot  # no empty cluster for the validating helper
    # every check before the linear is one badge on the node after them (the linear box)
    [(anchor, texts)] = [(a, t) for a, t in checks_at(view.graph).items() if len(t) == 4]
    assert view.plan.check_badges[view.plan.representative[anchor]]
    assert "✓ 4 checks" in dot
    # --show-checks draws them again; the graph itself never changed
    shown = view.dot(show_checks=True)
    assert "validate()" in shown and "✓" not in shown
    assert sum(1 for _, d in view.graph.nodes(data=True) if d["kind"] == "prim::RaiseException") >= 5


def test_the_detector_keeps_its_stages_and_drops_its_validation():
    view = _view(f"{DETECTOR}:make_detector()")
    G = view.graph
    rank = _at_line(G, "prim::If", _line(DETECTOR, "if images.dim() != 4:"))
    pad = _at_line(G, "prim::If", _line(DETECTOR, "if images.shape[-1] % 16 != 0:"))
    training = _at_line(G, "prim::If", _line(DETECTOR, "if self.training:"))
    assert rank and CHECK in G.nodes[rank[0]] and CHECK in G.nodes[training[0]]
    assert pad and CHECK not in G.nodes[pad[0]]  # the padding computes: drawn
    drawn = view.dot()
    for stage in ("backbone: Backbone", "fpn: FeaturePyramid", "head: AnchorHead"):
        assert stage in drawn
    frames = [line for line in drawn.splitlines() if "subgraph" in line or "label=<<B>if " in line]
    assert not any("images.dim() != 4" in line for line in frames)  # no frame, no if node
    assert "✓ 2 checks" in drawn and "✓ 1 check" in drawn


def test_traced_models_have_no_checks_to_fold():
    view = _view(f"{MODELS}:Checked", "trace")
    assert not checks_at(view.graph)
