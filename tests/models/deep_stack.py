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


def big():
    return Stack(10, 100)


example_inputs = {"big()": lambda: (torch.rand(2, 8),), "Stack": lambda: (torch.rand(2, 8),)}
