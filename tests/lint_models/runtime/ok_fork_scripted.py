"""Negative control for IRV206 (and the other fork rules): a model deployed by scripting
(no example inputs, so never traced) forks a submodule and does work before waiting."""
# irviz-lint-args: --extend-select IRV205,IRV206
import torch


class _Branch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 64)

    def forward(self, x):
        return torch.relu(self.lin(x))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = _Branch()
        self.b = _Branch()

    def forward(self, x):
        fut = torch.jit.fork(self.a, x)
        y = self.b(x)
        return torch.jit.wait(fut) + y
