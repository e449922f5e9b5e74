"""IRV140: forward returns a list (TracerWarning at torch's line, not the user's)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return [x * 2, x + 1]  # expect: IRV140


example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
