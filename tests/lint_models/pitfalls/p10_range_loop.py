"""A weighted sum written as a loop over the time axis."""
import torch


class Decay(torch.nn.Module):
    def forward(self, x):
        acc = torch.zeros_like(x[:, 0])
        for t in range(x.size(1)):  # expect: error
            acc = acc * 0.5 + x[:, t]
        return acc


example_inputs = {"Decay": lambda: (torch.rand(3, 7),)}
