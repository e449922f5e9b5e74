"""Synthetic large models for the drawn-node budget tests.

``Stack(stages, blocks)``: ``stages`` user modules, each a sequence of ``blocks`` small
residual blocks (a few ops each) - thousands of IR nodes with a module hierarchy to
collapse.
"""
import torch


class Block(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x * 0.5 + 1.0)
        return x + torch.tanh(y) - y.sigmoid()


class Stage(torch.nn.Module):
    def __init__(self, blocks: int):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block() for _ in range(blocks)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class Stack(torch.nn.Module):
    def __init__(self, stages: int = 10, blocks: int = 100):
        super().__init__()
        self.stages = torch.nn.ModuleList([Stage(blocks) for _ in range(stages)])

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x


class Other(torch.nn.Module):
    """Another type, with as many ops as Block."""

    def forward(self, x):
        y = torch.sigmoid(x * 2.0 - 1.0)
        return x - torch.tanh(y) + y.relu()


class Chain(torch.nn.Module):
    """``n`` blocks called one after the other by the top module (a layer stack);
    ``alternate``: every other one an :class:`Other`."""

    def __init__(self, n: int = 40, alternate: bool = False):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Other() if alternate and i % 2 else Block()
                                           for i in range(n)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def big():
    return Stack(10, 100)


def chain(n=40):
    return Chain(int(n))


def alternating():
    return Chain(40, alternate=True)


_x = lambda: (torch.rand(2, 8),)  # noqa: E731
example_inputs = {"big()": _x, "Stack": _x, "chain": _x, "alternating": _x}
