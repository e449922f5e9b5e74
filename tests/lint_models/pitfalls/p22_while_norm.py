"""Halves until the norm is small: the trace keeps the example's count."""
import torch


class Shrink(torch.nn.Module):
    def forward(self, x):
        while x.norm() > 4:  # expect: error
            x = x / 2
        return x


example_inputs = {"Shrink": lambda: (torch.rand(6),)}
