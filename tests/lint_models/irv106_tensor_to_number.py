"""IRV106: tensors and traced sizes turned into Python numbers (baked as constants)."""
import math

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        peak = x.max().item()  # expect: IRV106
        rows = int(x.size(0))  # expect: IRV106
        scale = math.sqrt(x.size(-1))  # expect: IRV106
        return x / scale + peak + torch.ones(rows, 1)  # expect: IRV151


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
