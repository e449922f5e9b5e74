"""Loops a trace unrolled: found from repeated ops on repeated source lines."""
from __future__ import annotations

import inspect

import torch
from torch import nn

from irviz import api
from irviz.analyses.unrolled_loops import find_runs, unrolled_runs
from irviz.render.plan import RenderOptions


class Looped(nn.Module):
    """Six trips of a two-line body, then one op the loop does not repeat."""

    def __init__(self, trips: int = 6):
        super().__init__()
        self.trips = trips

    def forward(self, x):
        for k in range(self.trips):
            x = x * 2 + k
            x = torch.sin(x)
        return x.sum()


class WrittenOut(nn.Module):
    """The same two lines three times, by hand: each copy is its own line."""

    def forward(self, x):
        x = torch.sin(x * 2 + 0)
        x = torch.sin(x * 2 + 1)
        x = torch.sin(x * 2 + 2)
        return x


def _body_lines() -> tuple[int, int]:
    src, start = inspect.getsourcelines(Looped.forward)
    first = next(i for i, text in enumerate(src) if "x * 2 + k" in text) + start
    return first, first + 1


def test_find_runs_takes_the_period_covering_most():
    assert find_runs(list("abcabcabcX")) == [(0, 3, 3)]
    assert find_runs(list("Xaaab")) == [(1, 1, 3)]
    assert find_runs(list("abab")) == []                  # two trips are not a loop
    assert find_runs(list("abcabcabcabab")) == [(0, 3, 3)]  # then "ab" only twice
    assert find_runs([]) == []


def test_a_traced_loop_is_found_with_its_trips_and_lines():
    [view] = api.visualize(Looped(), "trace", inputs=torch.rand(3))
    [run] = unrolled_runs(view.graph)
    first, last = _body_lines()
    assert run["block"] == "root" and len(run["iterations"]) == 6
    assert run["lines"] == f"test_unrolled_loops.py:{first}–{last}"
    G = view.graph
    for start, end in run["iterations"]:   # each iteration: mul, add, sin in order
        assert G.nodes[start]["kind"] == "aten::mul" and G.nodes[end]["kind"] == "aten::sin"


def test_hand_written_repeats_and_scripted_loops_are_not_unrolled_loops():
    [written] = api.visualize(WrittenOut(), "trace", inputs=torch.rand(3))
    assert unrolled_runs(written.graph) == []       # three different lines: not one loop
    [scripted] = api.visualize(Looped(), "script", inputs=torch.rand(3))
    assert unrolled_runs(scripted.graph) == []      # a prim::Loop, drawn as a loop


def test_over_the_budget_the_middle_iterations_are_one_node():
    """60 trips of 3 ops: 180 drawn nodes, over a budget of 50; the first and the last
    trip stay drawn, the 58 between are one roll node, and the note says so."""
    opts = RenderOptions(max_nodes=50)
    [view] = api.visualize(Looped(trips=60), "trace", inputs=torch.rand(3), options=opts)
    dot = view.dot()
    plan = view.plan
    [(rid, loop)] = plan.loops.items()
    assert len(loop["iterations"]) == 60 and plan.drawn_count <= 50
    assert "× 58 iterations" in dot and "loop unrolled by the trace" in dot
    first, last = loop["iterations"][0], loop["iterations"][-1]
    for node in (*first, *last):              # drawn as themselves
        assert plan.representative[node] == node
    middle = loop["iterations"][1][0]
    assert plan.representative[middle] == rid
    assert len([m for m in plan.members[rid] if view.graph.nodes[m]["kind"] == "aten::sin"]) == 58
    assert any("the middle iterations of 1 loop the trace unrolled are rolled up "
               "(test_unrolled_loops.py:" in note and "58 of 60 iterations" in note
               for note in plan.notes)
    # within the budget nothing is rolled
    [small] = api.visualize(Looped(trips=6), "trace", inputs=torch.rand(3), options=opts)
    small.dot()
    assert not small.plan.loops


def test_the_viewer_details_a_rolled_loop(tmp_path):
    """The HTML viewer's details panel knows the roll node: what it stands for, where."""
    from irviz.cli import main
    from click.testing import CliRunner

    model = tmp_path / "looped.py"
    head = "import torch\nfrom torch import nn\n\n\n"
    tail = '\n\nexample_inputs = {"Looped": (torch.rand(3),)}\n'
    model.write_text(head + inspect.getsource(Looped).replace("trips: int = 6", "trips: int = 60")
                     + tail, encoding="utf-8")
    out = tmp_path / "looped.html"
    result = CliRunner().invoke(main, ["render", f"{model}:Looped", "--mode", "trace",
                                       "--max-nodes", "50", "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "58 of 60 iterations of a loop the trace unrolled, rolled up" in page
    assert "× 58 iterations (looped.py:" in page
