"""Seed models as a TorchScript user writes them, for ``irviz lint --mode export`` (issue 14).

``samples/rnn_loop.py:MyRNNLoop`` holds a traced cell (with a scripted gate inside), which
torch.export cannot take at all; ``MyRNNLoop`` here is the same loop over ``xs.size(0)``
with its Python cell, the model torch.export silently unrolls. ``LenLoop`` loops over a
list's length (TS2EPConverter rejects it; torch.export unrolls it, but it is no shape).
"""
import torch


class MyCell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.linear(x) + h)
        return new_h, new_h


class MyRNNLoop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = MyCell()

    def forward(self, xs):
        h, y = torch.zeros(3, 4), torch.zeros(3, 4)
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


class LenLoop(torch.nn.Module):
    def forward(self, x):
        parts = [x, x * 2, x * 3]
        out = torch.zeros_like(x)
        for p in parts:
            out = out + p
        return out


example_inputs = {
    "MyCell": lambda: (torch.rand(3, 4), torch.rand(3, 4)),
    "MyRNNLoop": lambda: (torch.rand(10, 3, 4),),
    "LenLoop": lambda: (torch.rand(3, 4),),
}
