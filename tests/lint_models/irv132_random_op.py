"""IRV132: random ops inside forward (the trace is nondeterministic)."""
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        noise = torch.randn(x.shape)  # expect: IRV132
        y = F.dropout(x + noise, p=0.5, training=True)  # expect: IRV132, IRV130
        mask = torch.rand_like(y) > 0.5  # expect: IRV132
        return y * mask


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
