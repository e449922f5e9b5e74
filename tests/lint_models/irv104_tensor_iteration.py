"""IRV104: iterating or unpacking a tensor (the trace unrolls it for the example shape).

``zip(*x)`` sizes the tensor with ``len()`` before iterating it (IRV105 too).
Traces; does not script (a Tensor cannot be unpacked as a tuple in TorchScript).
"""
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        total = torch.zeros(4)
        for row in x:  # expect: IRV104
            total = total + row
        a, b = y  # expect: IRV104, IRV301
        cols = torch.stack([torch.stack(c) for c in zip(*x)])  # expect: IRV104, IRV105
        return total + a - b + cols.sum(1)


example_inputs = {"Model": lambda: (torch.rand(3, 4), torch.rand(2, 4))}
