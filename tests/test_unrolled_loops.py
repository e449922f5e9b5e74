"""Loops a trace unrolled: found from repeated ops on repeated source lines."""
from __future__ import annotations

import inspect

import torch
from torch import nn

from irviz import api
from irviz.analyses.unrolled_loops import find_runs, unrolled_runs


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
