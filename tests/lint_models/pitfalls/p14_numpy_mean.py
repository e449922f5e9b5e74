"""A statistic computed in NumPy is a constant of the trace."""
import torch


class Center(torch.nn.Module):
    def forward(self, x):
        mean = x.detach().numpy().mean()  # expect: error
        return x - float(mean)


example_inputs = {"Center": lambda: (torch.rand(4, 4),)}
