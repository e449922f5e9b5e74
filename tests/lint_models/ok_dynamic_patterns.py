"""Negative controls: dynamic, correct code that irviz lint must NOT flag.

Size arithmetic that stays inside torch ops is recorded by the tracer
(lint catalog section 2.2); Python attributes, ``is None`` tests on parameters
without defaults, ModuleList iteration, tuples of outputs and constant
``torch.tensor`` data are fine too.
"""
from typing import List

import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.flag = True
        self.scale = 2.0
        self.models = torch.nn.ModuleList([Block(), Block()])
        self.lstm = torch.nn.LSTM(4, 4)

    def forward(self, x, h):
        zeros = torch.zeros(x.shape)
        flat = x.view(x.size(0), -1)
        head = x[: x.size(0)]
        idx = torch.arange(x.size(0))
        b, n = x.shape
        ones = torch.ones(b, n)
        counts = torch.zeros(x.numel())
        wide = x.reshape(-1, x.shape[1] * 1)
        shp = list(x.shape)
        shp[-1] *= 2
        doubled = torch.zeros(shp)
        if self.flag:
            x = x * self.scale
        if h is None:
            h = torch.zeros_like(x)
        for m in self.models:
            x = m(x)
        futures: List[torch.jit.Future[torch.Tensor]] = []
        for m in self.models:
            futures.append(torch.jit.fork(m, x))
        results = [torch.jit.wait(f) for f in futures]
        seq, (hn, cn) = self.lstm(x.unsqueeze(1))
        first, second = x.chunk(2, dim=1)
        const = torch.tensor([1.0, 2.0])
        if not torch.jit.is_tracing():
            x = x + 0
        x = (x + zeros + flat + head + ones + wide + torch.stack(results).sum(0)
             + seq.squeeze(1) + torch.cat([first, second], 1))
        extra = idx.sum() + counts.sum() + doubled.sum() + const.sum() + hn.sum() + cn.sum()
        return x + extra, h


example_inputs = {"Model": lambda: (torch.rand(3, 4), torch.rand(3, 4))}
