"""The seed models rewritten for ``torch.export`` (issue 14): what ``--mode export`` draws.

``CondCell`` is ``decision_gate.MyCell`` with the gate's ``if`` as ``torch.cond`` (a
branch must not return its input itself: ``x.clone()``); ``ScanRNN`` is ``rnn_loop``'s
loop over ``xs.size(0)`` as ``scan``, each step calling the cond cell, so a ``cond`` is
nested in the scan body; ``WhileCount`` is a ``while_loop``; ``MapRows`` a ``map``;
``KeywordScale`` takes a keyword input; ``Guarded`` has runtime asserts.
"""
import torch
from torch._higher_order_ops import map as hop_map
from torch._higher_order_ops import scan, while_loop


class CondGate(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.clone(), lambda x: -x, (x,))


class CondCell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dg = CondGate()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


class ScanRNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = CondCell()

    def forward(self, xs):
        h = torch.zeros(3, 4)

        def step(h, x):
            y, h = self.cell(x, h)
            return h, y.clone()

        h, ys = scan(step, h, xs)
        return ys, h


class WhileCount(torch.nn.Module):
    def forward(self, x):
        def cond(i, x):
            return i < 5

        def body(i, x):
            return i + 1, x * 2

        i, y = while_loop(cond, body, (torch.tensor(0), x))
        return y


class MapRows(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, xs):
        return hop_map(lambda x: torch.relu(self.linear(x)), xs)


class KeywordScale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 8)

    def forward(self, x, *, scale):
        return self.proj(x) * scale


class Guarded(torch.nn.Module):
    """Runtime asserts (``torch._check``) on a data-dependent size."""

    def forward(self, x, k):
        n = k.item()
        torch._check(n >= 1)
        torch._check(n <= x.shape[0])
        return x[:n] * 2


example_inputs = {
    "CondGate": lambda: (torch.rand(3, 4),),
    "CondCell": lambda: (torch.rand(3, 4), torch.rand(3, 4)),
    "ScanRNN": lambda: (torch.rand(10, 3, 4),),
    "WhileCount": lambda: (torch.rand(3),),
    "MapRows": lambda: (torch.rand(5, 4),),
    "KeywordScale": lambda: dict(x=torch.rand(2, 4), scale=torch.rand(1)),
    "Guarded": lambda: (torch.rand(6, 4), torch.tensor(3)),
}
