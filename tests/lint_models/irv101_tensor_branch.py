"""IRV101: Python control flow on tensor data or on a traced size.

The trace records only the branch taken for the example input (TracerWarning
"Converting a tensor to a Python boolean" at each marked line).
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        if x.sum() > 0:  # expect: IRV101
            x = x * 2
        if x.size(0) > 5 and y.shape == x.shape:  # expect: IRV101
            x = x + y
        n = max(x.size(1), 3)  # expect: IRV101
        return x * n


example_inputs = {"Model": lambda: (torch.rand(3, 4), torch.rand(3, 4))}
