"""IRV151: the number of rows is frozen by ``unbind`` (no TracerWarning): the first trace
raises on an input with one more row, which the Python model accepts."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.stack([r * 2 for r in x.unbind(0)])  # expect: IRV151


example_inputs = {"Model": lambda: (torch.rand(4, 4),)}
