"""IRV104: iterating or unpacking a tensor (the trace unrolls it for the example shape)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        total = torch.zeros(4)
        for row in x:  # expect: IRV104
            total = total + row
        a, b = y  # expect: IRV104
        cols = torch.stack([torch.stack(c) for c in zip(*x)])  # expect: IRV104
        return total + a - b + cols.sum(1)


example_inputs = {"Model": lambda: (torch.rand(3, 4), torch.rand(2, 4))}
