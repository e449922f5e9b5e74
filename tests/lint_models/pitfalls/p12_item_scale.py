"""A scale read out with .item(): the trace keeps the example's number."""
import torch


class MaxNorm(torch.nn.Module):
    def forward(self, x):
        peak = x.abs().max().item()  # expect: error
        return x / peak


example_inputs = {"MaxNorm": lambda: (torch.rand(5, 5),)}
