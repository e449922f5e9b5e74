"""A bool switch with a default: passing it to the trace fails."""
import torch


class Norm(torch.nn.Module):
    def forward(self, x, unit: bool = False):  # expect: error
        if unit:
            return x / x.norm(dim=-1, keepdim=True)
        return x


example_inputs = {"Norm": lambda: (torch.rand(3, 4),)}
