"""The analyses on small hand-built graphs (networkx's style): each fact checked where
it is computed, in milliseconds, without torch capturing anything. The real-model tests
(test_report, test_render, test_lint) check the same facts end to end."""
from __future__ import annotations

import networkx as nx
import pytest

from irviz.analyses import cost, fork_wait, parallelism
from irviz.analyses.shape_arithmetic import annotate_shape_arithmetic

FUTURE, TENSOR = "Future[Tensor]", "Tensor"


class Program:
    """A tiny IR graph in irviz's vocabulary (see irviz/ir/model.py), built op by op."""

    def __init__(self):
        self.G = nx.DiGraph(blocks={"root": {"kind": "graph", "parent": None, "owner": None}},
                            mode="script")

    def block(self, cid: str, kind: str, parent: str, owner: str | None, **info) -> str:
        self.G.graph["blocks"][cid] = {"kind": kind, "parent": parent, "owner": owner, **info}
        return cid

    def op(self, nid: str, kind: str, *inputs: str, block: str = "root", task: str | None = None,
           out: str = TENSOR, shape: list[int] | None = None, label: str | None = None,
           **extra) -> str:
        self.G.add_node(nid, kind=kind, label=label or kind.split("::")[-1], block=block,
                        subgraph_of=task, hidden=kind == "prim::Constant", source=None,
                        user_source=None, scope="", inputs=[[i] for i in inputs],
                        outputs=[{"name": None, "type": out, "shape": shape,
                                  "dtype": "float32" if shape is not None else None}], **extra)
        for producer in inputs:
            ptype = self.G.nodes[producer]["outputs"][0]["type"]
            self.G.add_edge(producer, nid, type=ptype,
                            shape=self.G.nodes[producer]["outputs"][0]["shape"])
        return nid


def forked(overlap_work: bool = True, shape=(64, 64)) -> Program:
    """x -> fork(neg x) ; [mul x x] ; wait -> add: one task, an overlap window."""
    p = Program()
    p.op("in0", "prim::Param", shape=list(shape))
    p.op("n0", "prim::fork", "in0", out=FUTURE)
    task = p.block("n0/task", "fork.task", "root", "n0")
    p.op("n0/task/n0", "aten::neg", "in0", block=task, task="n0", shape=list(shape))
    p.G.nodes["n0"]["task_returns"] = ["n0/task/n0"]
    between = p.op("n1", "aten::mul" if overlap_work else "prim::TupleConstruct", "in0", "in0",
                   shape=list(shape))
    p.op("n2", "aten::wait", "n0", shape=list(shape))
    p.op("n3", "aten::add", "n2", between, shape=list(shape))
    p.op("out", "prim::Return", "n3")
    return p


def analysed(p: Program) -> nx.DiGraph:
    fork_wait.annotate_fork_waits(p.G)
    cost.annotate_costs(p.G)
    parallelism.annotate_parallelism(p.G, interop_threads=2, cpu_count=2, intraop_threads=1)
    return p.G


def test_a_fork_is_paired_with_its_wait_and_its_window_found():
    G = analysed(forked())
    region = fork_wait.region(G.nodes["n0"])
    assert fork_wait.waits(G.nodes["n0"]) == ["n2"]
    assert fork_wait.forks_waited(G.nodes["n2"]) == ["n0"]
    assert region.task_nodes == ["n0/task/n0"] and region.overlap == ["n1"]
    assert region.overlap_has_work and not region.same_iteration and region.instances == 1
    assert fork_wait.overlapping(G.nodes["n1"]) == ["n0"]
    assert fork_wait.unpaired(G) == fork_wait.Unpaired([], [])


def test_a_future_through_a_list_is_still_paired():
    p = Program()
    p.op("in0", "prim::Param", shape=[4])
    p.op("n0", "prim::ListConstruct", out="List[Future[Tensor]]")
    p.op("n1", "prim::fork", "in0", out=FUTURE)
    p.block("n1/task", "fork.task", "root", "n1")
    p.op("n1/task/n0", "aten::relu", "in0", block="n1/task", task="n1", shape=[4])
    p.op("n2", "aten::append", "n0", "n1", out="List[Future[Tensor]]")
    p.op("n3", "prim::Constant", label="0", out="int")
    p.op("n4", "aten::__getitem__", "n0", "n3", out=FUTURE)
    p.op("n5", "aten::wait", "n4", shape=[4])
    fork_wait.annotate_fork_waits(p.G)
    # the append mutates the list n0 made: the getitem of n0 reaches the future
    assert fork_wait.waits(p.G.nodes["n1"]) == ["n5"]


