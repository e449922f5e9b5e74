"""Pads sequences shorter than 4; the example is longer."""
import torch
import torch.nn.functional as F


class MinLength(torch.nn.Module):
    def forward(self, x):
        if x.shape[-1] < 4:  # expect: error
            x = F.pad(x, (0, 4 - x.shape[-1]))
        return x.cumsum(-1)


example_inputs = {"MinLength": lambda: (torch.rand(2, 6),)}
