"""Seed 1, part 1: plain modules, without and with a ``Linear`` layer."""
import torch


class MyCell(torch.nn.Module):
    """``tanh(x + h)``, returned twice."""

    def forward(self, x, h):
        new_h = torch.tanh(x + h)
        return new_h, new_h


class MyLinearCell(torch.nn.Module):
    """``tanh(linear(x) + h)``, returned twice."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = torch.tanh(self.linear(x) + h)
        return new_h, new_h


def example_inputs(name):
    """irviz convention: a function from model name to its example inputs."""
    return torch.rand(3, 4), torch.rand(3, 4)
