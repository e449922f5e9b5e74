"""A module-level counter read by forward: state, not randomness."""
import torch

_SEEN = [0]


class Seen(torch.nn.Module):
    def forward(self, x):
        _SEEN[0] += 1
        return x * _SEEN[0]  # expect: error


example_inputs = {"Seen": lambda: (torch.rand(3),)}
