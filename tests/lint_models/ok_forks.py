"""Negative controls: correct ``torch.jit.fork``/``wait`` usage, nothing to report.

Fork, do independent work, then wait; fan out into a list of futures and wait
for them in a second loop; fork two submodules and wait for both together.
"""
from typing import List

import torch


def _double(x):
    return x * 2


class Sub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Sub()
        self.b = Sub()

    def forward(self, x):
        fut = torch.jit.fork(_double, x)
        y = torch.sin(x)
        z = torch.jit.wait(fut) + y
        futures: List[torch.jit.Future[torch.Tensor]] = []
        for k in range(3):
            futures.append(torch.jit.fork(_double, z + k))
        total = torch.zeros_like(z)
        for f in futures:
            total = total + torch.jit.wait(f)
        fa = torch.jit.fork(self.a, total)
        fb = torch.jit.fork(self.b, total)
        return torch.jit.wait(fa) + torch.jit.wait(fb)


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
