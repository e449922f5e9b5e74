"""The IR walker on the seed models: blocks, method calls, fork subgraphs, ownership."""
from __future__ import annotations

import json

import networkx as nx
import pytest
import torch

from irviz.ir.invariants import InvariantError, assert_invariants
from conftest import SAMPLES, one, visualize

#: (spec, mode) for every sample model that should capture
ALL_CASES = [
    ("decision_gate.py:MyDecisionGate", "script"), ("decision_gate.py:MyDecisionGate", "trace"),
    ("decision_gate.py:MyCell", "script"), ("decision_gate.py:MyCell", "trace"),
    ("my_cell.py:MyCell", "script"), ("my_cell.py:MyCell", "trace"),
    ("my_cell.py:MyLinearCell", "script"), ("my_cell.py:MyLinearCell", "trace"),
    ("rnn_loop.py:MyRNNLoop", "script"), ("rnn_loop.py:WrapRNN", "script"),
    ("rnn_loop.py:WrapRNN", "trace"),
    ("fork_basics.py:example", "script"), ("fork_basics.py:example", "trace"),
    ("fork_basics.py:example_loop", "script"),
    ("lstm_ensemble.py:BidirectionalRecurrentLSTM", "trace"),
    ("lstm_ensemble.py:SerialLSTMEnsemble", "trace"),
    ("lstm_ensemble.py:BiForkLSTMEnsemble", "trace"),
    ("lstm_ensemble.py:LSTMEnsemble", "script"), ("lstm_ensemble.py:LSTMEnsemble", "trace"),
]


def nodes_of_kind(G: nx.DiGraph, kind: str, within: str | None = None) -> list[str]:
    """Every node of ``kind``, at any depth (optionally inside container ``within``)."""
    found = []
    for node, data in G.nodes(data=True):
        if data["kind"] != kind:
            continue
        if within is not None and not node.startswith(within + "/"):
            continue
        found.append(node)
    return found


def assert_contains_exactly(G: nx.DiGraph, kind: str, count: int) -> None:
    found = nodes_of_kind(G, kind)
    assert len(found) == count, f"graph has {len(found)} {kind} nodes, expected {count}: {found}"


def containers(G, kind):
    return {cid: info for cid, info in G.graph["blocks"].items() if info["kind"] == kind}


@pytest.mark.parametrize("spec,mode", ALL_CASES)
def test_every_sample_builds_a_valid_graph(spec, mode):
    view = one(spec, mode)
    G = view.graph
    assert_invariants(G)
    assert G.graph["mode"] == mode
    # every drawn value flows from the inputs or constants to the output
    assert "out" in G and G.in_degree("out") >= 1
    for node, data in G.nodes(data=True):
        for key in ("kind", "source", "scope", "block", "subgraph_of"):
            assert key in data, (node, key)


def test_scripted_gate_keeps_both_branches_inside_the_submodule():
    G = one("decision_gate.py:MyCell").graph
    [if_node] = nodes_of_kind(G, "prim::If")
    data = G.nodes[if_node]
    assert data["scope"] == "dg" and data["scope_class"] == "MyDecisionGate"
    assert G.graph["blocks"][data["block"]]["kind"] == "method"
    assert data["code"] == "if x.sum() > 0:"
    assert data["source"].endswith("decision_gate.py:11:9")
    then_, else_ = f"{if_node}/b0", f"{if_node}/b1"
    assert G.graph["blocks"][then_]["kind"] == "if.then"
    assert G.graph["blocks"][else_]["owner"] == if_node
    assert [G.nodes[n]["kind"] for n in G if n.startswith(else_ + "/")] == ["aten::neg"]
    # the add after the gate consumes either branch's value: x passed through or neg(x)
    [add] = [n for n in nodes_of_kind(G, "aten::add") if G.nodes[n]["scope"] == ""]
    producers = G.nodes[add]["inputs"][0]
    assert len(producers) == 2 and f"{else_}/n0" in producers


def test_traced_gate_has_no_branch_and_the_warning_is_kept():
    view = one("decision_gate.py:MyCell", "trace")
    G = view.graph
    assert_contains_exactly(G, "prim::If", 0)
    assert not containers(G, "if.then")
    [warning] = [w for w in view.capture.warnings if w.category == "TracerWarning"]
    assert warning.filename == str(SAMPLES / "decision_gate.py") and warning.lineno == 11
    assert warning.message.startswith("Converting a tensor to a Python boolean")
    # traced shapes reach the graph
    [tanh] = nodes_of_kind(G, "aten::tanh")
    assert G.nodes[tanh]["outputs"][0]["shape"] == [3, 4]
    assert G.nodes[tanh]["outputs"][0]["dtype"] == "float32"


def test_method_calls_keep_the_module_hierarchy_script_in_trace_in_script():
    G = one("rnn_loop.py:WrapRNN", "trace").graph
    calls = {info["module"]: info for info in G.graph["blocks"].values()
             if info["kind"] == "method"}
    assert set(calls) == {"loop", "loop.cell", "loop.cell.dg", "loop.cell.linear"}
    assert calls["loop.cell.dg"]["class"] == "MyDecisionGate"
    [loop] = nodes_of_kind(G, "prim::Loop")
    assert G.nodes[loop]["scope"] == "loop" and G.nodes[loop]["trip_count"] == "size"
    # the scripted gate inside the traced cell inside the scripted loop keeps its if
    [if_node] = nodes_of_kind(G, "prim::If")
    assert G.nodes[if_node]["scope"] == "loop.cell.dg"
    assert if_node.startswith(f"{loop}/b0/"), "the cell is called inside the loop body"


