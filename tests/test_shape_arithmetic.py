"""Shape arithmetic is annotated as expressions and folded into the ops that use it."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import one

MODELS = Path(__file__).parent / "models" / "shape_math.py"


def exprs(view) -> dict[str, str]:
    return {n: d["irviz.shape_expr"] for n, d in view.graph.nodes(data=True)
            if "irviz.shape_expr" in d}


def of_kind(view, kind):
    return [n for n, d in view.graph.nodes(data=True) if d["kind"] == kind]


@pytest.mark.parametrize("mode", ["trace", "script"])
def test_view_sizes_become_one_expression(mode):
    view = one(f"{MODELS}:Heads", mode)
    G = view.graph
    found = exprs(view)
    (view_node,) = of_kind(view, "aten::view")
    size_input = G.nodes[view_node]["inputs"][1]
    assert len(size_input) == 1 and size_input[0] in found
    assert found[size_input[0]] == "[x.size(0), x.size(1), 2, (x.size(2) // 2)]"
    # every size read, conversion and list on the way is folded, nothing else
    kinds = {G.nodes[n]["kind"] for n in found}
    assert "aten::size" in kinds and "prim::ListConstruct" in kinds
    assert not kinds & {"aten::view", "aten::transpose", "aten::reshape"}
    if mode == "trace":   # the tracer's 0-dim tensor forms
        assert {"prim::NumToTensor", "aten::Int"} <= kinds


def test_reshape_of_a_product_of_sizes():
    view = one(f"{MODELS}:Heads", "trace")
    (reshape,) = of_kind(view, "aten::reshape")
    producer = view.graph.nodes[reshape]["inputs"][1][0]
    assert exprs(view)[producer] == "[(x.size(0) * x.size(1)), -1]"


def test_a_comparison_on_a_size_stays_drawn():
    view = one(f"{MODELS}:SizeGate", "script")
    found = exprs(view)
    (gt,) = of_kind(view, "aten::gt")
    assert gt not in found
    assert view.graph.nodes[gt]["inputs"][0][0] in found   # x.size(0), folded into gt


@pytest.mark.parametrize("mode", ["trace", "script"])
def test_a_size_in_tensor_math_keeps_the_tensor_op(mode):
    view = one(f"{MODELS}:ScaleBySize", mode)
    (mul,) = of_kind(view, "aten::mul")
    assert mul not in exprs(view)
    assert any("x.size(1)" in e for e in exprs(view).values())


def test_the_picture_folds_them_into_the_view_label():
    view = one(f"{MODELS}:Heads", "trace")
    dot = view.dot()
    drawn = {n for n, d in view.graph.nodes(data=True) if f'"{n}" [' in dot}
    kinds = {view.graph.nodes[n]["kind"] for n in drawn}
    assert not kinds & {"aten::size", "prim::NumToTensor", "aten::Int", "prim::ListConstruct"}
    assert {"aten::view", "aten::transpose", "aten::reshape"} <= kinds
    assert "size=[x.size(0), x.size(1), 2, (x.size(2) // 2)]" in dot   # the tooltip's args line
    assert view.drawn_nodes == len(drawn)


def test_a_loop_over_a_size_names_it_as_its_trip_count():
    view = one("rnn_loop.py:WrapRNN", "trace")
    assert "trip count: xs.size(0)" in view.dot()
