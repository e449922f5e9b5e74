"""IRV122: a forward parameter with a default; the trace keeps only the default's path."""
from typing import Optional

import torch


class Model(torch.nn.Module):
    def forward(self, x, bias: Optional[torch.Tensor] = None):  # expect: IRV122
        if bias is None:
            bias = torch.zeros_like(x)
        return x + bias


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
