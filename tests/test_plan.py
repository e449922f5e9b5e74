"""plan_view on small real graphs: what is drawn, decided apart from the DOT that draws it."""
from __future__ import annotations

import copy
import dataclasses
import re

import pytest

from conftest import ROOT, one
from irviz.errors import UsageError
from irviz.render.dot import build_dot
from irviz.render.plan import DrawPlan, RenderOptions, is_library_call, plan_view

MODELS = ROOT / "tests" / "models"


def _drawn_ids(dot: str) -> list[str]:
    """Node statements of the DOT, in order, without ghosts and empty-container words."""
    ids = re.findall(r'^\s*"([^"]+)" \[', dot, flags=re.M)
    return [i for i in ids if not i.startswith("ghost:") and not i.endswith("/empty")]


def _net():
    return one(f"{MODELS / 'nested_pages.py'}:Net")


def test_the_plan_is_what_the_dot_draws():
    view = one("decision_gate.py:MyCell")
    G = view.graph
    options = RenderOptions()
    plan = plan_view(G, options)
    result = build_dot(G, options)
    assert result.plan == plan and result.drawn_nodes == plan.drawn_count
    drawn = {r for r in plan.representative.values() if r is not None}
    assert set(_drawn_ids(result.text)) == drawn and len(drawn) == plan.drawn_count
    # MyCell's nn.Linear is a library box; constants are folded (drawn by nothing)
    [box] = plan.boxes
    assert is_library_call(G.graph["blocks"][box]) and plan.collapsed[box] == box
    assert all(plan.representative[n] == f"box:{box}" for n in plan.members[f"box:{box}"])
    assert any(r is None for r in plan.representative.values())
    assert not plan.notes and not plan.rolls and not plan.badges


def test_plan_is_pure_and_frozen():
    G = _net().graph
    before = copy.deepcopy(dict(G.nodes(data=True))), copy.deepcopy(G.graph["blocks"])
    first, second = plan_view(G, RenderOptions(depth=1)), plan_view(G, RenderOptions(depth=1))
    assert first == second
    assert (dict(G.nodes(data=True)), G.graph["blocks"]) == before  # the graph is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.drawn_count = 0
    with pytest.raises(TypeError):
        first.representative["in0"] = None
    # decisions, no DOT: no field is text
    assert not any(isinstance(getattr(first, f.name), str) for f in dataclasses.fields(first))


def test_boxes_in_drawing_order_with_the_contents_of_each_open_container():
    view = _net()
    blocks = view.graph.graph["blocks"]
    plan = plan_view(view.graph, RenderOptions(depth=1))
    # the layers are drawn inside encoder's cluster, then the library `out`, then head's pool
    assert [blocks[c]["module"] for c in plan.boxes] == [
        "encoder.layers.0", "encoder.layers.1", "encoder.layers.2", "encoder.layers.3",
        "encoder.final", "out", "head.pool"]
    assert [i for i in _drawn_ids(view.dot(depth=1)) if i.startswith("box:")] == [
        f"box:{c}" for c in plan.boxes]
    root = plan.contents["root"]
    clusters = [item.id for item in root if item.kind == "cluster"]
    assert [blocks[c]["module"] for c in clusters] == ["encoder", "head"]
    assert all(c in plan.contents for c in clusters)   # open: their own contents
    assert not any(c in plan.contents for c in plan.boxes)