def test_fork_subgraph_is_walked_and_paired_with_its_wait():
    G = one("fork_basics.py:example").graph
    [fork] = nodes_of_kind(G, "prim::fork")
    [wait] = nodes_of_kind(G, "aten::wait")
    assert G.nodes[fork]["irviz.waits"] == [wait]
    assert G.nodes[wait]["irviz.forks"] == [fork]
    task = G.graph["blocks"][f"{fork}/task"]
    assert task["kind"] == "fork.task" and task["owner"] == fork
    [neg] = nodes_of_kind(G, "aten::neg")
    assert G.nodes[neg]["subgraph_of"] == fork
    assert G.graph["blocks"][G.nodes[neg]["block"]]["kind"] == "function"
    assert G.nodes[fork]["task_returns"] == [neg]
    # the work between fork and wait does not depend on the future
    [mul] = nodes_of_kind(G, "aten::mul")
    assert not nx.has_path(G, fork, mul)


def test_forks_in_a_loop_are_paired_through_the_list_of_futures():
    G = one("fork_basics.py:example_loop").graph
    [fork] = nodes_of_kind(G, "prim::fork")
    loops = nodes_of_kind(G, "prim::Loop")
    assert len(loops) == 2 and G.nodes[loops[0]]["trip_count"] == 100
    assert fork.startswith(f"{loops[0]}/b0/")
    [wait] = nodes_of_kind(G, "aten::wait")
    assert wait.startswith(f"{loops[1]}/b0/")
    assert G.nodes[fork]["irviz.waits"] == [wait]


def test_lstm_ensemble_forks_every_member_and_each_member_forks_its_forward_lstm():
    G = one("lstm_ensemble.py:LSTMEnsemble").graph
    forks = nodes_of_kind(G, "prim::fork")
    top = [f for f in forks if G.nodes[f]["subgraph_of"] is None]
    nested = [f for f in forks if G.nodes[f]["subgraph_of"] is not None]
    assert len(top) == 4 and len(nested) == 4
    members = sorted({info["module"] for info in G.graph["blocks"].values()
                      if info["kind"] == "method" and info["class"] == "LSTM"})
    assert members == [f"models.{i}.cell_{d}" for i in range(4) for d in "bf"]
    for f in nested:
        assert G.nodes[f]["scope"].startswith("models.")
        assert G.nodes[f]["subgraph_of"] in top
        [wait] = G.nodes[f]["irviz.waits"]
        assert G.nodes[wait]["scope"] == G.nodes[f]["scope"]
    # the four member futures meet one wait inside the second loop (a runtime prim::Loop)
    top_waits = {w for f in top for w in G.nodes[f]["irviz.waits"]}
    assert len(top_waits) == 1
    [wait] = top_waits
    assert G.graph["blocks"][G.nodes[wait]["block"]]["kind"] == "loop.body"


def test_traced_lstm_ensemble_records_forks_too():
    G = one("lstm_ensemble.py:LSTMEnsemble", "trace").graph
    assert len(nodes_of_kind(G, "prim::fork")) == 8
    assert all(G.nodes[f]["irviz.waits"] for f in nodes_of_kind(G, "prim::fork"))


def test_archive_round_trip(tmp_path):
    torch.manual_seed(0)
    view = one("rnn_loop.py:WrapRNN", "trace")
    path = tmp_path / "wrapped_rnn.pt"
    view.capture.scripted.save(str(path))
    loaded = visualize(str(path))[0]
    assert loaded.capture.mode == "archive"
    assert_invariants(loaded.graph)
    kinds = sorted(d["kind"] for _, d in loaded.graph.nodes(data=True))
    assert kinds == sorted(d["kind"] for _, d in view.graph.nodes(data=True))


def test_ids_and_json_are_deterministic():
    a = one("lstm_ensemble.py:LSTMEnsemble")
    b = one("lstm_ensemble.py:LSTMEnsemble")
    assert list(a.graph) == list(b.graph)
    assert a.json() == b.json()
    data = json.loads(a.json())
    assert data["graph"]["schema_version"] == 1
    assert {"kind", "source", "scope", "block", "subgraph_of", "id"} <= set(data["nodes"][0])


def test_checker_reports_broken_graphs():
    G = one("decision_gate.py:MyCell").graph.copy()
    G.add_edge("out", "in0")
    G.nodes["n5"]["inputs"].append(["nowhere"])
    with pytest.raises(InvariantError) as err:
        assert_invariants(G)
    text = str(err.value)
    assert "cycle" in text and "nowhere is not in the graph" in text


def test_scripted_graphs_get_shapes_from_one_run_on_the_example_inputs():
    G = one("decision_gate.py:MyCell").graph  # inputs from the file's example_inputs
    [tanh] = nodes_of_kind(G, "aten::tanh")
    assert G.nodes[tanh]["outputs"][0]["shape"] == [3, 4]
    G = one("lstm_ensemble.py:LSTMEnsemble").graph
    [stack] = nodes_of_kind(G, "aten::stack")
    assert G.nodes[stack]["outputs"][0]["shape"] == [4, 5, 2, 32]
    view = one("fork_basics.py:example", inputs="torch.rand(2, 3)")
    [mul] = nodes_of_kind(view.graph, "aten::mul")
    assert view.graph.nodes[mul]["outputs"][0]["shape"] == [2, 3]
