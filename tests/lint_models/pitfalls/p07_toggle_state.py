"""A Python attribute that flips on every call: the trace keeps the first value."""
import torch


class Alternate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.flip = False

    def forward(self, x):
        self.flip = not self.flip  # expect: error
        return x if self.flip else x.flip(-1)


example_inputs = {"Alternate": lambda: (torch.arange(6.0).reshape(2, 3),)}
