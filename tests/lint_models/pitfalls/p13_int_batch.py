"""The batch size as a Python int builds a constant-shaped tensor."""
import torch


class Offsets(torch.nn.Module):
    def forward(self, x):
        n = int(x.size(0))  # expect: error
        return x + torch.arange(n).unsqueeze(1)


example_inputs = {"Offsets": lambda: (torch.rand(3, 2),)}
