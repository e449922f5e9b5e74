"""Attention-style scaling with math.sqrt of a size: a float the trace bakes."""
import math

import torch


class Scaled(torch.nn.Module):
    def forward(self, q, k):
        scale = math.sqrt(q.size(-1))  # expect: error
        return (q @ k.transpose(-1, -2)) / scale


example_inputs = {"Scaled": lambda: (torch.rand(2, 3, 8), torch.rand(2, 3, 8))}
