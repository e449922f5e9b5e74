"""IRV002: torch.jit.trace raises and no specific rule explains why.

A plain tensor attribute that requires grad (not a parameter or buffer) cannot be
inserted into the graph as a constant; the model scripts, so only the trace fails.
"""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(4, requires_grad=True)

    def forward(self, x):
        return x * self.scale  # expect: IRV002


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