def test_budget_rolls_a_run_and_says_so():
    view = one(f"{MODELS / 'deep_stack.py'}:chain()", "trace")  # 40 identical blocks
    blocks = view.graph.graph["blocks"]
    plan = plan_view(view.graph, RenderOptions(max_nodes=30))
    [(rid, calls)] = plan.rolls.items()
    assert rid == f"roll:{calls[1]}" and len(calls) == 40
    drawn = {item.id for items in plan.contents.values() for item in items}
    assert rid in drawn and not drawn & set(calls[1:-1])  # the calls between: the roll node
    assert {calls[0], calls[-1]} <= drawn                 # the first and the last: open
    assert plan.drawn_count <= 30
    inner = [n for n, data in view.graph.nodes(data=True)
             if blocks[data["block"]].get("module") == "blocks.20"]
    assert inner and {plan.representative[n] for n in inner} == {rid}
    assert set(inner) <= set(plan.members[rid])
    [note] = plan.notes
    assert note.startswith("282 nodes exceed the budget of 30: 1 run of repeated calls")
    # the same graph under the budget: nothing rolled, nothing said
    relaxed = plan_view(view.graph, RenderOptions())
    assert not relaxed.rolls and not relaxed.notes and relaxed.drawn_count == 282


def test_an_empty_library_call_is_left_out():
    view = one(f"{MODELS / 'shape_math.py'}:Skip", "trace")
    blocks = view.graph.graph["blocks"]
    plan = plan_view(view.graph, RenderOptions())
    [skipped] = plan.skipped_boxes
    assert blocks[skipped[4:]]["module"] == "shortcut" and skipped[4:] not in plan.boxes
    assert skipped not in plan.members and plan.drawn_count == 4
    opened = plan_view(view.graph, RenderOptions(expand_library=True))
    assert not opened.skipped_boxes and not opened.boxes


def test_findings_sit_on_the_node_of_their_line():
    view = one("decision_gate.py:MyCell")
    G = view.graph
    gate = next(d for d in G.nodes.values() if d["kind"] == "prim::If")
    path, line, _ = gate["user_source"].rsplit(":", 2)   # `if x.sum() > 0:`
    here = {"code": "IRV101", "name": "x", "message": "m", "path": path, "line": int(line)}
    nowhere = {"code": "IRV102", "name": "y", "message": "m", "path": path, "line": 10_000}
    plan = plan_view(G, RenderOptions(findings=[here, nowhere]))
    # the badge goes on the first drawn node of the line (the sum, before the if)
    first = next(n for n, d in G.nodes(data=True) if plan.representative[n] is not None
                 and (d.get("user_source") or "").startswith(f"{path}:{line}:"))
    assert G.nodes[first]["kind"] == "aten::sum"
    assert plan.badges == {first: (here,)} and plan.unplaced_findings == (nowhere,)


def test_focus_opens_one_call_and_an_unknown_one_is_a_usage_error():
    view = _net()
    blocks = view.graph.graph["blocks"]
    plan = plan_view(view.graph, RenderOptions(focus="encoder.layers.2"))
    boxed = {blocks[c]["module"] for c in plan.boxes}
    assert "encoder.layers.2" not in boxed and {"encoder.layers.0", "head"} <= boxed
    assert isinstance(plan, DrawPlan)
    with pytest.raises(UsageError, match="no module call with that path"):
        plan_view(view.graph, RenderOptions(focus="encoder.layer.2"))


@pytest.mark.parametrize("name, mode", [("Net", "trace"), ("Scriptable", "script")])
def test_leaf_modules_of_installed_libraries_are_boxes(name, mode):
    """transformers' Conv1D and NewGELUActivation call no other module: one box each, as
    nn.Linear is; GPT2MLP calls modules and stays open, and so does the user's own leaf
    module; --expand-library opens them all."""
    G = one(f"{MODELS / 'library_leaves.py'}:{name}", mode).graph
    blocks = G.graph["blocks"]
    modules = {info.get("module") for info in blocks.values() if info["kind"] == "method"}
    boxes = {blocks[cid]["module"] for cid in plan_view(G, RenderOptions()).boxes}
    assert {"proj", "act", "scale"} <= modules
    assert {"proj", "act"} <= boxes and "scale" not in boxes
    if name == "Net":
        assert {"mlp.c_fc", "mlp.c_proj", "mlp.act", "mlp.dropout"} <= boxes
        assert "mlp" in modules and "mlp" not in boxes
    assert not plan_view(G, RenderOptions(expand_library=True)).boxes
