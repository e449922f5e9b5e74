"""An optional tensor argument the example leaves out: the trace cannot take it."""
from typing import Optional

import torch


class Shift(torch.nn.Module):
    def forward(self, x, bias: Optional[torch.Tensor] = None):  # expect: error
        if bias is not None:
            x = x + bias
        return x.relu()


example_inputs = {"Shift": lambda: (torch.rand(4, 2),)}