def test_a_fork_never_waited_is_unpaired_and_a_hazard():
    p = forked()
    p.G.remove_node("n3")
    p.G.remove_node("n2")
    p.G.nodes["out"]["inputs"] = []
    G = analysed(p)
    assert fork_wait.unpaired(G).forks == ["n0"]
    assert [h.code for h in parallelism.hazards(G)] == ["fork-never-waited"]


def test_work_span_and_the_saving_of_a_fork():
    G = analysed(forked())
    facts = parallelism.facts(G)
    costs = parallelism.task_costs(G.nodes["n0"])
    assert facts.unit == "us" and costs.task_cost > 0 and costs.overlap_cost > 0
    # the task and the window run side by side: the span saves the smaller of the two
    assert facts.work - facts.span == pytest.approx(min(costs.task_cost, costs.overlap_cost),
                                                    abs=1e-3)
    assert facts.width == 2 and facts.limit == 2
    assert "n0" in facts.critical_path and parallelism.is_critical(G.nodes["n0"])


def test_the_critical_nodes_listed_are_the_nodes_marked_in_program_order():
    G = analysed(forked())
    marked = [n for n, data in G.nodes(data=True) if parallelism.is_critical(data)]
    assert marked and parallelism.critical_nodes(G) == marked
    assert parallelism.critical_nodes(G.copy()) == marked   # a copy: read from its nodes
    H = G.copy()
    H.nodes[marked[0]][parallelism.CRITICAL] = False
    assert parallelism.critical_nodes(H) == marked[1:]
    # no fork: the path is the whole program and nothing is marked
    plain = Program()
    plain.op("in0", "prim::Param", shape=[64, 64])
    plain.op("n0", "aten::mul", "in0", "in0", shape=[64, 64])
    plain.op("out", "prim::Return", "n0")
    G = analysed(plain)
    assert parallelism.facts(G).critical_path and parallelism.critical_nodes(G) == []


def test_a_wait_right_after_the_fork_is_named_after_its_rule():
    G = analysed(forked(overlap_work=False))
    codes = [h.code for h in parallelism.hazards(G)]
    assert "wait-immediately-after-fork" in codes
    # the task waits at once: nothing overlaps, and launching it costs pool wake-ups
    assert parallelism.facts(G).predicted_speedup < 1.0


def test_tiny_tasks_cost_less_than_the_fork():
    G = analysed(forked(shape=(2,)))
    assert "fork-tiny-task" in [h.code for h in parallelism.hazards(G)]
    assert parallelism.task_costs(G.nodes["n0"]).task_cost < cost.FORK_OVERHEAD_US


def test_without_shapes_costs_count_ops():
    p = forked()
    for _, data in p.G.nodes(data=True):
        for out in data["outputs"]:
            out["shape"] = None
    G = analysed(p)
    assert cost.cost_model(G).unit == "ops" and cost.cost_of(G.nodes["n1"]) == 1.0
    assert cost.cost_of(G.nodes["n0/task/n0"]) == 1.0


def test_linear_flops_from_the_shapes():
    p = Program()
    p.op("x", "prim::Param", shape=[3, 4])
    p.op("w", "prim::Param", shape=[5, 4])
    p.op("n0", "aten::linear", "x", "w", shape=[3, 5])
    assert cost.node_flops(p.G, "n0") == 2 * 3 * 5 * 4


def test_size_arithmetic_folds_into_an_expression():
    p = Program()
    p.op("x", "prim::Param", shape=[2, 3], label="x")
    p.op("c0", "prim::Constant", label="0", out="int")
    p.op("n0", "aten::size", "x", "c0", out="int")
    p.op("c1", "prim::Constant", label="-1", out="int")
    p.op("n1", "prim::ListConstruct", "n0", "c1", out="List[int]")
    p.op("n2", "aten::view", "x", "n1", shape=[2, 3])
    annotate_shape_arithmetic(p.G)
    assert p.G.nodes["n0"]["irviz.shape_expr"] == "x.size(0)"
    assert p.G.nodes["n1"]["irviz.shape_expr"] == "[x.size(0), -1]"
    assert "irviz.shape_expr" not in p.G.nodes["n2"]     # a tensor op is drawn
