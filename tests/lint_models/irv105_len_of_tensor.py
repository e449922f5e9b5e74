"""IRV105: ``len(tensor)`` becomes a constant in the trace."""
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        mean = x.sum(0) / len(x)  # expect: IRV105
        weights = torch.ones(len(y))  # expect: IRV105
        return mean + weights @ y


example_inputs = {"Model": lambda: (torch.rand(3, 4), torch.rand(2, 4))}
