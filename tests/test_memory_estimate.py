"""Activation memory from shapes (issue 31 item 2): bytes per value and the static peak."""
from __future__ import annotations

import torch

import irviz.api as api
from irviz.analyses.memory import BYTES, memory_facts


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(256, 512)
        self.l2 = torch.nn.Linear(512, 256)

    def forward(self, x):
        h = self.l1(x)                 # 64x512 float32: 128 KiB
        v = h.view(64, 2, 256)         # a view: no allocation, keeps h alive
        r = torch.relu(v)              # 128 KiB, h and r both live: the peak
        return self.l2(r.flatten(1))   # 64 KiB; h freed after relu's view, r after l2


def _graph(mode):
    [view] = api.visualize(MLP(), mode=mode, inputs=(torch.rand(64, 256),))
    return view.graph


def test_the_peak_is_the_live_values_at_relu_and_views_allocate_nothing():
    for mode in ("script", "trace"):
        G = _graph(mode)
        facts = memory_facts(G)
        assert facts["peak_bytes"] == 2 * 64 * 512 * 4, (mode, facts)
        assert G.nodes[facts["peak_at"]]["kind"] == "aten::relu"
        kinds = {d["kind"]: d.get(BYTES) for _, d in G.nodes(data=True)}
        assert kinds["aten::view"] is None and kinds["aten::relu"] == 64 * 512 * 4
        assert facts["unknown"] == 0
        # the picture's edges carry the bytes of the value they carry
        edges = [d[BYTES] for u, v, d in G.edges(data=True)
                 if G.nodes[u]["kind"] == "aten::relu" and BYTES in d]
        assert edges and set(edges) == {64 * 512 * 4}


def test_a_view_keeps_its_base_alive_until_the_view_is_last_used():
    class Late(torch.nn.Module):
        def forward(self, x):
            a = x * 2                  # 4 KiB
            v = a.t()                  # a view of a, used last
            b = x + 1                  # 4 KiB: a still live through v
            c = b * 3                  # 4 KiB: a (through v), b, c live: 12 KiB
            return c + v               # a, c and the sum: 12 KiB

    [view] = api.visualize(Late(), inputs=(torch.rand(32, 32),))
    # freed at its last direct use (the t()), a would leave a peak of 8 KiB
    assert memory_facts(view.graph)["peak_bytes"] == 3 * 32 * 32 * 4



def test_a_hidden_user_keeps_a_value_alive_as_a_view_does():
    # an exported graph hides a size read that feeds only runtime asserts: the walk numbers
    # the drawn nodes only, and a hidden user's position when a last use asks for it
    import networkx as nx

    from irviz.analyses.memory import annotate_memory

    def op(kind, hidden=False, tensor=True):
        out = {"type": "Tensor", "shape": [8], "dtype": "float32"} if tensor \
            else {"type": "SymInt", "shape": None, "dtype": None}
        return {"kind": kind, "outputs": [out], "inputs": [], "hidden": hidden, "scope": ""}

    G = nx.DiGraph()
    G.add_node("x", **op("prim::Param"))
    G.add_node("a", **op("aten::mul"))                               # 32 bytes
    G.add_node("size", **op("aten::sym_size", hidden=True, tensor=False))
    G.add_node("b", **op("aten::mul"))                               # 32 bytes
    G.add_node("z", **op("aten::add"))                               # 32 bytes
    G.add_edges_from([("x", "a"), ("a", "size"), ("x", "b"), ("size", "z"), ("b", "z")])
    # a lives until z, through the size read: a, b and z at z
    assert annotate_memory(G)["peak_bytes"] == 3 * 32
