"""The layout budget counts edges, and dense graphs get bounded Graphviz settings.

A small traced DenseNet-style model (every layer reads ``torch.cat`` of every earlier output
of its block) against a sparse seed; real tracing, real Graphviz. Timing is measured by
benchmarks/layout.py, never here.
"""
from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from conftest import one
from irviz.api import visualize
from irviz.render import engines
from irviz.render.dot import build_dot
from irviz.render.plan import (DENSE_GRAPH_ATTRS, LAYOUT_SIZE_PER_NODE, RenderOptions,
                               plan_view)


class Layer(nn.Module):
    def __init__(self, cin: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, 2, 1)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return self.conv(torch.relu(torch.cat(features, 1)))


class Block(nn.Module):
    def __init__(self, layers: int, cin: int):
        super().__init__()
        self.layers = nn.ModuleList(Layer(cin + 2 * i) for i in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return torch.cat(features, 1)


class Dense(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = Block(12, 3)
        self.block2 = Block(12, 27)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block2(self.block1(x))


@pytest.fixture(scope="module")
def dense():
    torch.manual_seed(0)
    [view] = visualize(Dense().eval(), mode="trace", inputs=(torch.rand(1, 3, 4, 4),))
    return view.graph


def _attr_set(dot: str, name: str) -> bool:
    graph_line = next(line for line in dot.splitlines() if line.startswith("  graph ["))
    return re.search(rf'\b{name}="', graph_line) is not None


def test_settings_only_for_dense_graphs(dense):
    unbounded = plan_view(dense, RenderOptions(max_nodes=0)).layout
    assert unbounded.dense and unbounded.edges >= 1.8 * unbounded.nodes
    dot = build_dot(dense, RenderOptions(max_nodes=0)).text
    for name, value in DENSE_GRAPH_ATTRS:
        assert f'{name}="{value}"' in dot
    # far inputs: one merged ghost per consumer, not one per edge
    ghosts = re.findall(r'^  "(ghost:[^"]*)" \[', dot, flags=re.M)
    assert ghosts and len(ghosts) == len(set(ghosts))
    assert any("earlier values" in line for line in dot.splitlines()
               if line.startswith('  "ghost:'))

    sparse = one("decision_gate.py:MyCell")
    plan = plan_view(sparse.graph, RenderOptions())
    assert not plan.layout.dense and plan.layout.edges < 1.8 * plan.layout.nodes
    text = build_dot(sparse.graph, RenderOptions()).text
    assert not any(_attr_set(text, name) for name, _ in DENSE_GRAPH_ATTRS)
    assert not any("dense graph" in note for note in plan.notes)


def test_the_note_is_in_the_svg(dense):
    result = build_dot(dense, RenderOptions(max_nodes=0))
    [note] = [n for n in result.notes if n.startswith("dense graph")]
    assert f"{result.plan.layout.edges:,} edges on {result.drawn_nodes:,} nodes" in note
    assert "nslimit=2" in note and "predicted layout" in note
    svg = engines.render(result.text, "svg", "dot").decode()
    assert "dense graph (" in svg and "nslimit=2" in svg


def test_the_layout_budget_collapses_what_the_node_budget_would_not(dense):
    everything = plan_view(dense, RenderOptions(max_nodes=0))
    nodes, size = everything.drawn_count, everything.layout.size
    assert size > LAYOUT_SIZE_PER_NODE * nodes   # dense: the edges dominate the layout
    # a node budget the picture fits, but whose layout budget it exceeds
    plan = plan_view(dense, RenderOptions(max_nodes=nodes))
    assert plan.drawn_count < nodes and plan.boxes
    assert plan.layout.size <= LAYOUT_SIZE_PER_NODE * nodes
    [note, layout_note] = [n for n in plan.notes if "budget" in n]
    assert f"{nodes} nodes with" in note and "exceed the layout budget" in note
    assert layout_note.startswith(f"layout budget: {nodes} nodes with")
    assert f"size of {size:,} > {LAYOUT_SIZE_PER_NODE * nodes:,}" in layout_note
    # a budget that also covers the layout size leaves the picture as it is
    roomy = plan_view(dense, RenderOptions(max_nodes=-(-size // LAYOUT_SIZE_PER_NODE)))
    assert roomy.drawn_count == nodes and not any("budget" in n for n in roomy.notes)


def test_no_budget_still_draws_everything(dense):
    plan = plan_view(dense, RenderOptions(max_nodes=0))
    assert not plan.boxes or all(plan.collapsed[b] == b for b in plan.boxes)
    assert not plan.rolls and not any("budget" in n for n in plan.notes)
    # every call that is not a torch.nn library module is open
    blocks = dense.graph["blocks"]
    assert all(blocks[b].get("qualified_type", "").startswith("__torch__.torch.nn.")
               for b in plan.boxes)
    tight = plan_view(dense, RenderOptions(max_nodes=10))
    assert tight.drawn_count < plan.drawn_count


class FlatChain(nn.Module):
    """60 top-level ops, each also reading the input: nothing to collapse, and the reads of
    ``x`` are edges spanning up to 60 ranks (a traced detector's post-processing). sin or
    cos in Thue-Morse order, which never repeats a stretch three times in a row: no
    unrolled loop to roll up either."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        for i in range(60):
            y = (torch.cos(y) if bin(i).count("1") % 2 else torch.sin(y)) + x
        return y


def test_over_the_layout_budget_with_nothing_to_collapse_eases_long_edges():
    [view] = visualize(FlatChain(), mode="trace", inputs=(torch.rand(3),))
    tight = plan_view(view.graph, RenderOptions(max_nodes=20))
    assert tight.layout.size > LAYOUT_SIZE_PER_NODE * 20 and not tight.layout.dense
    assert tight.layout.merge_ghosts and tight.layout.graph_attrs == DENSE_GRAPH_ATTRS
    assert any(n.startswith("still over the layout budget") for n in tight.notes)
    free = plan_view(view.graph, RenderOptions(max_nodes=0))   # no budget: drawn as it is
    assert not free.layout.merge_ghosts and free.layout.graph_attrs == ()
