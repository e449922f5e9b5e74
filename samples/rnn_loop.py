"""Seed 1, part 5: mixing scripting and tracing.

``MyRNNLoop`` is scripted and holds a traced ``MyCell``; ``WrapRNN`` (meant to
be traced) holds the scripted loop and applies ``relu``: script holding trace
holding script.
"""
import torch


class MyDecisionGate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class MyCell(torch.nn.Module):
    def __init__(self, dg):
        super().__init__()
        self.dg = dg
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


class MyRNNLoop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        scripted_gate = torch.jit.script(MyDecisionGate())
        self.cell = torch.jit.trace(MyCell(scripted_gate), (torch.rand(3, 4), torch.rand(3, 4)))

    def forward(self, xs):
        h, y = torch.zeros(3, 4), torch.zeros(3, 4)
        for i in range(xs.size(0)):
            y, h = self.cell(xs[i], h)
        return y, h


class WrapRNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.loop = torch.jit.script(MyRNNLoop())

    def forward(self, xs):
        y, h = self.loop(xs)
        return torch.relu(y)


example_inputs = {
    "MyDecisionGate": lambda: (torch.rand(3, 4),),
    "MyRNNLoop": lambda: (torch.rand(10, 3, 4),),
    "WrapRNN": lambda: (torch.rand(10, 3, 4),),
}
