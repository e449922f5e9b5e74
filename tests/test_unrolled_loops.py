"""Loops a trace unrolled: found from repeated ops on repeated source lines."""
from __future__ import annotations

import inspect
import os

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
    """8 trips of 3 ops (a short loop, rolled only over the budget): 24 drawn nodes, over a
    budget of 12; the first and the last trip stay drawn, the 6 between are one roll node,
    and the note says so."""
    opts = RenderOptions(max_nodes=12)
    [view] = api.visualize(Looped(trips=8), "trace", inputs=torch.rand(3), options=opts)
    dot = view.dot()
    plan = view.plan
    [(rid, loop)] = plan.loops.items()
    assert len(loop["iterations"]) == 8 and plan.drawn_count <= 12
    assert "× 6 iterations" in dot and "loop unrolled by the trace" in dot
    first, last = loop["iterations"][0], loop["iterations"][-1]
    for node in (*first, *last):              # drawn as themselves
        assert plan.representative[node] == node
    middle = loop["iterations"][1][0]
    assert plan.representative[middle] == rid
    assert len([m for m in plan.members[rid] if view.graph.nodes[m]["kind"] == "aten::sin"]) == 6
    assert any("the middle iterations of 1 loop the trace unrolled are rolled up "
               "(test_unrolled_loops.py:" in note and "6 of 8 iterations" in note
               for note in plan.notes)
    # within the budget nothing is rolled
    [small] = api.visualize(Looped(trips=6), "trace", inputs=torch.rand(3),
                            options=RenderOptions(max_nodes=50))
    small.dot()
    assert not small.plan.loops


def test_a_long_loop_is_rolled_within_the_budget():
    """60 trips of 3 ops fit the default budget, but 10 or more trips of a small body are
    a wall: rolled all the same, said in the note; --max-nodes 0 draws every trip."""
    [view] = api.visualize(Looped(trips=60), "trace", inputs=torch.rand(3))
    dot = view.dot()
    [(rid, loop)] = view.plan.loops.items()
    assert len(loop["iterations"]) == 60 and rid == f"roll:{loop['iterations'][1][0]}"
    assert "× 58 iterations" in dot and view.plan.drawn_count < 15
    [note] = view.plan.notes
    assert note.startswith("the trace unrolled 1 loop: the middle iterations are rolled up "
                           "(test_unrolled_loops.py:") and "58 of 60" in note, note
    assert len(note) <= 140 and note in dot.replace("&#45;", "-")   # the title shows it
    [full] = api.visualize(Looped(trips=60), "trace", inputs=torch.rand(3),
                           options=RenderOptions(max_nodes=0))
    full.dot()
    assert not full.plan.loops and full.plan.drawn_count > 180


def test_a_loop_of_fewer_than_ten_trips_within_the_budget_is_not_rolled():
    [view] = api.visualize(Looped(trips=9), "trace", inputs=torch.rand(3))
    view.dot()
    [run] = unrolled_runs(view.graph)
    assert len(run["iterations"]) == 9           # found...
    assert not view.plan.loops and not view.plan.notes   # ...but drawn out
    [forks] = api.visualize(fork_some, "trace", inputs=torch.ones(1))
    forks.dot()
    assert [len(r["iterations"]) for r in unrolled_runs(forks.graph)] == [9, 9]
    assert not forks.plan.loops


def _neg(x):
    return torch.neg(x)


def fork_some(x):
    futures = [torch.jit.fork(_neg, x) for _ in range(9)]
    return torch.stack([torch.jit.wait(f) for f in futures]).sum()


def test_a_traced_fork_loop_rolls_into_a_small_picture():
    """fork_basics' example_loop: 100 forks, then 100 waits. Each fork's task is one
    element of the loop, so both loops are found; within the budget both roll (they are
    long and small): the first and the last fork task drawn, one roll node for the other
    98 forks, one for their 98 waits, one edge between the two."""
    samples = os.path.join(os.path.dirname(__file__), os.pardir, "samples")
    torch.manual_seed(0)
    [view] = api.visualize(os.path.join(samples, "fork_basics.py") + ":example_loop", "trace")
    dot = view.dot()
    G, plan = view.graph, view.plan
    forks, waits = unrolled_runs(G)
    assert len(forks["iterations"]) == len(waits["iterations"]) == 100
    assert G.nodes[forks["iterations"][0][0]]["kind"] == "prim::fork"
    assert G.nodes[waits["iterations"][0][0]]["kind"] == "aten::wait"
    assert waits["lines"] == "aten::wait"    # the trace keeps no line of a wait
    assert plan.drawn_count <= 15            # 305 drawn out
    roll_forks = f"roll:{forks['iterations'][1][0]}"
    roll_waits = f"roll:{waits['iterations'][1][0]}"
    assert dot.count("× 98 iterations") == 2 and set(plan.loops) == {roll_forks, roll_waits}
    for fork, _ in (forks["iterations"][0], forks["iterations"][-1]):
        [task] = [cid for cid, info in G.graph["blocks"].items() if info.get("owner") == fork]
        assert f'subgraph "cluster_{task}"' in dot   # the first and the last task drawn
        assert plan.representative[fork] == fork
    middle_task = forks["iterations"][50][1]
    assert plan.representative[middle_task] == roll_forks
    assert f'"{roll_forks}" -> "{roll_waits}"' in dot   # the futures, one edge
    assert dot.count("cluster_") < 10
    assert any(note.startswith("the trace unrolled 2 loops") for note in plan.notes)


class CallPerTrip(nn.Module):
    """A module called in every trip of a loop, with an op around it: the same Linear
    (``shared``) or another one each trip."""

    def __init__(self, trips: int = 12, shared: bool = True):
        super().__init__()
        self.trips, self.shared = trips, shared
        self.lin = nn.Linear(3, 3)
        self.lins = nn.ModuleList(nn.Linear(3, 3) for _ in range(trips))

    def forward(self, x):
        for k in range(self.trips):
            x = torch.relu((self.lin if self.shared else self.lins[k])(x)) * 2
        return x


def test_a_loop_calling_a_module_per_trip_is_found():
    """The call is one element of the loop's sequence, so the loop is found; 12 trips of
    the same module roll within the budget, 12 different modules (a layer stack written as
    a loop, BERT's encoder) stay drawn."""
    [view] = api.visualize(CallPerTrip(), "trace", inputs=torch.rand(2, 3))
    dot = view.dot()
    [run] = unrolled_runs(view.graph)
    assert len(run["iterations"]) == 12 and run["same_calls"]
    assert run["lines"].startswith("test_unrolled_loops.py:")
    [(rid, loop)] = view.plan.loops.items()
    assert loop is run and "× 10 iterations" in dot and not view.plan.rolls
    [other] = api.visualize(CallPerTrip(shared=False), "trace", inputs=torch.rand(2, 3))
    dot = other.dot()
    [run] = unrolled_runs(other.graph)
    assert len(run["iterations"]) == 12 and not run["same_calls"]
    assert not other.plan.loops and "lins.5" in dot


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
